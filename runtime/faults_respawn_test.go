package runtime_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/toolscope/toolscope/internal/actorsys"
	"github.com/toolscope/toolscope/runtime"
)

// A scope actor stopped from outside is respawned while others keep sending
// to the scope's PID (Register, Restrict, and foreign actors' requests):
// respawning must be race-free (run under -race) and never panic a sender.
// Before the fix the new incarnation was spawned under the same name, and a
// send between protoactor registering the process and its mailbox handlers
// raced (DATA RACE) or hit a nil dispatcher (SIGSEGV on the sender).
func TestActorFaults_ScopeActorRespawnUnderConcurrentSends(t *testing.T) {
	reg := mustNew(t, runtime.WithEvents(false))
	defer closeNow(t, reg)
	s, err := reg.NewScope("a")
	if err != nil {
		t.Fatal(err)
	}
	pid := s.PID()
	const rounds = 200
	boundedWait(t, 60*time.Second, "mutations while the scope actor is respawned", func() {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					d, err := s.Register(hdef(fmt.Sprintf("w%d-%d", w, i), true, nil))
					if err != nil {
						t.Errorf("Register: %v", err)
						return
					}
					d()
				}
			}()
		}
		for range rounds {
			reg.ActorSystem().Root.Stop(pid)
			time.Sleep(20 * time.Microsecond)
		}
		close(stop)
		wg.Wait()
	})
	if s.PID() != pid || s.PID().Id != pid.Id {
		t.Fatal("the scope's PID changed across respawns")
	}
	// The PID still serves after the respawns.
	boundedWait(t, 10*time.Second, "Register after the respawns", func() {
		mustRegister(t, s, hdef("after", true, nil))
	})
}

// The supervisor, stopped from outside again and again while contended calls
// post to it, is respawned without a race, and no call hangs.
func TestActorFaults_SupervisorRespawnUnderConcurrentPosts(t *testing.T) {
	reg := mustNew(t, runtime.WithEvents(false))
	defer closeNow(t, reg)
	s, err := reg.NewScope("a")
	if err != nil {
		t.Fatal(err)
	}
	mustRegister(t, s, hdef("x", false, func(context.Context) (any, error) { return 1, nil }))
	boundedWait(t, 60*time.Second, "contended calls while the supervisor is respawned", func() {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					if r := s.Execute(context.Background(), runtime.Call{ID: fmt.Sprint(w, i), Name: "x"}); r.IsError() {
						t.Errorf("Execute: %s", r.Text())
						return
					}
				}
			}()
		}
		for range 200 {
			if pid := runtime.SupervisorPIDForTest(s); pid != nil {
				reg.ActorSystem().Root.Stop(pid)
			}
			time.Sleep(20 * time.Microsecond)
		}
		close(stop)
		wg.Wait()
	})
}

// post and stop send to the supervisor; a send to a PID that just died is a
// dead letter, published synchronously on the sender's goroutine. An
// event-stream subscriber that calls back into the scope from there must
// not deadlock: the supervisor's mutex is not held while sending. The
// subscriber takes that mutex (through the test accessor, as any re-entry
// would); hearing a wake's dead letter (post) it also disposes the scope,
// which stops the supervisor; hearing a poison's (stop), it makes a call. (A subscriber that waits for an admission of the very scope
// whose admission the interrupted call is queued for would wait for itself:
// no runtime can help that one, so the test does not do it.)
func TestActorFaults_DeadLetterSubscriberCallingBackDoesNotDeadlock(t *testing.T) {
	reg := mustNew(t, runtime.WithEvents(false))
	defer closeNow(t, reg)
	var cur atomic.Pointer[runtime.Scope]
	var wakes, poisons atomic.Int32
	sub := reg.ActorSystem().EventStream.Subscribe(func(evt any) {
		dl, ok := evt.(*actor.DeadLetterEvent)
		if !ok {
			return
		}
		s := cur.Load()
		switch dl.Message.(type) {
		case *actorsys.Wake:
			wakes.Add(1)
			runtime.SupervisorPIDForTest(s) // takes the supervisor's mutex
			s.Dispose()
		case *actor.PoisonPill:
			poisons.Add(1)
			runtime.SupervisorPIDForTest(s)
			s.Execute(context.Background(), runtime.Call{ID: "cb", Name: "x"})
		}
	})
	defer reg.ActorSystem().EventStream.Unsubscribe(sub)
	for round := 0; round < 400 && wakes.Load()+poisons.Load() < 3; round++ {
		s, err := reg.NewScope(fmt.Sprint("a", round))
		if err != nil {
			t.Fatal(err)
		}
		cur.Store(s)
		mustRegister(t, s, hdef("x", false, func(context.Context) (any, error) {
			time.Sleep(20 * time.Microsecond)
			return 1, nil
		}))
		boundedWait(t, 20*time.Second, "calls and Dispose with a subscriber calling back on dead letters", func() {
			var wg sync.WaitGroup
			for i := range 6 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					s.Execute(context.Background(), runtime.Call{ID: fmt.Sprint(i), Name: "x"})
				}()
				if i == 2 {
					if pid := runtime.SupervisorPIDForTest(s); pid != nil {
						reg.ActorSystem().Root.Stop(pid)
					}
				}
			}
			wg.Wait()
			if pid := runtime.SupervisorPIDForTest(s); pid != nil {
				reg.ActorSystem().Root.Stop(pid)
			}
			s.Dispose()
		})
	}
	t.Logf("callbacks: %d on a wake's dead letter, %d on a poison's", wakes.Load(), poisons.Load())
	if wakes.Load()+poisons.Load() == 0 {
		t.Skip("no wake or poison became a dead letter; nothing proven this run")
	}
}
