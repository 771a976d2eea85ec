package runtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/toolscope/toolscope/runtime"
	"github.com/toolscope/toolscope/simclock"
)

// TestAttack_TaskClock_PanicTimeoutCancelInOneTurn: on a task clock, one
// turn (driven by a task) whose calls panic, time out on the clock
// (a declared timeout on the clock) and sleep: each worker's hold is given back however its
// body ended, so the clock moves and the turn returns, with the virtual
// time it should have (the longest sleep), and every call answered once.
// A bounded wall wait; a stall is reported with the clock's state.
func TestAttack_TaskClock_PanicTimeoutCancelInOneTurn(t *testing.T) {
	c := simclock.New()
	reg, err := runtime.New(runtime.WithTaskClock(c), runtime.WithMaxParallel(8))
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close(context.Background())
	type in struct {
		MS int `json:"ms"`
	}
	add := func(name string, body func(ctx context.Context, a in) (string, error), opts ...runtime.ToolOption) {
		t.Helper()
		d, err := runtime.NewTool(name, name, func(ctx context.Context, a in, _ *runtime.RunContext) (string, error) { return body(ctx, a) }, append(opts, runtime.WithParallel())...)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := reg.Global().Register(d); err != nil {
			t.Fatal(err)
		}
	}
	add("sleep", func(ctx context.Context, a in) (string, error) {
		return "", c.Sleep(ctx, time.Duration(a.MS)*time.Millisecond)
	})
	add("boom", func(ctx context.Context, a in) (string, error) {
		if err := c.Sleep(ctx, time.Duration(a.MS)*time.Millisecond); err != nil {
			return "", err
		}
		panic("tool body panics")
	})
	add("slow", func(ctx context.Context, a in) (string, error) {
		return "", c.Sleep(ctx, time.Hour) // its declared timeout ends it first
	}, runtime.WithTimeout(50*time.Millisecond))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := []runtime.TurnCall{
		{ID: "s", Name: "sleep", ArgumentsText: `{"ms":300}`},
		{ID: "b", Name: "boom", ArgumentsText: `{"ms":10}`},
		{ID: "t", Name: "slow", ArgumentsText: `{"ms":0}`},
		{ID: "b0", Name: "boom", ArgumentsText: `{"ms":0}`},
	}
	start := c.Now()
	type outcome struct {
		res *runtime.TurnResult
		err error
		at  time.Duration
	}
	done := make(chan outcome, 1)
	c.Go(func() {
		res, err := reg.Global().ExecuteTurn(ctx, calls)
		done <- outcome{res, err, c.Since(start)}
	})
	var o outcome
	select {
	case o = <-done:
	case <-time.After(20 * time.Second):
		holds, timers := c.Pending()
		t.Fatalf("the turn stalled; clock: %d holds, %d deadlines\n%s", holds, timers, goroutineDump())
	}
	if o.err != nil {
		t.Fatal(o.err)
	}
	if len(o.res.Results) != len(calls) {
		t.Fatalf("%d results for %d calls", len(o.res.Results), len(calls))
	}
	want := map[string]bool{"s": false, "b": true, "t": true, "b0": true}
	for i, r := range o.res.Results {
		if r.IsError() != want[calls[i].ID] {
			t.Errorf("%s: error %v (%s %s)", calls[i].ID, r.IsError(), r.Code(), r.ErrorMessage())
		}
	}
	if o.at != 300*time.Millisecond {
		t.Errorf("the turn returned at +%v of clock time, want +300ms (its longest sleep)", o.at)
	}
	if code := o.res.Results[2].Code(); code != runtime.CodeToolTimeout {
		t.Errorf("slow: %s, want TOOL_TIMEOUT", code)
	}
}

// TestAttack_TaskClock_CancelledByAClockTimer: a turn whose ctx a clock
// timer cancels (the demo's simulated Ctrl-C) while a call sleeps an hour
// on the clock: the clock moves to the timer, the sleeper wakes cancelled,
// and the turn returns at the timer's time — not an hour later, not
// stalled — with its calls answered once.
func TestAttack_TaskClock_CancelledByAClockTimer(t *testing.T) {
	c := simclock.New()
	reg, err := runtime.New(runtime.WithTaskClock(c), runtime.WithMaxParallel(4))
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close(context.Background())
	type in struct {
		MS int `json:"ms"`
	}
	d, err := runtime.NewTool("sleep", "sleep", func(ctx context.Context, a in, _ *runtime.RunContext) (string, error) {
		return "", c.Sleep(ctx, time.Duration(a.MS)*time.Millisecond)
	}, runtime.WithParallel())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Global().Register(d); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := []runtime.TurnCall{
		{ID: "short", Name: "sleep", ArgumentsText: `{"ms":300}`},
		{ID: "long", Name: "sleep", ArgumentsText: `{"ms":3600000}`},
	}
	start := c.Now()
	type outcome struct {
		res *runtime.TurnResult
		err error
		at  time.Duration
	}
	done := make(chan outcome, 1)
	c.Go(func() {
		c.AfterFunc(500*time.Millisecond, cancel)
		res, err := reg.Global().ExecuteTurn(ctx, calls)
		done <- outcome{res, err, c.Since(start)}
	})
	var o outcome
	select {
	case o = <-done:
	case <-time.After(20 * time.Second):
		holds, timers := c.Pending()
		t.Fatalf("the turn stalled; clock: %d holds, %d deadlines\n%s", holds, timers, goroutineDump())
	}
	if o.at != 500*time.Millisecond {
		t.Errorf("the turn returned at +%v of clock time, want +500ms (the cancelling timer)", o.at)
	}
	if o.res == nil || len(o.res.Results) != len(calls) {
		t.Fatalf("turn %+v, err %v: want a result per call", o.res, o.err)
	}
	if o.res.Results[0].IsError() || !o.res.Results[1].IsError() {
		t.Errorf("short error %v, long error %v: want the short sleep done, the long one cancelled", o.res.Results[0].IsError(), o.res.Results[1].IsError())
	}
}
