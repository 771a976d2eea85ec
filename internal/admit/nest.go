package admit

import (
	"fmt"
	"slices"
)

// Nested admission (contract N1–N6, R86) as a single-goroutine state
// machine over ids: C names a call, S a scope. The rule: an exclusive call
// never overlaps a call of its scope that is not one of its ancestors, and
// no nesting pattern hangs — a call runs, or fails at once with
// WOULD_DEADLOCK.
//
// A call is nested when one of its ancestors (World.Host, and so on up)
// holds an admission right now, in any scope. Calls that are not nested
// use the scope's Gate and Queue and never come here. A nested call of
// scope S instead is decided by Nest, ahead of that queue (a nested call
// waiting behind calls that wait for its own ancestor would never run):
//
//   - with an ancestor holding S, it runs inside that admission, taking no
//     slot: a parallel call when no exclusive call of S other than its
//     ancestors runs; an exclusive call when every call of S that runs is
//     one of its ancestors (it sets the gate's hold mark, so nothing else
//     is admitted until it ends);
//   - with no ancestor holding S, it takes a slot of S's gate like any
//     call, first come, first served (N1): at once when nobody waits and
//     it fits, else in S's queue — unless a call ahead of it waits for one
//     of its own ancestors (N2): then it skips the line and takes a slot as
//     soon as it fits what runs. Such a wait is a cycle through the call in
//     line (a call in line waits, as far as anyone can tell, for every call
//     running in S), found when the call arrives or when a later nested
//     call starts waiting (that call then takes the one in line out of it).
//
// A nested call that cannot run yet waits unless waiting would close a
// cycle: it waits for some running call h of S that is not its ancestor, h
// cannot end before its own waiting descendant v does, and so on back to
// one of the waiter's ancestors (a cycle through a call in line is broken
// by taking it out of the line instead). Each new waiter is checked against
// the others; if it closes a cycle it gets WouldDeadlock at once (two
// parallel siblings that both ask for a nested exclusive call of their
// scope: the first waits for the other to end, the second fails, and then
// the first runs).
//
// Nest owns no goroutine, lock, channel or clock. Its caller (the runtime)
// holds one lock around every method, tells it what happened (a call
// arrives, gives up, ends, was admitted by the queue) and acts on what it
// returns: the waiters to wake and the scopes whose queue must look again.
// What the runtime keeps about calls and scopes — who runs within whom,
// which admission a call holds, each scope's Gate — the policy reads and
// records through W.

// World is what a Nest reads and records about calls and scopes. The
// zero C and the zero S mean none.
type World[C, S comparable] interface {
	// Host returns the call c runs within (its parent for admission), or
	// the zero C.
	Host(c C) C
	// Holding returns the scope whose admission c holds now (zero: none)
	// and whether it holds it as exclusive.
	Holding(c C) (s S, excl bool)
	// Hold records that c now holds s's admission: a slot of s's gate
	// (slot), or inside an ancestor's admission.
	Hold(c C, s S, excl, slot bool)
	// Scope returns s's gate and its nested side.
	Scope(s S) (*Gate, *Inside[C])
}

// Inside is the nested side of one scope: the running nested calls that
// took no slot (inside an ancestor's admission), how many of them are
// exclusive (the gate's hold mark is set while any is) and how many nested
// calls wait for the scope (the gate's nested-wait mark is set while any
// does). The zero value is ready; the World keeps one per scope.
type Inside[C comparable] struct {
	calls   []C
	excl    int
	waiters int
}

// Decision is how Enter answered a nested call.
type Decision int

const (
	// Admitted: the call may dispatch; it holds an admission (World.Hold
	// was called) and owes a release.
	Admitted Decision = iota
	// Line: the call waits in the scope's queue, first come, first served.
	// The caller must call Line (under the same lock) with its queue entry.
	Line
	// Wait: the call waits as a nested call until it is woken
	// (Effects.Wake) or gives up (Cancel).
	Wait
	// WouldDeadlock: waiting could never end; the call fails at once and
	// owes nothing.
	WouldDeadlock
)

func (d Decision) String() string {
	switch d {
	case Admitted:
		return "admitted"
	case Line:
		return "line"
	case Wait:
		return "wait"
	case WouldDeadlock:
		return "would-deadlock"
	}
	return fmt.Sprintf("Decision(%d)", int(d))
}

// Cancelled is how a waiter's giving up (Cancel) ended.
type Cancelled int

const (
	// Left: the call left; it was never admitted and owes nothing.
	Left Cancelled = iota
	// AlreadyAdmitted: the policy admitted it first; it owes a release
	// (its dispatch sees its ctx and aborts).
	AlreadyAdmitted
	// QueueAdmitted: the scope's queue admitted it first: once its queue
	// entry is ready the caller calls AdmittedInLine.
	QueueAdmitted
)

