package runtime

// The base dispatch (R61): the innermost next, which calls the body under
// its ctx, a callerOrWrapperCtx when an around hook passed its own (R60).

import (
	"context"
	"errors"
	"time"
)

// base is the innermost next (R61).
func (r *Registry) base(s *execState, ctx context.Context) *Result {
	bodyCtx := ctx
	if ctx != s.ctx() {
		// R60: fuse the caller ctx and the wrapper's ctx. Err answers from
		// both at once (a cancellation of the caller is seen here before
		// the body runs, not when AfterFunc gets round to it); Done closes
		// when either does.
		fused, cancel := context.WithCancel(ctx)
		stop := context.AfterFunc(s.ctx(), cancel)
		defer func() { stop(); cancel() }()
		bodyCtx = &callerOrWrapperCtx{Context: fused, caller: s.ctx(), s: s}
	}
	if bodyCtx.Err() != nil {
		return stamped(s, abortedBeforeDispatch())
	}
	td, ok := r.resolveExec(s)
	if !ok {
		return stamped(s, unknownTool(s.name))
	}
	if d := td.def.Timeout; d != nil && r.cfg.timeouts {
		return r.timedBody(s, bodyCtx, td, *d)
	}
	s.bodyInvoked.Store(true)
	v, err := callBody(td, bodyCtx, s)
	if err != nil {
		return stamped(s, failureFrom(err))
	}
	if bodyCtx.Err() != nil {
		return stamped(s, aborted())
	}
	return stamped(s, r.createSuccess(s, td, v))
}

// timedBody is steps 3–5 of R61 for a tool that declares a timeout, when
// declared timeouts apply (R83, the default; WithoutTimeouts turns it off):
// the body runs under a deadline d counted from now — from dispatch, after
// the call's admission and host slot, not from entry — and if that
// deadline, not the caller's cancellation, ended the body's ctx first, the
// result is the TOOL_TIMEOUT failure whatever the body returned.
func (r *Registry) timedBody(s *execState, bodyCtx context.Context, td *toolDef, d time.Duration) *Result {
	tctx, cancel := r.withTimeout(bodyCtx, d) // the registry's clock (clock.go)
	defer cancel()
	// Err answers the caller's cancellation at once (R60), and the
	// execution rides along as on any body ctx.
	timed := &callerOrWrapperCtx{Context: tctx, caller: bodyCtx, s: s}
	s.bodyInvoked.Store(true)
	v, err := callBody(td, timed, s)
	if errors.Is(context.Cause(tctx), errToolTimeout) {
		return stamped(s, toolTimedOut(d))
	}
	if err != nil {
		return stamped(s, failureFrom(err))
	}
	if bodyCtx.Err() != nil {
		return stamped(s, aborted())
	}
	return stamped(s, r.createSuccess(s, td, v))
}

func stamped(s *execState, res *Result) *Result {
	res.stamp = s
	return res
}

// callerOrWrapperCtx is a body's ctx done when the caller's or the around
// hook's ctx is (R60; the ctx types: nesting.go).
type callerOrWrapperCtx struct {
	context.Context // a cancel ctx under the wrapper's, cancelled by the caller's too
	caller          context.Context
	s               *execState
}

// Err implements context.Context.
func (c *callerOrWrapperCtx) Err() error {
	if err := c.caller.Err(); err != nil {
		return err
	}
	return c.Context.Err()
}

// Value implements context.Context.
func (c *callerOrWrapperCtx) Value(key any) any {
	return execValue(c.s, c.Context, key)
}
