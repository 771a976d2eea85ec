package runtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/toolscope/toolscope/internal/actorsys"
	"github.com/toolscope/toolscope/internal/core"
	"github.com/toolscope/toolscope/runtime"
)

// The scope actor's in-process mutation message is not a protocol: outside
// the module it cannot be named at all (internal package), and a malformed
// one sent by anything in the actor system (no reply channel, a reply
// channel nobody reads, no function) wedges nothing. Register through the
// scope and Close's teardown still complete.
func TestActorMessages_MalformedMutateWedgesNothing(t *testing.T) {
	reg := mustNew(t)
	s, err := reg.NewScope("a")
	if err != nil {
		t.Fatal(err)
	}
	noop := func(l *core.Layer) (*core.Layer, error) { return l, nil }
	malformed := []any{
		&actorsys.Mutate{Apply: noop},                          // no reply channel
		&actorsys.Mutate{Apply: noop, Reply: make(chan error)}, // nobody reads the reply
		&actorsys.Mutate{Reply: make(chan error)},              // no function, unread reply
		&actorsys.Mutate{},                                     // nothing at all
	}
	sent := make(chan struct{})
	foreign := reg.ActorSystem().Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		if _, ok := c.Message().(*actor.Started); ok {
			for _, m := range malformed {
				c.Send(s.PID(), m)
			}
			close(sent)
		}
	}))
	defer reg.ActorSystem().Root.Stop(foreign)
	<-sent
	boundedWait(t, 10*time.Second, "Register after malformed mutations", func() {
		mustRegister(t, s, hdef("t", true, func(context.Context) (any, error) { return 1, nil }))
	})
	if r := s.Execute(context.Background(), runtime.Call{ID: "1", Name: "t"}); r.IsError() {
		t.Fatal(r.Text())
	}
	boundedWait(t, 10*time.Second, "Close after malformed mutations", func() { closeNow(t, reg) })
}
