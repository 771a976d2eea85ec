package runtime

import (
	"errors"
	"sync/atomic"

	"github.com/toolscope/toolscope/internal/actorsys"
	"github.com/toolscope/toolscope/internal/core"
)

// Actor faults (issue 7.5). protoactor may stop a scope actor behind the
// registry's back (someone calls Stop on Scope.PID, a supervision
// decision). A stopped actor silently drops the messages left in its
// mailbox and later ones become dead letters, so a mutation waiting for
// its reply would wait forever. Instead, without any timeout:
//
//   - the actor reports its stop (actorsys.StopObserver) and the registry
//     respawns it under the same PID from the node's published snapshot —
//     the layer never lived in the actor, so every registration survives;
//   - each mutation is claimed exactly once: by the actor that applies it,
//     or by its sender when the incarnation it was sent to is gone, who
//     then re-sends it to the new incarnation. A mutation is therefore
//     applied once, never twice and never lost.

// incarnation is one life of a scope actor; gone closes when it stopped.
type incarnation struct {
	gone chan struct{}
	lost bool // set before gone closes: no successor (respawn failed)
}

var (
	errMutationAbandoned = errors.New("runtime: mutation abandoned by its sender")
	errActorLost         = errors.New("runtime: scope actor stopped and could not be respawned")
)

// incarnation returns the current life of sh's scope actor, creating the
// record on first use (a scope that is never mutated pays nothing).
func (r *Registry) incarnation(sh *shell) *incarnation {
	if inc := sh.inc.Load(); inc != nil {
		return inc
	}
	fresh := &incarnation{gone: make(chan struct{})}
	if sh.inc.CompareAndSwap(nil, fresh) {
		return fresh
	}
	return sh.inc.Load()
}

// mutate runs fn inside sh's scope actor and returns its error, surviving
// the actor being stopped and respawned meanwhile.
func (r *Registry) mutate(sh *shell, fn func(*core.Layer) (*core.Layer, error)) error {
	for {
		inc := r.incarnation(sh)
		var claimed atomic.Bool
		reply := make(chan error, 1)
		r.send(sh.pid, &actorsys.Mutate{Reply: reply, Apply: func(l *core.Layer) (*core.Layer, error) {
			if !claimed.CompareAndSwap(false, true) {
				return nil, errMutationAbandoned // its sender re-sent it
			}
			return fn(l)
		}})
		select {
		case err := <-reply:
			return err
		case <-inc.gone:
			if !claimed.CompareAndSwap(false, true) {
				// An actor took it: it answers within the same Receive.
				return <-reply
			}
			if inc.lost {
				return errActorLost
			}
			// Never applied: send it to the next incarnation.
		}
	}
}

// ActorStopped implements actorsys.StopObserver for a scope actor.
func (h *messageHandler) ActorStopped() {
	r, sh := h.reg, h.shell
	sh.mu.Lock()
	intentional := sh.stopped
	sh.mu.Unlock()
	if intentional {
		// Scope teardown: no mutation is in flight (stop waited for them).
		if inc := sh.inc.Swap(nil); inc != nil {
			inc.lost = true
			close(inc.gone)
		}
		return
	}
	old := r.incarnation(sh)
	props := actorsys.ScopeProps(r.system, h.node, h, r.workers.run)
	if _, err := r.system.Root.SpawnNamed(props, sh.pid.Id); err != nil {
		old.lost = true
		close(old.gone)
		return
	}
	sh.inc.Store(&incarnation{gone: make(chan struct{})})
	close(old.gone)
}
