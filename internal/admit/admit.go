// Package admit is the admission policy of a scope's admission line (issue 3):
// parallel-classified calls overlap, an exclusive call waits until the
// scope's in-flight calls finish, runs alone and holds later calls back.
// Admission is first come, first served, so exclusive calls never starve.
//
// The state is one atomic word shared by two paths. While nobody waits, a
// call is admitted and released with one compare-and-swap each (TryAcquire,
// TryRelease) — no lock and no hop on the hot path. A call that has to wait
// takes a ticket in the same compare-and-swap that finds it cannot be
// admitted (the word counts the tickets issued) and sets the queued bit,
// which sends every later acquire and every release through the admission
// line, until the queue is empty and every ticket issued has reached it.
// The caller then posts its Waiter, carrying the ticket, to the admission
// line, whose Queue keeps the waiters in ticket order: a waiter posted
// before an earlier ticket has reached the queue waits behind that ticket's
// place (reserved), however the callers were scheduled between their
// failed compare-and-swap and their post. So admission among the calls
// that had to wait follows the order in which their fast path failed — the
// order of the word's atomic steps — and no call that tries later overtakes
// one that waits, on the fast path or in the queue. The place is kept
// only if the ticket reaches the queue: every ticket issued must be posted
// exactly once, by a caller that gave up meanwhile too (Leave), or the line
// waits at its place; a stopped line (Drain) admits everyone and drops the
// places of tickets still on their way. Tickets wrap around; the order holds
// while fewer than 1<<28 calls wait at once. No goroutines, no clocks here:
// the admission line drives the Queue.
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
	countMask = 1<<32 - 1
	exclusive = 1 << 32
	// queuedFlag is set while a call waits for the queue: it failed the
	// fast path (its ticket is issued), and it is queued or on its way. The
	// Queue clears it once it is empty and every ticket issued reached it.
	queuedFlag = 1 << 33
	// nestHold is set while a nested exclusive call runs inside the
	// admission of one of its ancestors (the one call holding a slot):
	// nobody else gets a slot until it ends.
	nestHold = 1 << 34
	// nestWait is set while a nested call waits for this gate. Calls that
	// are not nested wait behind it, and every release takes the slow path,
	// so the waiter is looked at again.
	nestWait = 1 << 35
	// The word's top bits count the tickets issued (ticketBits bits,
	// wrapping): a failed TryAcquire takes the count as its ticket and adds
	// ticketOne in the same compare-and-swap. Tickets are compared as
	// distances from the queue's next ticket, so the wrap is harmless as
	// long as fewer than 1<<ticketBits calls wait at once.
	ticketShift = 36
	ticketOne   = 1 << ticketShift
	ticketBits  = 64 - ticketShift
	ticketMask  = 1<<ticketBits - 1
	// waiting is set while anyone is queued or on the way to the queue, or
	// a nested call holds or waits: the fast paths are off.
	waiting = queuedFlag | nestHold | nestWait
	nested  = nestHold | nestWait
)

// Ticket is a call's place in its scope's line: taken by the failed
// TryAcquire, in the same atomic step, and carried by its Waiter to the
// Queue. Tickets wrap around (ticketBits bits).
type Ticket uint32

func ticketOf(s uint64) Ticket { return Ticket(s >> ticketShift) }

// after returns the distance from t0 to t, wrapping.
func (t Ticket) after(t0 Ticket) int { return int((t - t0) & ticketMask) }

// Gate is the shared admission word of one scope.
type Gate struct {
	w atomic.Uint64
	// waiters counts the calls waiting for admission: those that failed
	// the fast path and are neither admitted nor gone (on their way to the
	// queue or queued),
	// and the nested calls the runtime has waiting (NestWaitBegin): the
	// load an overload bound looks at.
	waiters atomic.Int64
}

// Waiting reports the calls waiting for admission (on their way to the
// queue, queued, or nested and waiting).
func (g *Gate) Waiting() int64 { return g.waiters.Load() }

// NestWaitBegin counts one nested call waiting for this gate outside the
// queue; NestWaitEnd ends it (admitted or gone).
func (g *Gate) NestWaitBegin() { g.waiters.Add(1) }

// NestWaitEnd ends one NestWaitBegin.
func (g *Gate) NestWaitEnd() { g.waiters.Add(-1) }

// Leave takes w out of the queue when its caller gives up (see
// Waiter.Cancel): true means it will never be admitted and no longer
// counts as waiting (at once, even behind a head that still waits). A
// waiter that leaves before it was posted must still be posted (its
// ticket's place is dropped when the queue reaches it).
func (g *Gate) Leave(w *Waiter) bool {
	if w.Cancel() {
		g.waiters.Add(-1)
		return true
	}
	return false
}

