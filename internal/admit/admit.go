// Package admit is the admission policy of a scope's supervisor (issue 3):
// parallel-classified calls overlap, an exclusive call waits until the
// scope's in-flight calls finish, runs alone and holds later calls back.
// Admission is first come, first served, so exclusive calls never starve.
//
// The state is one atomic word shared by two paths. While nobody waits, a
// call is admitted and released with one compare-and-swap each (TryAcquire,
// TryRelease) — no actor hop on the hot path. As soon as a call has to
// wait, the supervisor actor owns the order: it queues the waiter in a
// Queue and sets the queued bit, which sends every later acquire and every
// release through the actor too, until the queue is empty again. No
// goroutines, no clocks here: the actor drives the Queue.
package admit

import "sync/atomic"

const (
	countMask  = 1<<32 - 1
	exclusive  = 1 << 32
	queuedFlag = 1 << 33
	// pendingOne counts a caller that failed the fast path and is on its
	// way to the supervisor. While any is pending, nobody takes the fast
	// path, so a later call cannot overtake one that already had to wait.
	pendingOne = 1 << 34
	// waiting is set while anyone is queued or pending.
	waiting = ^uint64(pendingOne-1) | queuedFlag
)

// Gate is the shared admission word of one scope.
type Gate struct {
	w atomic.Uint64
	// waiters counts the calls that failed the fast path and are not yet
	// admitted (pending or queued): the load an overload bound looks at.
	waiters atomic.Int64
}

// Waiting reports the calls waiting for admission (pending or queued).
func (g *Gate) Waiting() int64 { return g.waiters.Load() }

// TryAcquire admits a call at once when nobody waits and the call fits
// (parallel: no exclusive call runs; exclusive: nothing runs). Otherwise it
// records the caller as pending, in the same atomic step, and returns
// false: the caller must then send its Waiter to the supervisor, whose
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

// TryRelease ends one admitted call when nobody is queued. It reports false
// when the release must go through the supervisor (Queue.Release).
func (g *Gate) TryRelease() bool {
	for {
		s := g.w.Load()
		if s&waiting != 0 {
			return false
		}
		if g.w.CompareAndSwap(s, released(s)) {
			return true
		}
	}
}

// Running reports the admitted calls and whether one is exclusive.
func (g *Gate) Running() (n int, excl bool) {
	s := g.w.Load()
	return int(s & countMask), s&exclusive != 0
}

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

func released(s uint64) uint64 {
	if s&countMask > 0 {
		s--
	}
	if s&countMask == 0 {
		s &^= exclusive
	}
	return s
}

// Waiter is one call waiting for admission. Ready is closed by the
// supervisor when the call is admitted.
type Waiter struct {
	Parallel bool
	Ready    chan struct{}
}

// Queue is the supervisor's side: the waiters in arrival order. Only the
// supervisor actor uses it, so it needs no lock.
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
		if s>>34 > 0 {
			s -= pendingOne
		}
		return s | queuedFlag
	})
	return q.drain()
}

// Release ends one admitted call and returns the waiters admitted now.
func (q *Queue) Release() []*Waiter {
	q.set(released)
	return q.drain()
}

// Drain admits every waiter unconditionally (the supervisor is stopping;
// nobody may be left waiting).
func (q *Queue) Drain() []*Waiter {
	out := append([]*Waiter(nil), q.waiters[q.head:]...)
	q.waiters, q.head = nil, 0
	q.G.waiters.Add(-int64(len(out)))
	for range out {
		q.set(func(s uint64) uint64 { return s + 1 })
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
		q.set(func(s uint64) uint64 {
			if !fits(s, w.Parallel) {
				ok = false
				return s
			}
			ok = true
			return admitted(s, w.Parallel)
		})
		if !ok {
			break
		}
		q.waiters[q.head] = nil
		q.head++
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
