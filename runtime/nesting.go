package runtime

import "context"

// Every callback of an execution — hooks, guards, the approver, the body —
// receives a ctx that carries the execution: the caller's ctx (or the
// turn's), wrapped so that ExecutionFromContext finds it. A call made with
// such a ctx (or one derived from it) and no Call.Parent is nested in that
// execution: the registry infers the parent, so "pass ctx down" is enough
// for nested calls to be recognised (issue 11, R86).

// execKey is the ctx key of the execution a ctx belongs to.
type execKey struct{}

// execCtx is an execution's own ctx: the caller's (or the turn's), plus the
// execution for ExecutionFromContext. It lives inside the execState.
type execCtx struct {
	context.Context
	s *execState
}

// Value implements context.Context.
func (c *execCtx) Value(key any) any {
	if _, ok := key.(execKey); ok {
		return c.s
	}
	return c.Context.Value(key)
}

// String names the ctx in debugging output.
func (c *execCtx) String() string { return "toolscope execution context" }

// execOf returns the execution ctx belongs to, or nil.
func execOf(ctx context.Context) *execState {
	if ctx == nil {
		return nil
	}
	s, _ := ctx.Value(execKey{}).(*execState)
	return s
}

// ExecutionFromContext returns the execution whose callback received ctx
// (or a ctx derived from it): the ctx of a tool body, an around hook, or
// Execution.Context. ok is false for any other ctx.
func ExecutionFromContext(ctx context.Context) (Execution, bool) {
	s := execOf(ctx)
	if s == nil {
		return Execution{}, false
	}
	return Execution{s}, true
}

// inferParent returns call.Parent, or — when it is zero — the execution of
// this registry that ctx belongs to (an explicit Parent always wins).
func (r *Registry) inferParent(ctx context.Context, parent Token) Token {
	if !parent.IsZero() {
		return parent
	}
	if p := execOf(ctx); p != nil && p.reg == r {
		return Token{p}
	}
	return Token{}
}
