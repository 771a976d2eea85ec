package load

import (
	"context"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/toolscope/toolscope/runtime"
)

// eventRecount is a recount of a run from the registry's typed events (the
// Event hook: every event, in place, never dropped), the source the
// collector used before it took its figures from the call hooks.
type eventRecount struct {
	mu         sync.Mutex
	finished   int64
	dispatched int64 // finished calls that were dispatched (an admission wait each)
	byCode     map[string]int64
	perTool    map[string]int64
	turns      int64 // TurnFinished
}

func (c *eventRecount) event(e runtime.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch e.Kind {
	case runtime.ExecutionFinished:
		c.finished++
		c.perTool[e.Tool]++
		if !e.DispatchDoneAt.IsZero() {
			c.dispatched++
		}
		if e.IsError {
			code := string(e.Code)
			if code == "" {
				code = CodeUncoded
			}
			c.byCode[code]++
		}
	case runtime.TurnFinished:
		c.turns++
	}
}

// TestCollector_HookFiguresEqualEventRecount: the figures the collector
// takes from the registry's hooks (call latency, admission wait, service,
// per tool, failures by code) count exactly the calls a recount from the
// typed events sees, in the closed and the open model, on a scenario with
// injected failures, timeouts, denials and exclusive tools.
func TestCollector_HookFiguresEqualEventRecount(t *testing.T) {
	for _, model := range []string{"closed", "open"} {
		t.Run(model, func(t *testing.T) {
			sc := mustParse(t, countsScenario)
			sc.Load.Model = model
			if model == "open" {
				sc.Load.Rate = 2000
			}
			rc := &eventRecount{byCode: map[string]int64{}, perTool: map[string]int64{}}
			r := runBounded(t, context.Background(), sc, Options{
				RegistryOptions: []runtime.Option{runtime.WithHooks(runtime.Hooks{Event: rc.event})},
			})
			rc.mu.Lock()
			defer rc.mu.Unlock()
			const want = 9 * 4 * 3
			if rc.finished != want || r.Results != want {
				t.Fatalf("recount %d finished, report %d results, want %d", rc.finished, r.Results, want)
			}
			if r.Events.Finished != rc.finished || r.CallLatency.Count != rc.finished || r.Events.Missing != 0 || r.Events.Dropped != 0 {
				t.Fatalf("report: %d finished, %d call latencies, %d missing, %d dropped; recount %d finished",
					r.Events.Finished, r.CallLatency.Count, r.Events.Missing, r.Events.Dropped, rc.finished)
			}
			if r.AdmissionWait.Count != rc.dispatched || r.CallService.Count != rc.dispatched || rc.dispatched == 0 {
				t.Fatalf("admission waits %d, services %d, recount %d dispatched", r.AdmissionWait.Count, r.CallService.Count, rc.dispatched)
			}
			if r.AdmissionWait.MinMs < 0 || r.CallLatency.MinMs < 0 || r.CallService.MinMs < 0 {
				t.Fatalf("negative: admission %v, call %v, service %v", r.AdmissionWait.MinMs, r.CallLatency.MinMs, r.CallService.MinMs)
			}
			if len(r.Failures) != len(rc.byCode) || len(rc.byCode) < 2 {
				t.Fatalf("failures %v, recount %v", r.Failures, rc.byCode)
			}
			for code, n := range rc.byCode {
				if r.Failures[code] != n {
					t.Fatalf("failures %v, recount %v", r.Failures, rc.byCode)
				}
			}
			for tool, n := range rc.perTool {
				tr := r.Tools[tool]
				if tr == nil || tr.Calls != n || tr.Latency == nil || tr.Latency.Count != n {
					t.Fatalf("tool %s: %+v, recount %d", tool, tr, n)
				}
			}
			if rc.turns != r.TurnsDone || r.Parallelism.TurnSeconds <= 0 || r.Parallelism.SerialSeconds <= 0 {
				t.Fatalf("turns %d done, recount %d; parallelism %+v", r.TurnsDone, rc.turns, r.Parallelism)
			}
		})
	}
}

// TestCollector_FoldKeepsFiguresExact: a call's or turn's latency is
// recorded once, in the interval's histogram, and folded into the run's
// when the timeline samples and when the report is made; the run's figures
// and every sample's interval p50/p99 are exactly those of recording each
// value into both histograms, wherever the samples fall.
func TestCollector_FoldKeepsFiguresExact(t *testing.T) {
	sc := mustParse(t, countsScenario)
	rng := rand.New(rand.NewPCG(1, 2))
	c := newCollector(sc)
	callAll, turnAll, callIv, turnIv := newHist(), newHist(), newHist(), newHist()
	var want []Sample
	for round := range 50 {
		for range rng.IntN(200) {
			d := time.Duration(rng.ExpFloat64() * float64(time.Millisecond))
			if rng.IntN(2) == 0 {
				c.mu.Lock()
				c.recordCall(callObs{tool: "ok", lat: d})
				c.mu.Unlock()
				record(callAll, d)
				record(callIv, d)
			} else {
				c.mu.Lock()
				record(c.turnIv, d)
				c.mu.Unlock()
				record(turnAll, d)
				record(turnIv, d)
			}
		}
		if round%3 != 2 { // some rounds end without a sample
			c.sample()
			var s Sample
			s.CallP50Ms, s.CallP99Ms = interval(callIv)
			s.TurnP50Ms, s.TurnP99Ms = interval(turnIv)
			want = append(want, s)
		}
	}
	r := c.report(sc, 1, time.Second)
	if got, want := r.CallLatency, summarise(callAll); !reflect.DeepEqual(got, want) {
		t.Fatalf("call latency\n got %+v\nwant %+v", got, want)
	}
	if got, want := r.TurnLatency, summarise(turnAll); !reflect.DeepEqual(got, want) {
		t.Fatalf("turn latency\n got %+v\nwant %+v", got, want)
	}
	if got, want := summarise(c.toolLat["ok"]), summarise(callAll); !reflect.DeepEqual(got, want) {
		t.Fatalf("tool latency\n got %+v\nwant %+v", got, want)
	}
	if len(r.Timeline) != len(want) {
		t.Fatalf("%d samples, want %d", len(r.Timeline), len(want))
	}
	for i, s := range r.Timeline {
		w := want[i]
		if s.CallP50Ms != w.CallP50Ms || s.CallP99Ms != w.CallP99Ms || s.TurnP50Ms != w.TurnP50Ms || s.TurnP99Ms != w.TurnP99Ms {
			t.Fatalf("sample %d: %+v, want the interval's %+v", i, s, w)
		}
	}
}
