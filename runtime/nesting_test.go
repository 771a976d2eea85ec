package runtime_test

import (
	"bytes"
	"context"
	"encoding/json"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolscope/toolscope/runtime"
)

// Nested and re-entrant calls (issue 11 §1, §2, §6; R79, R80, R86).
// Every wait is bounded and dumps the goroutines when it runs out.

const nestTimeout = 10 * time.Second

// nestAwait waits for ch or fails the test with a goroutine dump.
func nestAwait[T any](t testing.TB, ch <-chan T) T {
	t.Helper()
	return nestAwaitFor(t, ch, nestTimeout)
}

// nestAwaitFor is nestAwait with a bound of d.
func nestAwaitFor[T any](t testing.TB, ch <-chan T, d time.Duration) T {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		var buf bytes.Buffer
		_ = pprof.Lookup("goroutine").WriteTo(&buf, 2)
		t.Fatalf("timed out (deadlock?); goroutines:\n%s", buf.String())
		var zero T
		return zero
	}
}

func nestGo(s *runtime.Scope, ctx context.Context, call runtime.Call) <-chan *runtime.Result {
	ch := make(chan *runtime.Result, 1)
	go func() { ch <- s.Execute(ctx, call) }()
	return ch
}

func nestTool(name string, parallel bool, body r3Body) runtime.Definition {
	d := r3Tool(name, body)
	d.IsConcurrencySafe = func(context.Context, json.RawMessage) (bool, error) { return parallel, nil }
	return d
}

// resErr is the failure of res as an error (nil for a success).
func resErr(res *runtime.Result) error {
	if !res.IsError() {
		return nil
	}
	return runtime.NewError("NestedError", res.Code(), res.ErrorMessage())
}

func nestOK(t testing.TB, res *runtime.Result) {
	t.Helper()
	require.False(t, res.IsError(), "unexpected failure: %s (%s)", res.ErrorMessage(), res.Code())
}

// occupancy tracks, per scope, the bodies running now, to check that an
// exclusive body never overlaps a body of its scope that is not one of its
// ancestors.
type occupancy struct {
	mu      sync.Mutex
	running map[string]map[runtime.Token]bool // scope -> tokens in a body
	parent  map[runtime.Token]runtime.Token
	bad     []string
}

func newOccupancy() *occupancy {
	return &occupancy{running: map[string]map[runtime.Token]bool{}, parent: map[runtime.Token]runtime.Token{}}
}

func (o *occupancy) isAncestor(a, of runtime.Token) bool {
	for p := o.parent[of]; !p.IsZero(); p = o.parent[p] {
		if p == a {
			return true
		}
	}
	return false
}

// enter records a body start; leave must be deferred.
func (o *occupancy) enter(rc *runtime.RunContext, excl bool) (leave func()) {
	e := rc.Execution()
	tok, scope := e.Token(), e.Agent()
	o.mu.Lock()
	o.parent[tok] = e.Parent()
	set := o.running[scope]
	if set == nil {
		set = map[runtime.Token]bool{}
		o.running[scope] = set
	}
	for other, otherExcl := range set {
		if (excl || otherExcl) && !o.isAncestor(other, tok) && !o.isAncestor(tok, other) {
			o.bad = append(o.bad, scope+": "+e.Name()+" overlaps a call that is not its ancestor")
		}
	}
	set[tok] = excl
	o.mu.Unlock()
	return func() {
		o.mu.Lock()
		delete(set, tok)
		o.mu.Unlock()
	}
}

func (o *occupancy) check(t testing.TB) {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	assert.Empty(t, o.bad)
}

