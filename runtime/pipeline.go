package runtime

import (
	"fmt"
	"math"

	"github.com/toolscope/toolscope/internal/core"
)

// pipeline runs one call's stages in the order of R49 and returns its final
// result. Entry (R44–R48) is done when it starts: initExec resolved the
// tool, captured its finalizer and loaded the chain; the arguments are
// snapshotted. A stage that settles the call gives its candidate result and
// says whether post-execute still sees it (a post result) or not (a final
// one, R67); finish and the observers see every result.
//
// A turn runs the same stages, split at admission and at post-execute
// (turn.go): prepare is collapse, hookListsFor and preDispatch; a call's dispatch is
// the turn's admission, dispatch and recheck; commit is postAndRecheck and
// finish.
func (r *Registry) pipeline(s *execState, g admitter) *Result {
	if res := r.collapse(s); res != nil {
		return r.finish(s, res, hookLists{}) // R107: final, before any hook
	}
	h := r.hookListsFor(s)           // R85: the hooks of the chain loaded at entry
	res, post := r.preDispatch(s, h) // R48, R79, pre-execute, approval, guards, R56
	if res == nil {
		var final bool
		res, final = r.dispatch(s, h, g) // admission, around hooks, base, R65
		if s.stages {
			s.hookDispatched(len(h.around))
		}
		if !final {
			res, post = r.recheck(s, res), true // R80
		}
	}
	if post {
		res = r.postAndRecheck(s, h, res) // R67–R71, R80
	}
	return r.finish(s, res, h) // R72–R75
}

// preDispatch is R49 from entry to admission: the argument failure (R48) and the
// pre-cancelled check (R79), both final; pre-execute (R52), approval if
// asked (R55), the guards if allowed (R37) and the cancellation check after
// them (R56). It returns nil when the call goes on to admission; otherwise
// the candidate result and whether it is a post result.
func (r *Registry) preDispatch(s *execState, h hookLists) (res *Result, post bool) {
	if s.args == nil {
		return argsFailure(s.argsOver, r.cfg.argBound(), s.argsWhy), false // R48: wins over everything
	}
	if s.ctx().Err() != nil {
		return abortedBeforeDispatch(), false // R79
	}
	if s.stages {
		s.hookPreDispatch()
	}
	dec, err := runPre(Execution{s}, h.pre) // R52
	if s.stages {
		s.hookPre(len(h.pre), dec, err)
	}
	if err != nil {
		return failureFrom(err), false // R54
	}
	if res, post := r.decide(s, dec); res != nil {
		return res, post // denied (R57), or asked and not approved (R55)
	}
	reason, denied, err := r.evalGuards(s) // R37–R40
	if s.stages {
		s.hookGuards(denied)
	}
	if err != nil {
		return failureFrom(err), false // R39
	}
	if denied {
		return s.deny(reason), true // R39
	}
	if s.ctx().Err() != nil {
		return abortedBeforeDispatch(), true // R56
	}
	return nil, false
}

// decide acts on the pre-execute decision (R52): nil when the call goes on
// to the guards; otherwise its result and whether it is a post result.
func (r *Registry) decide(s *execState, dec Decision) (res *Result, post bool) {
	switch dec.Kind {
	case DecisionAllow:
		return nil, false
	case DecisionDeny:
		return s.deny(dec.Reason), true
	case DecisionAsk:
		res, post = r.approve(s, dec)
		if s.stages {
			s.hookApproval()
		}
		return res, post
	default:
		return failureFromMessage(fmt.Sprintf("pre-execute hook returned an unknown decision %d", dec.Kind), nil), false
	}
}

// approve resolves an Ask (R55): nil when the call is allowed; otherwise
// its result and whether it is a post result.
func (r *Registry) approve(s *execState, dec Decision) (res *Result, post bool) {
	ap := r.approverFor(s)
	if ap == nil {
		why := ""
		if dec.HasReason && dec.Reason != "" {
			why = " (" + dec.Reason + ")"
		}
		return s.deny(fmt.Sprintf("tool %q requires approval%s, and no approver is set up to grant it; the call was not run", s.name, why)), true
	}
	if s.agent == "" {
		return s.deny(fmt.Sprintf("tool %q requires approval, but the call has no agent to route it through", s.name)), true
	}
	var rejection string
	req := ApprovalRequest{Agent: s.agent, Tool: s.name, CallID: s.callID, Reason: dec.Reason, HasReason: dec.HasReason,
		Arguments: cloneBytes(s.args), TurnID: s.turnID, rejection: &rejection}
	out, err := callApprover(ap, s.ctx(), req)
	if err != nil {
		return failureFrom(err), false
	}
	switch out {
	case ApprovalAllowedOnce:
		return nil, false
	case ApprovalRejected:
		if rejection != "" {
			return s.deny(fmt.Sprintf("approval for tool %q was refused: %s", s.name, rejection)), true
		}
		return s.deny(fmt.Sprintf("approval for tool %q was refused", s.name)), true
	case ApprovalCancelled:
		if s.ctx().Err() != nil {
			return abortedBeforeDispatch(), true
		}
		return s.deny(fmt.Sprintf("approval for tool %q was cancelled", s.name)), true
	case ApprovalUnavailable:
		return s.deny(fmt.Sprintf("tool %q requires approval, but no approval channel is available", s.name)), true
	default:
		return failureFromMessage(fmt.Sprintf("approver returned an unknown outcome %q", string(out)), nil), false
	}
}

// approverFor is the approver that resolves s's ask, looked up when the ask
// happens (R55): the newest one set through the call's own scope, else
// through its nearest ancestor that has one, else through the global scope,
// else the registry's (WithApprover); nil when there is none.
func (r *Registry) approverFor(s *execState) Approver {
	for i := 0; i < s.chain.Len(); i++ {
		if a := layerApprover(s.chain.NodeAt(i)); a != nil {
			return a
		}
	}
	if a := layerApprover(r.global.node); a != nil {
		return a
	}
	return r.cfg.approver
}

