package runtime

import (
	"context"
	"fmt"
	"sync"

	"github.com/toolscope/toolscope/internal/admit"
)

// Every callback of an execution — hooks, guards, the approver, the body —
// receives a ctx that carries the execution: the caller's ctx (or the
// turn's), wrapped so that ExecutionFromContext finds it. A call made with
// such a ctx (or one derived from it) and no Call.Parent is nested in that
// execution: the registry infers the parent, so "pass ctx down" is enough
// for nested calls to be recognised (issue 11, R86).

// execKey is the ctx key of the execution a ctx belongs to.
type execKey struct{}

// regExecKey is the ctx key of the nearest execution of one registry in a
// ctx's chain: a ctx that passed through another registry (a body of
// registry 1 calls registry 2, whose body calls back into registry 1)
// carries both, and each registry finds its own (R51).
type regExecKey struct{ r *Registry }

// The four ctx types of a call, from the caller's ctx to the body's:
//
//   - shutdownAwareCtx (close.go) is the ctx a call (or a turn) runs under:
//     the caller's, cancelled also when Close gives up waiting (R7 drain,
//     then cancel) and once the call is over (like an ended request's). Err
//     needs no allocation; the first Done (or the context package's own
//     Value lookup, how it looks for a parent to hang a derived ctx on)
//     builds its shutdownLink, and from then on that answers Done and that
//     lookup; other values come from the caller's ctx. A pipeline that
//     never waits on Done pays nothing. It lives inside the
//     execution (or the turn) it belongs to.
//   - shutdownLink (close.go) is that lazily built part: a cancel ctx under
//     the caller's, cancelled by the registry's shutdown signal as well, and
//     what unregisters it from that signal.
//   - execCarrierCtx (here) is the ctx the execution's callbacks and body
//     see: the shutdownAwareCtx (the turn's for a turn's call), as the
//     CallStart hooks returned it, plus the execution itself, for ExecutionFromContext and for nested calls to
//     find their parent. It lives inside the execState.
//   - callerOrWrapperCtx (body.go) is the body's ctx when an around hook
//     delegated with a ctx of its own (R60): cancelled when either the
//     caller's or the wrapper's is, with Err answering from both
//     synchronously, and carrying the execution whatever ctx the wrapper
//     passed.

// execCarrierCtx is a ctx that carries its execution (see the block above).
type execCarrierCtx struct {
	context.Context
	s *execState
}

// Value implements context.Context.
func (c *execCarrierCtx) Value(key any) any {
	return execValue(c.s, c.Context, key)
}

// execValue answers a ctx's Value for key when the ctx carries s: s for
// execKey and for s's registry's regExecKey, else what parent says.
func execValue(s *execState, parent context.Context, key any) any {
	switch k := key.(type) {
	case execKey:
		return s
	case regExecKey:
		if k.r == s.reg {
			return s
		}
	}
	return parent.Value(key)
}

// String names the ctx in debugging output.
func (c *execCarrierCtx) String() string { return "toolscope execution context" }

// execOf returns the execution ctx belongs to, or nil.
func execOf(ctx context.Context) *execState {
	if ctx == nil {
		return nil
	}
	s, _ := ctx.Value(execKey{}).(*execState)
	return s
}

