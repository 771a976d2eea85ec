// Package admit is the admission policy of a scope's admission line (issue 3):
// parallel-classified calls overlap, an exclusive call waits until the
// scope's in-flight calls finish, runs alone and holds later calls back.
// Admission is first come, first served, so exclusive calls never starve.
//
// The state is one atomic word shared by two paths. While nobody waits, a
// call is admitted and released with one compare-and-swap each (TryAcquire,
// TryRelease) — no lock and no hop on the hot path. As soon as a call has to
// wait, the admission line owns the order: it queues the waiter in a
// Queue and sets the queued bit, which sends every later acquire and every
// release through the admission line too, until the queue is empty again. No
// goroutines, no clocks here: the admission line drives the Queue.
//
// Nested calls (a call made inside the dispatch of another, issue 11) are
// decided by Nest, a single-goroutine policy over call and scope ids that
// the runtime drives under its own lock (nest.go tells the rules; the
// transcripts in testdata/*.txt show them step by step). A nested call that
// needs a slot takes it first come, first served like any call
// (TryAcquireFirst, then the queue), or, when the calls ahead wait for one
// of its ancestors, ahead of the queue as soon as it fits
// (TryAcquireNested); others run inside an ancestor's slot, marking the
// gate while a nested exclusive call runs (HoldIfAlone, ClearHold) or a
// nested call waits (SetNestWait, ClearNestWait). Either mark turns the
// fast paths off and keeps calls that are not nested waiting; a waiter
// whose caller gives up leaves with Gate.Leave (it stops counting at once),
// and AdmitWaiting admits whoever fits after a change made outside. A release says
// whether the call was exclusive: the exclusive mark goes with that call.
package admit

import "sync/atomic"

const (
	countMask  = 1<<32 - 1
	exclusive  = 1 << 32
	queuedFlag = 1 << 33
	// nestHold is set while a nested exclusive call runs inside the
	// admission of one of its ancestors (the one call holding a slot):
	// nobody else gets a slot until it ends.
	nestHold = 1 << 34
	// nestWait is set while a nested call waits for this gate. Calls that
	// are not nested wait behind it, and every release takes the slow path,
	// so the waiter is looked at again.
	nestWait = 1 << 35
	// pendingOne counts a caller that failed the fast path and is on its
	// way to the admission line. While any is pending, nobody takes the fast
	// path, so a later call cannot overtake one that already had to wait.
	pendingOne  = 1 << 36
	pendingMask = ^uint64(pendingOne - 1)
	// waiting is set while anyone is queued, pending, or a nested call
	// holds or waits: the fast paths are off.
	waiting = pendingMask | queuedFlag | nestHold | nestWait
	nested  = nestHold | nestWait
)

// Gate is the shared admission word of one scope.
type Gate struct {
	w atomic.Uint64
	// waiters counts the calls waiting for admission: those that failed
	// the fast path and are neither admitted nor gone (pending or queued),
	// and the nested calls the runtime has waiting (NestWaitBegin): the
	// load an overload bound looks at.
	waiters atomic.Int64
}

// Waiting reports the calls waiting for admission (pending, queued, or
// nested and waiting).
func (g *Gate) Waiting() int64 { return g.waiters.Load() }

// NestWaitBegin counts one nested call waiting for this gate outside the
// queue; NestWaitEnd ends it (admitted or gone).
func (g *Gate) NestWaitBegin() { g.waiters.Add(1) }

// NestWaitEnd ends one NestWaitBegin.
func (g *Gate) NestWaitEnd() { g.waiters.Add(-1) }

// Leave takes w out of the queue when its caller gives up (see
// Waiter.Cancel): true means it will never be admitted and no longer
// counts as waiting (at once, even behind a head that still waits).
func (g *Gate) Leave(w *Waiter) bool {
	if w.Cancel() {
		g.waiters.Add(-1)
		return true
	}
	return false
}

// TryAcquire admits a call at once when nobody waits and the call fits
// (parallel: no exclusive call runs; exclusive: nothing runs). Otherwise it
// records the caller as pending, in the same atomic step, and returns
// false: the caller must then send its Waiter to the admission line, whose
// Queue.Admit clears the mark.
func (g *Gate) TryAcquire(parallel bool) bool {
	for {
		s := g.w.Load()
		if s&waiting == 0 && fits(s, parallel) {
			if g.w.CompareAndSwap(s, admitted(s, parallel)) {
				return true
			}
			continue
		}
		if g.w.CompareAndSwap(s, s+pendingOne) {
			g.waiters.Add(1)
			return false
		}
	}
}

