package runtime

import (
	"context"
	"sync"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/toolscope/toolscope/internal/actorsys"
	"github.com/toolscope/toolscope/internal/admit"
	"github.com/toolscope/toolscope/internal/core"
)

// supervisor is the runtime side of a scope's supervisor actor. It holds
// the admission queue and the requests waiting for the actor (inbox), so
// the actor is stateless: if protoactor stops or restarts it behind the
// registry's back, messages dropped with its mailbox lose nothing — the
// supervisor respawns it under the same PID and the new incarnation takes
// the inbox when it starts (actorsys.SupervisorHost).
type supervisor struct {
	reg  *Registry
	gate *admit.Gate
	pid  *actor.PID
	// props respawns the actor under the same name.
	props *actor.Props

	mu      sync.Mutex
	stopped bool // asked to stop: nothing more is accepted
	// retiring: the scope was torn down; the actor goes on admitting the
	// calls already in line, in order, and stops once none is left.
	retiring bool
	inbox    []supOp // requests not yet taken by the actor, in order
	spare    []supOp

	// queue is touched only by the live actor incarnation (Step) and, once
	// it has stopped for good, by Stopped.
	queue admit.Queue
}

// supOp is one request: an admission (w), a kick (neither) or a turn.
type supOp struct {
	w     *admit.Waiter
	ready *sync.WaitGroup // a turn's go-ahead (postTurn)
}

var wakeMsg = &actorsys.Wake{}

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

// supervisorOf returns the supervisor of node's scope, spawning it on first
// use (an idle scope costs no supervisor actor).
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
	sup := &supervisor{reg: r, gate: &sh.gate, queue: admit.Queue{G: &sh.gate}}
	sup.props = actorsys.SupervisorProps(sup, r.workers.run)
	sup.mu.Lock() // Step (on Started) waits until pid is set
	sup.pid = r.system.Root.Spawn(sup.props)
	sup.mu.Unlock()
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

// postTurn queues a turn's go-ahead, ready.Done, unless the supervisor is
// gone.
func (sup *supervisor) postTurn(ready *sync.WaitGroup) bool {
	return sup.post(supOp{ready: ready})
}

// kick has the actor admit whoever fits now (a slot was given back outside
// the queue, a waiter left it, or the nested marks cleared).
func (sup *supervisor) kick() { sup.post(supOp{}) }

// post queues op for the actor and wakes it if the inbox was empty (a
// non-empty inbox already has a wake on its way, or a respawn will take
// it). It reports false once the supervisor was asked to stop.
//
// The wake is sent after the mutex is released: a wake to a PID that just
// died is a dead letter, published on this goroutine, and an event-stream
// subscriber hearing it may call back into the scope (post again) — under
// the mutex, that deadlocked. Nothing is lost by sending late: pid is read
// after op is in the inbox, so if that incarnation dies before it takes the
// inbox, its successor (spawned after the read, Stopped) takes it when it
// starts; and a wake that arrives after a Step already took the inbox only
// costs an empty Step.
func (sup *supervisor) post(op supOp) bool {
	sup.mu.Lock()
	if sup.stopped {
		sup.mu.Unlock()
		return false
	}
	sup.inbox = append(sup.inbox, op)
	wake := len(sup.inbox) == 1
	pid := sup.pid
	sup.mu.Unlock()
	if wake {
		sup.reg.send(pid, wakeMsg)
	}
	return true
}

// Step implements actorsys.SupervisorHost: it takes the inbox and applies it
// to the queue in arrival order, on the actor's goroutine.
func (sup *supervisor) Step() {
	sup.mu.Lock()
	ops := sup.inbox
	sup.inbox, sup.spare = sup.spare[:0], nil
	sup.mu.Unlock()
	sup.apply(ops)
	clear(ops)
	sup.mu.Lock()
	if sup.spare == nil {
		sup.spare = ops[:0]
	}
	if sup.retiring && !sup.stopped && len(sup.inbox) == 0 && sup.queue.Queued() == 0 {
		// Retired and nobody left in line: stop. A caller still on its way
		// finds it stopped and is admitted where its key's calls now are.
		sup.stopped = true
		pid := sup.pid
		sup.mu.Unlock()
		sup.reg.poisonActor(pid)
		return
	}
	sup.mu.Unlock()
}

func (sup *supervisor) apply(ops []supOp) {
	for _, op := range ops {
		switch {
		case op.ready != nil:
			op.ready.Done() // the turn's go-ahead; the turn runs on its caller's goroutine
		case op.w != nil:
			wake(sup.queue.Admit(op.w))
		default:
			wake(sup.queue.Kick())
		}
	}
}

// Stopped implements actorsys.SupervisorHost. Once stopped for good (retired
// with nobody left in line, or unable to respawn) it drains: any waiter
// still there is admitted (fail open, as R7 lets calls in flight finish),
// pending turns start. Otherwise protoactor stopped the actor
// behind our back: respawn it; its Started takes the inbox, including
// anything its predecessor's mailbox dropped.
//
// The new incarnation gets a fresh name, not its predecessor's: protoactor's
// SpawnNamed makes the name resolvable before the mailbox's handlers are
// registered, so a send under the old name in that window (anyone holding
// the old PID: a stop from outside) raced with the setup and could hit a
// nil dispatcher. Nobody can send to the fresh name before it is published
// in sup.pid, under the mutex, once the spawn is complete; the old PID stays
// dead (its messages are dead letters).
func (sup *supervisor) Stopped() {
	sup.mu.Lock()
	if !sup.stopped {
		sys := sup.reg.system
		pid, err := sys.Root.SpawnNamed(sup.props, sys.ProcessRegistry.NextId())
		if err == nil {
			sup.pid = pid
			sup.mu.Unlock()
			return
		}
		// Cannot respawn (the system is shutting down): fail open as a
		// torn-down scope does.
		sup.stopped = true
	}
	ops := sup.inbox
	sup.inbox = nil
	sup.mu.Unlock()
	sup.apply(ops)
	wake(sup.queue.Drain())
}

func wake(ws []*admit.Waiter) {
	for _, w := range ws {
		close(w.Ready)
	}
}

// retire stops the supervisor of a scope torn down, calls perhaps still in
// line: they keep their order and the scope's exclusivity (an exclusive
// call still running is not joined by a waiter, R7, N1), and the actor
// stops once the queue is empty (Step).
//
// With nobody in line it stops at once: the poison is sent outside the
// mutex (see post); if the incarnation it goes to dies first, its Stopped
// finds stopped set and drains instead of respawning. Otherwise it sends
// nothing (a wake could be a dead letter heard, on this goroutine, by a
// subscriber that disposes the scope again): whatever empties the queue —
// a release, a waiter leaving — runs a Step, which stops the actor. The
// check and the flag are under mu, as is Step's: of a Step emptying the
// queue and this, the later one sees the other's result.
func (sup *supervisor) retire() {
	sup.mu.Lock()
	if sup.stopped {
		sup.mu.Unlock()
		return
	}
	sup.retiring = true
	if len(sup.inbox) != 0 || sup.gate.Load().Queued() {
		sup.mu.Unlock()
		return
	}
	sup.stopped = true
	pid := sup.pid
	sup.mu.Unlock()
	sup.reg.poisonActor(pid)
}
