package runtime

import (
	"context"

	"github.com/toolscope/toolscope/internal/core"
	"github.com/toolscope/toolscope/internal/jsonv"
)

// Execute runs one call in the scope's view through the whole pipeline
// (R49). call.Agent is set to the scope's key. It never panics and
// always returns a result; every failure is a coded or plain failure
// result.
func (s *Scope) Execute(ctx context.Context, call Call) *Result {
	call.Agent = s.node.Key
	return s.reg.executeWith(ctx, s.viewNode(), s.state, call)
}

// Execute runs one call in the view of call.Agent ("" = global view).
func (r *Registry) Execute(ctx context.Context, call Call) *Result {
	return r.executeOn(ctx, r.nodeOf(call.Agent), call)
}

func (r *Registry) executeOn(ctx context.Context, node *core.Node, call Call) *Result {
	return r.executeWith(ctx, node, nil, call)
}

// executeWith runs a call; sh is the scope's state when the caller holds
// the handle (saves a registry lookup on the hot path), else nil.
func (r *Registry) executeWith(ctx context.Context, node *core.Node, sh *scopeState, call Call) *Result {
	return r.executeArgs(ctx, node, sh, call, nil)
}

// executeArgs is executeWith; non-empty raw stands for call.Arguments =
// json.RawMessage(raw), without boxing it (the protobuf request's bytes).
func (r *Registry) executeArgs(ctx context.Context, node *core.Node, sh *scopeState, call Call, raw []byte) *Result {
	if ctx == nil {
		return failureFromMessage("runtime: Execute requires a non-nil context", nil)
	}
	if fail := r.enterCall(node); fail != nil {
		return fail // CLOSED or OVERLOADED (close.go)
	}
	var host *execState
	call.Parent, host = r.inferParent(ctx, call.Parent) // before ctx is wrapped: one ctx less to ask
	x := new(singleExec)
	s := &x.s
	s.host = host
	x.cctx.init(ctx, &r.life)
	defer r.exit(&x.cctx)
	r.initExec(s, &x.cctx, node, call)
	if len(raw) > 0 {
		s.fromText = true
		if bound := r.cfg.argBound(); len(raw) > bound {
			s.argsOver = len(raw)
		} else if b, err := jsonv.AppendCanonical(nil, raw); err == nil {
			s.args = b // snapshotArgs(json.RawMessage(raw))
		}
	} else {
		s.snapshotArgs(call.Arguments)
	}
	s.sh = sh
	return r.pipeline(s, scopeAdmitter{r})
}

// singleExec is a single Execute's execution and its ctx (a turn's calls
// share the turn's), in one allocation.
type singleExec struct {
	s    execState
	cctx shutdownAwareCtx
}

// admitter is the admission of dispatch, supplied by the caller: the scope's
// admission line for single calls, the turn scheduler for turns.
type admitter interface {
	// acquire admits s's dispatch; the admission is recorded on s and
	// given back by releaseAdmission. A non-nil result is the outcome of a
	// call that must not dispatch (nesting.go, Registry.acquire).
	acquire(s *execState) *Result
}

// scopeAdmitter admits single executions on their scope's gate (nesting.go).
type scopeAdmitter struct{ reg *Registry }

func (g scopeAdmitter) acquire(s *execState) *Result {
	s.mode, s.classified = Exclusive, true
	if td, ok := g.reg.resolveExec(s); ok {
		s.mode = td.classifyExec(s)
	}
	sh := s.sh
	if sh == nil || sh.gone.Load() {
		// A stale handle (its scope disposed, the key maybe live again)
		// admits on the live scope's gate, as its turns do.
		sh = g.reg.admission(s.node)
	}
	if g.reg.hostCap != nil {
		return g.reg.admitUnderHostCap(s, sh)
	}
	if res := g.reg.refusedFromCallback(s, sh); res != nil {
		return res
	}
	return g.reg.acquire(s, sh, s.mode == Parallel)
}
