#!/usr/bin/env bash
# run.sh BASE [flags...] interleaves the same operations (bare Execute, a
# raw 16-call turn, the full pipeline, contended exclusive calls, the
# message path) on the library at commit BASE and on this checkout, in one
# process, with bench's interleave harness. The checkout's side of the
# message path is msg_after.go.in, and BASE's too when BASE has package
# actors; msg_before.go.in (Scope.PID) for a BASE from before the house.
# Example: bash bench/beforeafter/run.sh eb99e5e -rounds 15 -d 200ms
set -euo pipefail
base="$1"; shift
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# BASE under another module path, so both versions link into one binary.
mkdir -p "$tmp/base"
git -C "$root" archive "$base" | tar -x -C "$tmp/base"
# Only the root module: every directory below with a go.mod of its own goes.
find "$tmp/base" -mindepth 2 -name go.mod -printf '%h\n' | xargs rm -rf
rm -f "$tmp/base/go.work" "$tmp/base/go.work.sum"
find "$tmp/base" -name '*.go' ! -name '*.pb.go' -exec sed -i 's#github.com/toolscope/toolscope/#example.com/tsbase/#g' {} +
sed -i 's#^module github.com/toolscope/toolscope$#module example.com/tsbase#' "$tmp/base/go.mod"
mkdir -p "$tmp/cmd/before" "$tmp/cmd/after"
gen() { sed -e "s#@PKG@#$2#g" -e "s#@MOD@#$3#g" -e "s#@WHAT@#$4#g" "$here/$1"; }
gen side.go.in before example.com/tsbase "$base" > "$tmp/cmd/before/side.go"
# A BASE from before the house has no package actors: its message path is Scope.PID.
if git -C "$root" cat-file -e "$base:actors/host.go" 2>/dev/null; then msg_before=msg_after.go.in; else msg_before=msg_before.go.in; fi
gen "$msg_before" before example.com/tsbase "$base" > "$tmp/cmd/before/msg.go"
gen side.go.in after github.com/toolscope/toolscope "the checkout" > "$tmp/cmd/after/side.go"
gen msg_after.go.in after github.com/toolscope/toolscope "the checkout" > "$tmp/cmd/after/msg.go"
cp "$here/main.go.in" "$tmp/cmd/main.go"
sed -n '/^import (/,$p' "$root/bench/interleave.go" | sed '1i package main' > "$tmp/cmd/interleave.go"
cd "$tmp/cmd"
cat > go.mod <<MOD
module beforeafter

go 1.26.0

require (
	github.com/toolscope/toolscope v0.0.0
	example.com/tsbase v0.0.0
)

replace github.com/toolscope/toolscope => $root

replace example.com/tsbase => $tmp/base
MOD
export GOWORK=off GOFLAGS=-mod=mod
# both versions register the same protobuf names: allowed, with a warning
export GOLANG_PROTOBUF_REGISTRATION_CONFLICT=warn
go mod tidy >/dev/null
go build -o "$tmp/beforeafter" .
# the registration-conflict warnings go to stderr: shown only on failure
"$tmp/beforeafter" "$@" 2>"$tmp/stderr" || { cat "$tmp/stderr" >&2; exit 1; }
