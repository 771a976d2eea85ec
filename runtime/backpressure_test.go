package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolscope/toolscope/runtime"
)

// Issue 25 item 8b: WithBackPressure makes delivery wait for the subscriber
// instead of dropping (docs/contract.md#events).

func bpTool(name string, parallel bool, body func(context.Context) (any, error)) runtime.Definition {
	return tool(name, func(context.Context, json.RawMessage) (bool, error) { return parallel, nil },
		func(ctx context.Context, _ json.RawMessage, _ *runtime.RunContext) (any, error) { return body(ctx) })
}

func okBody(context.Context) (any, error) { return "ok", nil }

// runCalls runs n calls of name on s from workers goroutines and returns a
// channel closed when all have returned, and their results' count.
func runCalls(s *runtime.Scope, ctx context.Context, name string, workers, n int) (<-chan struct{}, *atomic.Int64) {
	done := make(chan struct{})
	var answered atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range n {
				s.Execute(ctx, runtime.Call{ID: fmt.Sprintf("w%d-%d", w, i), Name: name})
				answered.Add(1)
			}
		}()
	}
	go func() { wg.Wait(); close(done) }()
	return done, &answered
}

// A recorder with a one-event buffer, held up at its first event while
// calls run from several goroutines, still sees every event: the calls
// wait for it instead of losing their events. The same run without the
// option drops all but two of them.
func TestSubscribe_Item8b_BackPressureRecorderSeesEveryEvent(t *testing.T) {
	for _, bp := range []bool{true, false} {
		t.Run(fmt.Sprintf("backpressure=%v", bp), func(t *testing.T) {
			reg := mustNew(t)
			defer reg.Close(context.Background())
			s, err := reg.NewScope("agent")
			require.NoError(t, err)
			mustRegister(t, s, bpTool("t", true, okBody))

			gate := make(chan struct{})
			var first sync.Once
			var seen atomic.Int64
			opts := []runtime.SubscribeOption{runtime.WithBuffer(1)}
			if bp {
				opts = append(opts, runtime.WithBackPressure(0))
			}
			sub, err := reg.Subscribe(func(e runtime.Event) {
				first.Do(func() { <-gate })
				if e.Kind == runtime.ExecutionStarted || e.Kind == runtime.ExecutionFinished {
					seen.Add(1)
				}
			}, opts...)
			require.NoError(t, err)
			defer sub.Close()

			const workers, n = 4, 50
			done, _ := runCalls(s, context.Background(), "t", workers, n)
			if !bp {
				awaitClosed(t, done, "calls without back-pressure never wait")
			}
			close(gate)
			awaitClosed(t, done, "the calls to end once the recorder moves")
			want := int64(2 * workers * n)
			if bp {
				waitFor(t, "every event delivered", func() bool { return seen.Load() == want })
				assert.Zero(t, sub.Dropped())
			} else {
				waitFor(t, "the buffered event delivered", func() bool { return seen.Load()+sub.Dropped() == want })
				assert.Equal(t, want-2, sub.Dropped(), "one event held, one buffered, the rest dropped")
			}
		})
	}
}

// Under load (calls from many goroutines, turns, nested calls, a
// subscriber that does some work), a back-pressure recorder loses nothing
// and sees each call's events as a pair.
func TestSubscribe_Item8b_BackPressureUnderLoad(t *testing.T) {
	reg := mustNew(t)
	defer reg.Close(context.Background())
	s, err := reg.NewScope("agent")
	require.NoError(t, err)
	mustRegister(t, s, bpTool("leaf", true, okBody))
	mustRegister(t, s, tool("outer", always, func(ctx context.Context, _ json.RawMessage, rc *runtime.RunContext) (any, error) {
		return s.Execute(ctx, runtime.Call{ID: "inner", Name: "leaf"}).Text(), nil
	}))
	var mu sync.Mutex
	pairs := map[runtime.Token]int{}
	var events atomic.Int64
	sub, err := reg.Subscribe(func(e runtime.Event) {
		mu.Lock()
		defer mu.Unlock()
		defer events.Add(1)
		switch e.Kind {
		case runtime.ExecutionStarted:
			pairs[e.Token]++
		case runtime.ExecutionFinished:
			pairs[e.Token] += 10
		}
	}, runtime.WithBuffer(2), runtime.WithBackPressure(0))
	require.NoError(t, err)
	defer sub.Close()

	const workers, n = 6, 100
	done1, _ := runCalls(s, context.Background(), "outer", workers, n)
	turns := make(chan struct{})
	go func() {
		defer close(turns)
		for i := range 20 {
			_, _ = s.ExecuteTurn(context.Background(), []runtime.TurnCall{
				{ID: fmt.Sprintf("t%d-a", i), Name: "leaf"}, {ID: fmt.Sprintf("t%d-b", i), Name: "leaf"},
			})
		}
	}()
	awaitClosed(t, done1, "the calls")
	awaitClosed(t, turns, "the turns")
	want := workers*n*2 + 20*2
	waitFor(t, "every call's pair", func() bool { return events.Load() >= int64(2*want+2*20) }) // + the turns' own
	mu.Lock()
	assert.Len(t, pairs, want)
	for tok, v := range pairs {
		assert.Equal(t, 11, v, "call %v: one started and one finished", tok)
	}
	mu.Unlock()
	assert.Zero(t, sub.Dropped())
}

