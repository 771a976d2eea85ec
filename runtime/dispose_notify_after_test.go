package runtime_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/toolscope/toolscope/runtime"
)

// R7, R86: a change subscriber hearing one of Dispose(a)'s removals runs a
// two-call turn in scope b; the first call's dispatch runs on a pool worker
// and its body disposes a. That Dispose returns (a's teardown is complete
// before its removals are announced, so nothing re-entrant waits for it,
// whichever goroutine it runs on), the turn finishes and Dispose(a) returns.
func TestDispose_R86_TurnBodyFromTeardownSubscriberDisposesTheScope(t *testing.T) {
	reg := mustNew(t, runtime.WithEvents(false))
	defer closeNow(t, reg)
	a, err := reg.NewScope("a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := reg.NewScope("b")
	if err != nil {
		t.Fatal(err)
	}
	mustRegister(t, a, hdef("owned", true, nil))
	var disposedFromBody atomic.Int32
	mustRegister(t, b, hdef("disposer", true, func(context.Context) (any, error) {
		a.Dispose()
		disposedFromBody.Add(1)
		return "disposed a", nil
	}))
	var armed atomic.Bool
	var turnErr atomic.Pointer[error]
	if _, err := reg.Global().OnChange(func(context.Context) error {
		if !armed.CompareAndSwap(true, false) {
			return nil
		}
		_, err := b.ExecuteTurn(context.Background(), []runtime.TurnCall{
			{ID: "1", Name: "disposer"}, {ID: "2", Name: "disposer"},
		})
		turnErr.Store(&err)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	armed.Store(true)
	boundedWait(t, waitLimit, "Dispose(a) whose subscriber's turn body disposes a", a.Dispose)
	if p := turnErr.Load(); p == nil || *p != nil {
		t.Fatalf("the subscriber's turn: %v", p)
	}
	if n := disposedFromBody.Load(); n != 2 {
		t.Fatalf("%d bodies returned from a.Dispose(), want 2", n)
	}
	if _, err := a.Register(hdef("late", true, nil)); err == nil {
		t.Fatal("a still takes registrations after Dispose")
	}
}
