package load

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/toolscope/toolscope/runtime"
)

// wallScenario builds a small random scenario for the wall clock:
// latencies of at most 2 ms, failures, timeouts of a few ms, sub-agents
// with restrictions, MaxParallel 1–4, closed loop (with think time) or
// open loop (uniform or poisson, few slots), sometimes a duration.
func wallScenario(r *rand.Rand) string {
	var tools []string
	modes := []string{ModeParallel, ModeExclusive, ModeByArgument}
	for i := range 1 + r.IntN(3) {
		mode := modes[r.IntN(3)]
		t := fmt.Sprintf(`{"name":"t%d","mode":%q,"latency":{"kind":"uniform","min":"0s","max":"%dus"}`, i, mode, 1+r.IntN(2000))
		if mode == ModeByArgument {
			t += fmt.Sprintf(`,"parallelFraction":%.2f`, r.Float64())
		}
		if r.IntN(3) == 0 {
			t += fmt.Sprintf(`,"timeout":"%dms","timeoutRate":%.2f`, 1+r.IntN(3), r.Float64()*0.3)
		}
		if r.IntN(2) == 0 {
			t += fmt.Sprintf(`,"failureRate":%.2f`, r.Float64()*0.3)
		}
		tools = append(tools, t+fmt.Sprintf(`,"outputBytes":%d}`, r.IntN(64)))
	}
	agents := fmt.Sprintf(`{"count":%d}`, 1+r.IntN(6))
	if r.IntN(3) == 0 {
		agents = fmt.Sprintf(`{"count":%d,"subAgents":%d,"depth":1,"levels":[{},{"deny":["t0"]}]}`, 1+r.IntN(3), 1+r.IntN(2))
		if len(tools) == 1 {
			agents = strings.Replace(agents, `"deny":["t0"]`, `"deny":[]`, 1)
		}
	}
	turns := fmt.Sprintf(`"perAgent":%d,"callsPerTurn":{"min":1,"max":%d}`, 1+r.IntN(12), 1+r.IntN(6))
	model := `"model":"closed"`
	if r.IntN(2) == 0 {
		arrival := []string{ArrivalUniform, ArrivalPoisson}[r.IntN(2)]
		model = fmt.Sprintf(`"model":"open","rate":%d,"arrival":%q,"maxInFlight":%d`, 200+r.IntN(5000), arrival, 1+r.IntN(8))
	} else if r.IntN(2) == 0 {
		turns += `,"thinkTime":{"kind":"uniform","min":"0s","max":"500us"}`
	}
	if r.IntN(4) == 0 {
		model += fmt.Sprintf(`,"duration":"%dms"`, 1+r.IntN(20))
	}
	return fmt.Sprintf(`{"name":"random","seed":%d,"registry":{"maxParallel":%d},"agents":%s,"tools":[%s],"turns":{%s},"load":{%s}}`,
		r.IntN(1000), 1+r.IntN(4), agents, strings.Join(tools, ","), turns, model)
}

