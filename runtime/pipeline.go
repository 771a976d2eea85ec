package runtime

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/toolscope/toolscope/internal/core"
)

// run executes the stages of R49 for s and returns the final result.
func (r *Registry) run(s *execState, g gate) *Result {
	if res := r.collapse(s); res != nil {
		return r.finish(s, res, hooks{}) // R107: before any hook
	}
	h := r.hooksFor(s)
	res := r.pipeline(s, h, g)
	return r.finish(s, res, h)
}

// pipeline runs everything before finish and returns the candidate result.
func (r *Registry) pipeline(s *execState, h hooks, g gate) *Result {
	res, post := r.gate(s, h)
	if res == nil {
		out, final := r.dispatch(s, h, g)
		if s.span != nil {
			s.spanDispatched(len(h.around))
		}
		if final {
			return out
		}
		return r.complete(s, h, out)
	}
	if post {
		return r.postAndRecheck(s, h, res)
	}
	return res
}

// gate returns nil when the call passed; otherwise the candidate result and
// whether it is a post result.
func (r *Registry) gate(s *execState, h hooks) (res *Result, post bool) {
	// R48: argument failure wins over everything.
	if s.args == nil {
		if s.argsOver > 0 {
			return argsTooLarge(s.argsOver, r.cfg.argBound()), false
		}
		return failureFromMessage("tool execution arguments must be losslessly JSON-serializable", nil), false
	}
	// R79: pre-cancelled entry.
	if s.cx().Err() != nil {
		return abortedBeforeDispatch(), false
	}
	if s.span != nil {
		s.spanGate()
	}
	ex := Execution{s}
	dec, err := runPre(ex, h.pre)
	if s.span != nil {
		s.spanPre(len(h.pre), dec, err)
	}
	if err != nil {
		return failureFrom(err), false
	}
	switch dec.Kind {
	case DecisionDeny:
		return s.deny(dec.Reason), true
	case DecisionAsk:
		res, post, allowed := r.approve(s, dec)
		if s.span != nil {
			s.spanApproval()
		}
		if !allowed {
			return res, post
		}
	case DecisionAllow:
	default:
		return failureFromMessage(fmt.Sprintf("tools/pre-execute returned an unknown decision %d", dec.Kind), nil), false
	}
	reason, denied, err := r.evalGuards(s)
	if s.span != nil {
		s.spanGuards(denied)
	}
	if err != nil {
		return failureFrom(err), false
	}
	if denied {
		return s.deny(reason), true
	}
	// R56: cancelled while the gate ran.
	if s.cx().Err() != nil {
		return abortedBeforeDispatch(), true
	}
	return nil, false
}

// approve resolves an Ask (R55).
func (r *Registry) approve(s *execState, dec Decision) (res *Result, post, allowed bool) {
	ap := r.cfg.approver
	if ap == nil {
		reason := dec.Reason
		if !dec.HasReason {
			reason = fmt.Sprintf("tool %q requires approval (not yet supported)", s.name)
		}
		return s.deny(reason), true, false
	}
	if s.agent == "" {
		return s.deny(fmt.Sprintf("tool %q requires approval, but the call has no agent to route it through", s.name)), true, false
	}
	req := ApprovalRequest{Agent: s.agent, Tool: s.name, CallID: s.callID, Reason: dec.Reason, HasReason: dec.HasReason}
	out, err := callApprover(ap, s.cx(), req)
	if err != nil {
		return failureFrom(err), false, false
	}
	switch out {
	case ApprovalAllowedOnce:
		return nil, false, true
	case ApprovalRejected:
		return s.deny(fmt.Sprintf("the user rejected tool %q", s.name)), true, false
	case ApprovalCancelled:
		if s.cx().Err() != nil {
			return abortedBeforeDispatch(), true, false
		}
		return s.deny(fmt.Sprintf("approval for tool %q was cancelled", s.name)), true, false
	case ApprovalUnavailable:
		return s.deny(fmt.Sprintf("tool %q requires approval, but no approval channel is available", s.name)), true, false
	default:
		return failureFromMessage(fmt.Sprintf("approver returned an unknown outcome %q", string(out)), nil), false, false
	}
}

