package runtime

import (
	"context"
	"encoding/json"

	"github.com/toolscope/toolscope/internal/jsonv"
)

// Every user callback is called through one of these: a panic becomes an
// error (docs/contract.md §0, "Failing"), so no panic escapes the registry.

func recovered(err *error) {
	if p := recover(); p != nil {
		*err = panicError(p)
	}
}

func callPre(h PreExecuteHook, ex Execution, next func() (Decision, error)) (d Decision, err error) {
	defer recovered(&err)
	return h(ex.s.ctx(), ex, next)
}

func callAround(h AroundHook, ctx context.Context, ex Execution, next func(context.Context) *Result) (res *Result, err error) {
	defer recovered(&err)
	return h(ctx, ex, next)
}

func callPost(h PostExecuteHook, ex Execution, r *Result, next func() (PostDecision, error)) (d PostDecision, err error) {
	defer recovered(&err)
	return h(ex.s.ctx(), ex, r, next)
}

func callObserver(h ResultObserver, ex Execution, r *Result) (err error) {
	defer recovered(&err)
	return h(ex.s.ctx(), ex, r)
}

func callFinalizer(f func(context.Context, Execution, *Result) ([]Block, error), ex Execution, r *Result) (b []Block, err error) {
	defer recovered(&err)
	return f(ex.s.ctx(), ex, r)
}

func callGuard(g Guard, ex Execution) (reason string, deny bool, err error) {
	defer recovered(&err)
	reason, deny = g(ex.s.ctx(), ex)
	return reason, deny, nil
}

func callApprover(a Approver, ctx context.Context, req ApprovalRequest) (out ApprovalOutcome, err error) {
	defer recovered(&err)
	return a(ctx, req)
}

func callRender(f func(ctx context.Context, args, value json.RawMessage) ([]Block, error), ctx context.Context, args, value []byte) (b []Block, err error) {
	defer recovered(&err)
	a, v := clonePair(args, value)
	return f(ctx, a, v)
}

func callMeta(f func(ctx context.Context, args, value json.RawMessage) (any, error), ctx context.Context, args, value []byte) (m any, err error) {
	defer recovered(&err)
	a, v := clonePair(args, value)
	return f(ctx, a, v)
}

// clonePair copies a and b (nil stays nil) into one allocation; each copy's
// capacity ends at its length, so appending to one never reaches the other.
func clonePair(a, b []byte) ([]byte, []byte) {
	if a == nil || b == nil {
		return cloneBytes(a), cloneBytes(b)
	}
	buf := make([]byte, len(a)+len(b))
	n := copy(buf, a)
	copy(buf[n:], b)
	return buf[:n:n], buf[n:]
}

// callBody runs the body with its own copy of the arguments (R45).
func callBody(td *toolDef, ctx context.Context, s *execState) (v any, err error) {
	defer recovered(&err)
	s.rc.s = s
	args := s.args
	if td.validateArgs == nil {
		args = cloneBytes(args) // a raw body may keep or change its copy (R45)
	} else {
		s.directBody = true // the helper's own body, called by the registry
	}
	v, err = td.def.Execute(ctx, args, &s.rc)
	if err != nil {
		return nil, err
	}
	if raw, ok := v.(json.RawMessage); ok {
		// Keep the body's bytes out of the result (R62 snapshots it).
		b, err := jsonv.Encode(raw)
		if err != nil {
			return raw, nil // success creation reports it as non-lossless
		}
		return canonical(b), nil
	}
	return v, nil
}

func validJSON(b []byte) bool { return jsonv.Valid(b) }

// canonical marks bytes the registry already snapshotted as lossless JSON.
type canonical []byte
