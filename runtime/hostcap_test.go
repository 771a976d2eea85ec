package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/toolscope/toolscope/runtime"
)

var noArgs = json.RawMessage(`{}`)

// capGauge counts the top-level bodies running (a call with no parent
// holds a host slot; nested calls ride their root's) and records the most
// ever seen.
type capGauge struct {
	now, max atomic.Int64
}

func (g *capGauge) enter(ctx context.Context) func() {
	if e, ok := runtime.ExecutionFromContext(ctx); ok && !e.Parent().IsZero() {
		return func() {}
	}
	n := g.now.Add(1)
	for {
		m := g.max.Load()
		if n <= m || g.max.CompareAndSwap(m, n) {
			break
		}
	}
	return func() { g.now.Add(-1) }
}

// N7: WithMaxInFlight's argument is checked.
func TestHostCap_N7_InvalidConfig(t *testing.T) {
	_, err := runtime.New(runtime.WithMaxInFlight(-1))
	require.ErrorIs(t, err, runtime.ErrInvalidConfig)
	assert.Contains(t, err.Error(), "MaxInFlight must not be negative, got -1")
}

// N7: with the cap reached, the next call waits (it does not run, it is
// counted by Queued), across scopes, and calls take the slots in arrival
// order, whatever their scope. synctest makes "is waiting" exact.
func TestHostCap_N7_WaitsFIFOAcrossScopes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg, err := runtime.New(runtime.WithMaxInFlight(1))
		require.NoError(t, err)
		defer func() { _ = reg.Close(context.Background()) }()
		release := make(chan struct{})
		var mu sync.Mutex
		var order []string
		def := r3Tool("t", func(ctx context.Context, args json.RawMessage, _ *runtime.RunContext) (any, error) {
			e, _ := runtime.ExecutionFromContext(ctx)
			mu.Lock()
			order = append(order, e.CallID())
			mu.Unlock()
			if e.CallID() == "hold" {
				<-release
			}
			return "ok", nil
		})
		def.IsConcurrencySafe = func(context.Context, json.RawMessage) (bool, error) { return true, nil }
		r3M(reg.Global().Register(def))
		results := make(chan *runtime.Result, 8)
		run := func(agent, id string) {
			go func() {
				results <- reg.Execute(context.Background(), runtime.Call{ID: id, Name: "t", Agent: agent, Arguments: noArgs})
			}()
			synctest.Wait()
		}
		run("a", "hold")
		for i, agent := range []string{"b", "c", "a", "d", "b"} {
			run(agent, fmt.Sprintf("w%d", i))
		}
		assert.Equal(t, 5, reg.Queued(), "five calls wait for the one host slot (parallel tools: no scope makes them wait)")
		mu.Lock()
		assert.Equal(t, []string{"hold"}, order, "nothing ran beside the slot holder")
		mu.Unlock()
		close(release)
		for range 6 {
			nestOK(t, <-results)
		}
		assert.Equal(t, []string{"hold", "w0", "w1", "w2", "w3", "w4"}, order, "first come, first served across scopes")
		assert.Equal(t, 0, reg.Queued())
	})
}

