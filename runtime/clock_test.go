package runtime_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolscope/toolscope/runtime"
	"github.com/toolscope/toolscope/simclock"
)

// R83 on the registry's clock: a declared timeout of an hour fires when the
// clock reaches it (at once on the wall, with a virtual clock), the body's
// ctx is cancelled with the timeout as its cause and carries no wall
// deadline, and every event of the call is stamped on that clock.
func TestWithClock_R83_TimeoutFiresOnTheRegistryClock(t *testing.T) {
	c := simclock.New()
	var mu sync.Mutex
	var events []runtime.Event
	reg, err := runtime.New(runtime.WithClock(c), // declared timeouts apply by default (R83)
		runtime.WithHooks(runtime.Hooks{Event: func(e runtime.Event) { mu.Lock(); events = append(events, e); mu.Unlock() }}))
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close(context.Background())
	var bodyErr, bodyCause error
	var hasDeadline bool
	def, err := runtime.NewTool("hang", "waits for its ctx", func(ctx context.Context, _ struct{}, _ *runtime.RunContext) (string, error) {
		_, hasDeadline = ctx.Deadline()
		bodyErr = c.Sleep(ctx, simclock.Forever)
		bodyCause = context.Cause(ctx)
		return "", bodyErr
	}, runtime.WithTimeout(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Global().Register(def); err != nil {
		t.Fatal(err)
	}
	var res *runtime.Result
	done := make(chan struct{})
	c.Go(func() {
		defer close(done)
		res = reg.Global().Execute(context.Background(), runtime.Call{ID: "c1", Name: "hang"})
	})
	if !awaitClosed(t, done, "the call") {
		return
	}
	if res.Code() != runtime.CodeToolTimeout || !strings.Contains(res.Text(), "tool call timed out after 3600000ms") {
		t.Fatalf("result %q %q, want TOOL_TIMEOUT after 3600000ms", res.Code(), res.Text())
	}
	if !errors.Is(bodyErr, context.Canceled) || bodyCause == nil || bodyCause.Error() != "toolscope: tool timeout" || hasDeadline {
		t.Fatalf("body's ctx: err %v cause %v (want Canceled, the tool timeout), deadline %v (want none)", bodyErr, bodyCause, hasDeadline)
	}
	if got := c.Since(simclock.Epoch); got != time.Hour {
		t.Fatalf("clock at +%v, want +1h", got)
	}
	mu.Lock()
	defer mu.Unlock()
	var fin *runtime.Event
	for i := range events {
		if events[i].Kind == runtime.ExecutionFinished {
			fin = &events[i]
		}
	}
	if fin == nil {
		t.Fatal("no ExecutionFinished event")
	}
	if !fin.EnteredAt.Equal(simclock.Epoch) || !fin.At.Equal(simclock.Epoch.Add(time.Hour)) || fin.At.Sub(fin.StartedAt) != time.Hour {
		t.Fatalf("event times entered %v started %v finished %v, want the clock's: entered and started at %v, finished an hour later",
			fin.EnteredAt, fin.StartedAt, fin.At, simclock.Epoch)
	}
}

// A caller's cancellation before the clock reaches the timeout is no
// timeout: the call ends ABORTED, not TOOL_TIMEOUT.
func TestWithClock_R83_CallerCancelIsNoTimeout(t *testing.T) {
	c := simclock.New()
	reg, err := runtime.New(runtime.WithTimeouts(), runtime.WithClock(c))
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close(context.Background())
	ctx, cancel := context.WithCancel(context.Background())
	def, _ := runtime.NewTool("hang", "waits", func(ctx context.Context, _ struct{}, _ *runtime.RunContext) (string, error) {
		return "", c.Sleep(ctx, simclock.Forever)
	}, runtime.WithTimeout(time.Hour))
	if _, err := reg.Global().Register(def); err != nil {
		t.Fatal(err)
	}
	release := c.Hold()
	c.AfterFunc(time.Minute, cancel) // the caller gives up after a minute
	var res *runtime.Result
	done := make(chan struct{})
	c.Go(func() { defer close(done); res = reg.Global().Execute(ctx, runtime.Call{ID: "c1", Name: "hang"}) })
	release()
	if !awaitClosed(t, done, "the call") {
		return
	}
	if res.Code() == runtime.CodeToolTimeout || !res.IsError() {
		t.Fatalf("result %q, want a cancellation, not TOOL_TIMEOUT", res.Code())
	}
	if got := c.Since(simclock.Epoch); got != time.Minute {
		t.Fatalf("clock at +%v, want +1m (the timeout's timer stopped)", got)
	}
}

// fixedClock reads one instant; its timers never fire.
type fixedClock struct{ at time.Time }

func (f fixedClock) Now() time.Time { return f.at }
func (f fixedClock) AfterFunc(time.Duration, func()) (stop func() bool) {
	return func() bool { return true }
}

// Every time a hook reads and every event carries is the clock's.
func TestWithClock_HooksAndEventsReadTheClock(t *testing.T) {
	at := time.Date(1999, 12, 31, 23, 59, 59, 0, time.UTC)
	var mu sync.Mutex
	var seen []time.Time
	add := func(ts ...time.Time) { mu.Lock(); seen = append(seen, ts...); mu.Unlock() }
	reg, err := runtime.New(runtime.WithClock(fixedClock{at}), runtime.WithHooks(runtime.Hooks{
		Event:     func(e runtime.Event) { add(e.At) },
		CallStart: func(ctx context.Context, c runtime.CallInfo) context.Context { add(c.At, c.Now()); return ctx },
		CallStage: func(_ runtime.Execution, st runtime.CallStage) { add(st.Now()) },
		CallEnd: func(_ runtime.Execution, d runtime.CallDone) {
			add(d.EnteredAt, d.StartedAt, d.DispatchDoneAt, d.Now())
		},
		TurnStart: func(ctx context.Context, ti runtime.TurnInfo) context.Context { add(ti.Now()); return ctx },
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close(context.Background())
	def, _ := runtime.NewTool("echo", "echo", func(context.Context, struct{}, *runtime.RunContext) (string, error) { return "ok", nil })
	if _, err := reg.Global().Register(def); err != nil {
		t.Fatal(err)
	}
	if res := reg.Global().Execute(context.Background(), runtime.Call{ID: "c1", Name: "echo"}); res.IsError() {
		t.Fatal(res.Text())
	}
	if _, err := reg.Global().ExecuteTurn(context.Background(), []runtime.TurnCall{{ID: "t1", Name: "echo"}}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) < 10 {
		t.Fatalf("only %d times seen", len(seen))
	}
	for i, ts := range seen {
		if !ts.Equal(at) {
			t.Fatalf("time %d is %v, want the clock's %v", i, ts, at)
		}
	}
}