func (c Cancelled) String() string {
	switch c {
	case Left:
		return "left"
	case AlreadyAdmitted:
		return "already-admitted"
	case QueueAdmitted:
		return "queue-admitted"
	}
	return fmt.Sprintf("Cancelled(%d)", int(c))
}

// Effects is what the caller must do after a method returned: wake the
// waiters admitted (their calls hold their admission already) and have the
// queues of the scopes in AdmitWaiting admit whoever fits now. The slices are the
// Nest's own and valid until its next method call.
type Effects[C, S comparable] struct {
	Wake         []C
	AdmitWaiting []S
}

// Nest is the nested admission policy of one registry: the nested calls
// waiting anywhere in it, in arrival order. Its zero value is ready once
// World is set (a World type whose zero value works needs nothing). Not
// safe for concurrent use: the caller serializes every method.
type Nest[C, S comparable, W World[C, S]] struct {
	World   W
	waiters []*nestWaiter[C, S]
	cand    *nestWaiter[C, S] // the call Enter sent to Line
	fx      Effects[C, S]
}

type nestWaiter[C, S comparable] struct {
	c        C
	s        S
	parallel bool
	// inLine: the call waits in the scope's queue (line), first come,
	// first served (N1), rather than as a nested waiter. It is taken out of
	// the line (promote) when a call ahead of it turns out to wait for one
	// of its ancestors (N2).
	inLine bool
	line   *Waiter
}

// live reports whether w still waits (one in line may have been admitted
// by the queue and not yet reported by AdmittedInLine).
func (w *nestWaiter[C, S]) live() bool { return !w.inLine || w.line == nil || w.line.Waiting() }

// Nested reports whether an ancestor of c (through World.Host) holds an
// admission: then c is nested and decided by Enter. It reads only the
// World, so the caller needs no lock for it.
func (n *Nest[C, S, W]) Nested(c C) bool {
	var none S
	var zero C
	for p := n.World.Host(c); p != zero; p = n.World.Host(p) {
		if s, _ := n.World.Holding(p); s != none {
			return true
		}
	}
	return false
}

// Inside reports whether an ancestor of c holds s. It reads only the
// World.
func (n *Nest[C, S, W]) Inside(c C, s S) bool {
	var zero C
	for p := n.World.Host(c); p != zero; p = n.World.Host(p) {
		if h, _ := n.World.Holding(p); h == s {
			return true
		}
	}
	return false
}

// isAncestor reports whether a is an ancestor of c.
func (n *Nest[C, S, W]) isAncestor(a, c C) bool {
	var zero C
	for p := n.World.Host(c); p != zero; p = n.World.Host(p) {
		if p == a {
			return true
		}
	}
	return false
}

func (n *Nest[C, S, W]) reset() {
	if len(n.fx.Wake) != 0 {
		clear(n.fx.Wake)
		n.fx.Wake = n.fx.Wake[:0]
	}
	if len(n.fx.AdmitWaiting) != 0 {
		clear(n.fx.AdmitWaiting)
		n.fx.AdmitWaiting = n.fx.AdmitWaiting[:0]
	}
}

func (n *Nest[C, S, W]) admitWaiting(s S) { n.fx.AdmitWaiting = append(n.fx.AdmitWaiting, s) }

// Enter decides nested call c of scope s (Nested(c) is true).
func (n *Nest[C, S, W]) Enter(c C, s S, parallel bool) (Decision, Effects[C, S]) {
	n.reset()
	g, in := n.World.Scope(s)
	inside := n.Inside(c, s)
	if !inside {
		// No ancestor holds the scope: first come, first served (N1) — at
		// once when nobody waits and it fits, else in line, unless a call
		// ahead waits for one of its ancestors (N2): waiting in line would
		// close a cycle through it.
		if g.TryAcquireFirst(parallel) {
			n.World.Hold(c, s, !parallel, true)
			return Admitted, n.fx
		}
		w := &nestWaiter[C, S]{c: c, s: s, parallel: parallel, inLine: true}
		if n.cycleThrough(w) == nil {
			n.cand = w
			return Line, n.fx
		}
	}
	if n.tryNested(c, s, parallel, g, in, inside) {
		return Admitted, n.fx
	}
	// Mark the gate, then look again: a release from now on takes the slow
	// path and looks at us (through the caller's lock), and one made before
	// the mark is seen by this second look.
	in.waiters++
	if in.waiters == 1 {
		g.SetNestWait()
	}
	if n.tryNested(c, s, parallel, g, in, inside) {
		n.unwait(s)
		return Admitted, n.fx
	}
	w := &nestWaiter[C, S]{c: c, s: s, parallel: parallel}
	// A cycle through w is broken by taking a call in line out of it (it
	// waits only for what it conflicts with, as w does); one with nobody in
	// line on it is a deadlock.
	for {
		path := n.cycleThrough(w)
		if path == nil {
			break
		}
		i := slices.IndexFunc(path, func(x *nestWaiter[C, S]) bool { return x.inLine && x != w })
		if i < 0 {
			n.unwait(s)
			return WouldDeadlock, n.fx
		}
		n.promote(path[i])
	}
	n.waiters = append(n.waiters, w)
	g.NestWaitBegin() // counts against the overload bound and in the queued gauge
	return Wait, n.fx
}