// N7, N3: a call waiting for a host slot leaves the line when its ctx ends,
// with ABORTED_BEFORE_DISPATCH and its body not run; the slot still goes to
// the next in line. With WithMaxQueued(1), a call entering while one waits
// for a slot is refused OVERLOADED.
func TestHostCap_N7_WaitHonoursCtxAndMaxQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg, err := runtime.New(runtime.WithMaxInFlight(1), runtime.WithMaxQueued(1))
		require.NoError(t, err)
		defer func() { _ = reg.Close(context.Background()) }()
		release := make(chan struct{})
		var ran sync.Map
		r3M(reg.Global().Register(r3Tool("t", func(ctx context.Context, _ json.RawMessage, _ *runtime.RunContext) (any, error) {
			e, _ := runtime.ExecutionFromContext(ctx)
			ran.Store(e.CallID(), true)
			if e.CallID() == "hold" {
				<-release
			}
			return "ok", nil
		})))
		a, err := reg.NewScope("a")
		require.NoError(t, err)
		b, err := reg.NewScope("b")
		require.NoError(t, err)
		held := nestGo(a, context.Background(), runtime.Call{ID: "hold", Name: "t", Arguments: noArgs})
		synctest.Wait()
		ctx, cancel := context.WithCancel(context.Background())
		waiting := nestGo(b, ctx, runtime.Call{ID: "gives-up", Name: "t", Arguments: noArgs})
		synctest.Wait()
		require.Equal(t, 1, reg.Queued())
		res := b.Execute(context.Background(), runtime.Call{ID: "refused", Name: "t", Arguments: noArgs})
		assert.Equal(t, runtime.CodeOverloaded, res.Code(), res.ErrorMessage())
		assert.Contains(t, res.ErrorMessage(), "host slot")
		cancel()
		res = <-waiting
		assert.Equal(t, runtime.CodeAbortedBeforeDispatch, res.Code(), res.ErrorMessage())
		_, bodyRan := ran.Load("gives-up")
		assert.False(t, bodyRan, "a call that gave up waiting never runs its body")
		assert.Equal(t, 0, reg.Queued())
		next := nestGo(b, context.Background(), runtime.Call{ID: "next", Name: "t", Arguments: noArgs})
		synctest.Wait()
		close(release)
		nestOK(t, <-held)
		nestOK(t, <-next)
	})
}

// N7, R86: nested calls ride their root's host slot: with a cap of 1, a
// body that makes nested calls in other scopes (single and a parallel
// turn, nested again) completes, and no second top-level body runs beside
// it. A change subscriber's call that finds no slot fails at once.
func TestHostCap_N7_NestingRidesTheSlot(t *testing.T) {
	reg := r3Reg(t, runtime.WithMaxInFlight(1))
	var g capGauge
	leaf := nestTool("leaf", true, func(ctx context.Context, _ json.RawMessage, _ *runtime.RunContext) (any, error) {
		defer g.enter(ctx)()
		return "leaf", nil
	})
	r3M(reg.Global().Register(leaf))
	r3M(reg.Global().Register(r3Tool("mid", func(ctx context.Context, _ json.RawMessage, _ *runtime.RunContext) (any, error) {
		defer g.enter(ctx)()
		tr, err := reg.Global().ExecuteTurn(ctx, []runtime.TurnCall{{ID: "1", Name: "leaf"}, {ID: "2", Name: "leaf"}, {ID: "3", Name: "leaf"}})
		if err != nil {
			return nil, err
		}
		for _, r := range tr.Results {
			if r.IsError() {
				return nil, errors.New(r.ErrorMessage())
			}
		}
		return "mid", nil
	})))
	r3M(reg.Global().Register(nestTool("root", true, func(ctx context.Context, _ json.RawMessage, _ *runtime.RunContext) (any, error) {
		defer g.enter(ctx)()
		time.Sleep(time.Millisecond) // room for a second root to start beside it, were the cap not held
		for _, agent := range []string{"x", "y", ""} {
			if res := reg.Execute(ctx, runtime.Call{ID: "m-" + agent, Name: "mid", Agent: agent, Arguments: noArgs}); res.IsError() {
				return nil, errors.New(res.ErrorMessage())
			}
		}
		return "root", nil
	})))
	var wg sync.WaitGroup
	results := make(chan *runtime.Result, 4)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results <- reg.Execute(context.Background(), runtime.Call{ID: fmt.Sprint(i), Name: "root", Agent: fmt.Sprintf("s%d", i), Arguments: noArgs})
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	awaitClosed(t, done, "nested calls under a cap of 1")
	close(results)
	for res := range results {
		nestOK(t, res)
	}
	assert.Equal(t, int64(1), g.max.Load(), "one top-level body at a time")

	// A change subscriber's call waits for nothing (R86).
	release := make(chan struct{})
	started := make(chan struct{})
	r3M(reg.Global().Register(r3Tool("hold", func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) {
		close(started)
		<-release
		return "held", nil
	})))
	held := nestGo(reg.Global(), context.Background(), runtime.Call{ID: "h", Name: "hold", Arguments: noArgs})
	awaitClosed(t, started, "the slot holder")
	var fromSub *runtime.Result
	r3M(reg.Global().OnChange(func(ctx context.Context) error {
		if fromSub == nil {
			fromSub = reg.Execute(ctx, runtime.Call{ID: "sub", Name: "leaf", Arguments: noArgs})
		}
		return nil
	}))
	r3M(reg.Global().Register(r3Const("other", 1))) // announces: the subscriber calls
	require.NotNil(t, fromSub)
	assert.Equal(t, runtime.CodeWouldDeadlock, fromSub.Code(), fromSub.ErrorMessage())
	close(release)
	nestOK(t, nestAwait(t, held))
}