// execIn returns the nearest execution of r that ctx belongs to, or nil.
func (r *Registry) execIn(ctx context.Context) *execState {
	if ctx == nil {
		return nil
	}
	s, _ := ctx.Value(regExecKey{r}).(*execState)
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

// inferParent returns the call's parent — call.Parent, or when it is zero
// the nearest execution of this registry that ctx belongs to, however
// many other registries' executions lie between (R51; an explicit Parent
// always wins) — and its host: the execution it runs within for admission,
// which is ctx's execution when there is one (the call runs inside that
// body whatever Parent says), else the parent.
func (r *Registry) inferParent(ctx context.Context, parent Token) (Token, *execState) {
	in := r.execIn(ctx)
	if parent.IsZero() {
		parent = Token{in}
	}
	host := in
	if host == nil && parent.s != nil && parent.s.reg == r {
		host = parent.s
	}
	return parent, host
}

// Nested admission (issue 11, R86, contract N1–N6) is decided by
// admit.Nest, a single-goroutine policy over ids (here *execState for a
// call and *scopeState for a scope; its doc tells the rules). This file is its
// driver: calls that are not nested take the scope's gate as before — one
// CAS when nobody waits, else the admission line's FIFO queue — and a nested
// call takes the registry's nest lock, asks the policy, and does what it
// answers: wait on a channel, post to an admission line, wake waiters, admit
// those waiting in the queues.

// nestState is the registry's nested admission: the policy and the
// channels of the nested calls waiting for it. Nested waits are rare, so
// one lock serves every scope.
type nestState struct {
	mu    sync.Mutex
	p     admit.Nest[*execState, *scopeState, nestWorld]
	ready map[*execState]chan struct{} // closed when the policy admits the call (Effects.Wake)
}

// scopeNest is the nested side of one scope's admission, allocated on first
// use (an idle scope pays a nil pointer). Guarded by Registry.nest.mu.
type scopeNest = admit.Inside[*execState]

// nestWorld is what the policy reads and records about executions and
// scopes: hosts, the admission each holds, each scope's gate.
type nestWorld struct{}

func (nestWorld) Host(s *execState) *execState { return s.host }

func (nestWorld) Holding(s *execState) (*scopeState, bool) { return s.holder() }

func (nestWorld) Hold(s *execState, sh *scopeState, excl, slot bool) { s.hold(sh, excl, slot) }

func (nestWorld) Scope(sh *scopeState) (*admit.Gate, *scopeNest) {
	if sh.nest == nil {
		sh.nest = &scopeNest{} // under nest.mu: the policy is only called with it held
	}
	return &sh.gate, sh.nest
}

// holder returns the admission s holds (nil if none) and whether it is
// exclusive.
func (s *execState) holder() (*scopeState, bool) {
	sh := s.holding.Load()
	if sh == nil {
		return nil, false
	}
	return sh, s.holdExcl
}

// nestedCall reports whether an ancestor of s (through hosts: the
// executions it runs within) holds an admission: then s is nested.
func (r *Registry) nestedCall(s *execState) bool { return r.nest.p.Nested(s) }

// insideOf reports whether an ancestor of s holds sh.
func (r *Registry) insideOf(s *execState, sh *scopeState) bool { return r.nest.p.Inside(s, sh) }

// acquire admits s's dispatch on sh (nil: nothing to serialize against). A
// nil result means s may dispatch and owes releaseAdmission; otherwise the
// result is s's outcome and nothing is owed: ABORTED_BEFORE_DISPATCH when
// its ctx ended while it waited, WOULD_DEADLOCK when waiting could never
// end.
func (r *Registry) acquire(s *execState, sh *scopeState, parallel bool) *Result {
	if sh == nil {
		return nil
	}
	if s.host == nil || !r.nestedCall(s) {
		for retried := false; ; retried = true {
			t, ok := sh.gate.TryAcquire(parallel)
			if ok {
				s.hold(sh, !parallel, true)
				return nil
			}
			if f := r.cfg.afterFastPathFailed; f != nil {
				f(s.name)
			}
			out := admitGone
			if line := r.lineFor(sh); line != nil {
				out = line.admitWait(s.ctx(), parallel, t)
			}
			switch out {
			case admitCancelled:
				return abortedBeforeDispatch()
			case admitted:
				s.hold(sh, !parallel, true)
				return nil
			}
			// The scope was torn down before the call got in line: its key's
			// calls are admitted like those of a key with no live scope
			// (admission), unless that is torn down too (Close), which R7
			// lets run unadmitted: it holds nothing and owes nothing.
			next := r.admission(s.node)
			if retried || next == nil || next == sh || !sh.gone.Load() {
				return nil
			}
			sh = next
		}
	}
	return r.acquireNested(s, sh, parallel)
}

// hold records the admission s holds; holdExcl is written before holding,
// which publishes it.
func (s *execState) hold(sh *scopeState, excl, slot bool) {
	s.holdExcl, s.holdSlot = excl, slot
	s.holding.Store(sh)
}

// applyNest does what the policy answered: wake the waiters it admitted, have
// the queues that may admit someone now admit them. Caller holds nest.mu.
func (r *Registry) applyNest(fx admit.Effects[*execState, *scopeState]) {
	n := &r.nest
	for _, s := range fx.Wake {
		close(n.ready[s])
		delete(n.ready, s)
	}
	for _, sh := range fx.AdmitWaiting {
		r.admitWaiting(sh)
	}
}

// waitChan returns the channel the policy's wake of s closes. Caller holds
// nest.mu.
func (n *nestState) waitChan(s *execState) chan struct{} {
	if n.ready == nil {
		n.ready = make(map[*execState]chan struct{})
	}
	ch := make(chan struct{})
	n.ready[s] = ch
	return ch
}

func (r *Registry) acquireNested(s *execState, sh *scopeState, parallel bool) *Result {
	n := &r.nest
	n.mu.Lock()
	d, fx := n.p.Enter(s, sh, parallel)
	r.applyNest(fx)
	switch d {
	case admit.Admitted:
		n.mu.Unlock()
		return nil
	case admit.WouldDeadlock:
		n.mu.Unlock()
		return wouldDeadlock(s, sh)
	case admit.Line:
		aw := &admit.Waiter{Parallel: parallel, Ready: make(chan struct{})}
		if n.p.Line(aw) {
			n.mu.Unlock()
			return nil
		}
		ready := n.waitChan(s)
		n.mu.Unlock()
		return r.waitInLine(s, sh, aw, ready)
	}
	ready := n.waitChan(s)
	n.mu.Unlock()
	select {
	case <-ready:
		return nil
	case <-s.ctx().Done():
	}
	return r.cancelNested(s, nil)
}

// waitInLine waits for s's admission by the scope's queue (aw), or, once
// taken out of the line, by the policy (ready), or for its ctx to end.
func (r *Registry) waitInLine(s *execState, sh *scopeState, aw *admit.Waiter, ready chan struct{}) *Result {
	n := &r.nest
	if line := r.lineFor(sh); line == nil || !line.post(lineOp{w: aw}) {
		// The scope was torn down: nobody keeps its line any more; wait as
		// a nested call that skips it.
		n.mu.Lock()
		r.applyNest(n.p.Promote(s))
		n.mu.Unlock()
	}
	select {
	case <-aw.Ready:
		r.admittedInLine(s)
		return nil
	case <-ready:
		return nil
	case <-s.ctx().Done():
	}
	return r.cancelNested(s, aw)
}

// cancelNested ends s's nested wait when its ctx ended (aw: its entry in
// the scope's queue, if it got in line).
func (r *Registry) cancelNested(s *execState, aw *admit.Waiter) *Result {
	n := &r.nest
	n.mu.Lock()
	c, fx := n.p.Cancel(s)
	r.applyNest(fx)
	delete(n.ready, s)
	n.mu.Unlock()
	switch c {
	case admit.AlreadyAdmitted:
		return nil // admitted as the ctx ended: dispatch sees the ctx and aborts
	case admit.QueueAdmitted:
		<-aw.Ready // admitted as the ctx ended
		r.admittedInLine(s)
		return nil
	}
	return abortedBeforeDispatch()
}

// admittedInLine records the slot the queue gave s.
func (r *Registry) admittedInLine(s *execState) {
	r.nest.mu.Lock()
	r.nest.p.AdmittedInLine(s)
	delete(r.nest.ready, s)
	r.nest.mu.Unlock()
}

// releaseAdmission ends the admission s holds, if any.
func (r *Registry) releaseAdmission(s *execState) {
	if r.hostCap != nil {
		r.releaseHost(s)
	}
	sh := s.holding.Load()
	if sh == nil {
		return
	}
	s.holding.Store(nil)
	if s.holdSlot {
		r.releaseOn(sh, s.holdExcl)
		return
	}
	n := &r.nest
	n.mu.Lock()
	r.applyNest(n.p.ReleaseInside(s, sh, s.holdExcl))
	n.mu.Unlock()
}

// releaseOn gives back a slot of sh's gate: one CAS when nobody waits;
// otherwise the slot is given back here and whoever waits is looked at.
func (r *Registry) releaseOn(sh *scopeState, excl bool) {
	if sh.gate.TryRelease(excl) {
		return
	}
	was := sh.gate.Release(excl)
	if was.NestWaiting() {
		r.nest.mu.Lock()
		r.applyNest(r.nest.p.Recheck())
		r.nest.mu.Unlock()
	}
	if was.Queued() {
		r.admitWaiting(sh)
	}
}

// admitWaiting has sh's admission line admit whoever fits now. The admission line may not
// exist yet (a waiter that failed the fast path may still be spawning it),
// so it is spawned here rather than the admitWaiting dropped.
func (r *Registry) admitWaiting(sh *scopeState) {
	if line := r.lineFor(sh); line != nil {
		line.admitWaiting()
	}
}

func wouldDeadlock(s *execState, sh *scopeState) *Result {
	key := "the global scope"
	if s.node != nil {
		key = fmt.Sprintf("scope %q", s.node.Key)
	}
	return codedFailure(NameDeadlock, CodeWouldDeadlock, fmt.Sprintf(
		"tool call %q would deadlock: its admission in %s waits for a running call that is not its ancestor and that waits, in turn, for one of its own ancestors",
		s.name, key))
}
