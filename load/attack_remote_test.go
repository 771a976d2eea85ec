package load

import (
	"context"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/toolscope/toolscope/runtime"
)

// manglingRemote is registryRemote whose agents' replies break the
// RemoteAgent contract (one result per call, in order) as a remote of
// another version or a confused member might.
type manglingRemote struct {
	registryRemote
	mangle func(calls []runtime.TurnCall, res *runtime.TurnResult) *runtime.TurnResult
}

type manglingAgent struct {
	RemoteAgent
	m *manglingRemote
}

func (a manglingAgent) ExecuteTurn(ctx context.Context, id string, calls []runtime.TurnCall) (*runtime.TurnResult, error) {
	res, err := a.RemoteAgent.ExecuteTurn(ctx, id, calls)
	if err != nil {
		return res, err
	}
	return a.m.mangle(calls, res), nil
}

func (r *manglingRemote) NewAgent(ctx context.Context, key, parent string, restrict *runtime.Restriction) (RemoteAgent, error) {
	ra, err := r.registryRemote.NewAgent(ctx, key, parent, restrict)
	if err != nil {
		return nil, err
	}
	return manglingAgent{ra, r}, nil
}

// TestAttack_Remote_RepliesThatBreakTheContract: a remote turn's reply
// with fewer results than calls and no error was filed as if the missing
// calls had never been made an answer (counted in Calls, neither a result
// nor a turn error); a nil result in the reply panicked the run (under the
// collector's lock); no reply and no error dropped the turn's calls the
// same way. Every call of a run must be answered once: such a reply is now
// a turn error (TurnErrors), and the calls it answered are results as
// before.
func TestAttack_Remote_RepliesThatBreakTheContract(t *testing.T) {
	for _, c := range []struct {
		name   string
		mangle func([]runtime.TurnCall, *runtime.TurnResult) *runtime.TurnResult
	}{
		{"one result short", func(_ []runtime.TurnCall, r *runtime.TurnResult) *runtime.TurnResult {
			r.Results = r.Results[:len(r.Results)-1]
			return r
		}},
		{"a nil result", func(_ []runtime.TurnCall, r *runtime.TurnResult) *runtime.TurnResult {
			r.Results[1] = nil
			return r
		}},
		{"no reply", func([]runtime.TurnCall, *runtime.TurnResult) *runtime.TurnResult { return nil }},
		{"one result too many", func(_ []runtime.TurnCall, r *runtime.TurnResult) *runtime.TurnResult {
			r.Results = append(r.Results, r.Results[0])
			return r
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rm := &manglingRemote{mangle: c.mangle}
			type outcome struct {
				rep *Report
				err error
				p   any
			}
			done := make(chan outcome, 1)
			go func() {
				var o outcome
				defer func() { o.p = recover(); done <- o }()
				o.rep, o.err = Run(context.Background(), mustParse(t, countsScenario), Options{Remote: rm})
			}()
			var o outcome
			select {
			case o = <-done:
			case <-time.After(30 * time.Second):
				var b strings.Builder
				_ = pprof.Lookup("goroutine").WriteTo(&b, 2)
				t.Fatalf("hang: Run did not return; goroutines:\n%s", b.String())
			}
			if o.p != nil {
				t.Fatalf("Run panicked: %v", o.p)
			}
			if o.err != nil {
				t.Fatal(o.err)
			}
			rep := o.rep
			const turns = 9 * 4 // 3 trees of 3 agents, 4 turns each
			if rep.TurnsDone != turns || rep.TurnErrors != turns {
				t.Fatalf("turns done %d, turn errors %d: want every one of the %d turns an error", rep.TurnsDone, rep.TurnErrors, turns)
			}
			if rep.Results > rep.Calls {
				t.Fatalf("%d results for %d calls", rep.Results, rep.Calls)
			}
		})
	}
}
