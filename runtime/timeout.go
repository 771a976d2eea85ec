package runtime

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// TimeoutHook returns the ready-made around hook of R83. For a tool
// whose visible definition declares a Timeout it derives a deadline ctx and
// delegates; if that deadline (not the caller's cancellation) fired, the
// result is replaced by the TOOL_TIMEOUT failure "tool call timed out after
// <ms>ms". Calls of tools without a timeout pass through unchanged.
//
// Which of the two happened first decides: the deadline counts when it
// ended the deadline ctx before the caller's cancellation reached it (the
// ctx's cause), so a caller that cancels while the body is still cleaning
// up after the deadline gets TOOL_TIMEOUT, and a deadline that passes after
// the caller cancelled is no timeout. The registry's own ctx hands a
// caller's cancellation on at once; a ctx of another type that an outer
// around hook passes may hand it on late, and a cancellation and a
// deadline landing together may then count as a timeout.
//
// Register it like any around hook, e.g. reg.Global().OnExecute(reg.TimeoutHook()).
func (r *Registry) TimeoutHook() AroundHook {
	return func(ctx context.Context, e Execution, next func(context.Context) *Result) (*Result, error) {
		td, ok := r.resolve(e.s.node, e.s.name)
		if !ok || td.def.Timeout == nil {
			return next(nil), nil
		}
		d := *td.def.Timeout
		tctx, cancel := r.withTimeout(ctx, d) // the registry's clock (clock.go)
		defer cancel()
		res := next(tctx)
		// The cause is set once, by whichever ended tctx first: its own
		// deadline (errToolTimeout) or the caller's cancellation (the
		// caller's cause). A later cancellation of the caller (say, while
		// the body cleaned up after the deadline) does not change it.
		if errors.Is(context.Cause(tctx), errToolTimeout) {
			ms := d.Milliseconds()
			return codedFailure(NameToolTimeout, CodeToolTimeout, fmt.Sprintf("tool call timed out after %dms", ms)), nil
		}
		return res, nil
	}
}

var errToolTimeout = errors.New("toolscope: tool timeout")

// toolTimedOut is the TOOL_TIMEOUT failure of a call whose declared timeout
// d fired (R83).
func toolTimedOut(d time.Duration) *Result {
	return codedFailure(NameToolTimeout, CodeToolTimeout, fmt.Sprintf("tool call timed out after %dms", d.Milliseconds()))
}
