package runtime_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/toolscope/toolscope/messages"
	"github.com/toolscope/toolscope/runtime"
)

// processes counts the actor system's local processes.
func processes(sys *actor.ActorSystem) int {
	n := 0
	for _, m := range sys.ProcessRegistry.LocalPIDs.LocalPIDs {
		n += m.Count()
	}
	return n
}

// ask sends a protobuf request to pid and returns the reply.
func ask(t *testing.T, reg *runtime.Registry, pid *actor.PID, msg any) (any, error) {
	t.Helper()
	return reg.ActorSystem().Root.RequestFuture(pid, msg, 10*time.Second).Result()
}

// An idle scope costs no actor (issue 13, item 3): scopes that register,
// restrict and execute through the API spawn none; the first PID request
// spawns the scope's actor, which then serves everything registered before
// it existed and is the writer of what comes after; Dispose stops it.
func TestScope_ActorSpawnedOnFirstPIDRequest(t *testing.T) {
	reg := mustNew(t, runtime.WithEvents(false))
	defer closeNow(t, reg)
	sys := reg.ActorSystem()
	mustRegister(t, reg.Global(), hdef("g", true, func(ctx context.Context) (any, error) { return "g", nil }))
	before := processes(sys)
	scopes := make([]*runtime.Scope, 20)
	for i := range scopes {
		s, err := reg.NewScope(fmt.Sprint("idle-", i))
		if err != nil {
			t.Fatal(err)
		}
		mustRegister(t, s, hdef("own", true, func(ctx context.Context) (any, error) { return "own", nil }))
		if _, err := s.Restrict(runtime.Restriction{Allow: []string{"g"}}); err != nil {
			t.Fatal(err)
		}
		if r := s.Execute(context.Background(), runtime.Call{ID: "1", Name: "own"}); r.IsError() {
			t.Fatal(r.ErrorMessage())
		}
		scopes[i] = s
	}
	if got := processes(sys); got != before {
		t.Fatalf("20 idle scopes added %d processes, want 0", got-before)
	}

	s := scopes[0]
	pid := s.PID()
	if got := processes(sys); got != before+1 {
		t.Fatalf("the first PID request added %d processes, want 1", got-before)
	}
	if s.PID() != pid {
		t.Fatal("a second PID request returned another PID")
	}
	reply, err := ask(t, reg, pid, &messages.GetRequest{Name: "own"})
	if err != nil {
		t.Fatal(err)
	}
	if g, ok := reply.(*messages.GetReply); !ok || !g.GetFound() {
		t.Fatalf("the spawned actor does not see what was registered before it: %v", reply)
	}
	// Mutations now go through the actor, and the layer is the same one.
	dispose := mustRegister(t, s, hdef("late", true, func(ctx context.Context) (any, error) { return "late", nil }))
	if reply, err := ask(t, reg, pid, &messages.GetRequest{Name: "late"}); err != nil || !reply.(*messages.GetReply).GetFound() {
		t.Fatalf("late registration through the actor: %v, %v", reply, err)
	}
	dispose()
	if _, ok := s.Get("late"); ok {
		t.Fatal("disposer did not remove the registration made through the actor")
	}
	s.Dispose()
	waitFor(t, "the disposed scope's actor to stop", func() bool { return processes(sys) == before })
}

// The PID of a scope disposed before anyone asked for it is served by no
// process: a request to it fails at once (a dead letter), as one to any
// disposed scope's PID, and asking again gives the same PID.
func TestScope_PIDOfScopeDisposedUnasked(t *testing.T) {
	reg := mustNew(t, runtime.WithEvents(false))
	defer closeNow(t, reg)
	s, err := reg.NewScope("a")
	if err != nil {
		t.Fatal(err)
	}
	before := processes(reg.ActorSystem())
	s.Dispose()
	pid := s.PID()
	if pid == nil || s.PID() != pid {
		t.Fatal("PID of a disposed scope: nil or unstable")
	}
	if got := processes(reg.ActorSystem()); got != before {
		t.Fatalf("PID of a disposed scope spawned %d processes", got-before)
	}
	boundedWait(t, 20*time.Second, "a request to a disposed scope's PID", func() {
		if reply, err := ask(t, reg, pid, &messages.GetRequest{Name: "x"}); err == nil {
			t.Errorf("a disposed scope's PID answered: %v", reply)
		}
	})
}

// The spawn races mutations (run under -race): registrations made while the
// first PID requests arrive are each applied exactly once, whether by their
// caller before the spawn or by the actor after it.
func TestScope_FirstPIDRequestRacesMutations(t *testing.T) {
	reg := mustNew(t, runtime.WithEvents(false))
	defer closeNow(t, reg)
	const writers, each = 4, 100
	for round := range 5 {
		s, err := reg.NewScope(fmt.Sprint("r", round))
		if err != nil {
			t.Fatal(err)
		}
		pids := make(chan *actor.PID, 2)
		boundedWait(t, 60*time.Second, "registrations racing the spawn", func() {
			var wg sync.WaitGroup
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range each {
						if _, err := s.Register(hdef(fmt.Sprintf("w%d-%d", w, i), true, nil)); err != nil {
							t.Errorf("Register: %v", err)
							return
						}
					}
				}()
			}
			for range 2 {
				wg.Add(1)
				go func() { defer wg.Done(); pids <- s.PID() }()
			}
			wg.Wait()
		})
		if a, b := <-pids, <-pids; a != b {
			t.Fatal("concurrent first PID requests returned different PIDs")
		}
		if got := len(s.Tools()); got != writers*each {
			t.Fatalf("round %d: %d tools visible, want %d", round, got, writers*each)
		}
		reply, err := ask(t, reg, s.PID(), &messages.SchemasRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if got := len(reply.(*messages.SchemasReply).GetTools()); got != writers*each {
			t.Fatalf("round %d: the actor sees %d schemas, want %d", round, got, writers*each)
		}
		s.Dispose()
	}
}