// A → B → A: an exclusive tool of a calls a tool of b, whose body calls an
// exclusive tool of a again — with Parent, and with the ctx alone.
func TestNested_R86_ABAAcrossScopes(t *testing.T) {
	for _, withParent := range []bool{true, false} {
		reg := r3Reg(t)
		a, b := r3Scope(t, reg, "a"), r3Scope(t, reg, "b")
		occ := newOccupancy()
		parentOf := func(rc *runtime.RunContext) runtime.Token {
			if withParent {
				return rc.Token()
			}
			return runtime.Token{}
		}
		r3M(a.Register(nestTool("outer", false, func(ctx context.Context, _ json.RawMessage, rc *runtime.RunContext) (any, error) {
			defer occ.enter(rc, true)()
			res := b.Execute(ctx, runtime.Call{ID: "mid", Name: "mid", Parent: parentOf(rc)})
			v, _ := res.Value()
			return json.RawMessage(v), resErr(res)
		})))
		r3M(b.Register(nestTool("mid", false, func(ctx context.Context, _ json.RawMessage, rc *runtime.RunContext) (any, error) {
			defer occ.enter(rc, true)()
			res := a.Execute(ctx, runtime.Call{ID: "inner", Name: "inner", Parent: parentOf(rc)})
			v, _ := res.Value()
			return json.RawMessage(v), resErr(res)
		})))
		r3M(a.Register(nestTool("inner", false, func(_ context.Context, _ json.RawMessage, rc *runtime.RunContext) (any, error) {
			defer occ.enter(rc, true)()
			return "inner", nil
		})))
		res := nestAwait(t, nestGo(a, context.Background(), runtime.Call{ID: "o", Name: "outer"}))
		nestOK(t, res)
		v, _ := res.Value()
		assert.JSONEq(t, `"inner"`, string(v), "withParent=%v", withParent)
		occ.check(t)
	}
}

// An exclusive body calls ExecuteTurn on its own scope with its ctx: the
// turn is nested in the body and runs (parallel calls overlap each other,
// the exclusive one runs alone among them).
func TestNested_R86_TurnInsideExclusiveBody(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "s")
	occ := newOccupancy()
	var parents sync.Map
	leaf := func(name string, parallel bool) runtime.Definition {
		return nestTool(name, parallel, func(_ context.Context, _ json.RawMessage, rc *runtime.RunContext) (any, error) {
			defer occ.enter(rc, !parallel)()
			parents.Store(name, rc.Execution().Parent())
			return name, nil
		})
	}
	r3M(s.Register(leaf("p1", true)))
	r3M(s.Register(leaf("p2", true)))
	r3M(s.Register(leaf("x", false)))
	var outerTok runtime.Token
	r3M(s.Register(nestTool("outer", false, func(ctx context.Context, _ json.RawMessage, rc *runtime.RunContext) (any, error) {
		defer occ.enter(rc, true)()
		outerTok = rc.Token()
		tr, err := s.ExecuteTurn(ctx, []runtime.TurnCall{{ID: "1", Name: "p1"}, {ID: "2", Name: "p2"}, {ID: "3", Name: "x"}})
		if err != nil {
			return nil, err
		}
		out := []any{}
		for _, r := range tr.Results {
			if r.IsError() {
				return nil, resErr(r)
			}
			v, _ := r.Value()
			out = append(out, string(v))
		}
		return out, nil
	})))
	res := nestAwait(t, nestGo(s, context.Background(), runtime.Call{ID: "o", Name: "outer"}))
	nestOK(t, res)
	v, _ := res.Value()
	assert.JSONEq(t, `["\"p1\"","\"p2\"","\"x\""]`, string(v))
	for _, name := range []string{"p1", "p2", "x"} {
		p, _ := parents.Load(name)
		assert.Equal(t, outerTok, p, "the turn's calls are nested in the body that ran the turn (%s)", name)
	}
	occ.check(t)
}

