package runtime

import (
	"context"
	"fmt"
	"slices"
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

// execCtx is an execution's own ctx: the caller's (or the turn's), plus the
// execution for ExecutionFromContext. It lives inside the execState.
type execCtx struct {
	context.Context
	s *execState
}

// Value implements context.Context.
func (c *execCtx) Value(key any) any {
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
func (c *execCtx) String() string { return "toolscope execution context" }

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

// Nested admission (issue 11, R86). The rule: an exclusive call never
// overlaps a call of its scope that is not one of its ancestors, and no
// nesting pattern hangs — it runs, or fails at once with WOULD_DEADLOCK.
//
// A call is nested when one of its ancestors (Call.Parent, or the execution
// its ctx belongs to, and so on up) holds an admission right now, in any
// scope. Calls that are not nested use the scope's gate as before: one CAS
// when nobody waits, else the supervisor's FIFO queue. A nested call of
// scope S instead goes through the registry's nest lock, ahead of that
// queue (a nested call waiting behind calls that wait for its own ancestor
// would never run):
//
//   - with an ancestor holding S, it runs inside that admission, taking no
//     slot: a parallel call when no exclusive call of S other than its
//     ancestors runs; an exclusive call when every call of S that runs is
//     one of its ancestors (it sets the gate's hold mark, so nothing else is
//     admitted until it ends);
//   - with no ancestor holding S, it takes a slot of S's gate like any call,
//     first come, first served (N1): at once when nobody waits and it fits,
//     else in S's queue — unless a call ahead of it waits for one of its own
//     ancestors (N2): then it skips the line and takes a slot as soon as it
//     fits what runs. Such a wait is a cycle through the call in line (a
//     call in line waits, as far as the registry can tell, for every call
//     running in S), found when the call arrives or when a later nested
//     call starts waiting (that call then takes the one in line out of it).
//
// A nested call that cannot run yet waits (its ctx still ends the wait)
// unless waiting would close a cycle: it waits for some running call h of S
// that is not its ancestor, h cannot end before its own waiting descendant
// v does, and so on back to one of the waiter's ancestors (a cycle through
// a call in line is broken by taking it out of the line instead). Each new waiter
// is checked against the others; if it closes a cycle it gets
// WOULD_DEADLOCK at once (two parallel siblings that both ask for a nested
// exclusive call of their scope: the first waits for the other to end, the
// second fails, and then the first runs).

// nestState is the registry's nested admission: the nested calls waiting
// anywhere in the registry, in arrival order. Nested waits are rare, so one
// lock serves every scope.
type nestState struct {
	mu      sync.Mutex
	waiters []*nestWaiter
}

// shellNest is the nested side of one scope's admission, allocated on first
// use (an idle scope pays a nil pointer). Guarded by Registry.nest.mu.
type shellNest struct {
	inside  []*execState // running nested calls that took no slot
	excl    int          // how many of them are exclusive (the hold mark)
	waiters int          // nested calls waiting for this scope (the wait mark)
}

type nestWaiter struct {
	s        *execState
	sh       *shell
	parallel bool
	ready    chan struct{}
	done     bool // admitted; guarded by nest.mu
	// inLine: the call waits in the scope's queue (aw), first come, first
	// served (N1), rather than as a nested waiter; guarded by nest.mu. It
	// is taken out of the line (promote) when a call ahead of it turns out
	// to wait for one of its ancestors (N2).
	inLine bool
	aw     *admit.Waiter
}

// live reports whether w still waits (one in line may have been admitted
// by the queue and not yet dropped from the waiters).
func (w *nestWaiter) live() bool { return !w.inLine || w.aw == nil || w.aw.Waiting() }

// holder returns the admission s holds (nil if none) and whether it is
// exclusive.
func (s *execState) holder() (*shell, bool) {
	sh := s.holding.Load()
	if sh == nil {
		return nil, false
	}
	return sh, s.holdExcl
}

// nestedCall reports whether an ancestor of s (through hosts: the
// executions it runs within) holds an admission: then s is nested.
func (r *Registry) nestedCall(s *execState) bool {
	for p := s.host; p != nil; p = p.host {
		if p.holding.Load() != nil {
			return true
		}
	}
	return false
}

// insideOf reports whether an ancestor of s holds sh.
func insideOf(s *execState, sh *shell) bool {
	for p := s.host; p != nil; p = p.host {
		if p.holding.Load() == sh {
			return true
		}
	}
	return false
}

// isAncestor reports whether a is an ancestor of s.
func isAncestor(a, s *execState) bool {
	for p := s.host; p != nil; p = p.host {
		if p == a {
			return true
		}
	}
	return false
}

// acquire admits s's dispatch on sh (nil: nothing to serialize against). A
// nil result means s may dispatch and owes releaseAdmission; otherwise the
// result is s's outcome and nothing is owed: ABORTED_BEFORE_DISPATCH when
// its ctx ended while it waited, WOULD_DEADLOCK when waiting could never
// end.
func (r *Registry) acquire(s *execState, sh *shell, parallel bool) *Result {
	if sh == nil {
		return nil
	}
	if s.host == nil || !r.nestedCall(s) {
		for retried := false; ; retried = true {
			if sh.gate.TryAcquire(parallel) {
				s.hold(sh, !parallel, true)
				return nil
			}
			out := admitGone
			if sup := r.supervisorFor(sh); sup != nil {
				out = sup.admitWait(s.cx(), parallel)
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
func (s *execState) hold(sh *shell, excl, slot bool) {
	s.holdExcl, s.holdSlot = excl, slot
	s.holding.Store(sh)
}

func (r *Registry) acquireNested(s *execState, sh *shell, parallel bool) *Result {
	n := &r.nest
	n.mu.Lock()
	if sh.nest == nil {
		sh.nest = &shellNest{}
	}
	// The waiter lives on the stack until the call has to wait: a nested
	// call that runs at once (the usual case) allocates nothing here.
	wv := nestWaiter{s: s, sh: sh, parallel: parallel}
	if !insideOf(s, sh) {
		// No ancestor holds the scope: first come, first served (N1) — at
		// once when nobody waits and it fits, else in line, unless a call
		// ahead waits for one of its ancestors (N2): waiting in line would
		// close a cycle through it.
		if sh.gate.TryAcquireFirst(parallel) {
			n.mu.Unlock()
			s.hold(sh, !parallel, true)
			return nil
		}
		w := &nestWaiter{s: s, sh: sh, parallel: parallel, inLine: true}
		if r.cycleThrough(w) == nil {
			w.ready = make(chan struct{})
			w.aw = &admit.Waiter{Parallel: parallel, Ready: make(chan struct{})}
			if sh.gate.TryAcquire(parallel) {
				n.mu.Unlock()
				s.hold(sh, !parallel, true)
				return nil
			}
			n.waiters = append(n.waiters, w)
			n.mu.Unlock()
			return r.waitInLine(w)
		}
	}
	if r.tryNested(&wv) {
		n.mu.Unlock()
		return nil
	}
	w := &nestWaiter{s: s, sh: sh, parallel: parallel}
	// Mark the gate, then look again: a release from now on takes the slow
	// path and looks at us (it needs n.mu, which we hold), and one made
	// before the mark is seen by this second look.
	sh.nest.waiters++
	if sh.nest.waiters == 1 {
		sh.gate.SetNestWait()
	}
	if r.tryNested(w) {
		r.unwaitLocked(sh)
		n.mu.Unlock()
		return nil
	}
	// A cycle through w is broken by taking a call in line out of it (it
	// waits only for what it conflicts with, as w does); one with nobody in
	// line on it is a deadlock.
	for {
		path := r.cycleThrough(w)
		if path == nil {
			break
		}
		var u *nestWaiter
		for _, x := range path {
			if x.inLine && x != w {
				u = x
				break
			}
		}
		if u == nil {
			r.unwaitLocked(sh)
			n.mu.Unlock()
			return wouldDeadlock(s, sh)
		}
		r.promoteLocked(u)
	}
	w.ready = make(chan struct{})
	n.waiters = append(n.waiters, w)
	sh.gate.NestWaitBegin() // counts against WithMaxQueued and in the queued gauge
	n.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-s.cx().Done():
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if w.done {
		return nil // admitted as the ctx ended: dispatch sees the ctx and aborts
	}
	for i, x := range n.waiters {
		if x == w {
			n.waiters = append(n.waiters[:i], n.waiters[i+1:]...)
			break
		}
	}
	sh.gate.NestWaitEnd()
	r.unwaitLocked(sh)
	return abortedBeforeDispatch()
}

// unwaitLocked ends one nested wait on sh; when it was the last, calls that
// are not nested may be admitted again.
func (r *Registry) unwaitLocked(sh *shell) {
	sh.nest.waiters--
	if sh.nest.waiters == 0 {
		if sh.gate.ClearNestWait().Queued() {
			r.kick(sh)
		}
	}
}

// waitInLine waits for w's admission by the scope's queue (or, once
// promoted, as a nested waiter), or for its ctx to end.
func (r *Registry) waitInLine(w *nestWaiter) *Result {
	n := &r.nest
	s, sh := w.s, w.sh
	if sup := r.supervisorFor(sh); sup == nil || !sup.post(supOp{w: w.aw}) {
		// The scope was torn down: nobody keeps its line any more; wait as
		// a nested call that skips it.
		n.mu.Lock()
		if w.inLine {
			r.promoteLocked(w)
		}
		n.mu.Unlock()
	}
	select {
	case <-w.aw.Ready:
		r.admittedInLine(w)
		return nil
	case <-w.ready:
		return nil
	case <-s.cx().Done():
	}
	n.mu.Lock()
	if w.done {
		n.mu.Unlock()
		return nil // admitted as the ctx ended: dispatch sees the ctx and aborts
	}
	if w.inLine {
		if sh.gate.Leave(w.aw) {
			r.dropWaiterLocked(w)
			n.mu.Unlock()
			r.kick(sh) // the waiters behind it may fit now
			return abortedBeforeDispatch()
		}
		n.mu.Unlock()
		<-w.aw.Ready // admitted as the ctx ended
		r.admittedInLine(w)
		return nil
	}
	r.dropWaiterLocked(w)
	sh.gate.NestWaitEnd()
	r.unwaitLocked(sh)
	n.mu.Unlock()
	return abortedBeforeDispatch()
}

// admittedInLine records the slot the queue gave w.
func (r *Registry) admittedInLine(w *nestWaiter) {
	r.nest.mu.Lock()
	r.dropWaiterLocked(w)
	r.nest.mu.Unlock()
	w.s.hold(w.sh, !w.parallel, true)
}

// promoteLocked takes u, in line, out of the line: a call ahead of it waits
// for one of its ancestors (N2). From now on it waits as a nested call that
// needs a slot: admitted as soon as it fits what runs. Caller holds
// nest.mu.
func (r *Registry) promoteLocked(u *nestWaiter) {
	if !u.sh.gate.Leave(u.aw) {
		return // the queue admitted it meanwhile: it waits for nothing
	}
	u.inLine = false
	r.kick(u.sh) // the waiters behind it may fit now
	u.sh.gate.NestWaitBegin()
	u.sh.nest.waiters++
	if u.sh.nest.waiters == 1 {
		u.sh.gate.SetNestWait()
	}
	if r.tryNested(u) {
		u.done = true
		close(u.ready)
		u.sh.gate.NestWaitEnd()
		r.unwaitLocked(u.sh)
		r.dropWaiterLocked(u)
	}
}

func (r *Registry) dropWaiterLocked(w *nestWaiter) {
	n := &r.nest
	for i, x := range n.waiters {
		if x == w {
			n.waiters = append(n.waiters[:i], n.waiters[i+1:]...)
			return
		}
	}
}

// tryNested admits w if it can run now. Caller holds nest.mu.
func (r *Registry) tryNested(w *nestWaiter) bool {
	s, sh, nest := w.s, w.sh, w.sh.nest
	if !insideOf(s, sh) {
		if !sh.gate.TryAcquireNested(w.parallel) {
			return false
		}
		s.hold(sh, !w.parallel, true)
		return true
	}
	for _, h := range nest.inside {
		if (!w.parallel || h.holdExcl) && !isAncestor(h, s) {
			return false
		}
	}
	if !w.parallel {
		// Every call holding a slot must be our ancestor: there is one slot
		// holder above us, so nobody else may hold one.
		if nest.excl == 0 && !sh.gate.HoldIfAlone() {
			return false
		}
		if nest.excl > 0 && sh.gate.Load().Count() != 1 {
			return false
		}
		nest.excl++
	}
	nest.inside = append(nest.inside, s)
	s.hold(sh, !w.parallel, false)
	return true
}

// cycleThrough returns the waiters on a cycle of waits through w (w
// waiting, or about to), or nil: w waits for running calls of its scope
// that are not its ancestors; such a call cannot end while one of its
// descendants waits, and so on. Caller holds nest.mu.
func (r *Registry) cycleThrough(w *nestWaiter) []*nestWaiter {
	all := r.nest.waiters
	if !slices.Contains(all, w) {
		all = append(all[:len(all):len(all)], w)
	}
	seen := make(map[*nestWaiter]bool, len(all))
	var path []*nestWaiter
	var reach func(u *nestWaiter) bool
	reach = func(u *nestWaiter) bool {
		for _, v := range all {
			if !v.live() || !blocksOn(u, v) {
				continue
			}
			if v == w || (!seen[v] && func() bool { seen[v] = true; return reach(v) }()) {
				path = append(path, u)
				return true
			}
		}
		return false
	}
	if reach(w) {
		return path
	}
	return nil
}

// blocksOn reports whether waiter u waits for a running ancestor of waiter
// v (which cannot end before v does). A call in line waits, as far as
// anyone can tell here, for every call running in its scope.
func blocksOn(u, v *nestWaiter) bool {
	for h := v.s.host; h != nil; h = h.host {
		sh, excl := h.holder()
		if sh == u.sh && (u.inLine || excl || !u.parallel) && !isAncestor(h, u.s) {
			return true
		}
	}
	return false
}

// releaseAdmission ends the admission s holds, if any.
func (r *Registry) releaseAdmission(s *execState) {
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
	nest := sh.nest
	for i, x := range nest.inside {
		if x == s {
			nest.inside = append(nest.inside[:i], nest.inside[i+1:]...)
			break
		}
	}
	if s.holdExcl {
		nest.excl--
		if nest.excl == 0 && sh.gate.ClearHold().Queued() {
			r.kick(sh)
		}
	}
	r.recheckLocked()
	n.mu.Unlock()
}

// releaseOn gives back a slot of sh's gate: one CAS when nobody waits;
// otherwise the slot is given back here and whoever waits is looked at.
func (r *Registry) releaseOn(sh *shell, excl bool) {
	if sh.gate.TryRelease(excl) {
		return
	}
	was := sh.gate.Release(excl)
	if was.NestWaiting() {
		r.nest.mu.Lock()
		r.recheckLocked()
		r.nest.mu.Unlock()
	}
	if was.Queued() {
		r.kick(sh)
	}
}

// kick has sh's supervisor admit whoever fits now. The supervisor may not
// exist yet (a waiter that failed the fast path may still be spawning it),
// so it is spawned here rather than the kick dropped.
func (r *Registry) kick(sh *shell) {
	if sup := r.supervisorFor(sh); sup != nil {
		sup.kick()
	}
}

// recheckLocked admits the nested waiters that can run now, in arrival
// order. Caller holds nest.mu.
func (r *Registry) recheckLocked() {
	n := &r.nest
	kept := n.waiters[:0]
	for _, w := range n.waiters {
		if !w.inLine && r.tryNested(w) {
			w.done = true
			close(w.ready)
			w.sh.gate.NestWaitEnd()
			r.unwaitLocked(w.sh)
			continue
		}
		kept = append(kept, w)
	}
	clear(n.waiters[len(kept):])
	n.waiters = kept
}

func wouldDeadlock(s *execState, sh *shell) *Result {
	key := "the global scope"
	if s.node != nil {
		key = fmt.Sprintf("scope %q", s.node.Key)
	}
	return codedFailure(NameDeadlock, CodeWouldDeadlock, fmt.Sprintf(
		"tool call %q would deadlock: its admission in %s waits for a running call that is not its ancestor and that waits, in turn, for one of its own ancestors",
		s.name, key))
}
