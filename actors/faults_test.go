package actors_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/toolscope/toolscope/actors"
	"github.com/toolscope/toolscope/messages"
	"github.com/toolscope/toolscope/runtime"
)

// answersAgain asks pid for a schema until it answers: right after a stop
// the actor may be between incarnations (a request is then a dead letter,
// or dropped with the stopped mailbox), but it answers again, at the same
// PID, without anyone's help.
func answersAgain(t *testing.T, h *actors.Host, pid *actor.PID, name string) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		v, ok := askWithin(h.System(), pid, &messages.GetRequest{Name: name}, 200*time.Millisecond)
		if ok {
			g, ok := v.(*messages.GetReply)
			require.True(t, ok, "%T", v)
			require.True(t, g.GetFound(), "the respawned actor serves the same scope")
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the PID does not answer again after a stop")
		}
	}
}

// A scope's actor stopped from outside, again and again, while foreign
// actors send requests to its PID and Go callers register and execute, is
// respawned under the same PID (race-free under -race: the new incarnation
// is added under the PID only once it is set up), nothing panics or hangs,
// the scope keeps every registration, and the PID answers afterwards.
func TestActorFaults_ScopeActorRespawnUnderConcurrentSends(t *testing.T) {
	h := newHost(t)
	s := newScope(t, h.Registry(), "a")
	mustRegister(t, s, constTool("x", false, 1))
	pid := h.PID(s)
	boundedWait(t, 6*waitLimit, "requests and mutations while the scope actor is respawned", func() {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := range 3 {
			wg.Add(2)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					d, err := s.Register(constTool(fmt.Sprintf("w%d-%d", w, i), true, 1))
					if err != nil {
						t.Errorf("Register: %v", err)
						return
					}
					d()
					if r := s.Execute(context.Background(), runtime.Call{ID: "go", Name: "x"}); r.IsError() {
						t.Errorf("Execute: %s", r.Text())
						return
					}
				}
			}()
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					// Answered, a dead letter, or dropped with a stopped
					// mailbox (then the short timeout): never a panic.
					_, _ = askWithin(h.System(), pid, &messages.ExecuteRequest{Call: &messages.Call{CallId: "m", Name: "x"}}, 50*time.Millisecond)
				}
			}()
		}
		for range 200 {
			h.System().Root.Stop(pid)
			time.Sleep(20 * time.Microsecond)
		}
		close(stop)
		wg.Wait()
	})
	require.Same(t, pid, h.PID(s), "the scope's PID changed across respawns")
	answersAgain(t, h, pid, "x")
}

// The global scope's actor is the parent of the scope actors: stopped from
// outside, it takes its children down with it, and the host respawns it
// and them, each under the PID it had.
func TestActorFaults_GlobalActorRespawnRespawnsChildren(t *testing.T) {
	h := newHost(t)
	reg := h.Registry()
	mustRegister(t, reg.Global(), constTool("g", true, 1))
	scopes := make([]*runtime.Scope, 3)
	pids := make([]*actor.PID, 3)
	for i := range scopes {
		scopes[i] = newScope(t, reg, fmt.Sprint("s", i))
		mustRegister(t, scopes[i], constTool("own", true, i))
		pids[i] = h.PID(scopes[i])
	}
	gpid := h.PID(reg.Global())
	for range 5 {
		h.System().Root.Stop(gpid)
		answersAgain(t, h, gpid, "g")
		for i, pid := range pids {
			answersAgain(t, h, pid, "own")
			require.Same(t, pid, h.PID(scopes[i]))
		}
	}
	// A scope asked for after the respawns gets an actor too.
	late := newScope(t, reg, "late")
	mustRegister(t, late, constTool("own", true, "late"))
	answersAgain(t, h, h.PID(late), "own")
}

// Actors stopped behind the host's back hang no call: the Go path never
// goes through them, the registrations live in the registry, and requests
// by message are answered again once the actor is respawned; Dispose and
// Close complete, leaving no goroutine behind.
func TestActorFaults_StoppedActorsHangNothing(t *testing.T) {
	// protoactor's dead letter log throttle keeps a goroutine for its interval.
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent(),
		goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/actor.NewDeadLetter.NewThrottle.func4.1"))
	h, err := actors.New()
	require.NoError(t, err)
	s := newScope(t, h.Registry(), "a")
	mustRegister(t, s, tool("x", false, func(context.Context, json.RawMessage) (any, error) {
		time.Sleep(100 * time.Microsecond)
		return 1, nil
	}))
	mustRegister(t, s, constTool("p", true, 2))
	pid := h.PID(s)
	for range 3 {
		h.System().Root.Stop(pid)
		boundedWait(t, waitLimit, "executions and a turn after the actor stopped", func() {
			var wg sync.WaitGroup
			for i := range 20 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					name := "p"
					if i%3 == 0 {
						name = "x"
					}
					if r := s.Execute(context.Background(), runtime.Call{ID: fmt.Sprint(i), Name: name}); r.IsError() {
						t.Errorf("call failed: %s", r.ErrorMessage())
					}
				}()
			}
			wg.Wait()
			if _, err := s.ExecuteTurn(context.Background(), []runtime.TurnCall{{ID: "1", Name: "x"}, {ID: "2", Name: "p"}}); err != nil {
				t.Error(err)
			}
		})
		answersAgain(t, h, pid, "x")
	}
	boundedWait(t, waitLimit, "dispose", s.Dispose)
	closeHost(t, h)
}