// A back-pressure subscriber that calls back into the registry with its
// ctx — a plain tool, an exclusive tool while another exclusive call waits
// for this very subscriber, a registration (RegistryChanged) — never
// deadlocks: its own calls' events do not wait, its calls do not wait for
// admission (WOULD_DEADLOCK instead), and RegistryChanged is kept aside.
func TestSubscribe_Item8b_SubscriberCallingBackNeverDeadlocks(t *testing.T) {
	reg := mustNew(t)
	defer reg.Close(context.Background())
	s, err := reg.NewScope("agent")
	require.NoError(t, err)
	mustRegister(t, s, bpTool("par", true, okBody))
	mustRegister(t, s, bpTool("excl", false, okBody))

	var mu sync.Mutex
	codes := map[runtime.Code]int{}
	var registered atomic.Int64
	var callbacks atomic.Int64
	sub, err := reg.SubscribeContext(func(ctx context.Context, e runtime.Event) {
		if e.Kind != runtime.ExecutionFinished || e.Parent != (runtime.Token{}) || len(e.CallID) > 0 && e.CallID[0] == 's' {
			return
		}
		callbacks.Add(1)
		assert.True(t, runtime.IsCallbackContext(ctx), "a back-pressure subscriber's ctx is a callback ctx")
		for _, name := range []string{"par", "excl"} {
			res := s.Execute(ctx, runtime.Call{ID: "sub-" + name, Name: name})
			mu.Lock()
			codes[res.Code()]++
			mu.Unlock()
		}
		if registered.Add(1) <= 5 {
			_, err := s.Register(bpTool(fmt.Sprintf("new%d", registered.Load()), true, okBody))
			assert.NoError(t, err)
		}
	}, runtime.WithBuffer(1), runtime.WithBackPressure(0))
	require.NoError(t, err)
	defer sub.Close()

	d1, _ := runCalls(s, context.Background(), "excl", 3, 40)
	d2, _ := runCalls(s, context.Background(), "par", 3, 40)
	awaitClosed(t, d1, "exclusive calls")
	awaitClosed(t, d2, "parallel calls")
	waitFor(t, "the subscriber to hear every outside call", func() bool { return callbacks.Load() == 240 })
	mu.Lock()
	defer mu.Unlock()
	for code := range codes {
		assert.Contains(t, []runtime.Code{"", runtime.CodeWouldDeadlock}, code, "the subscriber's calls succeed or refuse, never hang")
	}
	assert.Positive(t, codes[""])
}