// evalGuards runs the guards of R37 with live iteration per layer (R40).
func (r *Registry) evalGuards(s *execState) (reason string, denied bool, err error) {
	ex := Execution{s}
	check := func(n *core.Node) (string, bool, error) {
		l := n.Layer()
		if len(l.List(core.KindGuard)) == 0 {
			return "", false, nil
		}
		gen := l.GuardGen()
		last := int64(math.MinInt64)
		for {
			l = n.Layer()
			if l.GuardGen() != gen {
				return "", false, nil
			}
			list := l.List(core.KindGuard)
			i := 0
			for i < len(list) && list[i].Seq <= last {
				i++
			}
			if i == len(list) {
				return "", false, nil
			}
			last = list[i].Seq
			reason, deny, err := callGuard(list[i].Payload.(Guard), ex)
			if err != nil || deny {
				return reason, deny, err
			}
		}
	}
	if reason, deny, err := check(r.global.node); err != nil || deny {
		return reason, deny, err
	}
	for i := s.chain.Len() - 1; i >= 0; i-- {
		if reason, deny, err := check(s.chain.NodeAt(i)); err != nil || deny {
			return reason, deny, err
		}
	}
	return "", false, nil
}

// dispatch runs the around hooks and the base dispatch under admission,
// then normalizes (R58–R66). final=true means post-execute is skipped.
func (r *Registry) dispatch(s *execState, h hooks, g gate) (res *Result, final bool) {
	if g != nil {
		if res := g.acquire(s); res != nil {
			return res, false
		}
		defer r.releaseAdmission(s)
	}
	if s.span != nil {
		s.spanDispatching()
	}
	r.emitStarted(s)
	if s.startedSent {
		defer func() { s.dispatchEnd = time.Now().UnixNano() }()
	}
	if len(h.around) == 0 {
		// No wrapper: the base result is this execution's own (R65).
		out := r.base(s, s.cx())
		return r.withDeferred(s, out), false
	}
	ex := Execution{s}
	var step func(i int, ctx context.Context) *Result
	step = func(i int, ctx context.Context) *Result {
		if i == len(h.around) {
			return r.base(s, ctx)
		}
		hook := h.around[i].Payload.(AroundHook)
		var busy nextBusy
		next := func(c context.Context) *Result {
			// A retrying wrapper gets a fresh dispatch each time, but one
			// at a time: the dispatches of one execution share its state.
			if st := busy.enter(); st != nextIdle {
				return refusedNext(st)
			}
			defer busy.leave()
			if c == nil {
				c = ctx
			}
			return step(i+1, c)
		}
		out, err := callAround(hook, ctx, ex, next)
		busy.close()
		if err != nil {
			s.mu.Lock()
			if s.aroundErr == nil {
				s.aroundErr = err
			}
			s.mu.Unlock()
			return failureFrom(err)
		}
		if out == nil {
			err := errors.New("tools/execute wrapper returned no result")
			s.mu.Lock()
			if s.aroundErr == nil {
				s.aroundErr = err
			}
			s.mu.Unlock()
			return failureFrom(err)
		}
		return out
	}
	out := step(0, s.cx())
	s.mu.Lock()
	aerr := s.aroundErr
	s.mu.Unlock()
	if aerr != nil {
		// R66: final failure, deferred contexts dropped.
		return failureFrom(aerr), true
	}
	// R65: normalization.
	if out.stamp != s {
		if out.isError && !out.lossyValue() {
			n := *out
			n.value = nil
			n.concludes = false
			n.stamp = nil
			out = &n
		} else {
			td, ok := r.resolve(s.node, s.name)
			if !ok {
				return unknownTool(s.name), true
			}
			rebuilt := r.createSuccess(s, td, out.foreignValue())
			if rebuilt.isError {
				return rebuilt, true
			}
			rebuilt.contexts = out.contexts
			out = rebuilt
		}
	}
	return r.withDeferred(s, out), false
}

// withDeferred prepends the body's deferred contexts to the result's (R65).
func (r *Registry) withDeferred(s *execState, out *Result) *Result {
	s.mu.Lock()
	deferred := s.deferred
	s.mu.Unlock()
	if len(deferred) == 0 {
		return out
	}
	n := *out
	n.contexts = append(append(make([]Message, 0, len(deferred)+len(out.contexts)), deferred...), out.contexts...)
	return &n
}

