package load

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/toolscope/toolscope/runtime"
)

func mustParse(t *testing.T, s string) *Scenario {
	t.Helper()
	sc, err := Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// runBounded runs the scenario and fails (dumping goroutines) if it does not
// return within a generous bound.
func runBounded(t *testing.T, ctx context.Context, sc *Scenario, opts Options) *Report {
	t.Helper()
	type out struct {
		r   *Report
		err error
	}
	ch := make(chan out, 1)
	go func() {
		r, err := Run(ctx, sc, opts)
		ch <- out{r, err}
	}()
	select {
	case o := <-ch:
		if o.err != nil {
			t.Fatal(o.err)
		}
		return o.r
	case <-time.After(2 * time.Minute):
		var b strings.Builder
		_ = pprof.Lookup("goroutine").WriteTo(&b, 2)
		t.Fatalf("Run did not return within 2 minutes; goroutines:\n%s", b.String())
		return nil
	}
}

const countsScenario = `{
  "name": "counts",
  "seed": 3,
  "agents": {"count": 3, "subAgents": 2, "depth": 1, "levels": [{}, {"deny": ["broken"]}]},
  "tools": [
    {"name": "ok", "mode": "parallel", "latency": {"kind": "uniform", "min": "0s", "max": "1ms"}, "outputBytes": 100},
    {"name": "broken", "mode": "exclusive", "latency": {"kind": "constant", "value": "0s"}, "failureRate": 1},
    {"name": "slow", "mode": "by-argument", "parallelFraction": 0.5,
     "latency": {"kind": "constant", "value": "0s"}, "timeoutRate": 1, "timeout": "5ms"}
  ],
  "turns": {"perAgent": 4, "callsPerTurn": {"min": 3, "max": 3}},
  "load": {"model": "closed"}
}`

// TestRun_SummaryCountsEqualCallsMade: 9 agents × 4 turns × 3 calls; every
// call gets a result and a finished event; the injected failures and
// timeouts are counted under their codes, per tool; the sub-agents, denied
// the broken tool, never call it.
func TestRun_SummaryCountsEqualCallsMade(t *testing.T) {
	sc := mustParse(t, countsScenario)
	r := runBounded(t, context.Background(), sc, Options{})
	const want = 9 * 4 * 3
	if r.Stopped != StoppedComplete || r.TurnsPlanned != 36 || r.TurnsDone != 36 || r.TurnErrors != 0 {
		t.Fatalf("turns: %+v", r)
	}
	if r.Calls != want || r.Results != want || r.Events.Finished != want || r.Events.Missing != 0 {
		t.Fatalf("calls %d results %d finished events %d missing %d, want %d", r.Calls, r.Results, r.Events.Finished, r.Events.Missing, want)
	}
	var perTool int64
	for _, tr := range r.Tools {
		perTool += tr.Calls
	}
	if perTool != want || r.CallLatency.Count != want {
		t.Fatalf("per-tool calls %d, call latency count %d, want %d", perTool, r.CallLatency.Count, want)
	}
	ok, broken, slow := r.Tools["ok"], r.Tools["broken"], r.Tools["slow"]
	if ok == nil || len(ok.Failures) != 0 {
		t.Fatalf("ok: %+v", ok)
	}
	if broken == nil || broken.Failures[CodeInjectedFailure] != broken.Calls || r.Failures[CodeInjectedFailure] != broken.Calls {
		t.Fatalf("broken: %+v, failures %v", broken, r.Failures)
	}
	if slow == nil || slow.Failures[string(runtime.CodeToolTimeout)] != slow.Calls || r.Failures[string(runtime.CodeToolTimeout)] != slow.Calls {
		t.Fatalf("slow: %+v, failures %v", slow, r.Failures)
	}
	if broken.Calls+slow.Calls+ok.Calls != want || sumCounts(r.Failures) != broken.Calls+slow.Calls {
		t.Fatalf("failures %v", r.Failures)
	}
	if r.QueueDepth.MaxTurnsInFlightPerAgent != 1 {
		t.Fatalf("closed loop: %d turns in flight for one agent", r.QueueDepth.MaxTurnsInFlightPerAgent)
	}
	var b strings.Builder
	if err := r.WriteSummary(&b); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"108 made, 108 results", "LOAD_INJECTED_FAILURE", "TOOL_TIMEOUT", "p99.9", "admission wait"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("summary lacks %q:\n%s", s, b.String())
		}
	}
}

