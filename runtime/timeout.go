package runtime

import (
	"context"
	"errors"
	"fmt"
)

// TimeoutHook returns the ready-made around hook of SPEC R83. For a tool
// whose visible definition declares a Timeout it derives a deadline ctx and
// delegates; if that deadline (not the caller's cancellation) fired, the
// result is replaced by the TOOL_TIMEOUT failure "tool call timed out after
// <ms>ms". Calls of tools without a timeout pass through unchanged.
// Register it like any around hook, e.g. reg.Global().OnExecute(reg.TimeoutHook()).
func (r *Registry) TimeoutHook() AroundHook {
	return func(ctx context.Context, e Execution, next func(context.Context) *Result) (*Result, error) {
		td, ok := r.resolve(e.s.node, e.s.name)
		if !ok || td.def.Timeout == nil {
			return next(nil), nil
		}
		d := *td.def.Timeout
		tctx, cancel := context.WithTimeoutCause(ctx, d, errToolTimeout)
		defer cancel()
		res := next(tctx)
		if errors.Is(context.Cause(tctx), errToolTimeout) && ctx.Err() == nil {
			ms := d.Milliseconds()
			return codedFailure(NameToolTimeout, CodeToolTimeout, fmt.Sprintf("tool call timed out after %dms", ms)), nil
		}
		return res, nil
	}
}

var errToolTimeout = errors.New("toolscope: tool timeout")