// A body calling an exclusive tool of its own scope with its ctx and no
// Parent is nested (the parent is inferred from the ctx); an explicit
// Parent wins over the ctx.
func TestNested_R86_ParentInferredFromCtx(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "s")
	var innerParent, outerTok, otherTok runtime.Token
	r3M(s.Register(r3Tool("inner", func(_ context.Context, _ json.RawMessage, rc *runtime.RunContext) (any, error) {
		innerParent = rc.Execution().Parent()
		return "inner", nil
	})))
	r3M(s.Register(r3Tool("other", func(_ context.Context, _ json.RawMessage, rc *runtime.RunContext) (any, error) {
		otherTok = rc.Token()
		return "other", nil
	})))
	explicit := false
	r3M(s.Register(r3Tool("outer", func(ctx context.Context, _ json.RawMessage, rc *runtime.RunContext) (any, error) {
		outerTok = rc.Token()
		call := runtime.Call{ID: "i", Name: "inner"}
		if explicit {
			call.Parent = otherTok
		}
		// Through a derived ctx too: the execution travels with it.
		dctx, cancel := context.WithCancel(ctx)
		defer cancel()
		res := s.Execute(dctx, call)
		return "outer", resErr(res)
	})))
	nestOK(t, nestAwait(t, nestGo(s, context.Background(), runtime.Call{ID: "o", Name: "outer"})))
	assert.Equal(t, outerTok, innerParent)

	nestOK(t, nestAwait(t, nestGo(s, context.Background(), runtime.Call{ID: "x", Name: "other"})))
	explicit = true
	nestOK(t, nestAwait(t, nestGo(s, context.Background(), runtime.Call{ID: "o2", Name: "outer"})))
	assert.Equal(t, otherTok, innerParent, "an explicit Parent wins")

	// ExecutionFromContext finds the execution in the body's ctx only.
	_, ok := runtime.ExecutionFromContext(context.Background())
	assert.False(t, ok)
}

// Three parallel calls each ask for a nested exclusive call of their scope
// once all three run: one waits until the other two are done and then runs
// alone; the other two would wait for each other and fail at once with
// WOULD_DEADLOCK.
func TestNested_R86_ExclusiveUnderParallelParents(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "s")
	occ := newOccupancy()
	var started sync.WaitGroup
	started.Add(3)
	allRunning := make(chan struct{})
	go func() { started.Wait(); close(allRunning) }()
	r3M(s.Register(nestTool("x", false, func(_ context.Context, _ json.RawMessage, rc *runtime.RunContext) (any, error) {
		defer occ.enter(rc, true)()
		return "x", nil
	})))
	r3M(s.Register(nestTool("p", true, func(ctx context.Context, _ json.RawMessage, rc *runtime.RunContext) (any, error) {
		leave := occ.enter(rc, false)
		defer leave()
		started.Done()
		<-allRunning
		res := s.Execute(ctx, runtime.Call{ID: "x", Name: "x"})
		return string(res.Code()), nil
	})))
	var results [3]<-chan *runtime.Result
	for i := range results {
		results[i] = nestGo(s, context.Background(), runtime.Call{ID: "p", Name: "p"})
	}
	codes := map[string]int{}
	for _, ch := range results {
		res := nestAwait(t, ch)
		nestOK(t, res)
		v, _ := res.Value()
		var code string
		require.NoError(t, json.Unmarshal(v, &code))
		codes[code]++
	}
	assert.Equal(t, map[string]int{"": 1, string(runtime.CodeWouldDeadlock): 2}, codes)
	occ.check(t)
}

