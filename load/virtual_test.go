package load

import (
	"bytes"
	"context"
	"encoding/json"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolscope/toolscope/runtime"
	"github.com/toolscope/toolscope/simclock"
)

// An hour of simulated tool latency: 4 agents × 10 turns × 3 calls of an
// exclusive 30 s tool (120 calls × 30 s = 1 h). Each agent's turns run its
// calls one after another, so on the clock the run lasts exactly
// 10 × 3 × 30 s = 15 min and every turn 90 s.
const hourScenario = `{
  "name": "hour",
  "agents": {"count": 4},
  "tools": [{"name": "slow", "mode": "exclusive", "latency": {"kind": "constant", "value": "30s"}, "outputBytes": 10}],
  "turns": {"perAgent": 10, "callsPerTurn": {"min": 3, "max": 3}},
  "load": {"model": "closed"}
}`

// TestVirtual_HourOfToolLatencyRunsOnTheClock: the virtual run's elapsed
// time and latencies are exactly the simulated ones. It fails only if the
// run takes more than a minute of wall time (it takes well under a second;
// go run ./cmd/toolscope-load -virtual -scenario example:hour shows it).
func TestVirtual_HourOfToolLatencyRunsOnTheClock(t *testing.T) {
	sc := mustParse(t, hourScenario)
	began := time.Now()
	r := runBounded(t, context.Background(), sc, Options{Virtual: true})
	if wall := time.Since(began); wall > time.Minute {
		t.Errorf("an hour of simulated latency took %v of wall time", wall)
	}
	if !r.Virtual || r.Stopped != StoppedComplete || r.Results != 120 {
		t.Fatalf("virtual %v stopped %s results %d", r.Virtual, r.Stopped, r.Results)
	}
	if r.Elapsed != (15 * time.Minute).Seconds() {
		t.Fatalf("elapsed %v s on the clock, want 900", r.Elapsed)
	}
	if got := r.Parallelism.SerialSeconds; got != 3600 {
		t.Fatalf("serial call time %v s, want 3600 (one hour)", got)
	}
	near := func(got, want float64) bool { return got >= want*0.999 && got <= want*1.001 } // HDR: 3 digits
	// The timeline is sampled on the clock: every 100 ms of it, thinned
	// (with the interval doubled) past 4096 samples, up to the end.
	if tl := r.Timeline; len(tl) < 100 || tl[len(tl)-1].Seconds != 900 || tl[len(tl)-1].TurnsDone != 40 || tl[0].Seconds <= 0 {
		t.Fatalf("timeline of %d samples, last %+v: want one over the 900 s on the clock", len(tl), tl[len(tl)-1])
	}
	if !near(r.TurnLatency.MinMs, 90000) || !near(r.TurnLatency.MaxMs, 90000) ||
		!near(r.CallService.MinMs, 30000) || !near(r.CallService.MaxMs, 30000) || r.AdmissionWait.MaxMs != 0.001 {
		t.Fatalf("turn %+v call service %+v admission %+v: want every turn 90 s, every call 30 s, no wait", r.TurnLatency, r.CallService, r.AdmissionWait)
	}
}

// A scaled-down scenario with every kind of tool, failures and timeouts,
// think time and sub-agents. Its latencies stay far below the declared
// timeout, so that only the calls drawn to hang time out on the wall clock
// too, however slow the machine.
const mixedScenario = `{
  "name": "mixed",
  "seed": 11,
  "agents": {"count": 3, "subAgents": 1, "depth": 1},
  "tools": [
    {"name": "par", "mode": "parallel", "latency": {"kind": "uniform", "min": "1ms", "max": "20ms"}, "outputBytes": 20, "failureRate": 0.1},
    {"name": "excl", "mode": "exclusive", "latency": {"kind": "constant", "value": "5ms"}, "outputBytes": 5},
    {"name": "byarg", "mode": "by-argument", "parallelFraction": 0.5,
     "latency": {"kind": "normal", "mean": "8ms", "stddev": "2ms"}, "timeoutRate": 0.2, "timeout": "1s", "outputBytes": 7}
  ],
  "turns": {"perAgent": 6, "callsPerTurn": {"min": 1, "max": 5}, "thinkTime": {"kind": "uniform", "min": "0s", "max": "10ms"}},
  "load": {"model": "closed"}
}`

func recordRun(t *testing.T, scenario string, virtual bool) (*Report, []byte) {
	t.Helper()
	var buf bytes.Buffer
	r := runBounded(t, context.Background(), mustParse(t, scenario), Options{Virtual: virtual, Record: &buf})
	if r.Stall != "" {
		t.Fatalf("the run stalled: %s", r.Stall)
	}
	return r, buf.Bytes()
}

