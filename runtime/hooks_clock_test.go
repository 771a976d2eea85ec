package runtime_test

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolscope/toolscope/runtime"
)

// countingClock counts its Now reads; its timers never fire.
type countingClock struct {
	at    time.Time
	reads atomic.Int64
}

func (c *countingClock) Now() time.Time {
	c.reads.Add(1)
	return c.at.Add(time.Duration(c.reads.Load()))
}
func (c *countingClock) AfterFunc(time.Duration, func()) (stop func() bool) {
	return func() bool { return true }
}

// A call reads the registry's clock only for a time some set hook (or
// typed subscriber) is given: none for no hook, or CallStage only (a
// stage's time is the hook's own CallStage.Now); its entry for CallStart
// (CallInfo.At); entry, admission and dispatch end for CallFinished or
// CallEnd (CallDone's EnteredAt, StartedAt, DispatchDoneAt) — and every
// one of those the hook is given is set. The hooks read no clock
// themselves here, so every read counted is the registry's.
func TestHooks_ClockReadOnlyForTimesAHookSees(t *testing.T) {
	var mu sync.Mutex
	var done []runtime.CallDone
	keep := func(_ runtime.Execution, d runtime.CallDone) { mu.Lock(); done = append(done, d); mu.Unlock() }
	cases := []struct {
		name  string
		hooks runtime.Hooks
		reads int64 // per dispatched call, a single Execute and a turn's
	}{
		{"no hooks", runtime.Hooks{}, 0},
		{"turn points only", runtime.Hooks{
			TurnStart:   func(ctx context.Context, _ runtime.TurnInfo) context.Context { return ctx },
			CallAborted: func(context.Context, runtime.CallInfo) {},
		}, 0},
		{"CallStage only", runtime.Hooks{CallStage: func(runtime.Execution, runtime.CallStage) {}}, 0},
		{"CallStart only", runtime.Hooks{CallStart: func(ctx context.Context, c runtime.CallInfo) context.Context {
			if c.At.IsZero() {
				t.Errorf("CallStart: zero At")
			}
			return ctx
		}}, 1},
		{"CallFinished", runtime.Hooks{CallFinished: keep}, 3},
		{"CallEnd", runtime.Hooks{CallEnd: keep}, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			done = nil
			clk := &countingClock{at: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)}
			reg, err := runtime.New(runtime.WithClock(clk), runtime.WithEvents(false), runtime.WithHooks(tc.hooks))
			if err != nil {
				t.Fatal(err)
			}
			defer reg.Close(context.Background())
			if _, err := reg.Global().Register(trivialDef("t")); err != nil {
				t.Fatal(err)
			}
			s, err := reg.NewScope("a")
			if err != nil {
				t.Fatal(err)
			}
			before := clk.reads.Load()
			if res := s.Execute(context.Background(), runtime.Call{ID: "1", Name: "t", Arguments: json.RawMessage(`{}`)}); res.IsError() {
				t.Fatal(res.ErrorMessage())
			}
			if got := clk.reads.Load() - before; got != tc.reads {
				t.Errorf("Execute: %d clock reads, want %d", got, tc.reads)
			}
			const n = 4
			calls := make([]runtime.TurnCall, n)
			for i := range calls {
				calls[i] = runtime.TurnCall{ID: string(rune('a' + i)), Name: "t", ArgumentsText: `{}`}
			}
			before = clk.reads.Load()
			if _, err := s.ExecuteTurn(context.Background(), calls); err != nil {
				t.Fatal(err)
			}
			if got := clk.reads.Load() - before; got != n*tc.reads {
				t.Errorf("a turn of %d calls: %d clock reads, want %d", n, got, n*tc.reads)
			}
			mu.Lock()
			defer mu.Unlock()
			if tc.reads == 3 && len(done) != 1+n {
				t.Errorf("%d CallDone, want %d", len(done), 1+n)
			}
			for _, d := range done {
				if d.EnteredAt.IsZero() || d.StartedAt.IsZero() || d.DispatchDoneAt.IsZero() ||
					d.StartedAt.Before(d.EnteredAt) || d.DispatchDoneAt.Before(d.StartedAt) {
					t.Errorf("CallDone times: entered %v, started %v, dispatch done %v", d.EnteredAt, d.StartedAt, d.DispatchDoneAt)
				}
			}
		})
	}
}
