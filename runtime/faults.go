package runtime

import (
	"errors"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"

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
		r.send(sh.pid.Load(), &actorsys.Mutate{Reply: reply, Apply: func(l *core.Layer) (*core.Layer, error) {
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
//
// The new incarnation must not be reachable under the scope's PID before it
// is ready. protoactor's SpawnNamed adds the process to the registry first
// and registers its mailbox's invoker and dispatcher afterwards, so a send
// to that name in between (any Register, or any actor holding Scope.PID)
// raced with the registration, and could schedule a mailbox whose
// dispatcher was still nil: a data race, and a nil-pointer panic on the
// sender's goroutine. So the new incarnation is spawned under a fresh name,
// which nobody knows, and only once it is fully set up is its process added
// to the registry under the scope's name as well (the registry's map gives
// the sends that find it a happens-before edge to the setup). The scope's
// PID never changes; the alias is removed when the incarnation behind it
// stops (protoactor removes only the fresh name). sh.mu serialises respawns,
// so an alias always points at the latest incarnation.
func (h *messageHandler) ActorStopped() {
	r, sh := h.reg, h.shell
	procs := r.system.ProcessRegistry
	sh.mu.Lock()
	defer sh.mu.Unlock()
	// The stopped incarnation is out of the registry under its own name;
	// drop it under the scope's name too (a no-op for the first one, whose
	// own name it is), so sends become dead letters until the next one is
	// in place (mutate re-sends what they dropped).
	procs.Remove(sh.pid.Load())
	if sh.stopped || sh.lost {
		// Scope teardown: no mutation is in flight (stop waited for them).
		if inc := sh.inc.Swap(nil); inc != nil {
			inc.lost = true
			close(inc.gone)
		}
		return
	}
	old := r.incarnation(sh)
	props := actorsys.ScopeProps(r.system, h.node, h, r.workers.run)
	fresh, err := r.system.Root.SpawnNamed(props, procs.NextId())
	var proc actor.Process
	ok := err == nil
	if ok {
		proc, ok = procs.Get(fresh)
	}
	if ok {
		_, ok = procs.Add(proc, sh.pid.Load().Id)
	}
	if !ok {
		// No successor (the system is shutting down): mutations in flight
		// and later ones get errActorLost rather than a send to a PID nobody
		// serves. lost also keeps a fresh incarnation that could not be
		// aliased from respawning when it is stopped.
		sh.lost = true
		if err == nil {
			r.stopActor(fresh)
		}
		old.lost = true
		close(old.gone)
		return
	}
	sh.inc.Store(&incarnation{gone: make(chan struct{})})
	close(old.gone)
}
