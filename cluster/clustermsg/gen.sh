#!/usr/bin/env bash
# gen.sh regenerates clustermsg.pb.go from clustermsg.proto with the same
# pinned tools as messages/gen.sh: protoc at exactly $want_protoc and
# protoc-gen-go at the version the root go.mod pins (its `tool` directive).
#
# The file is compiled as "toolscope/cluster/clustermsg/clustermsg.proto"
# and imports "toolscope/messages/messages.proto", the path under which
# package messages registers its file.
set -euo pipefail

want_protoc="libprotoc 3.21.12"

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
out=$(cd "${1:-$here}" && pwd)

if ! command -v protoc >/dev/null 2>&1; then
	echo "gen.sh: protoc not found; install it (Debian: apt-get install protobuf-compiler)" >&2
	exit 1
fi
have_protoc=$(protoc --version)
if [[ "$have_protoc" != "$want_protoc" ]]; then
	echo "gen.sh: need $want_protoc, found $have_protoc: the version is recorded in clustermsg.pb.go" >&2
	exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

(cd "$root" && go build -o "$tmp/bin/protoc-gen-go" google.golang.org/protobuf/cmd/protoc-gen-go)

mkdir -p "$tmp/src/toolscope/messages" "$tmp/src/toolscope/cluster/clustermsg" "$tmp/out"
cp "$root/messages/messages.proto" "$tmp/src/toolscope/messages/messages.proto"
cp "$here/clustermsg.proto" "$tmp/src/toolscope/cluster/clustermsg/clustermsg.proto"
protoc \
	--plugin=protoc-gen-go="$tmp/bin/protoc-gen-go" \
	-I "$tmp/src" \
	--go_out="$tmp/out" \
	--go_opt=paths=source_relative \
	toolscope/cluster/clustermsg/clustermsg.proto
cp "$tmp/out/toolscope/cluster/clustermsg/clustermsg.pb.go" "$out/clustermsg.pb.go"