// R83, N7: a declared timeout counts from dispatch: a call that waited for
// a host slot far longer than its timeout still gets its whole budget.
func TestHostCap_R83_TimeoutCountsFromDispatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg, err := runtime.New(runtime.WithMaxInFlight(1))
		require.NoError(t, err)
		defer func() { _ = reg.Close(context.Background()) }()
		release := make(chan struct{})
		r3M(reg.Global().Register(r3Tool("hold", func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) {
			<-release
			return "held", nil
		})))
		work := r3Tool("work", func(ctx context.Context, _ json.RawMessage, _ *runtime.RunContext) (any, error) {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(80 * time.Millisecond):
				return "done", nil
			}
		})
		d := 100 * time.Millisecond
		work.Timeout = &d
		r3M(reg.Global().Register(work))
		held := make(chan *runtime.Result, 1)
		go func() {
			held <- reg.Execute(context.Background(), runtime.Call{ID: "h", Name: "hold", Agent: "a", Arguments: noArgs})
		}()
		synctest.Wait()
		got := make(chan *runtime.Result, 1)
		go func() {
			got <- reg.Execute(context.Background(), runtime.Call{ID: "w", Name: "work", Agent: "b", Arguments: noArgs})
		}()
		synctest.Wait()
		require.Equal(t, 1, reg.Queued(), "work waits for the host slot")
		time.Sleep(10 * time.Second)
		close(release)
		nestOK(t, <-held)
		res := <-got
		require.False(t, res.IsError(), "a call that waited for a host slot lost its timeout: %s", res.ErrorMessage())
		// And the timeout still holds once dispatched.
		slow := r3Tool("slow", func(ctx context.Context, _ json.RawMessage, _ *runtime.RunContext) (any, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		})
		slow.Timeout = &d
		r3M(reg.Global().Register(slow))
		res = reg.Execute(context.Background(), runtime.Call{ID: "s", Name: "slow", Arguments: noArgs})
		assert.Equal(t, runtime.CodeToolTimeout, res.Code(), res.ErrorMessage())
	})
}

