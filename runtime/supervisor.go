package runtime

import (
	"context"
	"sync"

	"github.com/toolscope/toolscope/internal/admit"
	"github.com/toolscope/toolscope/internal/core"
)

// supervisor is a scope's FIFO admission serializer: the slow path of its
// gate. A call that the gate's CAS fast path does not admit (admit.Gate)
// gets in line here; parallel calls overlap, an exclusive call runs alone,
// first come first served. It is plain in-process state under a mutex: a
// request (an admission, a kick, a turn's go-ahead) is applied to the
// queue at once, on the caller's goroutine, and the waiters it admits have
// their Ready channels closed after the mutex is released. No goroutine,
// actor or message hop is involved, and no user code runs under the mutex.
type supervisor struct {
	gate *admit.Gate

	mu      sync.Mutex
	stopped bool // nothing more is accepted
	// retiring: the scope was torn down; the supervisor goes on admitting
	// the calls already in line, in order, and stops once none is left.
	retiring bool
	queue    admit.Queue
}

// supOp is one request: an admission (w), a kick (neither) or a turn.
type supOp struct {
	w     *admit.Waiter
	ready *sync.WaitGroup // a turn's go-ahead (postTurn)
}

// admission returns the shell whose gate admits node's dispatches: the live
// scope's of node's key; the global scope's for calls with no agent, and
// for a key with no live scope (disposed, R6: a disposed key reads like a
// key never created, whose calls have no node and are admitted here too).
func (r *Registry) admission(node *core.Node) *shell {
	if node == nil {
		return r.global.shell
	}
	// By key: a stale handle (its scope disposed, the key created again,
	// perhaps under a new record) admits on the live scope's gate.
	r.mu.RLock()
	rec := r.scopes[node.Key]
	var live *Scope
	if rec != nil {
		live = rec.live
	}
	r.mu.RUnlock()
	if live == nil {
		return r.global.shell
	}
	return live.shell
}

// supervisorOf returns the supervisor of node's scope, creating it on first
// use (a scope whose calls never wait costs no supervisor).
func (r *Registry) supervisorOf(node *core.Node) *supervisor {
	sh := r.admission(node)
	if sh == nil {
		return nil
	}
	return r.supervisorFor(sh)
}

func (r *Registry) supervisorFor(sh *shell) *supervisor {
	if sup := sh.sup.Load(); sup != nil {
		return sup
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sup := sh.sup.Load(); sup != nil {
		return sup
	}
	if sh.stopped {
		return nil
	}
	sup := &supervisor{gate: &sh.gate, queue: admit.Queue{G: &sh.gate}}
	sh.sup.Store(sup)
	return sup
}

// admitWait queues one admission and waits for it, or for ctx to end.
func (sup *supervisor) admitWait(ctx context.Context, parallel bool) admitOutcome {
	w := &admit.Waiter{Parallel: parallel, Ready: make(chan struct{})}
	if !sup.post(supOp{w: w}) {
		return admitGone
	}
	select {
	case <-w.Ready:
		return admitted
	case <-ctx.Done():
	}
	if sup.gate.Leave(w) {
		sup.kick() // the waiters behind it may fit now
		return admitCancelled
	}
	<-w.Ready // admitted as ctx ended: the dispatch sees ctx and aborts
	return admitted
}

// admitOutcome is how a wait for admission ended.
type admitOutcome int

const (
	admitted       admitOutcome = iota // holds a slot, owes a release
	admitCancelled                     // ctx ended first: left the queue
	admitGone                          // the supervisor is stopped (scope torn down): runs unadmitted, as R7 lets calls of a torn-down scope finish
)

// postTurn gives a turn its go-ahead, ready.Done, unless the supervisor is
// gone. The go-ahead orders the turn after the admissions asked for before
// it: those are in the queue already (post applies at once), so it comes
// at once.
func (sup *supervisor) postTurn(ready *sync.WaitGroup) bool {
	return sup.post(supOp{ready: ready})
}

// kick admits whoever fits now (a slot was given back outside the queue, a
// waiter left it, or the nested marks cleared).
func (sup *supervisor) kick() { sup.post(supOp{}) }

// post applies op to the queue in arrival order (the mutex's) and then, once
// the mutex is released, wakes the waiters it admitted and gives a turn its
// go-ahead. It reports false once the supervisor is stopped.
func (sup *supervisor) post(op supOp) bool {
	sup.mu.Lock()
	if sup.stopped {
		sup.mu.Unlock()
		return false
	}
	var ws []*admit.Waiter
	switch {
	case op.ready != nil:
	case op.w != nil:
		ws = sup.queue.Admit(op.w)
	default:
		ws = sup.queue.Kick()
	}
	if sup.retiring {
		ws = sup.stopIfIdleLocked(ws)
	}
	sup.mu.Unlock()
	wake(ws)
	if op.ready != nil {
		op.ready.Done() // the turn runs on its caller's goroutine
	}
	return true
}

// stopIfIdleLocked stops a retiring supervisor once nobody is in line or on
// the way to it (the gate's word counts both): a caller still on its way
// finds it stopped and is admitted where its key's calls now are. Draining
// the queue on stop admits nobody then (it is empty); it is there so that a
// stopped supervisor never strands a waiter (fail open, as R7 lets calls in
// flight finish). ws are the waiters admitted so far. Caller holds mu.
func (sup *supervisor) stopIfIdleLocked(ws []*admit.Waiter) []*admit.Waiter {
	if sup.gate.Load().Queued() {
		return ws
	}
	sup.stopped = true
	return append(ws, sup.queue.Drain()...)
}

func wake(ws []*admit.Waiter) {
	for _, w := range ws {
		close(w.Ready)
	}
}

// retire stops the supervisor of a scope torn down, calls perhaps still in
// line: they keep their order and the scope's exclusivity (an exclusive
// call still running is not joined by a waiter, R7, N1), and the
// supervisor stops once the line is empty (post). With nobody in line it
// stops at once.
func (sup *supervisor) retire() {
	sup.mu.Lock()
	if sup.stopped {
		sup.mu.Unlock()
		return
	}
	sup.retiring = true
	ws := sup.stopIfIdleLocked(nil)
	sup.mu.Unlock()
	wake(ws)
}