// A nested exclusive call under a parallel parent waits until the other
// parallel calls of its scope are done (it never overlaps them), and calls
// that arrive meanwhile wait behind it.
func TestNested_R86_ExclusiveUnderParallelWaitsForSiblings(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "s")
	occ := newOccupancy()
	siblingIn, releaseSibling := make(chan struct{}), make(chan struct{})
	xAsked := make(chan struct{})
	var xRan atomic.Bool
	r3M(s.Register(nestTool("x", false, func(_ context.Context, _ json.RawMessage, rc *runtime.RunContext) (any, error) {
		defer occ.enter(rc, true)()
		xRan.Store(true)
		return "x", nil
	})))
	r3M(s.Register(nestTool("sibling", true, func(_ context.Context, _ json.RawMessage, rc *runtime.RunContext) (any, error) {
		defer occ.enter(rc, false)()
		close(siblingIn)
		<-releaseSibling
		return "sibling", nil
	})))
	r3M(s.Register(nestTool("late", true, func(_ context.Context, _ json.RawMessage, rc *runtime.RunContext) (any, error) {
		defer occ.enter(rc, false)()
		return "late", nil
	})))
	r3M(s.Register(nestTool("p", true, func(ctx context.Context, _ json.RawMessage, rc *runtime.RunContext) (any, error) {
		defer occ.enter(rc, false)()
		close(xAsked)
		res := s.Execute(ctx, runtime.Call{ID: "x", Name: "x"})
		return string(res.Code()), resErr(res)
	})))
	sib := nestGo(s, context.Background(), runtime.Call{ID: "sib", Name: "sibling"})
	<-siblingIn
	p := nestGo(s, context.Background(), runtime.Call{ID: "p", Name: "p"})
	<-xAsked
	// x waits (nested); only then is late sent, or it could be admitted
	// beside the parallel calls before x asks.
	eventually(t, func() bool { return runtime.NestWaitersForTest(reg) == 1 })
	late := nestGo(s, context.Background(), runtime.Call{ID: "late", Name: "late"})
	// late waits behind x (not nested); both count as waiting (N6).
	eventually(t, func() bool { return runtime.NestWaitersForTest(reg) == 1 && runtime.QueuedForTest(reg) == 2 })
	select {
	case <-p:
		t.Fatal("the nested exclusive call finished while a parallel sibling of its parent ran")
	default:
	}
	assert.False(t, xRan.Load(), "x ran alongside a call that is not its ancestor")
	close(releaseSibling)
	nestOK(t, nestAwait(t, sib))
	nestOK(t, nestAwait(t, p))
	nestOK(t, nestAwait(t, late))
	assert.True(t, xRan.Load())
	occ.check(t)
}

// A turn of parallel calls inside an exclusive body, two of which ask for a
// nested exclusive call: one runs once its sibling is done, the other fails
// with WOULD_DEADLOCK; nothing hangs and nothing overlaps.
func TestNested_R86_ParallelTurnSiblingsAskingForExclusive(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "s")
	occ := newOccupancy()
	var started sync.WaitGroup
	started.Add(2)
	both := make(chan struct{})
	go func() { started.Wait(); close(both) }()
	r3M(s.Register(nestTool("x", false, func(_ context.Context, _ json.RawMessage, rc *runtime.RunContext) (any, error) {
		defer occ.enter(rc, true)()
		return "x", nil
	})))
	r3M(s.Register(nestTool("p", true, func(ctx context.Context, _ json.RawMessage, rc *runtime.RunContext) (any, error) {
		defer occ.enter(rc, false)()
		started.Done()
		<-both
		return string(s.Execute(ctx, runtime.Call{ID: "x", Name: "x"}).Code()), nil
	})))
	r3M(s.Register(nestTool("outer", false, func(ctx context.Context, _ json.RawMessage, rc *runtime.RunContext) (any, error) {
		defer occ.enter(rc, true)()
		tr, err := s.ExecuteTurn(ctx, []runtime.TurnCall{{ID: "1", Name: "p"}, {ID: "2", Name: "p"}}, runtime.WithMaxParallel(2))
		if err != nil {
			return nil, err
		}
		codes := []any{}
		for _, r := range tr.Results {
			v, _ := r.Value()
			codes = append(codes, string(v))
		}
		return codes, nil
	})))
	res := nestAwait(t, nestGo(s, context.Background(), runtime.Call{ID: "o", Name: "outer"}))
	nestOK(t, res)
	v, _ := res.Value()
	var codes []string
	require.NoError(t, json.Unmarshal(v, &codes))
	assert.ElementsMatch(t, []string{`""`, `"` + string(runtime.CodeWouldDeadlock) + `"`}, codes)
	occ.check(t)
}

