package runtime

import (
	"context"
	"sync"

	"github.com/toolscope/toolscope/internal/admit"
	"github.com/toolscope/toolscope/internal/core"
)

// admissionLine is a scope's FIFO admission serializer: the slow path of its
// gate. A call that the gate's CAS fast path does not admit (admit.Gate)
// gets in line here; parallel calls overlap, an exclusive call runs alone,
// first come first served: a waiter takes the place of the ticket its
// failed fast path was issued (admit.Ticket), not that of its post, so a
// call descheduled between the two is not overtaken. It is plain in-process state under a mutex: a
// request (an admission, an admission of those waiting, a turn's go-ahead) is applied to the
// queue at once, on the caller's goroutine, and the waiters it admits have
// their Ready channels closed after the mutex is released. No goroutine,
// actor or message hop is involved, and no user code runs under the mutex.
type admissionLine struct {
	gate *admit.Gate

	mu      sync.Mutex
	stopped bool // nothing more is accepted
	// retiring: the scope was torn down; the admission line goes on admitting
	// the calls already in line, in order, and stops once none is left.
	retiring bool
	queue    admit.Queue
}

// lineOp is one request: an admission (w), admitWaiting (neither) or a turn.
type lineOp struct {
	w     *admit.Waiter
	ready *sync.WaitGroup // a turn's go-ahead (postTurn)
}

// admission returns the scopeState whose gate admits node's dispatches: the live
// scope's of node's key; the global scope's for calls with no agent, and
// for a key with no live scope (disposed, R6: a disposed key reads like a
// key never created, whose calls have no node and are admitted here too).
func (r *Registry) admission(node *core.Node) *scopeState {
	if node == nil {
		return r.global.state
	}
	// By key: a stale handle (its scope disposed, the key created again,
	// perhaps under a new record) admits on the live scope's gate.
	r.mu.RLock()
	record := r.scopes[node.Key]
	var live *Scope
	if record != nil {
		live = record.live
	}
	r.mu.RUnlock()
	if live == nil {
		return r.global.state
	}
	return live.state
}

// lineOf returns the admission line of node's scope, creating it on first
// use (a scope whose calls never wait costs no admission line).
func (r *Registry) lineOf(node *core.Node) *admissionLine {
	sh := r.admission(node)
	if sh == nil {
		return nil
	}
	return r.lineFor(sh)
}

func (r *Registry) lineFor(sh *scopeState) *admissionLine {
	if line := sh.line.Load(); line != nil {
		return line
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if line := sh.line.Load(); line != nil {
		return line
	}
	if sh.stopped {
		return nil
	}
	line := &admissionLine{gate: &sh.gate, queue: admit.Queue{G: &sh.gate}}
	sh.line.Store(line)
	return line
}

// admitWait queues one admission, at the place of ticket t (from the gate's
// failed fast path), and waits for it, or for ctx to end.
func (line *admissionLine) admitWait(ctx context.Context, parallel bool, t admit.Ticket) admitOutcome {
	w := &admit.Waiter{Parallel: parallel, Ticket: t, Ready: make(chan struct{})}
	if !line.post(lineOp{w: w}) {
		return admitGone
	}
	select {
	case <-w.Ready:
		return admitted
	case <-ctx.Done():
	}
	if line.gate.Leave(w) {
		line.admitWaiting() // the waiters behind it may fit now
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
	admitGone                          // the admission line is stopped (scope torn down): runs unadmitted, as R7 lets calls of a torn-down scope finish
)

// postTurn gives a turn its go-ahead, ready.Done, unless the admission line is
// gone. The go-ahead orders the turn after the admissions asked for before
// it: those are in the queue already (post applies at once), so it comes
// at once.
func (line *admissionLine) postTurn(ready *sync.WaitGroup) bool {
	return line.post(lineOp{ready: ready})
}

// admitWaiting admits whoever fits now (a slot was given back outside the queue, a
// waiter left it, or the nested marks cleared).
func (line *admissionLine) admitWaiting() { line.post(lineOp{}) }

// post applies op to the queue (a waiter at its ticket's place) and then, once
// the mutex is released, wakes the waiters it admitted and gives a turn its
// go-ahead. It reports false once the admission line is stopped.
func (line *admissionLine) post(op lineOp) bool {
	line.mu.Lock()
	if line.stopped {
		line.mu.Unlock()
		return false
	}
	var ws []*admit.Waiter
	switch {
	case op.ready != nil:
	case op.w != nil:
		ws = line.queue.Admit(op.w)
	default:
		ws = line.queue.AdmitWaiting()
	}
	if line.retiring {
		ws = line.stopIfIdleLocked(ws)
	}
	line.mu.Unlock()
	wake(ws)
	if op.ready != nil {
		op.ready.Done() // the turn runs on its caller's goroutine
	}
	return true
}

// stopIfIdleLocked stops a retiring admission line once nobody is in line or on
// the way to it (the gate's word counts both): a caller still on its way
// finds it stopped and is admitted where its key's calls now are. Draining
// the queue on stop admits nobody then (it is empty); it is there so that a
// stopped admission line never strands a waiter (fail open, as R7 lets calls in
// flight finish). ws are the waiters admitted so far. Caller holds mu.
func (line *admissionLine) stopIfIdleLocked(ws []*admit.Waiter) []*admit.Waiter {
	if line.gate.Load().Queued() {
		return ws
	}
	line.stopped = true
	return append(ws, line.queue.Drain()...)
}

func wake(ws []*admit.Waiter) {
	for _, w := range ws {
		close(w.Ready)
	}
}

// retire stops the admission line of a scope torn down, calls perhaps still in
// line: they keep their order and the scope's exclusivity (an exclusive
// call still running is not joined by a waiter, R7, N1), and the
// admission line stops once the line is empty (post). With nobody in line it
// stops at once.
func (line *admissionLine) retire() {
	line.mu.Lock()
	if line.stopped {
		line.mu.Unlock()
		return
	}
	line.retiring = true
	ws := line.stopIfIdleLocked(nil)
	line.mu.Unlock()
	wake(ws)
}