// TestRun_SameSeedSameCalls: the generator draws everything from the seed,
// so two runs make the same calls of the same tools with the same outcomes.
func TestRun_SameSeedSameCalls(t *testing.T) {
	sc := `{"name": "seeded", "seed": 5, "agents": {"count": 4},
	  "tools": [
	    {"name": "a", "mode": "parallel", "latency": {"kind": "constant", "value": "0s"}, "failureRate": 0.3},
	    {"name": "b", "mode": "exclusive", "latency": {"kind": "constant", "value": "0s"}, "failureRate": 0.6}],
	  "turns": {"perAgent": 5, "callsPerTurn": {"min": 1, "max": 6}, "mix": {"a": 2, "b": 1}},
	  "load": {"model": "%s"%s}}`
	summary := func(r *Report) string {
		return fmt.Sprintf("calls %d a %d %v b %d %v", r.Calls, r.Tools["a"].Calls, r.Tools["a"].Failures, r.Tools["b"].Calls, r.Tools["b"].Failures)
	}
	closed := runBounded(t, context.Background(), mustParse(t, fmt.Sprintf(sc, "closed", "")), Options{})
	again := runBounded(t, context.Background(), mustParse(t, fmt.Sprintf(sc, "closed", "")), Options{})
	open := runBounded(t, context.Background(), mustParse(t, fmt.Sprintf(sc, "open", `, "rate": 2000`)), Options{})
	if summary(closed) != summary(again) || summary(closed) != summary(open) {
		t.Fatalf("runs differ:\n%s\n%s\n%s", summary(closed), summary(again), summary(open))
	}
	if closed.Tools["a"].Failures[CodeInjectedFailure] == 0 || closed.Tools["b"].Failures[CodeInjectedFailure] == 0 {
		t.Fatalf("no failures drawn: %s", summary(closed))
	}
}

// TestRun_OpenLoopShowsQueueingClosedLoopDoesNot: one agent, one slow
// exclusive call per turn. The closed loop never has two turns of the agent
// in flight. The open loop's turns arrive every 1 ms, faster than the
// 30 ms tool, so they queue, and their latency, counted from each intended
// start, shows it: the scope runs the exclusive calls one at a time, so the
// last of 10 turns ends at least 10 × 30 ms after the first started,
// and was meant to start at most 9 ms after it: ≥ 291 ms. Only lower bounds
// are asserted (a sleep never ends early), so a slow machine cannot fail it.
func TestRun_OpenLoopShowsQueueingClosedLoopDoesNot(t *testing.T) {
	sc := `{"name": "queueing", "agents": {"count": 1},
	  "tools": [{"name": "commit", "mode": "exclusive", "latency": {"kind": "constant", "value": "30ms"}}],
	  "turns": {"perAgent": 10, "callsPerTurn": {"min": 1, "max": 1}},
	  "load": {"model": "%s"%s}}`
	closed := runBounded(t, context.Background(), mustParse(t, fmt.Sprintf(sc, "closed", "")), Options{})
	open := runBounded(t, context.Background(), mustParse(t, fmt.Sprintf(sc, "open", `, "rate": 1000`)), Options{})
	for _, r := range []*Report{closed, open} {
		if r.TurnsDone != 10 || r.Results != 10 || sumCounts(r.Failures) != 0 {
			t.Fatalf("%s: %+v", r.Model, r)
		}
		if r.TurnLatency.MinMs < 29.9 {
			t.Fatalf("%s: a turn took %.3f ms, less than its 30 ms tool", r.Model, r.TurnLatency.MinMs)
		}
	}
	if closed.QueueDepth.MaxTurnsInFlightPerAgent != 1 {
		t.Fatalf("closed loop: %d turns in flight for the agent, want 1", closed.QueueDepth.MaxTurnsInFlightPerAgent)
	}
	// The timeline ends with the final counts and never goes backwards.
	for _, r := range []*Report{closed, open} {
		tl := r.Timeline
		if len(tl) == 0 || tl[len(tl)-1].TurnsDone != 10 || tl[len(tl)-1].Results != 10 || tl[len(tl)-1].TurnsInFlight != 0 {
			t.Fatalf("%s timeline: %+v", r.Model, tl)
		}
		for i := 1; i < len(tl); i++ {
			if tl[i].Seconds < tl[i-1].Seconds || tl[i].TurnsDone < tl[i-1].TurnsDone || tl[i].Results < tl[i-1].Results {
				t.Fatalf("%s timeline goes backwards at %d: %+v", r.Model, i, tl)
			}
		}
	}
	if open.QueueDepth.MaxTurnsInFlightPerAgent < 2 {
		t.Fatalf("open loop: the turns never queued (max %d in flight)", open.QueueDepth.MaxTurnsInFlightPerAgent)
	}
	if open.TurnLatency.MaxMs < 290 {
		t.Fatalf("open loop: max turn latency %.3f ms hides the queueing (≥ 291 ms by construction)", open.TurnLatency.MaxMs)
	}
	// With one turn in flight at most, the generator itself waits; counted
	// from the intended starts, the wait still shows (no coordinated
	// omission), though the agent never has two turns in flight.
	gated := runBounded(t, context.Background(), mustParse(t, fmt.Sprintf(sc, "open", `, "rate": 1000, "maxInFlight": 1`)), Options{})
	if gated.TurnsDone != 10 || gated.QueueDepth.MaxTurnsInFlightPerAgent != 1 {
		t.Fatalf("gated open loop: %+v", gated)
	}
	if gated.TurnLatency.MaxMs < 290 {
		t.Fatalf("gated open loop: max turn latency %.3f ms omits the generator's wait (≥ 291 ms by construction)", gated.TurnLatency.MaxMs)
	}
	var b strings.Builder
	_ = gated.WriteSummary(&b)
	t.Logf("gated open loop:\n%s", b.String())
}

