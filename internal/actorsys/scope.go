// Package actorsys holds the scope actor (protoactor-go): the single writer
// of one scope's layer. It is internal because its Mutate message is an
// in-process protocol between the runtime and the actor — it carries a
// function and a channel — and must not be something any actor in the
// system can send: outside this module it cannot be named. The actor still
// rejects a malformed Mutate without blocking (no reply channel: dropped;
// no function: answered with an error; a reply nobody takes: not waited
// for), so nothing sent to a scope's PID can wedge it.
//
// It also holds the supervisor actor shell (supervisor.go): one per scope,
// spawned on first contention or turn. It decides admission (internal/admit)
// — parallel calls overlap, an exclusive call runs alone, first come first
// served — and gives each turn its go-ahead. Its queue and pending requests
// live with its host (SupervisorHost); a Wake message only tells it to
// look, so a Wake sent by anyone else costs one empty step and nothing more.
//
// State lives in the published snapshots and the supervisor's host, not in
// the actor structs, so an actor restarted by protoactor — or stopped and
// respawned by the runtime — carries on with the same registrations and
// admission queue, and no request is lost with a dropped mailbox. Only
// package runtime uses this package.
package actorsys

import (
	"errors"
	"fmt"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/toolscope/toolscope/internal/core"
)

// Mutate asks a scope actor to apply one change to its layer. Apply is
// registry code (never user code): a pure function from the current layer to
// the next. The actor publishes the result and answers on Reply, which must
// have room for the answer (buffered): the actor never waits to answer. A
// Mutate without Reply is dropped unapplied.
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

// Dispatcher returns a protoactor dispatcher that runs an actor's mailbox
// loop through run (nil: a new goroutine each time).
func Dispatcher(run Spawner) actor.Dispatcher {
	if run == nil {
		run = goSpawn
	}
	return spawnDispatcher{run}
}

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
	}, actor.WithMailbox(actor.UnboundedLockfree()), actor.WithDispatcher(Dispatcher(run)))
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
		if m.Reply == nil {
			return // nobody could learn the outcome: not a mutation of ours
		}
		err := a.apply(m)
		select {
		case m.Reply <- err:
		default: // a reply nobody takes must not wedge the actor
		}
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
				a.reply(sender, reply)
			}
		})
	}
}

// reply sends a request's answer from a worker goroutine. A reply to a
// sender that is gone is a dead letter, published synchronously on this
// goroutine: a panicking event-stream subscriber must not end the process
// (a worker has nobody above it to recover), so it is contained and handed
// to the handler if it is a PanicReporter.
func (a *scopeActor) reply(to *actor.PID, msg any) {
	defer func() {
		if p := recover(); p != nil {
			if r, ok := a.handler.(PanicReporter); ok {
				r.SubscriberPanicked(p)
			}
		}
	}()
	a.system.Root.Send(to, msg)
}

// PanicReporter is implemented by a Handler that wants to hear of a panic
// contained while its actor's replies were sent (an event-stream subscriber
// hearing a dead letter).
type PanicReporter interface{ SubscriberPanicked(p any) }

// apply runs one mutation. It never lets a panic escape: the caller is
// waiting on Reply, so a failed mutation must still answer.
func (a *scopeActor) apply(m *Mutate) error { return Apply(a.node, m.Apply) }

// Apply runs one mutation of node's layer and publishes the result: what a
// scope actor does with a Mutate, for the runtime to call itself while a
// scope has no actor yet (its actor is spawned on first use; until then the
// runtime serialises the writers). A panic in fn is returned as an error
// and publishes nothing.
func Apply(node *core.Node, fn func(cur *core.Layer) (*core.Layer, error)) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("actorsys: mutation failed: %v", r)
		}
	}()
	if fn == nil {
		return errors.New("actorsys: mutation without a function")
	}
	cur := node.Layer()
	next, err := fn(cur)
	if err != nil {
		return err
	}
	if next != nil && next != cur {
		node.Publish(next)
	}
	return nil
}

// StopObserver is implemented by a Handler that wants to hear when its
// actor has stopped, for whatever reason (after the actor left the process
// registry, so it may respawn it under the same name).
type StopObserver interface{ ActorStopped() }