// Close with a stuck back-pressure subscriber (one that ignores its ctx)
// finishes: the calls waiting for it are cancelled when Close's ctx ends,
// their events are dropped and counted, and each call still answers.
// Subscription.Close releases the waiting calls too, and a maxWait bounds
// the wait of a call whose ctx never ends.
func TestSubscribe_Item8b_CloseWithStuckSubscriberFinishes(t *testing.T) {
	t.Run("registry Close", func(t *testing.T) {
		reg := mustNew(t)
		s, err := reg.NewScope("agent")
		require.NoError(t, err)
		mustRegister(t, s, bpTool("t", true, okBody))
		release := make(chan struct{})
		defer close(release)
		sub, err := reg.Subscribe(func(runtime.Event) { <-release }, runtime.WithBuffer(1), runtime.WithBackPressure(0))
		require.NoError(t, err)
		done, answered := runCalls(s, context.Background(), "t", 3, 5)
		waitFor(t, "calls to wait for the subscriber", func() bool { return reg.InFlight() == 3 })
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		closed := make(chan struct{})
		go func() { _ = reg.Close(ctx); close(closed) }()
		awaitClosed(t, closed, "Close with a stuck subscriber")
		awaitClosed(t, done, "the waiting calls to answer")
		assert.EqualValues(t, 15, answered.Load())
		assert.Positive(t, sub.Dropped())
	})
	t.Run("registry Close, turns", func(t *testing.T) {
		reg := mustNew(t)
		s, err := reg.NewScope("agent")
		require.NoError(t, err)
		mustRegister(t, s, bpTool("t", true, okBody))
		release := make(chan struct{})
		defer close(release)
		sub, err := reg.Subscribe(func(runtime.Event) { <-release }, runtime.WithBuffer(1), runtime.WithBackPressure(0))
		require.NoError(t, err)
		// One call's events: the subscriber is stuck on the first, the
		// second fills the buffer; each turn's TurnStarted (made with the
		// turn's ctx, which Close's ctx ending cancels) then waits.
		s.Execute(context.Background(), runtime.Call{ID: "fill", Name: "t"})
		turns := make(chan struct{})
		var wg sync.WaitGroup
		for i := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _ = s.ExecuteTurn(context.Background(), []runtime.TurnCall{{ID: fmt.Sprintf("t%d", i), Name: "t"}})
			}()
		}
		go func() { wg.Wait(); close(turns) }()
		waitFor(t, "turns to wait for the subscriber", func() bool { return reg.InFlight() == 3 })
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		closed := make(chan struct{})
		go func() { _ = reg.Close(ctx); close(closed) }()
		awaitClosed(t, closed, "Close with a stuck subscriber")
		awaitClosed(t, turns, "turns whose events wait for a stuck subscriber, released by Close's ctx")
		assert.Positive(t, sub.Dropped())
	})
	t.Run("Subscription.Close", func(t *testing.T) {
		reg := mustNew(t)
		defer reg.Close(context.Background())
		s, err := reg.NewScope("agent")
		require.NoError(t, err)
		mustRegister(t, s, bpTool("t", true, okBody))
		release := make(chan struct{})
		defer close(release)
		var subCtx context.Context
		got := make(chan struct{}, 1)
		sub, err := reg.SubscribeContext(func(ctx context.Context, _ runtime.Event) {
			subCtx = ctx
			select {
			case got <- struct{}{}:
			default:
			}
			<-release
		}, runtime.WithBuffer(1), runtime.WithBackPressure(0))
		require.NoError(t, err)
		done, _ := runCalls(s, context.Background(), "t", 2, 5)
		<-got
		waitFor(t, "calls to wait for the subscriber", func() bool { return reg.InFlight() == 2 })
		sub.Close()
		awaitClosed(t, done, "calls released by Subscription.Close")
		awaitClosed(t, subCtx.Done(), "the subscriber's ctx cancelled by Close")
	})
	t.Run("maxWait", func(t *testing.T) {
		reg := mustNew(t)
		defer reg.Close(context.Background())
		s, err := reg.NewScope("agent")
		require.NoError(t, err)
		mustRegister(t, s, bpTool("t", true, okBody))
		release := make(chan struct{})
		defer close(release)
		sub, err := reg.Subscribe(func(runtime.Event) { <-release }, runtime.WithBuffer(1), runtime.WithBackPressure(time.Millisecond))
		require.NoError(t, err)
		defer sub.Close()
		done, _ := runCalls(s, context.Background(), "t", 2, 5)
		awaitClosed(t, done, "calls bounded by maxWait")
		assert.Positive(t, sub.Dropped())
	})
}

// ExampleWithBackPressure records every event of a burst of calls with a
// tiny buffer: the calls wait for the recorder rather than lose events.
func ExampleWithBackPressure() {
	reg, err := runtime.New()
	if err != nil {
		panic(err)
	}
	echo, err := runtime.NewTool("echo", "echo", func(_ context.Context, in struct{}, _ *runtime.RunContext) (string, error) {
		return "ok", nil
	}, runtime.WithParallel())
	if err != nil {
		panic(err)
	}
	if _, err := reg.Global().Register(echo); err != nil {
		panic(err)
	}
	var mu sync.Mutex
	finished := 0
	sub, err := reg.SubscribeContext(func(ctx context.Context, e runtime.Event) {
		// ctx is for calls the recorder makes itself; this one only counts.
		if e.Kind == runtime.ExecutionFinished {
			mu.Lock()
			finished++
			mu.Unlock()
		}
	}, runtime.WithBuffer(1), runtime.WithBackPressure(0))
	if err != nil {
		panic(err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 100 {
				reg.Global().Execute(context.Background(), runtime.Call{ID: fmt.Sprint(i, j), Name: "echo"})
			}
		}()
	}
	wg.Wait()
	_ = reg.Close(context.Background()) // the subscription delivers what it buffered, then ends
	<-sub.Done()
	mu.Lock()
	fmt.Println(finished, "finished events,", sub.Dropped(), "dropped")
	mu.Unlock()
	// Output: 800 finished events, 0 dropped
}
