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
	gate    *admit.Gate
	pid     *actor.PID
	mu      sync.Mutex
	stopped bool
}

// admission returns the shell whose gate admits node's dispatches: the
// scope's own, or the global scope's for calls with no agent. nil means the
// scope is gone (disposed or never created): nothing to serialize against.
func (r *Registry) admission(node *core.Node) *shell {
	if node == nil {
		return r.global.shell
	}
	r.mu.RLock()
	rec := r.scopes[node.Key]
	var live *Scope
	if rec != nil && rec.node == node {
		live = rec.live
	}
	r.mu.RUnlock()
	if live == nil {
		return nil
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
	sup := &supervisor{reg: r, gate: &sh.gate}
	sup.pid = r.system.Root.Spawn(actors.SupervisorProps(r.system, &sh.gate, nil))
	sh.sup.Store(sup)
	return sup
}

// acquire admits one dispatch on sh's gate: with one compare-and-swap when
// nobody waits, else through the supervisor actor, which keeps arrival
// order. The returned release must be called exactly once.
func (r *Registry) acquire(sh *shell, parallel bool) (release func()) {
	if sh.gate.TryAcquire(parallel) {
		return func() { r.releaseOn(sh) }
	}
	sup := r.supervisorFor(sh)
	if sup == nil || !sup.admitWait(parallel) {
		return releaseNothing // the scope is being torn down; R7 lets the call finish
	}
	return func() { r.releaseOn(sh) }
}

func (r *Registry) releaseOn(sh *shell) {
	if sh.gate.TryRelease() {
		return
	}
	// Somebody waits or is on the way: the supervisor owns the order now.
	// It may not exist yet (the waiter that failed the fast path may still
	// be spawning it), so spawn it here rather than drop the release.
	if sup := r.supervisorFor(sh); sup != nil {
		sup.release()
	}
}

// admitWait sends one Admit and waits for it. ok=false means the
// supervisor is gone and the call runs unadmitted.
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