// A nested call made with the token of a parent that is still waiting for
// its admission does not inherit an admission the parent does not have: it
// waits like any call and never overlaps the exclusive call that holds the
// scope.
func TestNested_R86_ParentStillQueuedGivesNoAdmission(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "s")
	occ := newOccupancy()
	holdIn, releaseHold := make(chan struct{}), make(chan struct{})
	r3M(s.Register(nestTool("hold", false, func(_ context.Context, _ json.RawMessage, rc *runtime.RunContext) (any, error) {
		defer occ.enter(rc, true)()
		close(holdIn)
		<-releaseHold
		return "hold", nil
	})))
	r3M(s.Register(nestTool("leaf", false, func(_ context.Context, _ json.RawMessage, rc *runtime.RunContext) (any, error) {
		defer occ.enter(rc, true)()
		return "leaf", nil
	})))
	r3M(s.Register(nestTool("queued", false, func(_ context.Context, _ json.RawMessage, rc *runtime.RunContext) (any, error) {
		defer occ.enter(rc, true)()
		return "queued", nil
	})))
	nested := make(chan (<-chan *runtime.Result), 1)
	r3M(s.OnPreExecute(func(_ context.Context, e runtime.Execution, next func() (runtime.Decision, error)) (runtime.Decision, error) {
		if e.Name() == "queued" {
			// Before admission: the parent is not running yet.
			nested <- nestGo(s, context.Background(), runtime.Call{ID: "n", Name: "leaf", Parent: e.Token()})
		}
		return next()
	}))
	hold := nestGo(s, context.Background(), runtime.Call{ID: "h", Name: "hold"})
	<-holdIn
	q := nestGo(s, context.Background(), runtime.Call{ID: "q", Name: "queued"})
	n := nestAwait(t, nested)
	close(releaseHold)
	nestOK(t, nestAwait(t, hold))
	nestOK(t, nestAwait(t, q))
	nestOK(t, nestAwait(t, n))
	occ.check(t)
}

// A call waiting for admission behind an exclusive call leaves the queue
// when its ctx ends: ABORTED_BEFORE_DISPATCH, the body never runs, and the
// calls behind it are still admitted.
func TestAdmission_R80_WaitHonoursCtx(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "s")
	holdIn, releaseHold := make(chan struct{}), make(chan struct{})
	var bodies atomic.Int32
	r3M(s.Register(nestTool("hold", false, func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) {
		close(holdIn)
		<-releaseHold
		return "hold", nil
	})))
	r3M(s.Register(nestTool("waiter", false, func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) {
		bodies.Add(1)
		return "waiter", nil
	})))
	r3M(s.Register(nestTool("par", true, func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) {
		return "par", nil
	})))
	hold := nestGo(s, context.Background(), runtime.Call{ID: "h", Name: "hold"})
	<-holdIn

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	res := nestAwait(t, nestGo(s, ctx, runtime.Call{ID: "w", Name: "waiter"}))
	assert.Equal(t, runtime.CodeAbortedBeforeDispatch, res.Code())
	assert.Zero(t, bodies.Load())

	// The same for the calls of a turn.
	tctx, tcancel := context.WithCancel(context.Background())
	turn := make(chan *runtime.TurnResult, 1)
	go func() {
		tr, err := s.ExecuteTurn(tctx, []runtime.TurnCall{{ID: "t1", Name: "waiter"}, {ID: "t2", Name: "par"}})
		assert.NoError(t, err)
		turn <- tr
	}()
	tcancel()
	tr := nestAwait(t, turn)
	require.Len(t, tr.Results, 2)
	for _, r := range tr.Results {
		assert.Equal(t, runtime.CodeAbortedBeforeDispatch, r.Code())
	}
	assert.Zero(t, bodies.Load())

	// The queue is not wedged by the calls that left it.
	later := nestGo(s, context.Background(), runtime.Call{ID: "l", Name: "par"})
	close(releaseHold)
	nestOK(t, nestAwait(t, hold))
	nestOK(t, nestAwait(t, later))
	nestOK(t, nestAwait(t, nestGo(s, context.Background(), runtime.Call{ID: "w2", Name: "waiter"})))
}