// A dead letter is published on the sending goroutine. When the host's
// reply goes to a sender that is gone, a panicking event-stream subscriber
// hearing it is contained (the reply is sent from a goroutine nobody
// recovers) and reported to the error handler; a subscriber that calls back
// into the host and the scope from there (PID, Execute, Dispose) does not
// deadlock: the host holds no lock while it sends.
func TestActorFaults_DeadLetterSubscriberPanicsOrCallsBack(t *testing.T) {
	var contained atomic.Int32
	h := newHost(t, actors.WithErrorHandler(func(error) { contained.Add(1) }))
	sys := h.System()
	s := newScope(t, h.Registry(), "a")
	release, entered := make(chan struct{}), make(chan struct{})
	mustRegister(t, s, tool("slow", true, func(context.Context, json.RawMessage) (any, error) {
		close(entered)
		<-release
		return 1, nil
	}))
	mustRegister(t, s, constTool("x", true, 1))
	var heard atomic.Int32
	sub := sys.EventStream.Subscribe(func(evt any) {
		dl, ok := evt.(*actor.DeadLetterEvent)
		if !ok {
			return
		}
		if _, reply := dl.Message.(*messages.ExecuteReply); !reply {
			return
		}
		if heard.Add(1) == 1 {
			h.PID(s) // calls back into the host
			s.Execute(context.Background(), runtime.Call{ID: "cb", Name: "x"})
			panic("dead letter subscriber panics")
		}
	})
	defer sys.EventStream.Unsubscribe(sub)

	// A sender that is gone by the time the reply comes.
	sender := sys.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		if m, ok := c.Message().(*clientSend); ok {
			c.Request(m.to, m.msg)
		}
	}))
	sys.Root.Send(sender, &clientSend{to: h.PID(s), msg: &messages.ExecuteRequest{Call: &messages.Call{CallId: "1", Name: "slow"}}})
	await(t, entered)
	require.NoError(t, sys.Root.StopFuture(sender).Wait())
	close(release)
	waitFor(t, "the panic to be contained and reported", func() bool { return contained.Load() > 0 })
	require.True(t, ask(t, h, h.PID(s), &messages.GetRequest{Name: "x"}).(*messages.GetReply).GetFound(), "the scope still answers")
	boundedWait(t, waitLimit, "Dispose after the dead letters", s.Dispose)
}

// Messages sent without a sender (Send) run nothing — nobody could hear an
// answer — and messages of protoactor's lifecycle sent with one are
// answered as unknown, not acted on: none of them wedges the scope, its
// PID, or Close.
func TestActorMessages_ForgedMessagesWedgeNothing(t *testing.T) {
	h := newHost(t)
	s := newScope(t, h.Registry(), "a")
	var ran atomic.Int32
	mustRegister(t, s, tool("t", true, func(context.Context, json.RawMessage) (any, error) { ran.Add(1); return 1, nil }))
	pid, gpid := h.PID(s), h.PID(h.Registry().Global())
	for _, m := range []any{
		&messages.ExecuteRequest{Call: &messages.Call{CallId: "nosender", Name: "t"}},
		&messages.TurnRequest{Calls: []*messages.TurnCall{{CallId: "nosender", Name: "t"}}},
		&actor.Terminated{Who: pid}, &actor.Started{}, nil, "garbage",
	} {
		h.System().Root.Send(pid, m)
		h.System().Root.Send(gpid, m)
	}
	for _, m := range []any{&actor.Stopped{}, &actor.Terminated{Who: pid}, &actor.Restarting{}} {
		_, ok := ask(t, h, gpid, m).(*messages.ErrorReply)
		require.True(t, ok, "%T with a sender is answered as unknown", m)
	}
	require.True(t, ask(t, h, pid, &messages.GetRequest{Name: "t"}).(*messages.GetReply).GetFound())
	require.Equal(t, int32(0), ran.Load(), "a request without a sender ran")
	h.System().Root.Stop(pid)
	answersAgain(t, h, pid, "t")
	boundedWait(t, waitLimit, "Close after forged messages", func() { closeHost(t, h) })
}

// A protoactor Stopping message sent to the global actor without a sender
// (indistinguishable from protoactor's own) hangs nothing: the next PID
// request of a new scope, and a scope actor stopped meanwhile, are served
// (the global actor makes the stop true and its successor takes over).
func TestActorMessages_ForgedStoppingHangsNoPIDRequest(t *testing.T) {
	h := newHost(t)
	reg := h.Registry()
	mustRegister(t, reg.Global(), constTool("g", true, 1))
	a := newScope(t, reg, "a")
	mustRegister(t, a, constTool("t", true, 1))
	pa, gpid := h.PID(a), h.PID(reg.Global())
	h.System().Root.Send(gpid, &actor.Stopping{})
	b := newScope(t, reg, "b")
	mustRegister(t, b, constTool("t", true, 1))
	var pb *actor.PID
	boundedWait(t, waitLimit, "a PID request after a forged Stopping", func() { pb = h.PID(b) })
	answersAgain(t, h, pb, "t")
	h.System().Root.Stop(pa)
	answersAgain(t, h, pa, "t")
	answersAgain(t, h, gpid, "g")
}