// TestCallArgs_TextIsJSONMarshal: the hand-written argument text is what
// encoding/json writes for every combination.
func TestCallArgs_TextIsJSONMarshal(t *testing.T) {
	for _, ns := range []int64{0, 1, 123456789, 1 << 62} {
		for bits := range 8 {
			a := callArgs{SleepNs: ns, Fail: bits&1 != 0, Hang: bits&2 != 0, Parallel: bits&4 != 0}
			want, _ := json.Marshal(a)
			if got := a.text(); got != string(want) {
				t.Fatalf("%+v: %s, want %s", a, got, want)
			}
		}
	}
}

// TestRun_InterruptReportsWhatRan: ending the ctx mid-run stops it; the
// report says interrupted and accounts for every call started.
func TestRun_InterruptReportsWhatRan(t *testing.T) {
	sc := mustParse(t, `{"name": "interrupt", "agents": {"count": 3},
	  "tools": [{"name": "forever", "mode": "parallel", "latency": {"kind": "constant", "value": "1h"}}],
	  "turns": {"perAgent": 5, "callsPerTurn": {"min": 2, "max": 2}},
	  "load": {"model": "closed"}}`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := runBounded(t, ctx, sc, Options{ProgressEvery: time.Millisecond, Progress: func(p Progress) {
		if p.TurnsInFlight == 3 {
			cancel()
		}
	}})
	if r.Stopped != StoppedInterrupted {
		t.Fatalf("stopped %q", r.Stopped)
	}
	if r.TurnsStarted != 3 || r.TurnsDone != 3 || r.Calls != 6 || r.Results != 6 || sumCounts(r.Failures) != 6 {
		t.Fatalf("report: turns %d/%d calls %d results %d failures %v", r.TurnsStarted, r.TurnsDone, r.Calls, r.Results, r.Failures)
	}
}

// TestRun_DurationStopsStartingTurns: the scenario's duration stops new
// turns; those in flight finish with their results.
func TestRun_DurationStopsStartingTurns(t *testing.T) {
	sc := mustParse(t, `{"name": "duration", "agents": {"count": 2},
	  "tools": [{"name": "t", "mode": "parallel", "latency": {"kind": "constant", "value": "20ms"}}],
	  "turns": {"perAgent": 100000, "callsPerTurn": {"min": 1, "max": 1}},
	  "load": {"model": "closed", "duration": "100ms"}}`)
	r := runBounded(t, context.Background(), sc, Options{})
	if r.Stopped != StoppedDuration || r.TurnsDone != r.TurnsStarted || r.Results != r.Calls || sumCounts(r.Failures) != 0 {
		t.Fatalf("report: %+v", r)
	}
}

// TestRun_ScenarioBuiltInGoIsChecked: Run refuses what Parse would, with
// the paths, instead of running a scenario that cannot run.
func TestRun_ScenarioBuiltInGoIsChecked(t *testing.T) {
	sc := &Scenario{Name: "go", Agents: Agents{Count: 1}, Turns: Turns{PerAgent: 1, CallsPerTurn: IntRange{1, 1}},
		Load: LoadModel{Model: ModelOpen}}
	_, err := Run(context.Background(), sc, Options{})
	var se *ScenarioError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "$.tools: at least one tool") || !strings.Contains(err.Error(), "$.load.rate") {
		t.Fatalf("got %v", err)
	}
	if sc.Seed != nil || sc.Load.MaxInFlight != 0 {
		t.Fatalf("Run changed the caller's scenario: %+v", sc)
	}
	if _, err := Run(context.Background(), nil, Options{}); !errors.As(err, &se) {
		t.Fatalf("nil scenario: %v", err)
	}
}

