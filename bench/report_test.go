package main

import (
	"encoding/json"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"
)

// fakeClock is a clock that moves only when an op says so, so the harness
// can be checked without timing anything.
type fakeClock struct{ now time.Duration }

func (c *fakeClock) read() time.Duration { return c.now }

// TestInterleave_AlternatesBlocksAndFlipsOrder checks the harness's
// schedule: one warm-up block per side, then within each round pairs of
// blocks whose order flips from pair to pair, and each round lasting at
// least its duration.
func TestInterleave_AlternatesBlocksAndFlipsOrder(t *testing.T) {
	clk := &fakeClock{}
	var trace strings.Builder
	a := func() int { clk.now += 2; trace.WriteByte('a'); return 1 }
	b := func() int { clk.now += 1; trace.WriteByte('b'); return 1 }
	rs := interleave(a, b, interleaveConfig{rounds: 3, roundDur: 10, block: 2, clock: clk.read})
	if len(rs) != 3 {
		t.Fatalf("got %d rounds, want 3", len(rs))
	}
	// Warm-up aa bb; each pair costs 6 ticks, so a round of 10 ticks takes
	// two pairs: (aa bb)(bb aa), and the flip carries across rounds.
	want := "aabb" + "aabbbbaa" + "aabbbbaa" + "aabbbbaa"
	if got := trace.String(); got != want {
		t.Errorf("schedule\n got %s\nwant %s", got, want)
	}
	for i, r := range rs {
		if r.aCalls != 4 || r.bCalls != 4 || r.aTime != 8 || r.bTime != 4 {
			t.Errorf("round %d: %+v, want 4 calls each, 8 and 4 ticks", i, r)
		}
	}
}

// TestInterleave_RatioPerCall checks that the ratio is per call, not per
// op: a turn op counts its calls.
func TestInterleave_RatioPerCall(t *testing.T) {
	clk := &fakeClock{}
	a := func() int { clk.now += 48; return 16 } // 3 ticks per call
	b := func() int { clk.now += 2; return 1 }   // 2 ticks per call
	in := summarise("A", "B", 8, interleave(a, b, interleaveConfig{rounds: 15, roundDur: 1, block: 8, clock: clk.read}))
	if in.Median != 1.5 || in.Min != 1.5 || in.Max != 1.5 || in.Rounds != 15 || in.Block != 8 {
		t.Errorf("got %+v, want median = min = max = 1.5 over 15 rounds of block 8", in)
	}
	if in.ANsPerCall != 3 || in.BNsPerCall != 2 {
		t.Errorf("ns per call %v and %v, want 3 and 2", in.ANsPerCall, in.BNsPerCall)
	}
}

// TestInterleave_StolenBlockDoesNotDecideRound: one block that takes 500
// times longer (the process lost the CPU) leaves the round's ratio alone.
func TestInterleave_StolenBlockDoesNotDecideRound(t *testing.T) {
	clk := &fakeClock{}
	calls := 0
	a := func() int {
		calls++
		clk.now += 2
		if calls == 20 {
			clk.now += 1000 // descheduled in the middle of a block
		}
		return 1
	}
	b := func() int { clk.now += 1; return 1 }
	rs := interleave(a, b, interleaveConfig{rounds: 1, roundDur: 60, block: 4, clock: clk.read})
	if len(rs[0].pairs) < 3 {
		t.Fatalf("round of %d pairs, want several", len(rs[0].pairs))
	}
	if got := rs[0].ratio(); got != 2 {
		t.Errorf("round ratio %v, want 2 (pairs %v)", got, rs[0].pairs)
	}
}

// TestSummarise_MedianAndRange feeds rounds with known ratios.
func TestSummarise_MedianAndRange(t *testing.T) {
	var rs []roundStat
	for _, r := range []float64{0.9, 0.5, 0.7, 1.3, 0.6} {
		rs = append(rs, roundStat{aTime: time.Duration(r * 1000), aCalls: 1, bTime: 1000, bCalls: 1, pairs: []float64{r, r, 5 * r}})
	}
	in := summarise("A", "B", 32, rs)
	if in.Median != 0.7 || in.Min != 0.5 || in.Max != 1.3 {
		t.Errorf("got median %v range %v–%v, want 0.7 and 0.5–1.3", in.Median, in.Min, in.Max)
	}
	if m := median([]float64{4, 1, 3, 2}); m != 2.5 {
		t.Errorf("median of an even count %v, want 2.5", m)
	}
}

