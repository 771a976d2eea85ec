#!/usr/bin/env bash
# tidy.sh runs `go mod tidy` in each nested module published beside the root
# (.ci/modules). Those modules require github.com/toolscope/toolscope at the
# version the next release tags, which no proxy serves yet, and go.work (the
# development wiring) is ignored by `go mod tidy`; so the root's committed
# tree (HEAD) is published into a proxy on disk first (.ci/modproxy), and the
# root's checksum lines are dropped from each go.sum afterwards (they would
# name this commit's content, not the release's).
# Usage: bash .ci/tidy.sh [MODULEDIR...]   (default: every nested module)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD
mods=("$@")
if ((${#mods[@]} == 0)); then
	mapfile -t mods < <(grep -v '^#' .ci/modules)
fi
tmp="$(mktemp -d)"
modcache="$(go env GOMODCACHE)"
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
# The go command indexes a module-cache directory once per module@version
# (in GOCACHE) and trusts it forever, as a published version never changes;
# what is published here changes with every commit under the same version,
# so the index is turned off for these runs.
export GODEBUG=goindex=0
for m in "${mods[@]}"; do
	v="$(sed -n 's|^[[:space:]]*github.com/toolscope/toolscope \(v[^[:space:]]*\).*|\1|p' "$m/go.mod" | head -1)"
	(cd .ci/modproxy && GOWORK=off GOFLAGS=-mod=mod go run . -out "$tmp/proxy" -version "$v" "$root" . >/dev/null)
	(
		cd "$m"
		GOWORK=off GOFLAGS=-mod=mod GONOSUMDB=github.com/toolscope/toolscope \
			GOPROXY="file://$tmp/proxy,$(go env GOPROXY)" go mod tidy
		sed -i '\|^github.com/toolscope/toolscope v|d' go.sum
	)
	echo "    tidied $m (root at $v from HEAD)"
done