// complete runs the after-dispatch cancel check, post-execute and the
// second cancel check (R80, R67).
func (r *Registry) complete(s *execState, h hooks, res *Result) *Result {
	res = r.recheck(s, res)
	return r.postAndRecheck(s, h, res)
}

func (r *Registry) postAndRecheck(s *execState, h hooks, res *Result) *Result {
	if s.span != nil {
		s.spanPostStart()
	}
	res = r.runPost(s, h, res)
	if s.span != nil {
		s.spanPost(len(h.post))
	}
	return r.recheck(s, res)
}

// recheck replaces a success when the caller ctx is cancelled (R80).
func (r *Registry) recheck(s *execState, res *Result) *Result {
	if res.isError || s.cx().Err() == nil {
		return res
	}
	var out *Result
	if s.bodyInvoked.Load() {
		out = aborted()
	} else {
		out = abortedBeforeDispatch()
	}
	out.contexts = res.contexts
	return out
}

// runPost is post-execute (R68–R71).
func (r *Registry) runPost(s *execState, h hooks, res *Result) *Result {
	if len(h.post) == 0 {
		return res // the innermost default is Accept{} (R68)
	}
	dec, err := runPostHooks(Execution{s}, res, h.post)
	if err != nil {
		return failureFrom(err)
	}
	if dec.Blocked {
		out := blocked(dec.Feedback)
		out.contexts = cloneMessages(dec.Contexts)
		return out
	}
	if dec.Content != nil && dec.HasValue {
		return failureFromMessage("tools/post-execute accept decision cannot replace both value and content", nil)
	}
	out := res
	switch {
	case dec.HasValue:
		if res.isError {
			return failureFromMessage("tools/post-execute cannot replace the value of a failed result", nil)
		}
		td, ok := r.resolve(s.node, s.name)
		if !ok {
			return unknownTool(s.name)
		}
		rebuilt := r.createSuccess(s, td, dec.Value)
		if rebuilt.isError {
			return rebuilt
		}
		out = rebuilt
	case dec.Content != nil:
		if !blocksSafe(dec.Content) {
			return failureFromMessage("tool result must be losslessly JSON-serializable", nil)
		}
		n := *res
		n.content = cloneBlocks(dec.Content)
		out = &n
	}
	if len(dec.Contexts) > 0 || out != res {
		n := *out
		n.contexts = append(append([]Message(nil), res.contexts...), dec.Contexts...)
		if len(n.contexts) == 0 {
			n.contexts = nil
		}
		out = &n
	}
	out.stamp = nil
	return out
}

// finish is R72–R75: materialize, finalize once, materialize again, notify
// observers.
func (r *Registry) finish(s *execState, res *Result, h hooks) *Result {
	if !blocksSafe(res.content) {
		res = failureFromMessage("tool result must be losslessly JSON-serializable", nil)
	}
	if s.finalizer != nil {
		blocks, err := callFinalizer(s.finalizer, Execution{s}, res)
		switch {
		case err != nil:
			res = failureFrom(err)
		case blocks != nil:
			if !blocksSafe(blocks) {
				res = failureFromMessage("tool result must be losslessly JSON-serializable", nil)
			} else {
				n := *res
				n.content = cloneBlocks(blocks)
				res = &n
			}
		}
	}
	res.stamp = nil
	r.emitFinished(s, res)
	if r.metrics != nil {
		r.metrics.recordCall(context.Background(), s, res)
	}
	if s.span != nil {
		s.spanObserversStart(len(h.result))
		defer s.endSpan(res) // after the observers: the span covers the whole call
	}
	ex := Execution{s}
	for _, e := range h.result {
		if err := callObserver(e.Payload.(ResultObserver), ex, res); err != nil {
			r.contain(fmt.Errorf("result observer failed for call %q: %w", s.callID, printable(err)))
		}
	}
	return res
}

// runPre is the pre-execute waterfall (R52). Each hook's next runs the
// rest of the waterfall at most once (later calls return the same
