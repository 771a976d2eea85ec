#!/usr/bin/env bash
# gen.sh regenerates messages.pb.go from messages.proto with pinned tools:
# protoc at exactly $want_protoc (Debian's protobuf-compiler package) and
# protoc-gen-go at the version go.mod requires (its `tool` directive).
#
# Usage: gen.sh [OUT_DIR]   (OUT_DIR defaults to this directory)
#
# The proto is compiled as "toolscope/messages/messages.proto" so that the
# path registered in the global protobuf registry is unique; a bare
# "messages.proto" would make init panic in any binary that links another
# file registered under that common name.
set -euo pipefail

want_protoc="libprotoc 3.21.12"

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=$(cd "${1:-$here}" && pwd)

if ! command -v protoc >/dev/null 2>&1; then
	echo "gen.sh: protoc not found; install it (Debian: apt-get install protobuf-compiler)" >&2
	exit 1
fi
have_protoc=$(protoc --version)
if [[ "$have_protoc" != "$want_protoc" ]]; then
	echo "gen.sh: need $want_protoc, found $have_protoc: the version is recorded in messages.pb.go" >&2
	exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Build protoc-gen-go at the version pinned by go.mod.
(cd "$here" && go build -o "$tmp/bin/protoc-gen-go" google.golang.org/protobuf/cmd/protoc-gen-go)

mkdir -p "$tmp/src/toolscope/messages" "$tmp/out"
cp "$here/messages.proto" "$tmp/src/toolscope/messages/messages.proto"
protoc \
	--plugin=protoc-gen-go="$tmp/bin/protoc-gen-go" \
	-I "$tmp/src" \
	--go_out="$tmp/out" \
	--go_opt=paths=source_relative \
	toolscope/messages/messages.proto
cp "$tmp/out/toolscope/messages/messages.pb.go" "$out/messages.pb.go"