// TryAcquire admits a call at once when nobody waits and the call fits
// (parallel: no exclusive call runs; exclusive: nothing runs). Otherwise,
// in the same atomic step, it issues the caller a ticket — its place in
// line, after every call whose fast path failed before — sets the queued
// bit, which turns every later call's fast path off, and returns the
// ticket and false: the caller must then post a Waiter with that Ticket to
// the admission line (Queue.Admit), even when it gives up first (Leave).
func (g *Gate) TryAcquire(parallel bool) (Ticket, bool) {
	for {
		s := g.w.Load()
		if s&waiting == 0 && fits(s, parallel) {
			if g.w.CompareAndSwap(s, admitted(s, parallel)) {
				return 0, true
			}
			continue
		}
		if g.w.CompareAndSwap(s, (s+ticketOne)|queuedFlag) {
			g.waiters.Add(1)
			return ticketOf(s), false
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
// way to it (their fast path failed; they have not posted yet).
func (w Word) Queued() bool { return uint64(w)&queuedFlag != 0 }

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
	// Ticket is the call's place in line, from its failed TryAcquire.
	Ticket Ticket
	Ready  chan struct{}
	state  atomic.Int32
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

// Queue is the admission line's side: the waiters in ticket order. Only the
// admission line uses it, so it needs no lock.
type Queue struct {
	G *Gate
	// waiters[head+i] is the waiter with ticket first+i; nil while that
	// ticket's caller has not posted yet (its place is reserved: nobody
	// behind it is admitted before it).
	waiters []*Waiter
	head    int
	first   Ticket
}

// Admit puts w, whose TryAcquire failed and issued it w.Ticket, in its place
// in line and returns the waiters admitted now. Every ticket issued must be
// posted once, a waiter that left (Leave) too: the line waits for it.
func (q *Queue) Admit(w *Waiter) []*Waiter {
	d := w.Ticket.after(q.first)
	if d >= ticketOf(q.G.w.Load()).after(q.first) {
		// Not a ticket issued since the queue last drained (Drain): nobody
		// keeps its place. Admit it unconditionally, as Drain would have.
		return q.admitOutright(w)
	}
	for q.head+d >= len(q.waiters) {
		q.waiters = append(q.waiters, nil)
	}
	q.waiters[q.head+d] = w
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
	q.first = (q.first + 1) & ticketMask
}

// Drain admits every waiter unconditionally (the admission line is stopping;
// nobody may be left waiting). A ticket not yet posted loses its place: its
// caller, should it post after all, is admitted at once.
func (q *Queue) Drain() []*Waiter {
	var out []*Waiter
	for _, w := range q.waiters[q.head:] {
		if w != nil && w.state.CompareAndSwap(waiterWaiting, waiterAdmitted) {
			out = append(out, w)
		}
	}
	q.G.waiters.Add(-int64(len(out)))
	q.waiters, q.head = nil, 0
	for _, w := range out {
		q.set(func(s uint64) uint64 { return admitted(s, w.Parallel) })
	}
	q.set(func(s uint64) uint64 {
		q.first = ticketOf(s)
		return s &^ queuedFlag
	})
	return out
}

// admitOutright admits w whatever runs (fail open, as Drain does).
func (q *Queue) admitOutright(w *Waiter) []*Waiter {
	if !w.state.CompareAndSwap(waiterWaiting, waiterAdmitted) {
		return nil
	}
	q.G.waiters.Add(-1)
	q.set(func(s uint64) uint64 { return admitted(s, w.Parallel) })
	return []*Waiter{w}
}

// Queued is the number of waiters posted and not yet admitted or dropped
// (a waiter that left counts until the queue reaches it).
func (q *Queue) Queued() int {
	n := 0
	for _, w := range q.waiters[q.head:] {
		if w != nil {
			n++
		}
	}
	return n
}

// drain admits waiters from the head, in ticket order, while they fit; it
// stops at a place reserved for a ticket not yet posted. With none left and
// every ticket issued posted it clears the queued bit, handing the fast path
// back.
func (q *Queue) drain() []*Waiter {
	var out []*Waiter
	for q.head < len(q.waiters) {
		w := q.waiters[q.head]
		if w == nil {
			break // reserved: an earlier ticket is still on its way here
		}
		if w.state.Load() == waiterCancelled {
			q.pop()
			continue
		}
		ok := false
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
		// Empty: hand the fast path back, unless a ticket issued has not
		// reached the queue yet (its caller is on its way here).
		q.waiters, q.head = q.waiters[:0], 0
		first := q.first
		q.set(func(s uint64) uint64 {
			if ticketOf(s) == first {
				s &^= queuedFlag
			}
			return s
		})
	} else if q.head >= 64 && 2*q.head >= len(q.waiters) {
		// A line that never empties: keep its backing array from growing.
		n := copy(q.waiters, q.waiters[q.head:])
		clear(q.waiters[n:])
		q.waiters, q.head = q.waiters[:n], 0
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