// TestCompare_MarksBeyondNoiseInTheWorseDirection: a doubled latency is a
// regression, a halved one an improvement, a 10 % change and sub-0.05 ms
// changes are noise, and a failure rate from nothing is marked.
func TestCompare_MarksBeyondNoiseInTheWorseDirection(t *testing.T) {
	a := &Report{Results: 100, Failures: map[string]int64{}}
	a.TurnLatency = Latency{P50Ms: 10, P90Ms: 10, P99Ms: 10, P999Ms: 10}
	a.CallLatency = Latency{P50Ms: 0.01, P90Ms: 10, P99Ms: 10, P999Ms: 10}
	a.Throughput.TurnsPerSecond = 100
	b := *a
	b.Failures = map[string]int64{"X": 5}
	b.TurnLatency = Latency{P50Ms: 20, P90Ms: 5, P99Ms: 11, P999Ms: 10}
	b.CallLatency = Latency{P50Ms: 0.04, P90Ms: 10, P99Ms: 10, P999Ms: 10}
	b.Throughput.TurnsPerSecond = 300
	got := map[string]Diff{}
	for _, d := range Compare(a, &b, 0) {
		got[d.Metric] = d
	}
	check := func(metric string, marked, regression bool) {
		t.Helper()
		if d := got[metric]; d.Marked != marked || d.Regression != regression {
			t.Errorf("%s: %+v, want marked %v regression %v", metric, d, marked, regression)
		}
	}
	check("turn p50 ms", true, true)
	check("turn p90 ms", true, false)
	check("turn p99 ms", false, false)
	check("call p50 ms", false, false) // 4× but 0.03 ms
	check("throughput turns/s", true, false)
	check("failure rate", true, true)
	check("throughput calls/s", false, false) // 0 and 0
}

// TestCollector_TimelineStaysBounded: a long run's timeline is thinned to
// at most maxTimeline samples, oldest first, keeping the newest.
func TestCollector_TimelineStaysBounded(t *testing.T) {
	c := newCollector(nil)
	c.start = time.Now()
	thinned := 0
	for i := range 3 * maxTimeline {
		c.turnsDone.Store(int64(i))
		if c.sample() {
			thinned++
		}
		if len(c.timeline) >= maxTimeline {
			t.Fatalf("%d samples after %d", len(c.timeline), i+1)
		}
	}
	if thinned == 0 || c.timeline[len(c.timeline)-1].TurnsDone != int64(3*maxTimeline-1) {
		t.Fatalf("thinned %d times, last %+v", thinned, c.timeline[len(c.timeline)-1])
	}
	for i := 1; i < len(c.timeline); i++ {
		if c.timeline[i].TurnsDone <= c.timeline[i-1].TurnsDone {
			t.Fatalf("out of order at %d", i)
		}
	}
}

// TestNextTurn_IDsNameTheTurnAndItsCalls: a turn's id is "<agent>/<turn>"
// and its calls' "<turn id>/<index>" (the collector finds a call's turn by
// them, and record/replay logs them), with indexes of any width; the closed
// model's reuse fills the agent's last slice again without changing them.
func TestNextTurn_IDsNameTheTurnAndItsCalls(t *testing.T) {
	sc := mustParse(t, `{"name": "ids", "agents": {"count": 1},
	  "tools": [{"name": "z", "mode": "parallel", "latency": {"kind": "constant", "value": "0s"}}],
	  "turns": {"perAgent": 3, "callsPerTurn": {"min": 1, "max": 12}}, "load": {"model": "closed"}}`)
	sc.Defaults()
	for _, reuse := range []bool{false, true} {
		a := &agent{key: "a17.2", rng: rand.New(rand.NewPCG(1, 2)), picks: []int{0}, cum: []float64{1}}
		var last []runtime.TurnCall
		for turn := range 40 {
			id, calls := a.nextTurn(sc, reuse)
			if want := fmt.Sprintf("a17.2/%d", turn); id != want {
				t.Fatalf("reuse %v: turn id %q, want %q", reuse, id, want)
			}
			for i, c := range calls {
				if want := fmt.Sprintf("%s/%d", id, i); c.ID != want || c.Name != "z" || c.ArgumentsText != `{"sleep_ns":0}` {
					t.Fatalf("reuse %v: call %d of turn %s: %+v, want id %q", reuse, i, id, c, want)
				}
				if turnOf(c.ID) != id {
					t.Fatalf("turnOf(%q) = %q, want %q", c.ID, turnOf(c.ID), id)
				}
			}
			if reuse && last != nil && len(calls) <= cap(last) && &calls[0] != &last[:1][0] {
				t.Fatalf("turn %d: a new slice though the last one (cap %d) holds its %d calls", turn, cap(last), len(calls))
			}
			last = calls
		}
	}
}
