package actors

import (
	"fmt"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/toolscope/toolscope/internal/core"
)

// Mutate asks a scope actor to apply one change to its layer. Apply is
// registry code (never user code): a pure function from the current layer to
// the next. The actor publishes the result and answers on Reply.
type Mutate struct {
	Apply func(cur *core.Layer) (*core.Layer, error)
	Reply chan error
}

// Handler answers the protobuf read and execute requests a scope's PID
// receives. It is implemented by the runtime package; the actor calls it
// off its own goroutine (through the Spawner), never inside Receive,
// because answering may run user code (classifiers, hooks, tool bodies).
type Handler interface {
	// Handle answers one request message; the reply goes back to the sender.
	Handle(msg any) any
}

// scopeActor is the single writer of one scope's layer. Its state lives in
// the node's published snapshot, not in the actor struct, so a restarted
// actor carries on where the old one stopped.
type scopeActor struct {
	node    *core.Node
	handler Handler
	system  *actor.ActorSystem
	run     Spawner
}

// Spawner runs f on a goroutine other than the caller's and returns without
// waiting for it. The runtime passes a pool of warm workers: a fresh
// goroutine per request pays for growing its stack every time.
type Spawner func(f func())

func goSpawn(f func()) { go f() }

// ScopeProps returns the props of the actor owning node's layer. Requests
// for h run through run (nil: a new goroutine each).
func ScopeProps(system *actor.ActorSystem, node *core.Node, h Handler, run Spawner) *actor.Props {
	if run == nil {
		run = goSpawn
	}
	// A scope actor sees only mutations and the occasional request, never
	// the execution hot path, so it takes the lock-free mailbox: slower per
	// message, but about 190 bytes smaller per idle scope than the default
	// ring buffer (heap per idle scope is a budget, DESIGN.md).
	return actor.PropsFromProducer(func() actor.Actor {
		return &scopeActor{node: node, handler: h, system: system, run: run}
	}, actor.WithMailbox(actor.UnboundedLockfree()), actor.WithDispatcher(spawnDispatcher{run}))
}

// spawnDispatcher runs an actor's mailbox loop through a Spawner (the
// runtime's warm workers). protoactor's default dispatcher starts a fresh
// goroutine each time a mailbox gets work, which then grows its stack
// through Receive — measured at ~5% of a turn's CPU for the supervisor's
// one message per turn.
type spawnDispatcher struct{ run Spawner }

// Schedule implements actor.Dispatcher.
func (d spawnDispatcher) Schedule(fn func()) { d.run(fn) }

// Throughput implements actor.Dispatcher: messages per mailbox run before
// the loop yields (protoactor's default).
func (spawnDispatcher) Throughput() int { return 300 }

// Receive implements actor.Actor.
func (a *scopeActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *Mutate:
		m.Reply <- a.apply(m)
	case *actor.Stopped:
		if o, ok := a.handler.(StopObserver); ok {
			o.ActorStopped() // e.g. respawn from the node's snapshot
		}
	case *actor.Started, *actor.Stopping, *actor.Restarting:
	default:
		if a.handler == nil {
			return
		}
		sender := ctx.Sender()
		if sender == nil {
			return
		}
		msg := m
		a.run(func() {
			reply := a.handler.Handle(msg)
			if reply != nil {
				a.system.Root.Send(sender, reply)
			}
		})
	}
}

// apply runs one mutation. It never lets a panic escape: the caller is
// waiting on Reply, so a failed mutation must still answer.
func (a *scopeActor) apply(m *Mutate) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("actors: mutation failed: %v", r)
		}
	}()
	cur := a.node.Layer()
	next, err := m.Apply(cur)
	if err != nil {
		return err
	}
	if next != nil && next != cur {
		a.node.Publish(next)
	}
	return nil
}

// StopObserver is implemented by a Handler that wants to hear when its
// actor has stopped, for whatever reason (after the actor left the process
// registry, so it may respawn it under the same name).
type StopObserver interface{ ActorStopped() }
