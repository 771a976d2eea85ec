package runtime_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/toolscope/toolscope/messages"
	"github.com/toolscope/toolscope/runtime"
)

func quietSystem(t *testing.T) *actor.ActorSystem {
	t.Helper()
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}))
	t.Cleanup(sys.Shutdown)
	return sys
}

// countExecEvents subscribes to sys's event stream and counts the execution
// events it receives.
func countExecEvents(sys *actor.ActorSystem) (*atomic.Int32, func()) {
	var n atomic.Int32
	sub := sys.EventStream.Subscribe(func(evt any) {
		switch evt.(type) {
		case *messages.ExecutionStarted, *messages.ExecutionFinished:
			n.Add(1)
		}
	})
	return &n, func() { sys.EventStream.Unsubscribe(sub) }
}

// Events go to real subscribers, whenever they joined: one that subscribed
// to the caller's actor system before runtime.New (the natural order with
// WithActorSystem) receives both events of a call.
func TestEvents_SubscriberBeforeNewReceivesEvents(t *testing.T) {
	sys := quietSystem(t)
	n, unsub := countExecEvents(sys)
	defer unsub()
	reg := mustNew(t, runtime.WithActorSystem(sys))
	defer closeNow(t, reg)
	mustRegister(t, reg.Global(), hdef("t", true, func(context.Context) (any, error) { return 1, nil }))
	if r := reg.Execute(context.Background(), runtime.Call{ID: "1", Name: "t"}); r.IsError() {
		t.Fatal(r.Text())
	}
	if got := n.Load(); got != 2 {
		t.Fatalf("a subscriber that joined before New got %d execution events, want 2", got)
	}
}

// A subscriber that joins after an earlier one (there before New) left
// receives events; once nobody listens, none are built.
func TestEvents_NewSubscriberAfterEarlierLeftReceivesEvents(t *testing.T) {
	sys := quietSystem(t)
	_, unsubEarly := countExecEvents(sys)
	reg := mustNew(t, runtime.WithActorSystem(sys))
	defer closeNow(t, reg)
	mustRegister(t, reg.Global(), hdef("t", true, func(context.Context) (any, error) { return 1, nil }))
	unsubEarly()
	n, unsub := countExecEvents(sys)
	if r := reg.Execute(context.Background(), runtime.Call{ID: "1", Name: "t"}); r.IsError() {
		t.Fatal(r.Text())
	}
	if got := n.Load(); got != 2 {
		t.Fatalf("a subscriber that joined after an earlier one left got %d execution events, want 2", got)
	}
	unsub()
	// A second subscriber again, then the first one back: both counted.
	n2, unsub2 := countExecEvents(sys)
	defer unsub2()
	if r := reg.Execute(context.Background(), runtime.Call{ID: "2", Name: "t"}); r.IsError() {
		t.Fatal(r.Text())
	}
	if got := n2.Load(); got != 2 {
		t.Fatalf("got %d execution events, want 2", got)
	}
}

// A panic in an event-stream subscriber never escapes Execute, never kills
// a turn's worker (it would take the process down), and is reported to the
// error handler. Both calls of each pair still return their results.
func TestEvents_PanickingStreamSubscriberTakesNothingDown(t *testing.T) {
	var contained atomic.Int32
	reg := mustNew(t, runtime.WithEvents(true), runtime.WithErrorHandler(func(error) { contained.Add(1) }))
	defer closeNow(t, reg)
	sub := reg.ActorSystem().EventStream.Subscribe(func(evt any) {
		switch evt.(type) {
		case *messages.ExecutionStarted, *messages.ExecutionFinished:
			panic("subscriber panics")
		}
	})
	defer reg.ActorSystem().EventStream.Unsubscribe(sub)
	s, err := reg.NewScope("a")
	if err != nil {
		t.Fatal(err)
	}
	mustRegister(t, s, hdef("p", true, func(context.Context) (any, error) { return 1, nil }))
	mustRegister(t, s, hdef("x", false, func(context.Context) (any, error) { return 2, nil }))
	boundedWait(t, 20*time.Second, "Execute and ExecuteTurn with a panicking subscriber", func() {
		for i := range 5 {
			if r := s.Execute(context.Background(), runtime.Call{ID: fmt.Sprint(i), Name: "x"}); r.IsError() {
				t.Errorf("Execute: %s", r.Text())
			}
			tr, err := s.ExecuteTurn(context.Background(), []runtime.TurnCall{
				{ID: "a", Name: "p"}, {ID: "b", Name: "p"}, {ID: "c", Name: "x"}, {ID: "d", Name: "missing"},
			})
			if err != nil || len(tr.Results) != 4 {
				t.Errorf("ExecuteTurn: %v", err)
			}
		}
	})
	if contained.Load() == 0 {
		t.Fatal("the subscriber's panics were not reported to the error handler")
	}
}

// Dead letters are published synchronously on the sender's goroutine: a
// panicking subscriber hearing one (a mutation or wake sent to an actor that
// protoactor just stopped) must not take the caller down either.
func TestEvents_PanickingDeadLetterSubscriberTakesNothingDown(t *testing.T) {
	reg := mustNew(t)
	defer closeNow(t, reg)
	var deadLetters atomic.Int32
	sub := reg.ActorSystem().EventStream.Subscribe(func(evt any) {
		if _, ok := evt.(*actor.DeadLetterEvent); ok {
			deadLetters.Add(1)
			panic("dead letter subscriber panics")
		}
	})
	defer reg.ActorSystem().EventStream.Unsubscribe(sub)
	s, err := reg.NewScope("a")
	if err != nil {
		t.Fatal(err)
	}
	mustRegister(t, s, hdef("x", false, func(context.Context) (any, error) {
		time.Sleep(50 * time.Microsecond)
		return 1, nil
	}))
	for round := 0; round < 2000 && deadLetters.Load() < 3; round++ {
		reg.ActorSystem().Root.Stop(s.PID())
		if pid := runtime.SupervisorPIDForTest(s); pid != nil {
			reg.ActorSystem().Root.Stop(pid)
		}
		boundedWait(t, 20*time.Second, "calls and mutations after an actor stop", func() {
			var wg sync.WaitGroup
			for i := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if r := s.Execute(context.Background(), runtime.Call{ID: fmt.Sprint(i), Name: "x"}); r.IsError() {
						t.Errorf("Execute: %s", r.Text())
					}
				}()
			}
			if d, err := s.Register(hdef(fmt.Sprint("r", round), true, nil)); err == nil {
				d()
			} else {
				t.Errorf("Register: %v", err)
			}
			wg.Wait()
		})
	}
	if deadLetters.Load() == 0 {
		t.Skip("no dead letter was produced; nothing proven this run")
	}
}