func TestSig3(t *testing.T) {
	for _, c := range []struct{ in, want float64 }{
		{0.000123456, 0.000123},
		{0.0051234, 0.00512},
		{0.54321, 0.543},
		{1.02449, 1.02},
		{12.345, 12.3},
		{999.6, 1000},
		{1881.704, 1882},
		{0, 0},
		{-0.0012345, -0.00123},
	} {
		if got := sig3(c.in); got != c.want {
			t.Errorf("sig3(%v) = %v, want %v", c.in, got, c.want)
		}
	}
	for _, c := range []struct {
		in   float64
		want string
	}{{0.000123, "0.000123"}, {1.5, "1.5"}, {1882, "1882"}, {0.543, "0.543"}, {1.2e-7, "1.2e-07"}} {
		if got := fmtRatio(c.in); got != c.want {
			t.Errorf("fmtRatio(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}

// testReport is a report as a run of every scenario leaves it: timed
// scenarios, interleaved pairs and memory.
func testReport() *Report {
	res := func(name string, ns float64) Result {
		return Result{Name: name, NsPerCall: ns, NsPerOp: ns, CallsPerSec: 1e9 / ns}
	}
	return &Report{
		Targets: map[string]string{"bare_vs_eino": "<= 1.0", "scopes1k_vs_floor": ">= 0.25"},
		Scenarios: []Result{
			res("ts_execute_bare", 1011), res("ref_execute_bare", 218_710),
			res("ts_execute_tools_10k", 1238), res("ref_execute_tools_10k", 10_000_000),
			res("ts_agents_1000", 800), res("map_mutex_goroutine_agents_1000", 1400),
		},
		Interleaved: map[string]Interleaved{"bare_vs_eino": {Median: 0.543, Min: 0.5, Max: 0.61, Rounds: 25}},
		Memory:      map[string]float64{"heap_per_scope_bytes": 1881.704},
	}
}

// TestRatios_SmallRatiosKept: a ratio far below 0.001 keeps 3 significant
// digits and survives the JSON round trip (it used to round to 0 and be
// dropped).
func TestRatios_SmallRatiosKept(t *testing.T) {
	rep := testReport()
	rep.Ratios = ratios(rep)
	for k, want := range map[string]float64{
		"tools10k_vs_reference": 0.000124, // 1238 / 10,000,000
		"bare_vs_reference":     0.00462,  // 1011 / 218,710: three digits, not 0.005
		"bare_vs_eino":          0.543,    // the interleaved median
		"scopes1k_vs_floor":     1.75,     // a throughput ratio
		"heap_per_scope_bytes":  1882,
	} {
		if got, ok := rep.Ratios[k]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", k, got, ok, want)
		}
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if v, ok := back.Ratios["tools10k_vs_reference"]; !ok || math.Abs(v-0.000124) > 1e-12 {
		t.Errorf("after JSON: tools10k_vs_reference = %v (present %v); JSON %s", v, ok, b)
	}
}

// TestRatios_UnrunAbsent: with -run (or without node), a ratio whose
// scenarios did not run is absent, even when it has a target; never 0.
func TestRatios_UnrunAbsent(t *testing.T) {
	rep := &Report{
		Targets:   map[string]string{"bare_vs_eino": "<= 1.0", "turn16_vs_eino": "<= 1.0", "heap_per_scope_bytes": "<= 2048"},
		Scenarios: []Result{{Name: "ts_execute_bare", NsPerCall: 1000, CallsPerSec: 1e6}},
	}
	got := ratios(rep)
	if len(got) != 0 {
		t.Errorf("ratios of scenarios that did not run: %v, want none", got)
	}
	rep.Interleaved = map[string]Interleaved{"turn16_vs_eino": {Median: 0.7, Min: 0.6, Max: 0.8, Rounds: 15}}
	got = ratios(rep)
	if len(got) != 1 || got["turn16_vs_eino"] != 0.7 {
		t.Errorf("got %v, want only turn16_vs_eino = 0.7", got)
	}
}

// TestPairs_Selection: -run picks a pair by its ratio name or by the
// timed scenarios of its sides, and nothing else.
func TestPairs_Selection(t *testing.T) {
	names := func(re string) []string {
		var out []string
		for _, p := range pairs() {
			if p.selected(regexp.MustCompile(re)) {
				out = append(out, p.name)
			}
		}
		return out
	}
	if got := names(""); len(got) != len(pairs()) {
		t.Errorf("empty -run selects %v, want every pair", got)
	}
	if got := names("ts_turn_raw_16$"); len(got) != 1 || got[0] != "raw_turn16_vs_eino_raw" {
		t.Errorf("-run ts_turn_raw_16$ selects %v", got)
	}
	if got := names("^message_path"); len(got) != 1 || got[0] != "message_path_vs_protoactor_roundtrip" {
		t.Errorf("-run ^message_path selects %v", got)
	}
	if got := names("no_such_thing"); len(got) != 0 {
		t.Errorf("-run no_such_thing selects %v", got)
	}
	seen := map[string]bool{}
	for _, p := range pairs() {
		if seen[p.name] || p.a == "" || p.b == "" || p.block < 1 {
			t.Errorf("pair %q: duplicate, or without descriptions or block", p.name)
		}
		seen[p.name] = true
	}
}

// TestPairs_SidesWork runs each pair's two sides once: each does what its
// description says without failing (the ops panic on a failed call), and
// reports the calls it made.
func TestPairs_SidesWork(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every pair's worlds")
	}
	for _, p := range pairs() {
		t.Run(p.name, func(t *testing.T) {
			a, b, teardown := p.setup()
			defer teardown()
			na, nb := a(), b()
			if na < 1 || na != nb {
				t.Errorf("sides made %d and %d calls, want the same, at least 1", na, nb)
			}
		})
	}
}

// TestScale_FiguresAndBudget runs the scale scenarios at a small size: the
// figures are recorded under the size's name, the lookup ratios appear
// when every tool got in, and a registration that runs out of budget
// records how far it got and no lookup ratio at a size it did not reach.
func TestScale_FiguresAndBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("registers tools and creates scopes")
	}
	cfg := runConfig{pairRounds: 2, pairRoundDur: time.Millisecond, registerBudget: time.Minute}
	scale, inter := map[string]float64{}, map[string]Interleaved{}
	runScaleTools(cfg, 2_000, scale, inter)
	runScaleScopes(1_000, scale)
	for _, k := range []string{"register_2k_tools_reached", "register_2k_ns_per_tool", "register_2k_last_tenth_ns_per_tool",
		"idle_scopes_1k_heap_per_scope_bytes", "idle_scopes_1k_close_ns_per_scope", "idle_scopes_1k_create_ns_per_scope"} {
		if scale[k] <= 0 {
			t.Errorf("scale[%s] = %v, want a positive figure", k, scale[k])
		}
	}
	if scale["register_2k_tools_reached"] != 2_000 {
		t.Errorf("reached %v tools, want 2000", scale["register_2k_tools_reached"])
	}
	for _, k := range []string{"tools2k_vs_1", "lookup2k_vs_1"} {
		if in, ok := inter[k]; !ok || in.Rounds != 2 || in.Median <= 0 {
			t.Errorf("%s = %+v (present %v), want 2 rounds measured", k, in, ok)
		}
	}

	cfg.registerBudget = 0 // out of budget after the first tenth
	scale, inter = map[string]float64{}, map[string]Interleaved{}
	runScaleTools(cfg, 3_000, scale, inter)
	if got := scale["register_3k_tools_reached"]; got != 300 {
		t.Errorf("reached %v tools with no budget, want the first tenth (300)", got)
	}
	if len(inter) != 0 {
		t.Errorf("lookup ratios at a size not reached: %v", inter)
	}
}
