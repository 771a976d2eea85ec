package load

import (
	"bytes"
	"context"
	"encoding/json"
	"sort"
	"strings"
	"testing"
	"time"
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

// TestRecord_SameSeedSameLog: the same seed and scenario on virtual time
// give the same log, times included, closed and open loop (where one
// agent's turns overlap and queue at its admission).
func TestRecord_SameSeedSameLog(t *testing.T) {
	open := strings.Replace(strings.Replace(mixedScenario, `"load": {"model": "closed"}`,
		`"load": {"model": "open", "rate": 400, "arrival": "poisson", "maxInFlight": 4}`, 1),
		`, "thinkTime": {"kind": "uniform", "min": "0s", "max": "10ms"}`, "", 1)
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