// N7 randomized checker (issue 25, item 6): many scopes and workers make
// single calls, turns and nested calls (from bodies, into other scopes),
// some cancelled while they wait, under a random cap, under -race.
// Invariants: the top-level bodies running never exceed the cap; every
// call is answered exactly once; nothing waits past the watchdog (nesting
// under the cap never deadlocks); at rest nothing is queued and no
// goroutine is left.
func TestHostCap_N7_CapNeverExceededChecker(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng0 := rand.New(rand.NewPCG(seed, 0))
	capN := 1 + rng0.IntN(4)
	reg, err := runtime.New(runtime.WithMaxInFlight(capN))
	require.NoError(t, err)
	const scopes = 8
	var handles []*runtime.Scope
	for i := range scopes {
		s, err := reg.NewScope(fmt.Sprintf("s%d", i))
		require.NoError(t, err)
		handles = append(handles, s)
	}
	var g capGauge
	var bodies atomic.Int64
	spin := func() {
		// Room for bodies to overlap (without the cap they would).
		time.Sleep(time.Duration(rand.IntN(200)) * time.Microsecond)
	}
	body := func(parallel bool) runtime.Definition {
		name := "excl"
		if parallel {
			name = "par"
		}
		return nestTool(name, parallel, func(ctx context.Context, _ json.RawMessage, _ *runtime.RunContext) (any, error) {
			defer g.enter(ctx)()
			bodies.Add(1)
			spin()
			return name, nil
		})
	}
	r3M(reg.Global().Register(body(true)))
	r3M(reg.Global().Register(body(false)))
	// nest makes nested calls into random scopes: single, and a turn.
	r3M(reg.Global().Register(nestTool("nest", rng0.IntN(2) == 0, func(ctx context.Context, args json.RawMessage, _ *runtime.RunContext) (any, error) {
		defer g.enter(ctx)()
		var a struct{ S, T int }
		_ = json.Unmarshal(args, &a)
		res := handles[a.S%scopes].Execute(ctx, runtime.Call{ID: "n", Name: "excl", Arguments: noArgs})
		if res.IsError() {
			return nil, errors.New(res.ErrorMessage())
		}
		tr, err := handles[a.T%scopes].ExecuteTurn(ctx, []runtime.TurnCall{{ID: "1", Name: "par"}, {ID: "2", Name: "excl"}, {ID: "3", Name: "par"}})
		if err != nil {
			return nil, err
		}
		for _, r := range tr.Results {
			if r.IsError() {
				return nil, errors.New(r.ErrorMessage())
			}
		}
		return "nest", nil
	})))

	var issued, answered, failed atomic.Int64
	var failures sync.Map
	deadline := time.Now().Add(2 * time.Second)
	if testing.Short() {
		deadline = time.Now().Add(300 * time.Millisecond)
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w+1)))
			for time.Now().Before(deadline) {
				s := handles[rng.IntN(scopes)]
				ctx, cancel := context.WithCancel(context.Background())
				if rng.IntN(8) == 0 {
					cancel() // some give up at once or while waiting
				} else if rng.IntN(8) == 0 {
					go cancel()
				}
				switch rng.IntN(4) {
				case 0, 1:
					name := []string{"par", "excl", "nest"}[rng.IntN(3)]
					args := json.RawMessage(fmt.Sprintf(`{"S":%d,"T":%d}`, rng.IntN(scopes), rng.IntN(scopes)))
					issued.Add(1)
					res := s.Execute(ctx, runtime.Call{ID: "c", Name: name, Arguments: args})
					answered.Add(1)
					if res.IsError() && ctx.Err() == nil && res.Code() != runtime.CodeWouldDeadlock && !strings.Contains(res.ErrorMessage(), "would deadlock") {
						failed.Add(1)
						failures.Store(string(res.Code())+": "+res.ErrorMessage(), true)
					}
				default:
					n := 1 + rng.IntN(5)
					calls := make([]runtime.TurnCall, n)
					for i := range calls {
						calls[i] = runtime.TurnCall{ID: fmt.Sprint(i), Name: []string{"par", "excl", "nest"}[rng.IntN(3)], ArgumentsText: fmt.Sprintf(`{"S":%d,"T":%d}`, rng.IntN(scopes), rng.IntN(scopes))}
					}
					issued.Add(int64(n))
					tr, err := s.ExecuteTurn(ctx, calls)
					if err != nil {
						failures.Store("turn: "+err.Error(), true)
						failed.Add(1)
						answered.Add(int64(n))
						break
					}
					for _, res := range tr.Results {
						if res != nil {
							answered.Add(1)
						}
					}
				}
				cancel()
			}
		}()
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	awaitClosed(t, finished, "the checker's workers (a deadlock under the cap?)")
	assert.Equal(t, issued.Load(), answered.Load(), "every call answered once")
	assert.LessOrEqual(t, g.max.Load(), int64(capN), "top-level bodies beside each other")
	assert.Equal(t, 0, reg.Queued(), "nothing waits at rest")
	failures.Range(func(k, _ any) bool { t.Errorf("unexpected failure: %v", k); return true })
	t.Logf("cap %d: %d calls, %d bodies, most top-level at once %d", capN, issued.Load(), bodies.Load(), g.max.Load())
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	require.NoError(t, reg.Close(ctx))
}
