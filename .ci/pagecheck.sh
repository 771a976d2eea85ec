#!/usr/bin/env bash
# pagecheck.sh checks the pictures in headless Chromium (Debian's chromium
# package, installed here when missing): timeline.html at 8 and at 50
# agents, at 7 agents with the most turns (20) and at 50 agents with 20
# turns (3,900 calls), the bench SVGs and HTML pages as committed, and the
# load tool's report.html of a short open-loop scenario (whose charts,
# tables and figures must each be shown and not empty: -expect). Each
# must render without a script or console error, keep every label inside
# its box at 800 and 1280 px, and load nothing from outside; a timeline is
# also driven with real mouse input — zoom, collapse, failures only, the
# hover card, the table — and its failure markers measured (see
# .ci/pagecheck/main.go and timeline.go). The checker's own tests first
# prove that each rule fails on a page that breaks it. It also fails when
# bench/results/*.svg and *.html are stale against the saved JSON.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD
t0=$SECONDS

if ! command -v chromium >/dev/null 2>&1; then
	echo "    installing chromium"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq </dev/null >/dev/null
	apt-get install -y -qq --no-install-recommends chromium </dev/null >/dev/null
fi

out=$(mktemp -d "${TMPDIR:-/tmp}/pagecheck.XXXXXX")
mkdir -p "$out/agents8" "$out/turns20" "$out/agents50" "$out/agents50turns20" "$out/bench" "$out/load"

echo "    rendering the pages"
go run ./cmd/demo -agents 8 -out "$out/agents8" >/dev/null
go run ./cmd/demo -agents 7 -turns 20 -out "$out/turns20" >/dev/null
go run ./cmd/demo -agents 50 -out "$out/agents50" >/dev/null
go run ./cmd/demo -agents 50 -turns 20 -out "$out/agents50turns20" >/dev/null
go run ./cmd/toolscope-load -scenario example:open -out "$out/load/report.json" -progress 0 >/dev/null

# The committed bench pictures must be what the saved JSON renders to.
(cd bench && go run . -from results/full.json -html "$out/bench/full.html" -svg "$out/bench" >/dev/null &&
	go run . -from results/quick.json -html "$out/bench/quick.html" >/dev/null)
for f in ratios.svg latency.svg agents.svg full.html quick.html; do
	if ! cmp -s "$out/bench/$f" "bench/results/$f"; then
		echo "bench/results/$f is stale: re-render it with (cd bench && go run . -from results/full.json -html results/full.html -svg results && go run . -from results/quick.json -html results/quick.html)" >&2
		exit 1
	fi
done

echo "    checker self-test"
# Its own module, outside the go.work workspace.
(cd .ci/pagecheck && GOWORK=off go vet . && GOWORK=off PAGECHECK_REQUIRE=1 go test -count=1 .)

echo "    checking the pages"
(cd .ci/pagecheck && GOWORK=off go run . -shots "$out/shots" \
	"$out/agents8/timeline.html" "$out/turns20/timeline.html" "$out/agents50/timeline.html" "$out/agents50turns20/timeline.html" \
	"$root"/bench/results/{ratios,latency,agents}.svg "$root"/bench/results/{full,quick}.html)
(cd .ci/pagecheck && GOWORK=off go run . -shots "$out/shots" \
	-expect '#kpis .v; #cdf-svg path.series; #throughput-svg path.series; #queue-svg path.series; #admission-svg rect.s-bar; #latency td[data-k]; #tools td[data-k]; #failures td' \
	"$out/load/report.html")

[ -n "${PAGECHECK_KEEP:-}" ] || rm -rf "$out"
echo "    pagecheck: $((SECONDS - t0)) s"
