package actorsys

import "github.com/asynkron/protoactor-go/actor"

// Wake tells a supervisor that its host has work queued (admissions,
// releases, turns). The work itself lives with the host, not in the
// mailbox: a message protoactor drops (an actor stopped behind the
// registry's back drops its mailbox) loses no request, because the next
// incarnation takes the host's queue when it starts.
type Wake struct{}

// SupervisorHost is the runtime side of a scope's supervisor: it owns the
// admission queue and the requests waiting for the actor, so the actor
// itself is stateless and may be restarted or respawned at any time.
type SupervisorHost interface {
	// Step takes and processes the queued requests. Only the live actor
	// calls it, from Receive, so the admission order is the actor's.
	Step()
	// Stopped is called when the actor has stopped (for whatever reason):
	// the host either drains (it asked for the stop) or respawns it.
	Stopped()
}

// supervisorActor decides who may dispatch next in one scope (issue 3). It
// never runs user code: turns it is asked to run start on goroutines of
// their own. (Protobuf requests go to the scope actor's PID.)
type supervisorActor struct {
	host SupervisorHost
}

// SupervisorProps returns the props of a scope's supervisor working for
// host; its mailbox runs through run (nil: a new goroutine each time).
func SupervisorProps(host SupervisorHost, run Spawner) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor {
		return &supervisorActor{host: host}
	}, actor.WithDispatcher(Dispatcher(run)))
}

// Receive implements actor.Actor.
func (a *supervisorActor) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *Wake, *actor.Started:
		// Started: a new incarnation takes whatever its predecessor left.
		a.host.Step()
	case *actor.Restarting, *actor.Stopping:
	case *actor.Stopped:
		a.host.Stopped()
	}
}
