package actors

import (
	"github.com/asynkron/protoactor-go/actor"

	"github.com/toolscope/toolscope/internal/admit"
)

// Admit asks a supervisor to admit one dispatch. Ready is closed when the
// call may start; the caller then owes exactly one Release.
type Admit struct {
	Waiter *admit.Waiter
}

// Release ends one admitted dispatch.
type Release struct{}

// supervisorActor owns one scope's admission state (issue 3): it never
// runs user code; it only decides who may dispatch next. Execute and turn
// requests that arrive as protobuf messages are answered by the handler on
// a goroutine of their own, whose dispatches come back here as Admit.
type supervisorActor struct {
	state   admit.Queue
	handler Handler
	system  *actor.ActorSystem
}

// SupervisorProps returns the props of a scope's supervisor, which owns
// the queue of gate g.
func SupervisorProps(system *actor.ActorSystem, g *admit.Gate, h Handler) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor {
		return &supervisorActor{state: admit.Queue{G: g}, handler: h, system: system}
	})
}

// Receive implements actor.Actor.
func (a *supervisorActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *Admit:
		wake(a.state.Admit(m.Waiter))
	case *Release:
		wake(a.state.Release())
	case *RunTurn:
		go m.Run()
	case *actor.Started, *actor.Restarting:
	case *actor.Stopping, *actor.Stopped:
		// Nobody may be left waiting on a stopped supervisor.
		wake(a.state.Drain())
	default:
		if a.handler == nil {
			return
		}
		sender := ctx.Sender()
		if sender == nil {
			return
		}
		msg := m
		go func() {
			if reply := a.handler.Handle(msg); reply != nil {
				a.system.Root.Send(sender, reply)
			}
		}()
	}
}

func wake(ws []*admit.Waiter) {
	for _, w := range ws {
		close(w.Ready)
	}
}

// RunTurn hands a whole model turn to a supervisor: one message per turn.
// The supervisor starts Run on a goroutine of its own (the runner executes
// user code, so it never runs inside Receive).
type RunTurn struct {
	Run func()
}
