package runtime_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/toolscope/toolscope/runtime"
)

// closeFromInside calls Close the way a callback would and checks it did
// not wait for the call it is made from: it returns ErrCloseInsideCall at
// once (bounded), and the shutdown has begun (new calls get CLOSED).
func closeFromInside(t *testing.T, reg *runtime.Registry, ctx context.Context, where string) {
	t.Helper()
	var err error
	boundedHere(10*time.Second, "Close called from "+where, func() { err = reg.Close(ctx) })
	if !errors.Is(err, runtime.ErrCloseInsideCall) {
		t.Errorf("Close from %s = %v, want ErrCloseInsideCall", where, err)
	}
	if r := reg.Execute(context.Background(), runtime.Call{ID: "late", Name: "t"}); r.Code() != runtime.CodeClosed {
		t.Errorf("a call after Close from %s: %q, want CLOSED", where, r.Code())
	}
}

// closeCompletes checks a Close from outside, after the calling callback
// returned, completes the teardown (returns nil).
func closeCompletes(t *testing.T, reg *runtime.Registry) {
	t.Helper()
	boundedWait(t, 10*time.Second, "Close from outside after the callback returned", func() { closeNow(t, reg) })
}

// derivedKey marks a ctx derived from a callback's.
type derivedKey struct{}

// R86, Close: a Close made from inside a call — its body, an around hook, a
// result observer, a change subscriber — with the ctx the callback was given
// (or one derived from it) does not wait for the call it is made from (that
// would wait for itself). It starts the shutdown and returns
// ErrCloseInsideCall at once; the teardown completes once the call has
// returned, and a later Close from outside returns nil.
func TestClose_R86_FromInsideABody(t *testing.T) {
	for _, derived := range []bool{false, true} {
		reg := mustNew(t)
		mustRegister(t, reg.Global(), hdef("t", false, func(ctx context.Context) (any, error) {
			if derived {
				// Derived, and not ended before the call is (that would be
				// Close's ctx ending: the calls in flight are cancelled).
				ctx = context.WithValue(ctx, derivedKey{}, true)
			}
			closeFromInside(t, reg, ctx, "a body")
			return "ran", nil
		}))
		r := reg.Execute(context.Background(), runtime.Call{ID: "1", Name: "t"})
		if r.IsError() {
			t.Fatalf("the calling call: %s", r.Text())
		}
		closeCompletes(t, reg)
	}
}

// R86, Close: a Close made from inside a body with a ctx unrelated to the
// body's (context.Background() and a deadline) cannot be told from a Close
// from outside: it waits, as http.Server.Shutdown called from a handler
// does, until its ctx ends; then the calls in flight (the calling one
// included) are cancelled and Close returns the ctx's error. The teardown
// completes once the call has returned.
func TestClose_R86_FromInsideABodyWithUnrelatedCtxWaitsForIt(t *testing.T) {
	reg := mustNew(t)
	var err error
	mustRegister(t, reg.Global(), hdef("t", false, func(ctx context.Context) (any, error) {
		unrelated, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		boundedHere(10*time.Second, "Close called from a body with an unrelated ctx", func() { err = reg.Close(unrelated) })
		if ctx.Err() == nil {
			t.Error("the calling call was not cancelled when Close's ctx ended")
		}
		return "ran", nil
	}))
	reg.Execute(context.Background(), runtime.Call{ID: "1", Name: "t"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Close from a body with an unrelated ctx = %v, want its ctx's error (it waited until the ctx ended)", err)
	}
	if r := reg.Execute(context.Background(), runtime.Call{ID: "late", Name: "t"}); r.Code() != runtime.CodeClosed {
		t.Errorf("a call after that Close: %q, want CLOSED", r.Code())
	}
	closeCompletes(t, reg)
}

func TestClose_R86_FromInsideATurnsBody(t *testing.T) {
	reg := mustNew(t)
	mustRegister(t, reg.Global(), hdef("t", true, func(ctx context.Context) (any, error) {
		closeFromInside(t, reg, ctx, "a turn's body")
		return "ran", nil
	}))
	if _, err := reg.Global().ExecuteTurn(context.Background(), []runtime.TurnCall{{ID: "1", Name: "t"}, {ID: "2", Name: "t"}}); err != nil {
		t.Fatal(err)
	}
	closeCompletes(t, reg)
}

func TestClose_R86_FromInsideAnAroundHook(t *testing.T) {
	reg := mustNew(t)
	mustRegister(t, reg.Global(), hdef("t", false, func(context.Context) (any, error) { return "ran", nil }))
	if _, err := reg.Global().OnExecute(func(ctx context.Context, _ runtime.Execution, next func(context.Context) *runtime.Result) (*runtime.Result, error) {
		closeFromInside(t, reg, ctx, "an around hook")
		return next(ctx), nil
	}); err != nil {
		t.Fatal(err)
	}
	reg.Execute(context.Background(), runtime.Call{ID: "1", Name: "t"})
	closeCompletes(t, reg)
}

func TestClose_R86_FromInsideAResultObserver(t *testing.T) {
	reg := mustNew(t)
	mustRegister(t, reg.Global(), hdef("t", false, func(context.Context) (any, error) { return "ran", nil }))
	observed := false
	if _, err := reg.Global().OnResult(func(ctx context.Context, _ runtime.Execution, _ *runtime.Result) error {
		if !observed {
			observed = true
			closeFromInside(t, reg, ctx, "a result observer")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	reg.Execute(context.Background(), runtime.Call{ID: "1", Name: "t"})
	if !observed {
		t.Fatal("the observer did not run")
	}
	closeCompletes(t, reg)
}

// A change subscriber calling Close: from a registration made inside a
// body, and from the announcements of Close's own teardown (the scopes it
// disposes), which run on the teardown's goroutine — waiting there was
// waiting for itself.
func TestClose_R86_FromInsideAChangeSubscriber(t *testing.T) {
	reg := mustNew(t)
	s, err := reg.NewScope("a")
	if err != nil {
		t.Fatal(err)
	}
	mustRegister(t, s, hdef("owned", true, nil)) // Close's teardown removes it: one more announcement
	mustRegister(t, reg.Global(), hdef("t", false, func(context.Context) (any, error) {
		if _, err := reg.Global().Register(hdef("inner", true, nil)); err != nil {
			t.Errorf("register from the body: %v", err)
		}
		return "ran", nil
	}))
	var fromSubscriber []error
	if _, err := reg.Global().OnChange(func(ctx context.Context) error {
		var err error
		boundedHere(10*time.Second, "Close called from a change subscriber", func() { err = reg.Close(ctx) })
		fromSubscriber = append(fromSubscriber, err)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	reg.Execute(context.Background(), runtime.Call{ID: "1", Name: "t"})
	closeCompletes(t, reg)
	if len(fromSubscriber) < 2 {
		t.Fatalf("the subscriber ran %d times, want the body's registration and the teardown's removal", len(fromSubscriber))
	}
	for i, err := range fromSubscriber {
		if !errors.Is(err, runtime.ErrCloseInsideCall) {
			t.Errorf("Close from the subscriber (#%d) = %v, want ErrCloseInsideCall", i, err)
		}
	}
}