// outcomes maps each call (agent/turn/call) to its tool, arguments and
// result, from a log.
func outcomes(t *testing.T, log []byte) map[string]string {
	t.Helper()
	l, err := ReadLog(bytes.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, c := range l.Calls {
		res, _ := json.Marshal(c.Result)
		m[callID(c.Agent, c.Turn, c.Call)] = c.Tool + " " + string(c.Arguments) + " " + string(res)
	}
	return m
}

// TestVirtual_SameResultsAsRealTime: run both ways, every call of every
// agent has the same tool, arguments and result; on the clock no call is
// slower than its drawn latency allows, and the run ends.
func TestVirtual_SameResultsAsRealTime(t *testing.T) {
	rw, lw := recordRun(t, mixedScenario, false)
	rv, lv := recordRun(t, mixedScenario, true)
	if rw.Results != rv.Results || rw.Results == 0 {
		t.Fatalf("results: wall %d, virtual %d", rw.Results, rv.Results)
	}
	ow, ov := outcomes(t, lw), outcomes(t, lv)
	if len(ow) != len(ov) {
		t.Fatalf("calls: wall %d, virtual %d", len(ow), len(ov))
	}
	for id, w := range ow {
		if ov[id] != w {
			t.Fatalf("call %s: wall %s, virtual %s", id, w, ov[id])
		}
	}
	for code, n := range rw.Failures {
		if rv.Failures[code] != n {
			t.Fatalf("failures: wall %v, virtual %v", rw.Failures, rv.Failures)
		}
	}
	if rv.Failures["TOOL_TIMEOUT"] == 0 || rv.Failures[CodeInjectedFailure] == 0 {
		t.Fatalf("the scenario should draw timeouts and failures: %v", rv.Failures)
	}

}

// canonical sorts a log's lines: lines of turns ending at the same virtual
// instant may be written in either order (see the package doc).
func canonical(log []byte) string {
	lines := strings.Split(strings.TrimSpace(string(log)), "\n")
	sort.Strings(lines[1:])
	return strings.Join(lines, "\n")
}

// openMixedScenario is mixedScenario on an open loop, with no think time:
// one agent's turns overlap and queue at its admission.
func openMixedScenario() string {
	return strings.Replace(strings.Replace(mixedScenario, `"load": {"model": "closed"}`,
		`"load": {"model": "open", "rate": 400, "arrival": "poisson", "maxInFlight": 4}`, 1),
		`, "thinkTime": {"kind": "uniform", "min": "0s", "max": "10ms"}`, "", 1)
}

// TestRecord_SameSeedSameLog: the same seed and scenario on virtual time
// give the same log, times included, closed and open loop (where one
// agent's turns overlap and queue at its admission).
func TestRecord_SameSeedSameLog(t *testing.T) {
	open := openMixedScenario()
	for name, sc := range map[string]string{"closed": mixedScenario, "open": open} {
		t.Run(name, func(t *testing.T) {
			_, a := recordRun(t, sc, true)
			_, b := recordRun(t, sc, true)
			if ca, cb := canonical(a), canonical(b); ca != cb {
				la, lb := strings.Split(ca, "\n"), strings.Split(cb, "\n")
				for i := range min(len(la), len(lb)) {
					if la[i] != lb[i] {
						t.Fatalf("line %d differs:\n%s\n%s", i+1, la[i], lb[i])
					}
				}
				t.Fatalf("logs differ in length: %d and %d lines", len(la), len(lb))
			}
		})
	}
}

// TestVirtual_QueuedCallHoldsTheClockUntilInLine: a call the model sees
// waiting at its scope's admission keeps the clock held until it is in the
// registry's line, however long its goroutine takes from its guards to
// the admission. Were the clock to move meanwhile, a call arriving later
// could be admitted first (the model says otherwise): the log would differ
// from the undisturbed run's, or the run stall on the hold of a call the
// registry does not let start.
func TestVirtual_QueuedCallHoldsTheClockUntilInLine(t *testing.T) {
	open := openMixedScenario()
	_, want := recordRun(t, open, true)
	var mu sync.Mutex
	var queued, moved []string
	testAfterGuards = func(id string, q bool, clk *simclock.Clock) {
		if !q {
			return
		}
		// Slow on the way to the admission: until the clock moves, or
		// (it is held, as it should be) a bound of wall time.
		at := clk.Now()
		bound := time.Now().Add(20 * time.Millisecond)
		for clk.Now().Equal(at) && time.Now().Before(bound) {
			time.Sleep(time.Millisecond)
		}
		mu.Lock()
		defer mu.Unlock()
		queued = append(queued, id)
		if !clk.Now().Equal(at) {
			moved = append(moved, id)
		}
	}
	defer func() { testAfterGuards = nil }()
	_, got := recordRun(t, open, true)
	if len(queued) == 0 {
		t.Fatal("no call of the scenario waited at its admission")
	}
	if len(moved) > 0 {
		t.Errorf("the clock moved while %d of %d queued calls were on their way to their admission: %v", len(moved), len(queued), moved)
	}
	if canonical(got) != canonical(want) {
		t.Fatal("the log differs from the undisturbed run's")
	}
}

// TestVirtual_StallReportNamesHolds: a run whose clock stands still, held,
// is stopped, and its report names what holds the clock: the model's holds
// by call and the clock's state.
func TestVirtual_StallReportNamesHolds(t *testing.T) {
	defer func(d time.Duration) { StallAfter = d }(StallAfter)
	StallAfter = 200 * time.Millisecond
	var once sync.Once
	var stuck string
	block := runtime.WithHooks(runtime.Hooks{CallStage: func(ex runtime.Execution, st runtime.CallStage) {
		if st.Stage != runtime.StageDispatching {
			return
		}
		once.Do(func() {
			// Outside the clock, where the model cannot see: a bounded
			// wait well past StallAfter.
			stuck = ex.CallID()
			time.Sleep(5 * StallAfter)
		})
	}})
	r := runBounded(t, context.Background(), mustParse(t, hourScenario), Options{Virtual: true, RegistryOptions: []runtime.Option{block}})
	if r.Stopped != StoppedStalled {
		t.Fatalf("stopped %s, want %s", r.Stopped, StoppedStalled)
	}
	t.Log(r.Stall)
	for _, want := range []string{stuck + " admitted, body not begun", "holds", "tasks asleep", "deadlines"} {
		if !strings.Contains(r.Stall, want) {
			t.Errorf("the stall report does not say %q:\n%s", want, r.Stall)
		}
	}
}

// queuedCount is a registry's Registry.Queued, set by hand.
type queuedCount struct{ n atomic.Int64 }

func (q *queuedCount) Queued() int { return int(q.n.Load()) }

// TestVirtual_InLineOnlyWhenTheCountProvesIt: the model gives up a queued
// call's hold only when the registry's lines count every call it sees in
// them — and not while a call it let go straight to its body may be in a
// line for a moment (its scope's slot not yet given back by the
// registry), which the count cannot tell apart from the queued call.
func TestVirtual_InLineOnlyWhenTheCountProvesIt(t *testing.T) {
	clk := simclock.New()
	release := clk.Hold()
	defer release()
	reg := &queuedCount{}
	m := newVModel(clk, 10)
	m.reg = reg
	inLine := func() bool { m.mu.Lock(); defer m.mu.Unlock(); return m.inLineLocked() }

	m.startTurn("s", []string{"s/0/0"}, []bool{false}) // exclusive, starts at once
	m.bodyStart("s/0/0")
	m.startTurn("s", []string{"s/1/0"}, []bool{false}) // waits for it at admission
	m.startTurn("u", []string{"u/0/0"}, []bool{true})  // another scope: starts at once
	if !m.guarded("s/1/0") {
		t.Fatal("s/1/0: the model should see it queued")
	}
	if inLine() {
		t.Fatal("in line with nothing counted")
	}
	// One call in a line: the queued one, or u/0/0 on its way to its body
	// (its scope's slot not given back yet)? The count cannot say.
	reg.n.Store(1)
	if inLine() {
		t.Fatal("in line while a call let go to its body may be the one counted")
	}
	m.bodyStart("u/0/0")
	if !inLine() {
		t.Fatal("not in line with the queued call counted and no other call on its way")
	}
}

// TestVirtual_N1_OpenLoopTimeoutsDoNotStall: a random scenario an attack
// found stalling on every run before the admission line ordered waiters
// by the ticket their failed fast path took (docs/contract.md#n1): an open
// loop over one by-argument tool with 1 ms timeouts, two slots. The model
// held the clock for a call that a later one had overtaken at admission.
func TestVirtual_N1_OpenLoopTimeoutsDoNotStall(t *testing.T) {
	const sc = `{"name":"random","seed":894,"registry":{"maxParallel":2},"agents":{"count":2},
  "tools":[{"name":"t0","mode":"by-argument","latency":{"kind":"uniform","min":"0s","max":"1584us"},
    "parallelFraction":0.13,"timeout":"1ms","timeoutRate":0.09,"outputBytes":24}],
  "turns":{"perAgent":8,"callsPerTurn":{"min":1,"max":5}},
  "load":{"model":"open","rate":1609,"arrival":"poisson","maxInFlight":5}}`
	for range 5 {
		r, _ := recordRun(t, sc, true)
		if r.TurnsDone != 16 {
			t.Fatalf("%d turns done, want 16", r.TurnsDone)
		}
	}
}