// TestAttack_Run_RandomCancelChecker: random scenarios on the wall clock,
// open and closed, cut short at a random point (after a random number of
// finished turns, as Ctrl-C does) or run to the end. Invariants: Run
// returns (bounded, goroutines dumped otherwise); every call of a started
// turn is answered exactly once (one CallFinished or CallAborted per call
// id, as many as the report's results); the report's counts agree with
// each other (turns started = done, calls = results = finished events =
// the call latency's count = the per-tool calls, failures by code = per
// tool); how it stopped matches what happened; the run's log (Record)
// reads back, however the run was cut; no goroutine is left.
func TestAttack_Run_RandomCancelChecker(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	r := rand.New(rand.NewPCG(29, 6))
	n := 24
	if testing.Short() {
		n = 8
	}
	for i := range n {
		doc := wallScenario(r)
		cancelAfter := int64(-1) // turns done before the ctx ends; -1: never
		if r.IntN(3) > 0 {
			cancelAfter = int64(r.IntN(12))
		}
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			sc := mustParse(t, doc)
			var mu sync.Mutex
			answered := map[string]int{}
			answer := func(id string) {
				mu.Lock()
				answered[id]++
				mu.Unlock()
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var cancelled atomic.Bool
			var log bytes.Buffer
			opts := Options{
				Record:        &log,
				ProgressEvery: 200 * time.Microsecond,
				Progress: func(p Progress) {
					if cancelAfter >= 0 && p.TurnsDone >= cancelAfter && !cancelled.Swap(true) {
						cancel()
					}
				},
				RegistryOptions: []runtime.Option{runtime.WithHooks(runtime.Hooks{
					CallFinished: func(ex runtime.Execution, _ runtime.CallDone) {
						if ex.Parent().IsZero() {
							answer(ex.CallID())
						}
					},
					CallAborted: func(_ context.Context, ci runtime.CallInfo) {
						if ci.Parent.IsZero() {
							answer(ci.CallID)
						}
					},
				})},
			}
			type out struct {
				r   *Report
				err error
			}
			ch := make(chan out, 1)
			go func() {
				rep, err := Run(ctx, sc, opts)
				ch <- out{rep, err}
			}()
			var o out
			select {
			case o = <-ch:
			case <-time.After(time.Minute):
				var b strings.Builder
				_ = pprof.Lookup("goroutine").WriteTo(&b, 2)
				t.Fatalf("Run did not return in a minute\n%s\ngoroutines:\n%s", doc, b.String())
			}
			if o.err != nil {
				t.Fatalf("%v\n%s", o.err, doc)
			}
			rep := o.r
			fail := func(format string, args ...any) {
				t.Helper()
				t.Fatalf("%s\nscenario %s\ncancel after %d turns\nreport: stopped %s planned %d started %d done %d errors %d calls %d results %d finished %d missing %d",
					fmt.Sprintf(format, args...), doc, cancelAfter, rep.Stopped, rep.TurnsPlanned, rep.TurnsStarted, rep.TurnsDone, rep.TurnErrors,
					rep.Calls, rep.Results, rep.Events.Finished, rep.Events.Missing)
			}
			mu.Lock()
			defer mu.Unlock()
			for id, k := range answered {
				if k != 1 {
					fail("call %s answered %d times", id, k)
				}
			}
			if int64(len(answered)) != rep.Results {
				fail("%d calls answered, %d results", len(answered), rep.Results)
			}
			if rep.TurnsStarted != rep.TurnsDone || rep.TurnErrors != 0 || rep.Calls != rep.Results ||
				rep.Events.Finished != rep.Results || rep.Events.Missing != 0 || rep.CallLatency.Count != rep.Results {
				fail("the counts disagree")
			}
			var perTool, perToolFailed, failed int64
			for _, tr := range rep.Tools {
				perTool += tr.Calls
				perToolFailed += sumCounts(tr.Failures)
			}
			failed = sumCounts(rep.Failures)
			if perTool != rep.Calls || perToolFailed != failed {
				fail("per tool %d calls %d failed; overall %d, %d", perTool, perToolFailed, rep.Calls, failed)
			}
			t.Logf("stopped %s: %d of %d turns, %d calls, %d failed", rep.Stopped, rep.TurnsDone, rep.TurnsPlanned, rep.Calls, failed)
			l, err := ReadLog(bytes.NewReader(log.Bytes()))
			if err != nil {
				fail("the run's log does not read back: %v", err)
			}
			if int64(len(l.Calls)) > rep.Results {
				fail("the log has %d calls, the run %d results", len(l.Calls), rep.Results)
			}
			switch rep.Stopped {
			case StoppedComplete:
				if rep.TurnsDone != rep.TurnsPlanned {
					fail("complete with %d of %d turns", rep.TurnsDone, rep.TurnsPlanned)
				}
			case StoppedInterrupted:
				if !cancelled.Load() {
					fail("interrupted, never cancelled")
				}
			case StoppedDuration:
				if sc.Load.Duration == 0 || rep.TurnsDone >= rep.TurnsPlanned {
					fail("stopped by a duration")
				}
			default:
				fail("stopped %q", rep.Stopped)
			}
		})
	}
}