// Close's ctx expiring cancels the calls waiting for admission too.
func TestAdmission_R80_CloseCancelsWaiters(t *testing.T) {
	reg, err := runtime.New()
	require.NoError(t, err)
	s := r3Scope(t, reg, "s")
	holdIn := make(chan struct{})
	r3M(s.Register(nestTool("hold", false, func(ctx context.Context, _ json.RawMessage, _ *runtime.RunContext) (any, error) {
		close(holdIn)
		<-ctx.Done()
		return nil, ctx.Err()
	})))
	r3M(s.Register(nestTool("waiter", false, func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) {
		return "waiter", nil
	})))
	hold := nestGo(s, context.Background(), runtime.Call{ID: "h", Name: "hold"})
	<-holdIn
	w := nestGo(s, context.Background(), runtime.Call{ID: "w", Name: "waiter"})
	eventually(t, func() bool { return runtime.QueuedForTest(reg) == 1 }) // the waiter is queued
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	closed := make(chan error, 1)
	go func() { closed <- reg.Close(ctx) }()
	assert.Equal(t, runtime.CodeAbortedBeforeDispatch, nestAwait(t, w).Code())
	assert.True(t, nestAwait(t, hold).IsError())
	nestAwait(t, closed)
}

// Execute through a stale handle (its scope disposed, the key created
// again) admits on the live scope's gate: it never overlaps the live
// scope's exclusive call.
func TestAdmission_R86_StaleHandleUsesLiveGate(t *testing.T) {
	reg := r3Reg(t)
	old := r3Scope(t, reg, "k")
	old.Dispose()
	live := r3Scope(t, reg, "k")
	occ := newOccupancy()
	holdIn, releaseHold := make(chan struct{}), make(chan struct{})
	r3M(reg.Global().Register(nestTool("hold", false, func(_ context.Context, _ json.RawMessage, rc *runtime.RunContext) (any, error) {
		defer occ.enter(rc, true)()
		close(holdIn)
		<-releaseHold
		return "hold", nil
	})))
	r3M(reg.Global().Register(nestTool("other", false, func(_ context.Context, _ json.RawMessage, rc *runtime.RunContext) (any, error) {
		defer occ.enter(rc, true)()
		return "other", nil
	})))
	hold := nestGo(live, context.Background(), runtime.Call{ID: "h", Name: "hold"})
	<-holdIn
	stale := nestGo(old, context.Background(), runtime.Call{ID: "o", Name: "other"})
	// The stale handle's call waits in the live scope's queue.
	eventually(t, func() bool { return runtime.QueuedForTest(reg) == 1 })
	select {
	case <-stale:
		t.Fatal("a call through the stale handle ran while the live scope's exclusive call held it")
	default:
	}
	close(releaseHold)
	nestOK(t, nestAwait(t, hold))
	nestOK(t, nestAwait(t, stale))
	occ.check(t)
}

// The caller cancels inside an around hook, which then delegates with a
// live ctx of its own: the base dispatch sees the fused cancellation at
// once (R60, R61 step 1, R80) and never invokes the body.
func TestFusedCtx_R60_CallerCancellationIsSynchronous(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "s")
	var bodies atomic.Int32
	r3M(s.Register(r3Tool("t", func(ctx context.Context, _ json.RawMessage, _ *runtime.RunContext) (any, error) {
		bodies.Add(1)
		return "ran", nil
	})))
	var cancel context.CancelFunc
	r3M(s.OnExecute(func(_ context.Context, e runtime.Execution, next func(context.Context) *runtime.Result) (*runtime.Result, error) {
		cancel()
		return next(context.Background()), nil
	}))
	for i := 0; i < 200; i++ {
		var ctx context.Context
		ctx, cancel = context.WithCancel(context.Background())
		res := s.Execute(ctx, runtime.Call{ID: "c", Name: "t"})
		require.Equal(t, runtime.CodeAbortedBeforeDispatch, res.Code(), "try %d", i)
	}
	assert.Zero(t, bodies.Load(), "the body ran under a cancelled caller")

	// The body's ctx still carries the execution when a wrapper passed an
	// unrelated ctx.
	var found bool
	r3M(s.Register(r3Tool("u", func(ctx context.Context, _ json.RawMessage, rc *runtime.RunContext) (any, error) {
		e, ok := runtime.ExecutionFromContext(ctx)
		found = ok && e.Token() == rc.Token()
		return "u", nil
	})))
	cancel = func() {}
	nestOK(t, s.Execute(context.Background(), runtime.Call{ID: "u", Name: "u"}))
	assert.True(t, found)
}