func layerApprover(n *core.Node) Approver {
	l := n.Layer().List(core.KindApprover)
	if len(l) == 0 {
		return nil
	}
	return l[len(l)-1].Payload.(Approver)
}

// evalGuards runs the guards of R37: the global layer's, then each layer of
// the chain from the farthest ancestor to the agent's own; the first denial
// or failure wins.
func (r *Registry) evalGuards(s *execState) (reason string, denied bool, err error) {
	ex := Execution{s}
	if reason, deny, err := layerGuards(r.global.node, ex); err != nil || deny {
		return reason, deny, err
	}
	for i := s.chain.Len() - 1; i >= 0; i-- {
		if reason, deny, err := layerGuards(s.chain.NodeAt(i), ex); err != nil || deny {
			return reason, deny, err
		}
	}
	return "", false, nil
}

// layerGuards runs the guards of one layer in registration order, live
// (R40): each step reads the layer again and takes the first guard after the
// last one run, so a guard added meanwhile is consulted and one removed is
// skipped; a layer whose guard list was emptied meanwhile is done.
func layerGuards(n *core.Node, ex Execution) (reason string, deny bool, err error) {
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

// dispatch is admission (N1–N4; g nil: a turn admitted s already), then the
// around hooks wrapping the base dispatch (R58–R64), then normalization and
// the context merge (R65). final means post-execute is skipped (R65, R66);
// a refused admission is a post result (N3, N4).
func (r *Registry) dispatch(s *execState, h hookLists, g admitter) (res *Result, final bool) {
	if g != nil {
		if res := g.acquire(s); res != nil {
			return res, false
		}
		defer r.releaseAdmission(s)
	}
	if s.stages {
		s.hookDispatching()
	}
	r.emitStarted(s)
	if s.startedSent {
		defer func() { s.dispatchEnd = r.now().UnixNano() }()
	}
	if len(h.around) == 0 {
		// No wrapper: the base result is this execution's own (R65).
		return r.withDeferred(s, r.base(s, s.ctx())), false
	}
	out, err := r.around(s, h.around)
	if err != nil {
		return failureFrom(err), true // R66: final, deferred contexts dropped
	}
	return r.normalize(s, out)
}

// normalize is R65 for what the around hooks returned: a foreign success is
// rebuilt with the definition visible now (a failure to rebuild is final),
// then the body's deferred contexts go in front.
func (r *Registry) normalize(s *execState, out *Result) (res *Result, final bool) {
	res, rebuild := normalized(out, out.stamp == s)
	if rebuild {
		if res = r.rebuildSuccess(s, out.foreignValue()); res.isError {
			return res, true
		}
		res.contexts = out.contexts
	}
	return r.withDeferred(s, res), false
}

// withDeferred puts the body's deferred contexts in front of the result's
// (R65).
func (r *Registry) withDeferred(s *execState, out *Result) *Result {
	if !s.anyDeferred.Load() {
		return out // the common case: no lock on a plain call's path
	}
	s.mu.Lock()
	deferred := s.deferred
	s.mu.Unlock()
	return withContextsFirst(deferred, out)
}

// recheck replaces a success when the caller ctx is cancelled (R80).
func (r *Registry) recheck(s *execState, res *Result) *Result {
	if res.isError || s.ctx().Err() == nil {
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

// postAndRecheck is post-execute (R67–R71) and the cancellation check after
// it (R80).
func (r *Registry) postAndRecheck(s *execState, h hookLists, res *Result) *Result {
	if s.stages {
		s.hookPostStart()
	}
	res = r.postExecute(s, h.post, res)
	if s.stages {
		s.hookPost(len(h.post))
	}
	return r.recheck(s, res)
}

// postExecute runs the post-execute waterfall on res and folds its decision
// into the result (R68–R71).
func (r *Registry) postExecute(s *execState, list []core.Entry, res *Result) *Result {
	if len(list) == 0 {
		return res // the innermost default is Accept() (R68)
	}
	dec, err := runPostHooks(Execution{s}, res, list)
	out, rebuild := foldPost(res, dec, err)
	if rebuild {
		// AcceptValue on a success (R69); a failure to rebuild goes to
		// finish with no contexts (R71).
		if out = r.rebuildSuccess(s, dec.Value); out.isError {
			return out
		}
		out = acceptedContexts(res, out, dec.Contexts)
	}
	return out
}

// finish is R72–R75: materialize, finalize once with the finalizer captured
// at entry (R73), materialize again, then tell the event stream, the
// metrics and the result observers.
func (r *Registry) finish(s *execState, res *Result, h hookLists) *Result {
	res = materialized(res)
	if s.finalizer != nil {
		blocks, err := callFinalizer(s.finalizer, Execution{s}, res)
		res = finalized(res, blocks, err)
	}
	res.stamp = nil
	r.emitFinished(s, res)
	if s.times {
		s.hookFinished(res, len(h.result))
		if len(s.hooks.callEnd) > 0 {
			defer s.hookEnd(res, len(h.result)) // after the observers: CallEnd covers the whole call
		}
	}
	r.observe(s, h.result, res)
	return res
}

// observe tells the result observers res, in order, once each (R75); an
// observer's failure is contained.
func (r *Registry) observe(s *execState, list []core.Entry, res *Result) {
	ex := Execution{s}
	for _, e := range list {
		if err := callObserver(e.Payload.(ResultObserver), ex, res); err != nil {
			r.report(fmt.Errorf("result observer failed for call %q: %w", s.callID, printable(err)))
		}
	}
}
