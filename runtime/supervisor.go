package runtime

import (
	"sync"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/toolscope/toolscope/actors"
	"github.com/toolscope/toolscope/internal/admit"
	"github.com/toolscope/toolscope/internal/core"
)

// supervisor is the runtime side of a scope's supervisor actor: it sends
// Admit/Release and knows when the actor is gone.
type supervisor struct {
	reg     *Registry
	pid     *actor.PID
	mu      sync.Mutex
	stopped bool
}

// supervisorOf returns the supervisor of node's scope, spawning it on first
// use (an idle scope costs no supervisor). Calls with no agent go through
// the global scope's supervisor.
func (r *Registry) supervisorOf(node *core.Node) *supervisor {
	sh := r.global.shell
	if node != nil {
		r.mu.RLock()
		rec := r.scopes[node.Key]
		var live *Scope
		if rec != nil && rec.node == node {
			live = rec.live
		}
		r.mu.RUnlock()
		if live == nil {
			return nil // disposed or never created: nothing to serialize against
		}
		sh = live.shell
	}
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
	sup := &supervisor{reg: r}
	sup.pid = r.system.Root.Spawn(actors.SupervisorProps(r.system, nil))
	sh.sup.Store(sup)
	return sup
}

// admitWait sends one Admit and waits for it. ok=false means the
// supervisor is gone and the call runs unadmitted (the scope is being torn
// down; R7 says in-flight calls still finish).
func (sup *supervisor) admitWait(parallel bool) bool {
	w := &admit.Waiter{Parallel: parallel, Ready: make(chan struct{})}
	sup.mu.Lock()
	if sup.stopped {
		sup.mu.Unlock()
		return false
	}
	// Sent under the lock: every Admit precedes the stop in the mailbox,
	// so the stopping actor drains it instead of dropping it.
	sup.reg.system.Root.Send(sup.pid, &actors.Admit{Waiter: w})
	sup.mu.Unlock()
	<-w.Ready
	return true
}

// send delivers a message unless the supervisor is gone.
func (sup *supervisor) send(msg any) bool {
	sup.mu.Lock()
	defer sup.mu.Unlock()
	if sup.stopped {
		return false
	}
	sup.reg.system.Root.Send(sup.pid, msg)
	return true
}

func (sup *supervisor) release() {
	sup.mu.Lock()
	if !sup.stopped {
		sup.reg.system.Root.Send(sup.pid, &actors.Release{})
	}
	sup.mu.Unlock()
}

func (sup *supervisor) stop() {
	sup.mu.Lock()
	defer sup.mu.Unlock()
	if sup.stopped {
		return
	}
	sup.stopped = true
	sup.reg.system.Root.Poison(sup.pid)
}

var releaseNothing = func() {}

// scopeGate admits single executions through the scope's supervisor. A
// nested call whose parent is dispatching in the same scope runs under the
// parent's admission (no deadlock for composite exclusive tools).
type scopeGate struct{ reg *Registry }

func (g scopeGate) acquire(s *execState) func() {
	if p := s.parent.s; p != nil && p.node == s.node && p.running.Load() {
		return releaseNothing
	}
	s.mode, s.classified = Exclusive, true
	if td, ok := g.reg.resolve(s.node, s.name); ok {
		s.mode = td.classify(s.args)
	}
	sup := g.reg.supervisorOf(s.node)
	if sup == nil || !sup.admitWait(s.mode == Parallel) {
		s.running.Store(true)
		return func() { s.running.Store(false) }
	}
	s.running.Store(true)
	return func() {
		s.running.Store(false)
		sup.release()
	}
}
