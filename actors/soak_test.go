package actors_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/toolscope/toolscope/actors"
	"github.com/toolscope/toolscope/messages"
	"github.com/toolscope/toolscope/runtime"
)

// A soak of the actor face: Go callers and actors sending requests to the
// same scopes, scopes created and disposed (with their PIDs asked for), and
// the scope actors and the global actor stopped behind the host's back.
// Nothing hangs or panics; every call that ran published exactly one
// ExecutionStarted and one ExecutionFinished and was observed exactly
// once; Close leaves no goroutine behind.
func TestSoak_MessagesGoCallsAndActorFaults(t *testing.T) {
	dur := 1200 * time.Millisecond
	if testing.Short() {
		dur = 500 * time.Millisecond
	}
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent(),
		goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/actor.NewDeadLetter.NewThrottle.func4.1"))
	var contained atomic.Int64
	h, err := actors.New(actors.WithEvents(), actors.WithRegistry(runtime.WithMaxParallel(4), runtime.WithMaxQueued(64),
		runtime.WithErrorHandler(func(error) { contained.Add(1) })))
	require.NoError(t, err)
	reg, sys := h.Registry(), h.System()

	var evMu sync.Mutex
	started, finished, observed := map[string]int{}, map[string]int{}, map[string]int{}
	sub := sys.EventStream.Subscribe(func(evt any) {
		evMu.Lock()
		defer evMu.Unlock()
		switch e := evt.(type) {
		case *messages.ExecutionStarted:
			started[e.GetCallId()]++
		case *messages.ExecutionFinished:
			finished[e.GetCallId()]++
		}
	})
	defer sys.EventStream.Unsubscribe(sub)
	_, err = reg.Global().OnResult(func(_ context.Context, e runtime.Execution, _ *runtime.Result) error {
		evMu.Lock()
		observed[e.CallID()]++
		evMu.Unlock()
		return nil
	})
	require.NoError(t, err)
	mustRegister(t, reg.Global(), constTool("p", true, 1))
	mustRegister(t, reg.Global(), constTool("x", false, 2))

	const nScopes = 4
	scopes := make([]*runtime.Scope, nScopes)
	for i := range scopes {
		scopes[i] = newScope(t, reg, fmt.Sprint("s", i))
	}
	var ids atomic.Int64
	next := func() string { return fmt.Sprint("c", ids.Add(1)) }
	deadline := time.Now().Add(dur)
	var wg sync.WaitGroup
	var replies, lostReplies atomic.Int64
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				s := scopes[rand.IntN(nScopes)]
				name := []string{"p", "x"}[rand.IntN(2)]
				switch (w + rand.IntN(4)) % 4 {
				case 0:
					s.Execute(context.Background(), runtime.Call{ID: next(), Name: name})
				case 1:
					if _, err := s.ExecuteTurn(context.Background(), []runtime.TurnCall{{ID: next(), Name: "p"}, {ID: next(), Name: name}}); err != nil {
						t.Errorf("ExecuteTurn: %v", err)
					}
				case 2:
					_, ok := askWithin(sys, h.PID(s), &messages.ExecuteRequest{Call: &messages.Call{CallId: next(), Name: name}}, 500*time.Millisecond)
					if !ok {
						lostReplies.Add(1) // a dead letter or a dropped mailbox while the actor is respawned
					} else {
						replies.Add(1)
					}
				case 3:
					_, ok := askWithin(sys, h.PID(s), &messages.TurnRequest{Calls: []*messages.TurnCall{{CallId: next(), Name: "p"}, {CallId: next(), Name: name}}}, 500*time.Millisecond)
					if !ok {
						lostReplies.Add(1)
					} else {
						replies.Add(1)
					}
				}
			}
		}()
	}
	// Churn: scopes that come and go, asked for their PIDs and sent to.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; time.Now().Before(deadline); i++ {
			s, err := reg.NewScope(fmt.Sprint("churn", i))
			if err != nil {
				t.Errorf("NewScope: %v", err)
				return
			}
			pid := h.PID(s)
			_, _ = askWithin(sys, pid, &messages.ExecuteRequest{Call: &messages.Call{CallId: next(), Name: "p"}}, 500*time.Millisecond)
			s.Dispose()
		}
	}()
	// Faults: actors stopped behind the host's back.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for time.Now().Before(deadline) {
			time.Sleep(time.Duration(1+rand.IntN(5)) * time.Millisecond)
			if rand.IntN(5) == 0 {
				sys.Root.Stop(h.PID(reg.Global()))
			} else {
				sys.Root.Stop(h.PID(scopes[rand.IntN(nScopes)]))
			}
		}
	}()
	boundedWait(t, dur+6*waitLimit, "the soak's callers", wg.Wait)
	closeHost(t, h)

	evMu.Lock()
	defer evMu.Unlock()
	require.NotEmpty(t, started)
	for id, n := range started {
		if n != 1 || finished[id] != 1 || observed[id] != 1 {
			t.Errorf("call %s: %d started, %d finished, %d observed events", id, n, finished[id], observed[id])
		}
	}
	require.Equal(t, len(started), len(finished))
	t.Logf("%d calls, %d replies by message, %d lost while actors were respawned, %d contained", len(started), replies.Load(), lostReplies.Load(), contained.Load())
}
