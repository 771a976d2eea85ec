#!/usr/bin/env bash
# consumer.sh builds throwaway modules the way users would, against this
# checkout's modules as they would be published (issue 25, item 1): every
# module of the repository is written into a module proxy on disk at the
# version the nested modules require of the root (.ci/modproxy, from the
# committed tree), and each consumer `go get`s from it with no replace
# directive and no workspace:
#   - root: toolscope next to the model and MCP SDKs, tidied; fails when
#     toolscope's go.mod lets protoactor pin an OpenTelemetry SDK older than
#     the API those SDKs bring (issue 12, item 10);
#   - mcp, openai, anthropic, gemini, cluster: one nested module alone, so the root
#     must resolve through that module's own requirement;
#   - `go install .../mcp/cmd/toolscope-mcp@VERSION`, which the go command
#     refuses for a module whose go.mod has replace directives.
# Usage: bash .ci/consumer.sh [TOOLSCOPE_DIR]
set -euo pipefail
root="$(cd "${1:-$(dirname "${BASH_SOURCE[0]}")/..}" && pwd)"
here="$root/.ci"
tmp="$(mktemp -d)"
modcache="$(go env GOMODCACHE)"
# What this script publishes must never linger in the module cache: a later
# run (or a real release of the same version) would be served the stale copy.
# One run at a time per module cache: another run's forget would delete
# what this one extracted mid-build.
if command -v flock >/dev/null 2>&1; then
	exec 9>"$modcache/.toolscope-publish.lock"
	flock -w 900 9 || { echo "another consumer/tidy run holds $modcache/.toolscope-publish.lock"; exit 1; }
fi
forget() {
	chmod -R u+w "$modcache"/github.com/toolscope "$modcache"/cache/download/github.com/toolscope 2>/dev/null || true
	rm -rf "$modcache"/github.com/toolscope "$modcache"/cache/download/github.com/toolscope
}
trap 'forget; rm -rf "$tmp"' EXIT
forget

mapfile -t nested < <(grep -v "^#" "$here/modules")
version=""
for m in "${nested[@]}"; do
	v="$(cd "$root/$m" &&
		sed -n 's|^[[:space:]]*github.com/toolscope/toolscope \(v[^[:space:]]*\).*|\1|p' go.mod | head -1)"
	if [[ -z "$v" || "$v" == v0.0.0 ]]; then
		echo "$m/go.mod must require github.com/toolscope/toolscope at the version to be released (found '${v:-none}')"; exit 1
	fi
	if [[ -n "$version" && "$v" != "$version" ]]; then
		echo "the nested modules require different root versions ($version, $v in $m)"; exit 1
	fi
	version="$v"
	if grep -q '^replace' "$root/$m/go.mod"; then
		echo "$m/go.mod has a replace directive; a published module must not (go.work ties the checkout together)"; exit 1
	fi
done

proxy="$tmp/proxy"
(cd "$here/modproxy" && GOWORK=off GOFLAGS=-mod=mod go run . -out "$proxy" -version "$version" "$root" . "${nested[@]}")

export GOWORK=off GOFLAGS=-mod=mod GOTOOLCHAIN=local
# The go command indexes a module-cache directory once per module@version
# (in GOCACHE) and trusts it forever, as a published version never changes;
# what is published here changes with every commit under the same version,
# so the index is turned off for these runs.
export GODEBUG=goindex=0
export GOPROXY="file://$proxy,$(go env GOPROXY)"
export GONOSUMDB=github.com/toolscope/toolscope

consumer() { # name, then what to `go get`
	local name="$1"; shift
	mkdir -p "$tmp/$name" && cp "$here/consumer/$name/main.go" "$tmp/$name/"
	(
		cd "$tmp/$name"
		go mod init "example.com/consumer-$name" >/dev/null 2>&1
		go get "$@" >/dev/null 2>&1 || { go get "$@"; exit 1; }
		go mod tidy >/dev/null 2>&1 || { go mod tidy; exit 1; }
		go build -o /dev/null .
		got="$(go list -m -f '{{.Version}}' github.com/toolscope/toolscope)"
		[[ "$got" == "$version" ]] || { echo "consumer $name resolved toolscope $got, want $version"; exit 1; }
		echo "    consumer of $1 builds (toolscope $got, $(go list -m go.opentelemetry.io/otel/sdk/metric 2>/dev/null || echo 'no otel sdk/metric'))"
	)
}

consumer root github.com/toolscope/toolscope@"$version" \
	github.com/openai/openai-go/v3@v3.98.0 github.com/anthropics/anthropic-sdk-go/v2@v2.15.0 \
	github.com/modelcontextprotocol/go-sdk@v1.8.0 google.golang.org/genai@v1.77.0
consumer mcp github.com/toolscope/toolscope/mcp@"$version"
consumer openai github.com/toolscope/toolscope/providers/openai@"$version"
consumer anthropic github.com/toolscope/toolscope/providers/anthropic@"$version"
consumer gemini github.com/toolscope/toolscope/providers/gemini@"$version"
consumer cluster github.com/toolscope/toolscope/cluster@"$version"

GOFLAGS= GOBIN="$tmp/bin" go install "github.com/toolscope/toolscope/mcp/cmd/toolscope-mcp@$version"
[[ -x "$tmp/bin/toolscope-mcp" ]] || { echo "go install of toolscope-mcp@$version made no binary"; exit 1; }
echo "    go install github.com/toolscope/toolscope/mcp/cmd/toolscope-mcp@$version works"