// Line puts the call Enter answered with Line in its scope's queue: entry
// is its Waiter there. True means it was admitted at once after all (it
// holds a slot); false means the caller must post entry (its Ticket set)
// to the scope's queue — even if it was taken out of the line meanwhile —
// and wait for entry.Ready (then AdmittedInLine), for a wake (it was
// taken out of the line and admitted), or until it gives up (Cancel).
func (n *Nest[C, S, W]) Line(entry *Waiter) bool {
	w := n.cand
	n.cand = nil
	w.line = entry
	g, _ := n.World.Scope(w.s)
	t, ok := g.TryAcquire(w.parallel)
	if ok {
		n.World.Hold(w.c, w.s, !w.parallel, true)
		return true
	}
	entry.Ticket = t
	n.waiters = append(n.waiters, w)
	return false
}

// Promote takes c out of its scope's line: nobody keeps it any more (the
// scope was torn down). It waits as a nested call that skips the line.
func (n *Nest[C, S, W]) Promote(c C) Effects[C, S] {
	n.reset()
	if w := n.find(c); w != nil && w.inLine {
		n.promote(w)
	}
	return n.fx
}

// AdmittedInLine records that the queue admitted c: it holds a slot.
func (n *Nest[C, S, W]) AdmittedInLine(c C) {
	if w := n.find(c); w != nil {
		n.drop(w)
		n.World.Hold(c, w.s, !w.parallel, true)
	}
}

// Cancel ends c's wait when its caller gives up (its ctx ended).
func (n *Nest[C, S, W]) Cancel(c C) (Cancelled, Effects[C, S]) {
	n.reset()
	w := n.find(c)
	if w == nil {
		return AlreadyAdmitted, n.fx // woken as the ctx ended: the dispatch sees the ctx and aborts
	}
	g, _ := n.World.Scope(w.s)
	if w.inLine {
		if !g.Leave(w.line) {
			return QueueAdmitted, n.fx
		}
		n.drop(w)
		n.admitWaiting(w.s) // the waiters behind it may fit now
		return Left, n.fx
	}
	n.drop(w)
	g.NestWaitEnd()
	n.unwait(w.s)
	return Left, n.fx
}

// ReleaseInside ends c's admission inside an ancestor's admission of s
// (it took no slot; excl: it ran as exclusive), and admits the nested
// waiters that can run now.
func (n *Nest[C, S, W]) ReleaseInside(c C, s S, excl bool) Effects[C, S] {
	n.reset()
	g, in := n.World.Scope(s)
	if i := slices.Index(in.calls, c); i >= 0 {
		// Order does not matter here: move the last one into the gap.
		last := len(in.calls) - 1
		in.calls[i] = in.calls[last]
		var zero C
		in.calls[last] = zero
		in.calls = in.calls[:last]
	}
	if excl {
		in.excl--
		if in.excl == 0 && g.ClearHold().Queued() {
			n.admitWaiting(s)
		}
	}
	n.recheck()
	return n.fx
}

// Recheck admits the nested waiters that can run now, in arrival order:
// the caller gave a slot back while a nested call waited (Gate.Release
// reported NestWaiting).
func (n *Nest[C, S, W]) Recheck() Effects[C, S] {
	n.reset()
	n.recheck()
	return n.fx
}

func (n *Nest[C, S, W]) recheck() {
	kept := n.waiters[:0]
	for _, w := range n.waiters {
		if !w.inLine && n.try(w) {
			n.admitWaiter(w)
			continue
		}
		kept = append(kept, w)
	}
	clear(n.waiters[len(kept):])
	n.waiters = kept
}

// admitWaiter wakes w, admitted as a nested waiter.
func (n *Nest[C, S, W]) admitWaiter(w *nestWaiter[C, S]) {
	g, _ := n.World.Scope(w.s)
	n.fx.Wake = append(n.fx.Wake, w.c)
	g.NestWaitEnd()
	n.unwait(w.s)
}