// TryRelease ends one admitted call (excl: the call was admitted as
// exclusive) when nobody is queued. It reports false when the release must
// go through the slow path (Release).
func (g *Gate) TryRelease(excl bool) bool {
	for {
		s := g.w.Load()
		if s&waiting != 0 {
			return false
		}
		if g.w.CompareAndSwap(s, released(s, excl)) {
			return true
		}
	}
}

// Release ends one admitted call unconditionally (the slow path of a
// release: TryRelease failed) and returns the word as it was before, so the
// caller can tell who must look again: the queue (Queued) or nested
// waiters (NestWaiting).
func (g *Gate) Release(excl bool) Word {
	for {
		s := g.w.Load()
		if g.w.CompareAndSwap(s, released(s, excl)) {
			return Word(s)
		}
	}
}

// TryAcquireFirst admits a call at once when nobody waits and it fits, as
// TryAcquire does, but leaves the gate as it was when it fails: the caller
// decides first whether it waits in line (then TryAcquire) or not.
func (g *Gate) TryAcquireFirst(parallel bool) bool {
	for {
		s := g.w.Load()
		if s&waiting != 0 || !fits(s, parallel) {
			return false
		}
		if g.w.CompareAndSwap(s, admitted(s, parallel)) {
			return true
		}
	}
}

// TryAcquireNested admits a nested call that needs a slot of its own (it
// has no ancestor holding this gate) ahead of the queue, when the runtime
// found that the calls waiting here wait for one of its ancestors (waiting
// behind them would wait for itself). It fails only when the call does not
// fit what runs now.
func (g *Gate) TryAcquireNested(parallel bool) bool {
	for {
		s := g.w.Load()
		if s&nestHold != 0 || !fits(s, parallel) {
			return false
		}
		if g.w.CompareAndSwap(s, admitted(s, parallel)) {
			return true
		}
	}
}

// HoldIfAlone sets the nested-hold mark when exactly one call holds a slot
// (the ancestor of the nested exclusive call asking): from then on nobody
// else is admitted until ClearHold. It reports whether it was set.
func (g *Gate) HoldIfAlone() bool {
	for {
		s := g.w.Load()
		if s&countMask != 1 {
			return false
		}
		if g.w.CompareAndSwap(s, s|nestHold) {
			return true
		}
	}
}

// ClearHold clears the nested-hold mark and returns the word as it was.
func (g *Gate) ClearHold() Word { return g.clear(nestHold) }

// SetNestWait sets the nested-waiting mark and returns the word as it was.
func (g *Gate) SetNestWait() Word { return g.or(nestWait) }

// ClearNestWait clears the nested-waiting mark and returns the word as it
// was.
func (g *Gate) ClearNestWait() Word { return g.clear(nestWait) }

func (g *Gate) or(bit uint64) Word    { return Word(g.w.Or(bit)) }
func (g *Gate) clear(bit uint64) Word { return Word(g.w.And(^bit)) }

// Load returns the current word.
func (g *Gate) Load() Word { return Word(g.w.Load()) }

// Word is a snapshot of a gate's state.
type Word uint64

// Count is the number of calls holding a slot.
func (w Word) Count() int { return int(uint64(w) & countMask) }

// Exclusive reports that an exclusive call holds a slot.
func (w Word) Exclusive() bool { return uint64(w)&exclusive != 0 }

// Queued reports that calls wait in the admission line's queue or are on their
// way to it.
func (w Word) Queued() bool { return uint64(w)&(queuedFlag|pendingMask) != 0 }

// NestWaiting reports that a nested call waits for this gate.
func (w Word) NestWaiting() bool { return uint64(w)&nestWait != 0 }

func fits(s uint64, parallel bool) bool {
	if parallel {
		return s&exclusive == 0
	}
	return s&countMask == 0
}

func admitted(s uint64, parallel bool) uint64 {
	s++
	if !parallel {
		s |= exclusive
	}
	return s
}

