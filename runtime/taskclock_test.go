package runtime_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/toolscope/toolscope/runtime"
	"github.com/toolscope/toolscope/simclock"
)

// taskClockRegistry is a registry on a task clock with three parallel
// tools: sleep (sleeps args.ms of clock time), spin (CPU work and a
// hand-off to a goroutine that is no task, without sleeping; it records the
// clock before and after) and nest (a nested turn of sleeps, args.ms each;
// it records the clock when the nested turn returned).
func taskClockRegistry(t *testing.T, c *simclock.Clock, seen func(what string, at time.Time)) *runtime.Registry {
	t.Helper()
	reg, err := runtime.New(runtime.WithTaskClock(c), runtime.WithMaxParallel(4))
	if err != nil {
		t.Fatal(err)
	}
	type in struct {
		MS []int `json:"ms"`
	}
	sleep, err := runtime.NewTool("sleep", "sleep on the clock", func(ctx context.Context, a in, _ *runtime.RunContext) (string, error) {
		return "", c.Sleep(ctx, time.Duration(a.MS[0])*time.Millisecond)
	}, runtime.WithParallel())
	if err != nil {
		t.Fatal(err)
	}
	spin, err := runtime.NewTool("spin", "work without sleeping", func(ctx context.Context, _ struct{}, _ *runtime.RunContext) (string, error) {
		seen("spin before", c.Now())
		x := 0
		for i := range 200000 {
			x += i % 7
		}
		ch := make(chan int)
		go func() { time.Sleep(20 * time.Millisecond); ch <- x }() // no task: the body waits for it on the wall
		<-ch
		seen("spin after", c.Now())
		return "", nil
	}, runtime.WithParallel())
	if err != nil {
		t.Fatal(err)
	}
	var nest runtime.Definition
	nest, err = runtime.NewTool("nest", "a nested turn", func(ctx context.Context, a in, rc *runtime.RunContext) (string, error) {
		var calls []runtime.TurnCall
		for i, ms := range a.MS {
			calls = append(calls, runtime.TurnCall{ID: fmt.Sprintf("%s/%d", rc.Execution().CallID(), i), Name: "sleep", ArgumentsText: fmt.Sprintf(`{"ms":[%d]}`, ms)})
		}
		if _, err := reg.Global().ExecuteTurn(ctx, calls); err != nil {
			return "", err
		}
		seen("nest "+rc.Execution().CallID(), c.Now())
		return "", nil
	}, runtime.WithParallel())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []runtime.Definition{sleep, spin, nest} {
		if _, err := reg.Global().Register(d); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

// Under WithTaskClock the registry's workers and a turn's wait for its
// last commit are on the clock: a body working on the wall without
// sleeping keeps the clock where it is while the turn's other calls sleep
// (no premature move), a nested turn's caller wakes at the instant its
// last call ends, and the turn ends when its longest call does (no stall,
// nothing early).
func TestWithTaskClock_TurnWorkIsOnTheClock(t *testing.T) {
	c := simclock.New()
	var mu sync.Mutex
	at := map[string]time.Duration{}
	reg := taskClockRegistry(t, c, func(what string, when time.Time) {
		mu.Lock()
		at[what] = when.Sub(simclock.Epoch)
		mu.Unlock()
	})
	defer reg.Close(context.Background())
	calls := []runtime.TurnCall{
		{ID: "a", Name: "sleep", ArgumentsText: `{"ms":[3000]}`},
		{ID: "b", Name: "spin", ArgumentsText: `{}`},
		{ID: "c", Name: "nest", ArgumentsText: `{"ms":[1000,2000,500]}`},
		{ID: "d", Name: "sleep", ArgumentsText: `{"ms":[10]}`},
		{ID: "e", Name: "sleep", ArgumentsText: `{"ms":[20]}`}, // waits for a slot (MaxParallel 4): d ends at 10ms
	}
	done := make(chan struct{})
	var ended time.Duration
	var turnErr error
	var results []*runtime.Result
	c.Go(func() {
		defer close(done)
		tr, err := reg.Global().ExecuteTurn(context.Background(), calls)
		turnErr, ended = err, c.Since(simclock.Epoch)
		if tr != nil {
			results = tr.Results
		}
	})
	if !awaitClosed(t, done, "a turn on a task clock") {
		return
	}
	if turnErr != nil {
		t.Fatal(turnErr)
	}
	for i, r := range results {
		if r.IsError() {
			t.Fatalf("call %s failed: %s", calls[i].ID, r.ErrorMessage())
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if at["spin before"] != 0 || at["spin after"] != 0 {
		t.Fatalf("the clock moved while a body worked without sleeping: before %v, after %v, want 0 and 0", at["spin before"], at["spin after"])
	}
	if got := at["nest c"]; got != 2*time.Second {
		t.Fatalf("the nested turn's caller woke at +%v, want +2s (its longest call)", got)
	}
	if ended != 3*time.Second {
		t.Fatalf("the turn returned at +%v, want +3s (its longest call)", ended)
	}
}

// WithClock after WithTaskClock wins: the registry's work is no task, so
// a turn's caller keeps its hold and nothing is handed over (the clock is
// only read).
func TestWithTaskClock_WithClockAfterwardsWins(t *testing.T) {
	c := simclock.New()
	reg, err := runtime.New(runtime.WithTaskClock(c), runtime.WithClock(c))
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close(context.Background())
	echo, err := runtime.NewTool("echo", "", func(context.Context, struct{}, *runtime.RunContext) (string, error) { return "", nil }, runtime.WithParallel())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Global().Register(echo); err != nil {
		t.Fatal(err)
	}
	// Not a task: with a task clock the worker hand-over and the caller's
	// wait would count holds (and a Release by a goroutine holding none
	// panics).
	calls := make([]runtime.TurnCall, 8)
	for i := range calls {
		calls[i] = runtime.TurnCall{ID: fmt.Sprint(i), Name: "echo", ArgumentsText: `{}`}
	}
	if _, err := reg.Global().ExecuteTurn(context.Background(), calls); err != nil {
		t.Fatal(err)
	}
	if holds, _ := c.Pending(); holds != 0 {
		t.Fatalf("%d holds left on a clock given by WithClock, want 0", holds)
	}
}
