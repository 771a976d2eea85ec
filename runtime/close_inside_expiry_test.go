package runtime_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/toolscope/toolscope/runtime"
)

// N5, R86: a Close made from inside a callback with the callback's ctx (or
// one derived from it) returns ErrCloseInsideCall at once, but its ctx still
// bounds the drain: when that ctx ends later, the calls in flight are
// cancelled, exactly as for a Close from outside whose ctx expires. (It was
// looked at once, when Close was called: a deadline that expired afterwards
// never cancelled anything.) With an unrelated ctx, Close cannot tell it is
// inside a callback: it waits like a Close from outside, until that ctx
// ends, and then cancels the calls in flight the same way.
func TestClose_N5_InsideCallbackHonoursLaterExpiry(t *testing.T) {
	for _, withCallbackCtx := range []bool{false, true} {
		reg := mustNew(t)
		started := make(chan struct{})
		mustRegister(t, reg.Global(), hdef("coop", true, func(ctx context.Context) (any, error) {
			close(started)
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(waitLimit):
				return "never cancelled", nil
			}
		}))
		closeCtx, expire := context.WithCancel(context.Background())
		closedInside := make(chan error, 1)
		mustRegister(t, reg.Global(), hdef("closer", true, func(ctx context.Context) (any, error) {
			base := context.Background()
			if withCallbackCtx {
				base = ctx
			}
			c, stop := context.WithCancel(base)
			defer stop()
			context.AfterFunc(closeCtx, stop)
			closedInside <- reg.Close(c)
			return "closed", nil
		}))
		coop := make(chan *runtime.Result, 1)
		go func() { coop <- reg.Execute(context.Background(), runtime.Call{ID: "coop", Name: "coop"}) }()
		awaitClosed(t, started, "the cooperative body to start")
		closerDone := make(chan struct{})
		go func() {
			defer close(closerDone)
			reg.Execute(context.Background(), runtime.Call{ID: "closer", Name: "closer"})
		}()
		var err error
		if withCallbackCtx {
			boundedWait(t, waitLimit, "Close from a body with its ctx", func() { err = <-closedInside })
			if !errors.Is(err, runtime.ErrCloseInsideCall) {
				t.Fatalf("Close from a body with its ctx: %v, want ErrCloseInsideCall", err)
			}
			// The callback's ctx ends with its call: that is the Close ctx
			// ending, so the calls in flight are cancelled then.
		} else {
			// Close cannot return before its ctx ends: the drain includes
			// the call it is made from.
			select {
			case err := <-closedInside:
				t.Fatalf("Close from a body with an unrelated ctx returned before its ctx ended: %v", err)
			default:
			}
			expire()
			boundedWait(t, waitLimit, "Close from a body with an unrelated ctx, once its ctx ended", func() { err = <-closedInside })
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Close from a body with an unrelated ctx: %v, want its ctx's error", err)
			}
		}
		var r *runtime.Result
		boundedWait(t, waitLimit, "the cooperative call to be cancelled by Close's expired ctx", func() { r = <-coop })
		if !r.IsError() {
			t.Errorf("the call in flight once Close's ctx ended: %s (error %v), want cancelled", r.Text(), r.IsError())
		}
		boundedWait(t, waitLimit, "the closing call to return", func() { <-closerDone })
		expire()
		closeCompletes(t, reg)
	}
}