// released ends one admitted call. The exclusive mark goes with the
// exclusive call that set it, not with the last call: calls admitted
// unconditionally (Drain) beside it must not keep it set.
func released(s uint64, excl bool) uint64 {
	if s&countMask > 0 {
		s--
	}
	if excl || s&countMask == 0 {
		s &^= exclusive
	}
	return s
}

// Waiter is one call waiting for admission. Ready is closed by the
// admission line when the call is admitted. A waiter whose caller gives up
// (its ctx ended) leaves with Cancel.
type Waiter struct {
	Parallel bool
	Ready    chan struct{}
	state    atomic.Int32
}

const (
	waiterWaiting int32 = iota
	waiterAdmitted
	waiterCancelled
)

// Waiting reports that w is neither admitted nor gone.
func (w *Waiter) Waiting() bool { return w.state.Load() == waiterWaiting }

// Cancel takes w out of the queue: true means it will never be admitted
// (the admission line drops it when it reaches it; the caller should AdmitWaiting the
// queue so the waiters behind it are looked at); false means it was
// admitted first and owes a release as usual.
func (w *Waiter) Cancel() bool { return w.state.CompareAndSwap(waiterWaiting, waiterCancelled) }

// Queue is the admission line's side: the waiters in arrival order. Only the
// admission line uses it, so it needs no lock.
type Queue struct {
	G       *Gate
	waiters []*Waiter
	head    int
}

// Admit queues w, whose TryAcquire failed and marked it pending, and
// returns the waiters admitted now.
func (q *Queue) Admit(w *Waiter) []*Waiter {
	q.waiters = append(q.waiters, w)
	q.set(func(s uint64) uint64 {
		if s&pendingMask != 0 {
			s -= pendingOne
		}
		return s | queuedFlag
	})
	return q.drain()
}

// AdmitWaiting admits the waiters that fit now (after a release made outside the
// queue, a waiter leaving it, or the nested bits clearing).
func (q *Queue) AdmitWaiting() []*Waiter { return q.drain() }

// pop drops the head; it no longer counts as waiting (a waiter that left
// stopped counting when it left, Gate.Leave).
func (q *Queue) pop() {
	q.waiters[q.head] = nil
	q.head++
}

// Drain admits every waiter unconditionally (the admission line is stopping;
// nobody may be left waiting).
func (q *Queue) Drain() []*Waiter {
	var out []*Waiter
	for _, w := range q.waiters[q.head:] {
		if w.state.CompareAndSwap(waiterWaiting, waiterAdmitted) {
			out = append(out, w)
		}
	}
	q.G.waiters.Add(-int64(len(out)))
	q.waiters, q.head = nil, 0
	for _, w := range out {
		q.set(func(s uint64) uint64 { return admitted(s, w.Parallel) })
	}
	q.set(func(s uint64) uint64 { return s &^ queuedFlag })
	return out
}

// Queued is the number of waiting calls.
func (q *Queue) Queued() int { return len(q.waiters) - q.head }

// drain admits waiters from the head while they fit; with none left it
// clears the queued bit, handing the fast path back.
func (q *Queue) drain() []*Waiter {
	var out []*Waiter
	for q.head < len(q.waiters) {
		w := q.waiters[q.head]
		ok := false
		if w.state.Load() == waiterCancelled {
			q.pop()
			continue
		}
		q.set(func(s uint64) uint64 {
			if s&nested != 0 || !fits(s, w.Parallel) {
				ok = false
				return s
			}
			ok = true
			return admitted(s, w.Parallel)
		})
		if !ok {
			break
		}
		q.pop()
		if !w.state.CompareAndSwap(waiterWaiting, waiterAdmitted) {
			q.set(func(s uint64) uint64 { return released(s, !w.Parallel) }) // it left the queue meanwhile: give the slot back
			continue
		}
		q.G.waiters.Add(-1)
		out = append(out, w)
	}
	if q.head == len(q.waiters) {
		// Empty: hand the fast path back (it stays off while a caller is
		// still pending on its way here).
		q.waiters, q.head = q.waiters[:0], 0
		q.set(func(s uint64) uint64 { return s &^ queuedFlag })
	}
	return out
}

func (q *Queue) set(f func(uint64) uint64) {
	for {
		s := q.G.w.Load()
		if q.G.w.CompareAndSwap(s, f(s)) {
			return
		}
	}
}