// unwait ends one nested wait on s; when it was the last, calls that are
// not nested may be admitted again.
func (n *Nest[C, S, W]) unwait(s S) {
	g, in := n.World.Scope(s)
	in.waiters--
	if in.waiters == 0 && g.ClearNestWait().Queued() {
		n.admitWaiting(s)
	}
}

// promote takes u, in line, out of the line: a call ahead of it waits for
// one of its ancestors (N2), or nobody keeps the line any more. From now on
// it waits as a nested call that needs a slot: admitted as soon as it fits
// what runs.
func (n *Nest[C, S, W]) promote(u *nestWaiter[C, S]) {
	g, in := n.World.Scope(u.s)
	if !g.Leave(u.line) {
		return // the queue admitted it meanwhile: it waits for nothing
	}
	u.inLine = false
	n.admitWaiting(u.s) // the waiters behind it may fit now
	g.NestWaitBegin()
	in.waiters++
	if in.waiters == 1 {
		g.SetNestWait()
	}
	if n.try(u) {
		n.admitWaiter(u)
		n.drop(u)
	}
}

func (n *Nest[C, S, W]) find(c C) *nestWaiter[C, S] {
	for _, w := range n.waiters {
		if w.c == c {
			return w
		}
	}
	return nil
}

func (n *Nest[C, S, W]) drop(w *nestWaiter[C, S]) {
	if i := slices.Index(n.waiters, w); i >= 0 {
		n.waiters = slices.Delete(n.waiters, i, i+1)
	}
}

// try admits waiter w if it can run now.
func (n *Nest[C, S, W]) try(w *nestWaiter[C, S]) bool {
	g, in := n.World.Scope(w.s)
	return n.tryNested(w.c, w.s, w.parallel, g, in, n.Inside(w.c, w.s))
}

// tryNested admits c if it can run now (g, in: s's gate and nested side;
// inside: an ancestor of c holds s).
func (n *Nest[C, S, W]) tryNested(c C, s S, parallel bool, g *Gate, in *Inside[C], inside bool) bool {
	if !inside {
		if !g.TryAcquireNested(parallel) {
			return false
		}
		n.World.Hold(c, s, !parallel, true)
		return true
	}
	for _, h := range in.calls {
		if _, hx := n.World.Holding(h); (!parallel || hx) && !n.isAncestor(h, c) {
			return false
		}
	}
	if !parallel {
		// Every call holding a slot must be our ancestor: there is one slot
		// holder above us, so nobody else may hold one.
		if in.excl == 0 && !g.HoldIfAlone() {
			return false
		}
		if in.excl > 0 && g.Load().Count() != 1 {
			return false
		}
		in.excl++
	}
	in.calls = append(in.calls, c)
	n.World.Hold(c, s, !parallel, false)
	return true
}

// cycleThrough returns the waiters on a cycle of waits through w (w
// waiting, or about to), or nil: w waits for running calls of its scope
// that are not its ancestors; such a call cannot end while one of its
// descendants waits, and so on.
func (n *Nest[C, S, W]) cycleThrough(w *nestWaiter[C, S]) []*nestWaiter[C, S] {
	all := n.waiters
	if !slices.Contains(all, w) {
		all = append(all[:len(all):len(all)], w)
	}
	seen := make(map[*nestWaiter[C, S]]bool, len(all))
	var path []*nestWaiter[C, S]
	var reach func(u *nestWaiter[C, S]) bool
	reach = func(u *nestWaiter[C, S]) bool {
		for _, v := range all {
			if !v.live() || !n.blocksOn(u, v) {
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
func (n *Nest[C, S, W]) blocksOn(u, v *nestWaiter[C, S]) bool {
	var zero C
	for h := n.World.Host(v.c); h != zero; h = n.World.Host(h) {
		s, excl := n.World.Holding(h)
		if s == u.s && (u.inLine || excl || !u.parallel) && !n.isAncestor(h, u.c) {
			return true
		}
	}
	return false
}

// Waiting reports the nested calls waiting (in line or nested).
func (n *Nest[C, S, W]) Waiting() int { return len(n.waiters) }

// EachWaiter calls f for each waiting call, in arrival order (for reports).
func (n *Nest[C, S, W]) EachWaiter(f func(c C, s S, parallel, inLine bool)) {
	for _, w := range n.waiters {
		f(w.c, w.s, w.parallel, w.inLine)
	}
}

// Counts reports the running nested calls that took no slot, how many of
// them are exclusive, and the nested calls waiting (for reports).
func (in *Inside[C]) Counts() (inside, excl, waiters int) {
	return len(in.calls), in.excl, in.waiters
}

// String describes the nested side of one scope (for reports).
func (in *Inside[C]) String() string {
	return fmt.Sprintf("inside %v excl=%d waiters=%d", in.calls, in.excl, in.waiters)
}
