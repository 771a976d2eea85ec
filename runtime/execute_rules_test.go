package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolscope/toolscope/messages"
	"github.com/toolscope/toolscope/runtime"
)

// Helpers of the issue-3 tests (prefix r3 keeps them apart from other test
// files of this package).

type r3Body = func(ctx context.Context, args json.RawMessage, rc *runtime.RunContext) (any, error)

type r3Trace struct {
	mu sync.Mutex
	ev []string
}

func (t *r3Trace) add(s string) {
	t.mu.Lock()
	t.ev = append(t.ev, s)
	t.mu.Unlock()
}

func (t *r3Trace) get() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.ev...)
}

type r3Key struct{}

const r3Timeout = 10 * time.Second

func r3Reg(t testing.TB, opts ...runtime.Option) *runtime.Registry {
	t.Helper()
	reg, err := runtime.New(opts...)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), r3Timeout)
		defer cancel()
		_ = reg.Close(ctx)
	})
	return reg
}

func r3Render(_ context.Context, _, value json.RawMessage) ([]runtime.Block, error) {
	return []runtime.Block{runtime.Text(string(value))}, nil
}

func r3Tool(name string, body r3Body) runtime.Definition {
	return runtime.Definition{
		Name:        name,
		Description: "tool " + name,
		Parameters:  map[string]any{"type": "object"},
		Output:      &runtime.Output{Schema: map[string]any{}, Render: r3Render},
		Execute:     body,
	}
}

func r3Const(name string, v any) runtime.Definition {
	return r3Tool(name, func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) { return v, nil })
}

// r3M unwraps a (disposer, error) pair; an error panics, failing the test.
func r3M(d func(), err error) func() {
	if err != nil {
		panic(err)
	}
	if d == nil {
		panic("nil disposer")
	}
	return d
}

func r3Scope(t testing.TB, reg *runtime.Registry, key string) *runtime.Scope {
	t.Helper()
	s, err := reg.NewScope(key)
	require.NoError(t, err)
	return s
}

func r3Call(name string, args any) runtime.Call {
	return runtime.Call{ID: "call-" + name, Name: name, Arguments: args}
}

// r3Exec runs Execute with a watchdog: a hang fails the test instead of
// blocking it forever.
func r3Exec(t testing.TB, s *runtime.Scope, ctx context.Context, call runtime.Call) *runtime.Result {
	t.Helper()
	done := make(chan *runtime.Result, 1)
	go func() { done <- s.Execute(ctx, call) }()
	return r3Await(t, done)
}

func r3Await[T any](t testing.TB, ch <-chan T) T {
	t.Helper()
	timer := time.NewTimer(r3Timeout)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatal("timed out (deadlock?)")
		var zero T
		return zero
	}
}

func r3Success(t testing.TB, res *runtime.Result, value string) {
	t.Helper()
	require.False(t, res.IsError(), "unexpected failure: %s", res.ErrorMessage())
	v, ok := res.Value()
	require.True(t, ok)
	assert.JSONEq(t, value, string(v))
	assert.Equal(t, "", res.ErrorMessage())
}

// r3Plain asserts an uncoded failure of docs/contract.md#failures.
func r3Plain(t testing.TB, res *runtime.Result, msg string) {
	t.Helper()
	require.True(t, res.IsError())
	assert.Equal(t, msg, res.ErrorMessage())
	assert.Equal(t, []runtime.Block{runtime.Text("Error: " + msg)}, res.Content())
	_, _, has := res.ErrorInfo()
	assert.False(t, has, "failure must carry no Info")
	_, hasV := res.Value()
	assert.False(t, hasV)
	assert.False(t, res.ConcludesTurn())
}

// r3Coded asserts a coded failure.
func r3Coded(t testing.TB, res *runtime.Result, name string, code runtime.Code, msg string) {
	t.Helper()
	require.True(t, res.IsError(), "expected failure %s", code)
	assert.Equal(t, msg, res.ErrorMessage())
	assert.Equal(t, []runtime.Block{runtime.Text("Error: " + msg)}, res.Content())
	n, c, has := res.ErrorInfo()
	assert.True(t, has)
	assert.Equal(t, name, n)
	assert.Equal(t, code, c)
	_, hasV := res.Value()
	assert.False(t, hasV)
	assert.False(t, res.ConcludesTurn())
}

func r3Unknown(t testing.TB, res *runtime.Result, name string) {
	t.Helper()
	r3Coded(t, res, runtime.NameToolNotFound, runtime.CodeUnknownTool, `unknown tool "`+name+`"`)
}

func r3ABD(t testing.TB, res *runtime.Result) {
	t.Helper()
	r3Coded(t, res, runtime.NameAbort, runtime.CodeAbortedBeforeDispatch, "tool call aborted before dispatch")
}

func r3Aborted(t testing.TB, res *runtime.Result) {
	t.Helper()
	r3Coded(t, res, runtime.NameAbort, runtime.CodeAborted, "tool call aborted")
}

// r3PostSpy registers a post-execute hook that records whether it ran.
func r3PostSpy(t testing.TB, s *runtime.Scope) *atomic.Int32 {
	var n atomic.Int32
	r3M(s.OnPostExecute(func(_ context.Context, e runtime.Execution, r *runtime.Result, next func() (runtime.PostDecision, error)) (runtime.PostDecision, error) {
		n.Add(1)
		return next()
	}))
	return &n
}

// ---------------------------------------------------------------- R37–R40

func TestExecute_R37_GuardOrderGlobalThenFarthestAncestorToAgent(t *testing.T) {
	reg := r3Reg(t)
	root := r3Scope(t, reg, "root")
	child, err := root.NewScope("child")
	require.NoError(t, err)
	r3M(reg.Global().Register(r3Const("t", 1)))
	var tr r3Trace
	g := func(name string) runtime.Guard {
		return func(context.Context, runtime.Execution) (string, bool) { tr.add(name); return "", false }
	}
	r3M(child.Guard(g("child1")))
	r3M(root.Guard(g("root1")))
	r3M(reg.Global().Guard(g("global1")))
	r3M(root.Guard(g("root2")))
	r3M(reg.Global().Guard(g("global2")))
	r3M(child.Guard(g("child2")))

	r3Success(t, r3Exec(t, child, context.Background(), r3Call("t", nil)), "1")
	assert.Equal(t, []string{"global1", "global2", "root1", "root2", "child1", "child2"}, tr.get())
}

func TestExecute_R37_FirstDenialWinsLaterGuardsNotCalled(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	r3M(reg.Global().Register(r3Const("t", 1)))
	var tr r3Trace
	r3M(reg.Global().Guard(func(context.Context, runtime.Execution) (string, bool) { tr.add("g1"); return "", false }))
	r3M(s.Guard(func(context.Context, runtime.Execution) (string, bool) { tr.add("s1"); return "nope", true }))
	r3M(s.Guard(func(context.Context, runtime.Execution) (string, bool) { tr.add("s2"); return "later", true }))
	res := r3Exec(t, s, context.Background(), r3Call("t", nil))
	r3Plain(t, res, "nope")
	assert.Equal(t, []string{"g1", "s1"}, tr.get())
}

func TestExecute_R37_NoAgentConsultsOnlyGlobalGuards(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	r3M(reg.Global().Register(r3Const("t", 1)))
	var scoped, global atomic.Int32
	r3M(s.Guard(func(context.Context, runtime.Execution) (string, bool) { scoped.Add(1); return "scoped", true }))
	r3M(reg.Global().Guard(func(context.Context, runtime.Execution) (string, bool) { global.Add(1); return "", false }))
	r3Success(t, reg.Execute(context.Background(), r3Call("t", nil)), "1")
	r3Success(t, r3Exec(t, reg.Global(), context.Background(), r3Call("t", nil)), "1")
	assert.Equal(t, int32(0), scoped.Load())
	assert.Equal(t, int32(2), global.Load())
}

func TestExecute_R38_GuardsOnlyAfterAllowAndMonotonic(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	r3M(s.Register(r3Const("t", 1)))
	var guardCalls atomic.Int32
	var deny atomic.Bool
	r3M(s.Guard(func(context.Context, runtime.Execution) (string, bool) {
		guardCalls.Add(1)
		return "guard says no", true
	}))
	r3M(s.OnPreExecute(func(_ context.Context, e runtime.Execution, next func() (runtime.Decision, error)) (runtime.Decision, error) {
		if deny.Load() {
			return runtime.Deny("hook says no"), nil
		}
		_, _ = next()
		return runtime.Allow(), nil // cannot override the guard
	}))
	r3Plain(t, r3Exec(t, s, context.Background(), r3Call("t", nil)), "guard says no")
	assert.Equal(t, int32(1), guardCalls.Load())

	deny.Store(true)
	r3Plain(t, r3Exec(t, s, context.Background(), r3Call("t", nil)), "hook says no")
	assert.Equal(t, int32(1), guardCalls.Load(), "guards are not consulted for denied calls")
}

func TestExecute_R39_DenialIsPostResultGuardPanicIsFinal(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	var bodyRan atomic.Bool
	r3M(s.Register(r3Tool("t", func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) {
		bodyRan.Store(true)
		return 1, nil
	})))
	var mode atomic.Int32
	r3M(s.Guard(func(context.Context, runtime.Execution) (string, bool) {
		switch mode.Load() {
		case 0:
			return "denied", true
		case 1:
			panic("guard exploded")
		default:
			panic(runtime.NewError("GuardError", "GUARD", "coded guard failure"))
		}
	}))
	post := r3PostSpy(t, s)

	r3Plain(t, r3Exec(t, s, context.Background(), r3Call("t", nil)), "denied")
	assert.Equal(t, int32(1), post.Load(), "a denial passes through post-execute")

	mode.Store(1)
	r3Plain(t, r3Exec(t, s, context.Background(), r3Call("t", nil)), "guard exploded")
	assert.Equal(t, int32(1), post.Load(), "a guard failure is final")

	mode.Store(2)
	r3Coded(t, r3Exec(t, s, context.Background(), r3Call("t", nil)), "GuardError", "GUARD", "coded guard failure")
	assert.Equal(t, int32(1), post.Load())
	assert.False(t, bodyRan.Load())
}

func TestExecute_R40_LiveIterationAppendedConsultedRemovedSkipped(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	r3M(s.Register(r3Const("t", 1)))
	var tr r3Trace
	var disposeG2 func()
	var once sync.Once
	r3M(s.Guard(func(context.Context, runtime.Execution) (string, bool) {
		tr.add("g1")
		once.Do(func() {
			disposeG2()
			_, err := s.Guard(func(context.Context, runtime.Execution) (string, bool) { tr.add("g3"); return "", false })
			if err != nil {
				panic(err)
			}
		})
		return "", false
	}))
	disposeG2 = r3M(s.Guard(func(context.Context, runtime.Execution) (string, bool) { tr.add("g2"); return "", false }))
	r3Success(t, r3Exec(t, s, context.Background(), r3Call("t", nil)), "1")
	assert.Equal(t, []string{"g1", "g3"}, tr.get())
}

func TestExecute_R40_Surprise_EmptiedLayerNewcomerWaitsForNextExecution(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	r3M(s.Register(r3Const("t", 1)))
	var tr r3Trace
	var self func()
	var mu sync.Mutex
	self = r3M(s.Guard(func(context.Context, runtime.Execution) (string, bool) {
		tr.add("only")
		mu.Lock()
		d := self
		mu.Unlock()
		d() // the layer's guard list becomes empty
		_, err := s.Guard(func(context.Context, runtime.Execution) (string, bool) {
			tr.add("newcomer")
			return "newcomer denies", true
		})
		if err != nil {
			panic(err)
		}
		return "", false
	}))
	r3Success(t, r3Exec(t, s, context.Background(), r3Call("t", nil)), "1")
	assert.Equal(t, []string{"only"}, tr.get(), "newcomer is not consulted in the same evaluation")
	r3Plain(t, r3Exec(t, s, context.Background(), r3Call("t", nil)), "newcomer denies")
	assert.Equal(t, []string{"only", "newcomer"}, tr.get())
}

// ---------------------------------------------------------------- R41–R48

func TestExecute_R41_RootCallIDDefaultsToCallID(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	r3M(s.Register(r3Const("t", 1)))
	var got [][2]string
	var mu sync.Mutex
	r3M(s.OnResult(func(_ context.Context, e runtime.Execution, _ *runtime.Result) error {
		mu.Lock()
		got = append(got, [2]string{e.CallID(), e.RootCallID()})
		mu.Unlock()
		assert.Equal(t, "a", e.Agent())
		assert.Equal(t, "t", e.Name())
		return nil
	}))
	r3Exec(t, s, context.Background(), runtime.Call{ID: "c1", Name: "t"})
	r3Exec(t, s, context.Background(), runtime.Call{ID: "c2", RootID: "root", Name: "t"})
	assert.Equal(t, [][2]string{{"c1", "c1"}, {"c2", "root"}}, got)
}

func TestExecute_R42_R45_ArgumentSnapshotReadOnceIndependentCopies(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	callerArgs := map[string]any{"x": 1.0, "list": []any{"a"}}
	r3M(s.Register(r3Tool("t", func(_ context.Context, args json.RawMessage, _ *runtime.RunContext) (any, error) {
		assert.JSONEq(t, `{"x":1,"list":["a"]}`, string(args))
		// Mutate our copy and the caller's value: no later stage sees it.
		for i := range args {
			args[i] = ' '
		}
		callerArgs["x"] = 99.0
		return "ok", nil
	})))
	var seen r3Trace
	check := func(stage string, e runtime.Execution) {
		a, ok := e.Arguments()
		if !ok {
			seen.add(stage + ":absent")
			return
		}
		seen.add(stage + ":" + string(a))
		for i := range a {
			a[i] = 'X' // mutating a copy changes nothing
		}
	}
	r3M(s.OnPreExecute(func(_ context.Context, e runtime.Execution, next func() (runtime.Decision, error)) (runtime.Decision, error) {
		check("pre", e)
		return next()
	}))
	r3M(s.Guard(func(_ context.Context, e runtime.Execution) (string, bool) { check("guard", e); return "", false }))
	r3M(s.OnExecute(func(ctx context.Context, e runtime.Execution, next func(context.Context) *runtime.Result) (*runtime.Result, error) {
		check("around", e)
		return next(nil), nil
	}))
	r3M(s.OnPostExecute(func(_ context.Context, e runtime.Execution, _ *runtime.Result, next func() (runtime.PostDecision, error)) (runtime.PostDecision, error) {
		check("post", e)
		return next()
	}))
	r3M(s.OnResult(func(_ context.Context, e runtime.Execution, _ *runtime.Result) error {
		check("observer", e)
		return nil
	}))

	r3Success(t, r3Exec(t, s, context.Background(), r3Call("t", callerArgs)), `"ok"`)
	want := `{"list":["a"],"x":1}`
	for _, ev := range seen.get() {
		stage, args, _ := strings.Cut(ev, ":")
		assert.JSONEq(t, want, args, stage)
	}
	assert.Len(t, seen.get(), 5)
	assert.Equal(t, []any{"a"}, callerArgs["list"], "the caller's value is never mutated by the registry")
}

func TestExecute_R43_OneTokenPerExecutionSharedByAllStages(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	var mu sync.Mutex
	tokens := map[string][]runtime.Token{}
	rec := func(stage string, tok runtime.Token) {
		mu.Lock()
		tokens[stage] = append(tokens[stage], tok)
		mu.Unlock()
	}
	r3M(s.Register(r3Tool("inner", func(_ context.Context, _ json.RawMessage, rc *runtime.RunContext) (any, error) {
		rec("innerBody", rc.Token())
		rec("innerParent", rc.Execution().Parent())
		return 1, nil
	})))
	r3M(s.Register(r3Tool("t", func(ctx context.Context, _ json.RawMessage, rc *runtime.RunContext) (any, error) {
		rec("body", rc.Token())
		res := s.Execute(ctx, runtime.Call{ID: "n", Name: "inner", Parent: rc.Token()})
		return !res.IsError(), nil
	})))
	top := func(e runtime.Execution) bool { return e.Name() == "t" }
	r3M(s.OnPreExecute(func(_ context.Context, e runtime.Execution, next func() (runtime.Decision, error)) (runtime.Decision, error) {
		if top(e) {
			rec("pre", e.Token())
		}
		return next()
	}))
	r3M(s.Guard(func(_ context.Context, e runtime.Execution) (string, bool) {
		if top(e) {
			rec("guard", e.Token())
		}
		return "", false
	}))
	r3M(s.OnExecute(func(ctx context.Context, e runtime.Execution, next func(context.Context) *runtime.Result) (*runtime.Result, error) {
		if top(e) {
			rec("around", e.Token())
		}
		return next(nil), nil
	}))
	r3M(s.OnPostExecute(func(_ context.Context, e runtime.Execution, _ *runtime.Result, next func() (runtime.PostDecision, error)) (runtime.PostDecision, error) {
		if top(e) {
			rec("post", e.Token())
		}
		return next()
	}))
	r3M(s.OnResult(func(_ context.Context, e runtime.Execution, _ *runtime.Result) error {
		if top(e) {
			rec("observer", e.Token())
			assert.True(t, e.Parent().IsZero())
		}
		return nil
	}))
	r3Success(t, r3Exec(t, s, context.Background(), r3Call("t", nil)), "true")
	r3Success(t, r3Exec(t, s, context.Background(), r3Call("t", nil)), "true")

	mu.Lock()
	defer mu.Unlock()
	for _, stage := range []string{"pre", "guard", "around", "body", "post", "observer"} {
		require.Len(t, tokens[stage], 2, stage)
		assert.True(t, tokens[stage][0] == tokens["body"][0], "%s shares the first call's token", stage)
		assert.True(t, tokens[stage][1] == tokens["body"][1], "%s shares the second call's token", stage)
		assert.False(t, tokens[stage][0].IsZero())
	}
	assert.False(t, tokens["body"][0] == tokens["body"][1], "each Execute gets a fresh token")
	assert.True(t, tokens["innerParent"][0] == tokens["body"][0], "nested call's Parent is the outer token")
	assert.False(t, tokens["innerBody"][0] == tokens["body"][0])
}

func TestExecute_R44_R73_EntryCapturedFinalizerRunsEvenAfterReplacement(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	var oldFin, newFin atomic.Int32
	old := r3Const("t", "old")
	old.FinalizeContent = func(context.Context, runtime.Execution, *runtime.Result) ([]runtime.Block, error) {
		oldFin.Add(1)
		return nil, nil
	}
	disposeOld := r3M(s.Register(old))
	repl := r3Const("t", "new")
	repl.FinalizeContent = func(context.Context, runtime.Execution, *runtime.Result) ([]runtime.Block, error) {
		newFin.Add(1)
		return nil, nil
	}
	var replaced atomic.Bool
	r3M(s.OnPreExecute(func(_ context.Context, e runtime.Execution, next func() (runtime.Decision, error)) (runtime.Decision, error) {
		if replaced.CompareAndSwap(false, true) {
			disposeOld()
			if _, err := s.Register(repl); err != nil {
				return runtime.Decision{}, err
			}
		}
		return next()
	}))
	// R61: dispatch resolves live (new body), R73: finalizer from entry (old).
	r3Success(t, r3Exec(t, s, context.Background(), r3Call("t", nil)), `"new"`)
	assert.Equal(t, int32(1), oldFin.Load())
	assert.Equal(t, int32(0), newFin.Load())
	// The next call sees the new definition at entry.
	r3Success(t, r3Exec(t, s, context.Background(), r3Call("t", nil)), `"new"`)
	assert.Equal(t, int32(1), oldFin.Load())
	assert.Equal(t, int32(1), newFin.Load())
}

func TestExecute_R73_NameNotVisibleAtEntryHasNoFinalizer(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	var fin atomic.Int32
	def := r3Const("late", 1)
	def.FinalizeContent = func(context.Context, runtime.Execution, *runtime.Result) ([]runtime.Block, error) {
		fin.Add(1)
		return nil, nil
	}
	var once sync.Once
	r3M(s.OnPreExecute(func(_ context.Context, e runtime.Execution, next func() (runtime.Decision, error)) (runtime.Decision, error) {
		var err error
		once.Do(func() { _, err = s.Register(def) })
		if err != nil {
			return runtime.Decision{}, err
		}
		return next()
	}))
	r3Success(t, r3Exec(t, s, context.Background(), r3Call("late", nil)), "1")
	assert.Equal(t, int32(0), fin.Load())
}

func TestExecute_R47_LosslessJSONAcceptedValues(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	r3M(s.Register(r3Tool("echo", func(_ context.Context, args json.RawMessage, _ *runtime.RunContext) (any, error) {
		return args, nil
	})))
	cases := map[string]struct {
		in   any
		want string
	}{
		"nil":         {nil, `{}`}, // absent arguments are {} (R45)
		"bool":        {true, `true`},
		"string":      {"héllo", `"héllo"`},
		"float":       {1.5, `1.5`},
		"zero":        {0.0, `0`},
		"json.Number": {json.Number("12345678901234567890"), `12345678901234567890`},
		"int":         {int64(-7), `-7`},
		"uint8":       {uint8(7), `7`},
		"slice":       {[]any{1, "a", nil}, `[1,"a",null]`},
		"map":         {map[string]any{"a": []any{true}}, `{"a":[true]}`},
		"raw":         {json.RawMessage(` {"b" : [1, 2]} `), `{"b":[1,2]}`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			r3Success(t, r3Exec(t, s, context.Background(), r3Call("echo", c.in)), c.want)
		})
	}
}

func TestExecute_R47_R48_NonLosslessArgumentsRejected(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	r3M(s.Register(r3Const("t", 1)))
	cyc := map[string]any{}
	cyc["self"] = cyc
	type st struct{ A int }
	x := 1
	cases := map[string]any{
		"NaN":        math.NaN(),
		"+Inf":       math.Inf(1),
		"-Inf":       math.Inf(-1),
		"negZero":    math.Copysign(0, -1),
		"cycle":      cyc,
		"struct":     st{A: 1},
		"pointer":    &x,
		"typedMap":   map[string]int{"a": 1},
		"func":       func() {},
		"chan":       make(chan int),
		"badRaw":     json.RawMessage(`{"a":`),
		"nestedNaN":  map[string]any{"a": []any{math.NaN()}},
		"badNumber":  json.Number("1e"),
		"twoValues":  json.RawMessage(`1 2`),
		"typedSlice": []string{"a"},
	}
	// R48: a Go type outside R47's set is named; JSON text that does not
	// parse says where (TestArgs_R48_RefusalNamesTheTypeOrTheSyntaxError).
	const msg = "tool execution arguments must be losslessly JSON-serializable"
	const use = " are not lossless JSON (use map[string]any, []any or json.RawMessage)"
	why := map[string]string{
		"struct":     ": arguments of type runtime_test.st" + use,
		"pointer":    ": arguments of type *int" + use,
		"typedMap":   ": arguments of type map[string]int" + use,
		"func":       ": arguments of type func()" + use,
		"chan":       ": arguments of type chan int" + use,
		"typedSlice": ": arguments of type []string" + use,
		"badRaw":     ": the argument text is not valid JSON: it ends at byte 5 before the value is complete (truncated?)",
		"twoValues":  ": the argument text is not valid JSON: invalid character '2' after top-level value at byte offset 2",
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			r3Plain(t, r3Exec(t, s, context.Background(), r3Call("t", in)), msg+why[name])
		})
	}
}

func TestExecute_R48_ArgumentFailureSkipsStagesRunsFinalizerObserversSeeAbsentArgs(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	var tr r3Trace
	def := r3Tool("t", func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) {
		tr.add("body")
		return 1, nil
	})
	def.FinalizeContent = func(_ context.Context, e runtime.Execution, r *runtime.Result) ([]runtime.Block, error) {
		tr.add("finalizer")
		_, ok := e.Arguments()
		assert.False(t, ok)
		return nil, nil
	}
	r3M(s.Register(def))
	r3M(s.OnPreExecute(func(_ context.Context, e runtime.Execution, next func() (runtime.Decision, error)) (runtime.Decision, error) {
		tr.add("pre")
		return runtime.Ask("?"), nil
	}))
	r3M(s.Guard(func(context.Context, runtime.Execution) (string, bool) { tr.add("guard"); return "", false }))
	r3M(s.OnExecute(func(ctx context.Context, e runtime.Execution, next func(context.Context) *runtime.Result) (*runtime.Result, error) {
		tr.add("around")
		return next(nil), nil
	}))
	r3M(s.OnPostExecute(func(_ context.Context, e runtime.Execution, _ *runtime.Result, next func() (runtime.PostDecision, error)) (runtime.PostDecision, error) {
		tr.add("post")
		return next()
	}))
	r3M(s.OnResult(func(_ context.Context, e runtime.Execution, r *runtime.Result) error {
		a, ok := e.Arguments()
		assert.False(t, ok, "observers see absent arguments")
		assert.Nil(t, a)
		tr.add("observer")
		return nil
	}))
	const msg = "tool execution arguments must be losslessly JSON-serializable"

	r3Plain(t, r3Exec(t, s, context.Background(), r3Call("t", math.NaN())), msg)
	assert.Equal(t, []string{"finalizer", "observer"}, tr.get())

	t.Run("wins over cancelled ctx", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		r3Plain(t, r3Exec(t, s, ctx, r3Call("t", math.Inf(1))), msg)
	})
	t.Run("wins over unknown name", func(t *testing.T) {
		r3Plain(t, r3Exec(t, s, context.Background(), r3Call("missing", math.Inf(1))), msg)
	})
	assert.NotContains(t, tr.get(), "pre")
	assert.NotContains(t, tr.get(), "body")
	assert.NotContains(t, tr.get(), "post")
	assert.Equal(t, []string{"finalizer", "observer", "finalizer", "observer", "observer"}, tr.get(),
		"unknown name has no finalizer; observers once per call")
}

// ---------------------------------------------------------------- R49–R51

func TestExecute_R49_R46_StageOrderTrace(t *testing.T) {
	var tr r3Trace
	def := r3Tool("t", func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) {
		tr.add("body")
		return 1, nil
	})
	def.Output.Render = func(_ context.Context, _, v json.RawMessage) ([]runtime.Block, error) {
		tr.add("render")
		return []runtime.Block{runtime.Text(string(v))}, nil
	}
	def.Output.PresentationMeta = func(_ context.Context, _, v json.RawMessage) (any, error) {
		tr.add("meta")
		return map[string]any{"m": 1}, nil
	}
	def.FinalizeContent = func(context.Context, runtime.Execution, *runtime.Result) ([]runtime.Block, error) {
		tr.add("finalizer")
		return nil, nil
	}
	reg2 := r3Reg(t, runtime.WithApprover(func(context.Context, runtime.ApprovalRequest) (runtime.ApprovalOutcome, error) {
		tr.add("approver")
		return runtime.ApprovalAllowedOnce, nil
	}))
	s2 := r3Scope(t, reg2, "a")
	r3M(s2.Register(def))
	r3M(s2.OnResult(func(context.Context, runtime.Execution, *runtime.Result) error { tr.add("observer"); return nil }))
	r3M(s2.OnPostExecute(func(_ context.Context, e runtime.Execution, _ *runtime.Result, next func() (runtime.PostDecision, error)) (runtime.PostDecision, error) {
		tr.add("post")
		return next()
	}))
	r3M(s2.OnExecute(func(ctx context.Context, e runtime.Execution, next func(context.Context) *runtime.Result) (*runtime.Result, error) {
		tr.add("around>")
		r := next(nil)
		tr.add("around<")
		return r, nil
	}))
	r3M(s2.Guard(func(context.Context, runtime.Execution) (string, bool) { tr.add("guard"); return "", false }))
	r3M(s2.OnPreExecute(func(_ context.Context, e runtime.Execution, next func() (runtime.Decision, error)) (runtime.Decision, error) {
		tr.add("pre")
		return runtime.Ask(), nil
	}))

	res := r3Exec(t, s2, context.Background(), r3Call("t", nil))
	r3Success(t, res, "1")
	assert.Equal(t, []string{"pre", "approver", "guard", "around>", "body", "render", "meta", "around<", "post", "finalizer", "observer"}, tr.get())
}

func TestExecute_R50_QuiescenceExecuteWaitsForBodyAfterCancel(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	started, sawCancel, release := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var bodyDone atomic.Bool
	r3M(s.Register(r3Tool("t", func(ctx context.Context, _ json.RawMessage, _ *runtime.RunContext) (any, error) {
		close(started)
		<-ctx.Done()
		close(sawCancel)
		<-release
		bodyDone.Store(true)
		return 1, nil
	})))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan *runtime.Result, 1)
	go func() { done <- s.Execute(ctx, r3Call("t", nil)) }()
	r3Await(t, started)
	cancel()
	r3Await(t, sawCancel)
	select {
	case <-done:
		t.Fatal("Execute returned while the body was still running")
	default:
	}
	close(release)
	res := r3Await(t, done)
	assert.True(t, bodyDone.Load())
	r3Aborted(t, res)
}

// ---------------------------------------------------------------- R52–R57

func TestExecute_R52_PreExecuteWaterfallOrderNextAndVeto(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	r3M(s.Register(r3Const("t", 1)))
	var tr r3Trace
	var vetoAt atomic.Int32
	mk := func(name string, idx int32) runtime.PreExecuteHook {
		return func(_ context.Context, e runtime.Execution, next func() (runtime.Decision, error)) (runtime.Decision, error) {
			tr.add(name + ">")
			if vetoAt.Load() == idx {
				return runtime.Deny("veto by " + name), nil
			}
			d, err := next()
			tr.add(name + "<")
			return d, err
		}
	}
	r3M(s.OnPreExecute(mk("h1", 1)))
	r3M(reg.Global().OnPreExecute(mk("h2", 2)))
	r3M(s.OnPreExecute(mk("h0", 0), runtime.WithPrepend()))
	vetoAt.Store(-1)
	r3Success(t, r3Exec(t, s, context.Background(), r3Call("t", nil)), "1")
	assert.Equal(t, []string{"h0>", "h1>", "h2>", "h2<", "h1<", "h0<"}, tr.get(), "outermost-first, innermost default allow")

	tr = r3Trace{}
	vetoAt.Store(1)
	r3Plain(t, r3Exec(t, s, context.Background(), r3Call("t", nil)), "veto by h1")
	assert.Equal(t, []string{"h0>", "h1>", "h0<"}, tr.get(), "not calling next vetoes later hooks")
}

func TestExecute_R52_OuterHookOverridesInnerDecision(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	r3M(s.Register(r3Const("t", 1)))
	r3M(s.OnPreExecute(func(_ context.Context, e runtime.Execution, next func() (runtime.Decision, error)) (runtime.Decision, error) {
		d, err := next()
		require.NoError(t, err)
		assert.Equal(t, runtime.DecisionDeny, d.Kind)
		assert.Equal(t, "inner", d.Reason)
		return runtime.Allow(), nil
	}))
	r3M(s.OnPreExecute(func(_ context.Context, e runtime.Execution, next func() (runtime.Decision, error)) (runtime.Decision, error) {
		return runtime.Deny("inner"), nil
	}))
	r3Success(t, r3Exec(t, s, context.Background(), r3Call("t", nil)), "1")
}

func TestExecute_R53_UnknownNamesReachPolicy(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	var pre, guard atomic.Int32
	var deny atomic.Bool
	r3M(s.OnPreExecute(func(_ context.Context, e runtime.Execution, next func() (runtime.Decision, error)) (runtime.Decision, error) {
		pre.Add(1)
		return next()
	}))
	r3M(s.Guard(func(context.Context, runtime.Execution) (string, bool) {
		guard.Add(1)
		return "no such luck", deny.Load()
	}))
	post := r3PostSpy(t, s)
	r3Unknown(t, r3Exec(t, s, context.Background(), r3Call("ghost", nil)), "ghost")
	assert.Equal(t, int32(1), pre.Load())
	assert.Equal(t, int32(1), guard.Load())
	assert.Equal(t, int32(1), post.Load(), "UNKNOWN_TOOL is a dispatched result")
	deny.Store(true)
	r3Plain(t, r3Exec(t, s, context.Background(), r3Call("ghost", nil)), "no such luck")
}

func TestExecute_R54_PreExecuteFailureIsFinal(t *testing.T) {
	cases := map[string]struct {
		hook  runtime.PreExecuteHook
		check func(t *testing.T, r *runtime.Result)
	}{
		"panic": {
			hook: func(context.Context, runtime.Execution, func() (runtime.Decision, error)) (runtime.Decision, error) {
				panic("pre boom")
			},
			check: func(t *testing.T, r *runtime.Result) { r3Plain(t, r, "pre boom") },
		},
		"error": {
			hook: func(context.Context, runtime.Execution, func() (runtime.Decision, error)) (runtime.Decision, error) {
				return runtime.Decision{}, errors.New("pre err")
			},
			check: func(t *testing.T, r *runtime.Result) { r3Plain(t, r, "pre err") },
		},
		"coded": {
			hook: func(context.Context, runtime.Execution, func() (runtime.Decision, error)) (runtime.Decision, error) {
				return runtime.Decision{}, runtime.NewError("PolicyError", "POLICY", "coded pre")
			},
			check: func(t *testing.T, r *runtime.Result) { r3Coded(t, r, "PolicyError", "POLICY", "coded pre") },
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			reg := r3Reg(t)
			s := r3Scope(t, reg, "a")
			var tr r3Trace
			r3M(s.Register(r3Tool("t", func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) {
				tr.add("body")
				return 1, nil
			})))
			r3M(s.OnPreExecute(c.hook))
			r3M(s.Guard(func(context.Context, runtime.Execution) (string, bool) { tr.add("guard"); return "", false }))
			r3M(s.OnExecute(func(ctx context.Context, e runtime.Execution, next func(context.Context) *runtime.Result) (*runtime.Result, error) {
				tr.add("around")
				return next(nil), nil
			}))
			post := r3PostSpy(t, s)
			c.check(t, r3Exec(t, s, context.Background(), r3Call("t", nil)))
			assert.Empty(t, tr.get())
			assert.Equal(t, int32(0), post.Load())
			// The scope keeps serving.
			c2 := r3Call("t", nil)
			r3M(s.OnPreExecute(func(_ context.Context, e runtime.Execution, next func() (runtime.Decision, error)) (runtime.Decision, error) {
				return runtime.Allow(), nil
			}, runtime.WithPrepend()))
			r3Success(t, r3Exec(t, s, context.Background(), c2), "1")
		})
	}
}

type r3ApprovalCase struct {
	name     string
	noAgent  bool
	approver runtime.Approver
	reason   []string
	cancel   bool // the approver cancels the caller's ctx
	check    func(t *testing.T, r *runtime.Result)
	bodyRuns bool
	postRuns bool
	askedFor bool // approver must be called
}

func TestExecute_R55_ApprovalTable(t *testing.T) {
	out := func(o runtime.ApprovalOutcome) runtime.Approver {
		return func(context.Context, runtime.ApprovalRequest) (runtime.ApprovalOutcome, error) { return o, nil }
	}
	cases := []r3ApprovalCase{
		{name: "no approver with reason", reason: []string{"please confirm"}, postRuns: true,
			check: func(t *testing.T, r *runtime.Result) {
				r3Plain(t, r, `tool "t" requires approval (please confirm), and no approver is set up to grant it; the call was not run`)
			}},
		{name: "no approver without reason", postRuns: true,
			check: func(t *testing.T, r *runtime.Result) {
				r3Plain(t, r, `tool "t" requires approval, and no approver is set up to grant it; the call was not run`)
			}},
		{name: "no agent", noAgent: true, approver: out(runtime.ApprovalAllowedOnce), postRuns: true,
			check: func(t *testing.T, r *runtime.Result) {
				r3Plain(t, r, `tool "t" requires approval, but the call has no agent to route it through`)
			}},
		{name: "allowed-once", approver: out(runtime.ApprovalAllowedOnce), bodyRuns: true, postRuns: true, askedFor: true,
			check: func(t *testing.T, r *runtime.Result) { r3Success(t, r, "1") }},
		{name: "rejected", approver: out(runtime.ApprovalRejected), postRuns: true, askedFor: true,
			check: func(t *testing.T, r *runtime.Result) { r3Plain(t, r, `approval for tool "t" was refused`) }},
		{name: "cancelled", approver: out(runtime.ApprovalCancelled), postRuns: true, askedFor: true,
			check: func(t *testing.T, r *runtime.Result) { r3Plain(t, r, `approval for tool "t" was cancelled`) }},
		{name: "cancelled and caller cancelled", approver: out(runtime.ApprovalCancelled), cancel: true, postRuns: true, askedFor: true,
			check: func(t *testing.T, r *runtime.Result) { r3ABD(t, r) }},
		{name: "unavailable", approver: out(runtime.ApprovalUnavailable), postRuns: true, askedFor: true,
			check: func(t *testing.T, r *runtime.Result) {
				r3Plain(t, r, `tool "t" requires approval, but no approval channel is available`)
			}},
		{name: "unknown outcome", approver: out("maybe"), askedFor: true,
			check: func(t *testing.T, r *runtime.Result) {
				require.True(t, r.IsError())
				_, _, has := r.ErrorInfo()
				assert.False(t, has)
			}},
		{name: "approver panic", askedFor: true,
			approver: func(context.Context, runtime.ApprovalRequest) (runtime.ApprovalOutcome, error) {
				panic("approver boom")
			},
			check: func(t *testing.T, r *runtime.Result) { r3Plain(t, r, "approver boom") }},
		{name: "approver error", askedFor: true,
			approver: func(context.Context, runtime.ApprovalRequest) (runtime.ApprovalOutcome, error) {
				return "", runtime.NewError("ApprovalError", "APPROVAL", "channel broke")
			},
			check: func(t *testing.T, r *runtime.Result) { r3Coded(t, r, "ApprovalError", "APPROVAL", "channel broke") }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var asked atomic.Int32
			var reqs []runtime.ApprovalRequest
			var opts []runtime.Option
			ctx, cancel := context.WithCancel(context.WithValue(context.Background(), r3Key{}, "caller"))
			defer cancel()
			if c.approver != nil {
				inner := c.approver
				opts = append(opts, runtime.WithApprover(func(actx context.Context, req runtime.ApprovalRequest) (runtime.ApprovalOutcome, error) {
					asked.Add(1)
					reqs = append(reqs, req)
					assert.Equal(t, "caller", actx.Value(r3Key{}), "approver receives the caller ctx")
					if c.cancel {
						cancel()
					}
					return inner(actx, req)
				}))
			}
			reg := r3Reg(t, opts...)
			var body atomic.Bool
			r3M(reg.Global().Register(r3Tool("t", func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) {
				body.Store(true)
				return 1, nil
			})))
			r3M(reg.Global().OnPreExecute(func(_ context.Context, e runtime.Execution, next func() (runtime.Decision, error)) (runtime.Decision, error) {
				return runtime.Ask(c.reason...), nil
			}))
			post := r3PostSpy(t, reg.Global())
			var res *runtime.Result
			if c.noAgent {
				res = r3Exec(t, reg.Global(), ctx, runtime.Call{ID: "id1", Name: "t"})
			} else {
				s := r3Scope(t, reg, "agent")
				res = r3Exec(t, s, ctx, runtime.Call{ID: "id1", Name: "t"})
			}
			c.check(t, res)
			assert.Equal(t, c.bodyRuns, body.Load(), "body")
			assert.Equal(t, c.postRuns, post.Load() == 1, "post-execute")
			if c.askedFor {
				require.Equal(t, int32(1), asked.Load())
				got := reqs[0]
				assert.Equal(t, []any{"agent", "t", "id1", "", false, json.RawMessage(`{}`), ""},
					[]any{got.Agent, got.Tool, got.CallID, got.Reason, got.HasReason, got.Arguments, got.TurnID})
			} else {
				assert.Equal(t, int32(0), asked.Load())
			}
		})
	}
}

func TestExecute_R55_ApproverReceivesReasonOnlyIfGiven(t *testing.T) {
	var got runtime.ApprovalRequest
	reg := r3Reg(t, runtime.WithApprover(func(_ context.Context, req runtime.ApprovalRequest) (runtime.ApprovalOutcome, error) {
		got = req
		return runtime.ApprovalRejected, nil
	}))
	s := r3Scope(t, reg, "ag")
	r3M(s.Register(r3Const("t", 1)))
	r3M(s.OnPreExecute(func(_ context.Context, e runtime.Execution, next func() (runtime.Decision, error)) (runtime.Decision, error) {
		return runtime.Ask("why"), nil
	}))
	r3Exec(t, s, context.Background(), runtime.Call{ID: "c9", Name: "t"})
	assert.Equal(t, []any{"ag", "t", "c9", "why", true}, []any{got.Agent, got.Tool, got.CallID, got.Reason, got.HasReason})
}

func TestExecute_R56_CancelledAfterGateIsAbortedBeforeDispatchPostResult(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	var body atomic.Bool
	r3M(s.Register(r3Tool("t", func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) {
		body.Store(true)
		return 1, nil
	})))
	ctx, cancel := context.WithCancel(context.Background())
	r3M(s.Guard(func(context.Context, runtime.Execution) (string, bool) { cancel(); return "", false }))
	var postSaw runtime.Code
	r3M(s.OnPostExecute(func(_ context.Context, e runtime.Execution, r *runtime.Result, next func() (runtime.PostDecision, error)) (runtime.PostDecision, error) {
		postSaw = r.Code()
		return next()
	}))
	r3ABD(t, r3Exec(t, s, ctx, r3Call("t", nil)))
	assert.Equal(t, runtime.CodeAbortedBeforeDispatch, postSaw)
	assert.False(t, body.Load())
}

func TestExecute_R57_DenialShapeAndKeptAfterCancel(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	var body atomic.Bool
	r3M(s.Register(r3Tool("t", func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) {
		body.Store(true)
		return 1, nil
	})))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r3M(s.OnPreExecute(func(_ context.Context, e runtime.Execution, next func() (runtime.Decision, error)) (runtime.Decision, error) {
		cancel() // the denial settles after the caller cancelled
		return runtime.Deny("not today"), nil
	}))
	post := r3PostSpy(t, s)
	res := r3Exec(t, s, ctx, r3Call("t", nil))
	r3Plain(t, res, "not today")
	assert.Equal(t, int32(1), post.Load())
	assert.False(t, body.Load())
	assert.Empty(t, res.AdditionalContexts())
}

// ---------------------------------------------------------------- R58–R66

func TestExecute_R58_AroundDelegatesWithDerivedCtx(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	type k2 struct{}
	r3M(s.Register(r3Tool("t", func(ctx context.Context, _ json.RawMessage, _ *runtime.RunContext) (any, error) {
		_, hasDeadline := ctx.Deadline()
		return map[string]any{"caller": ctx.Value(r3Key{}), "wrapper": ctx.Value(k2{}), "deadline": hasDeadline}, nil
	})))
	r3M(s.OnExecute(func(ctx context.Context, e runtime.Execution, next func(context.Context) *runtime.Result) (*runtime.Result, error) {
		assert.Equal(t, "caller", ctx.Value(r3Key{}))
		dctx, cancel := context.WithTimeout(context.WithValue(ctx, k2{}, "w"), time.Hour)
		defer cancel()
		return next(dctx), nil
	}))
	ctx := context.WithValue(context.Background(), r3Key{}, "caller")
	r3Success(t, r3Exec(t, s, ctx, r3Call("t", nil)), `{"caller":"caller","wrapper":"w","deadline":true}`)
}

func TestExecute_R58_ShortCircuitRebuildsFromValueBodyNotInvoked(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	var body atomic.Bool
	def := r3Tool("t", func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) {
		body.Store(true)
		return 1, nil
	})
	def.Output.PresentationMeta = func(_ context.Context, _, v json.RawMessage) (any, error) {
		return map[string]any{"v": json.RawMessage(v)}, nil
	}
	r3M(s.Register(def))
	r3M(s.OnExecute(func(ctx context.Context, e runtime.Execution, next func(context.Context) *runtime.Result) (*runtime.Result, error) {
		return runtime.Success(map[string]any{"cached": true}).WithContent(runtime.Text("authored")).WithMeta("authored"), nil
	}))
	post := r3PostSpy(t, s)
	res := r3Exec(t, s, context.Background(), r3Call("t", nil))
	r3Success(t, res, `{"cached":true}`)
	assert.Equal(t, []runtime.Block{runtime.Text(`{"cached":true}`)}, res.Content(), "authored content discarded, re-rendered")
	m, ok := res.Meta()
	require.True(t, ok)
	assert.JSONEq(t, `{"v":{"cached":true}}`, string(m), "meta recomputed")
	assert.False(t, body.Load())
	assert.Equal(t, int32(1), post.Load())
}

func TestExecute_R58_TransformedSuccessIsRevalidatedTransformedFailureKept(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	var fail atomic.Bool
	r3M(s.Register(r3Tool("t", func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) {
		if fail.Load() {
			return nil, errors.New("body failed")
		}
		return 5, nil
	})))
	r3M(s.OnExecute(func(ctx context.Context, e runtime.Execution, next func(context.Context) *runtime.Result) (*runtime.Result, error) {
		r := next(nil)
		return r.WithContent(runtime.Text("transformed")).WithContexts(runtime.ContextMessage{Role: "system", Text: "w"}), nil
	}))
	res := r3Exec(t, s, context.Background(), r3Call("t", nil))
	r3Success(t, res, "5")
	assert.Equal(t, []runtime.Block{runtime.Text("5")}, res.Content())
	assert.Equal(t, []runtime.ContextMessage{{Role: "system", Text: "w"}}, res.AdditionalContexts())

	fail.Store(true)
	res = r3Exec(t, s, context.Background(), r3Call("t", nil))
	require.True(t, res.IsError())
	assert.Equal(t, "body failed", res.ErrorMessage())
	assert.Equal(t, []runtime.Block{runtime.Text("transformed")}, res.Content(), "foreign failure keeps content")
}

func TestExecute_R58_NextReturnsBodyPanicAsFailureResult(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	r3M(s.Register(r3Tool("t", func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) {
		panic("body boom")
	})))
	var inner *runtime.Result
	r3M(s.OnExecute(func(ctx context.Context, e runtime.Execution, next func(context.Context) *runtime.Result) (*runtime.Result, error) {
		inner = next(nil)
		return inner, nil
	}))
	res := r3Exec(t, s, context.Background(), r3Call("t", nil))
	r3Plain(t, res, "body boom")
	require.NotNil(t, inner)
	assert.True(t, inner.IsError())
}

func TestExecute_R59_NilCtxUnchangedAndPostSeesCallerCtx(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	type wk struct{}
	r3M(s.Register(r3Tool("t", func(ctx context.Context, _ json.RawMessage, _ *runtime.RunContext) (any, error) {
		return []any{ctx.Value(r3Key{}), ctx.Value(wk{})}, nil
	})))
	// Outer wrapper replaces the ctx; inner passes nil (= unchanged, i.e. the outer's).
	r3M(s.OnExecute(func(ctx context.Context, e runtime.Execution, next func(context.Context) *runtime.Result) (*runtime.Result, error) {
		return next(context.WithValue(ctx, wk{}, "outer")), nil
	}))
	r3M(s.OnExecute(func(ctx context.Context, e runtime.Execution, next func(context.Context) *runtime.Result) (*runtime.Result, error) {
		assert.Equal(t, "outer", ctx.Value(wk{}))
		return next(nil), nil
	}))
	check := func(e runtime.Execution) {
		assert.Equal(t, "caller", e.Context().Value(r3Key{}))
		assert.Nil(t, e.Context().Value(wk{}), "post-execute and observers see the caller ctx")
	}
	r3M(s.OnPostExecute(func(_ context.Context, e runtime.Execution, _ *runtime.Result, next func() (runtime.PostDecision, error)) (runtime.PostDecision, error) {
		check(e)
		return next()
	}))
	r3M(s.OnResult(func(_ context.Context, e runtime.Execution, _ *runtime.Result) error { check(e); return nil }))
	ctx := context.WithValue(context.Background(), r3Key{}, "caller")
	r3Success(t, r3Exec(t, s, ctx, r3Call("t", nil)), `["caller","outer"]`)
}

func TestExecute_R60_FusedBodyCtx(t *testing.T) {
	t.Run("caller cancel cancels body, not the wrapper ctx", func(t *testing.T) {
		reg := r3Reg(t)
		s := r3Scope(t, reg, "a")
		started := make(chan struct{})
		var wctx context.Context
		var bodyCtx context.Context
		r3M(s.Register(r3Tool("t", func(ctx context.Context, _ json.RawMessage, _ *runtime.RunContext) (any, error) {
			bodyCtx = ctx
			assert.Equal(t, "w", ctx.Value(r3Key{}), "values from the wrapper's ctx")
			close(started)
			<-ctx.Done()
			return nil, errors.New("stopped")
		})))
		r3M(s.OnExecute(func(ctx context.Context, e runtime.Execution, next func(context.Context) *runtime.Result) (*runtime.Result, error) {
			wctx = context.WithValue(context.WithoutCancel(ctx), r3Key{}, "w")
			r := next(wctx)
			assert.NoError(t, wctx.Err(), "the wrapper's ctx is not cancelled by the body's")
			assert.NotSame(t, wctx, bodyCtx)
			return r, nil
		}))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan *runtime.Result, 1)
		go func() { done <- s.Execute(ctx, r3Call("t", nil)) }()
		r3Await(t, started)
		cancel()
		r3Plain(t, r3Await(t, done), "stopped")
	})
	t.Run("wrapper ctx cancel cancels body", func(t *testing.T) {
		reg := r3Reg(t)
		s := r3Scope(t, reg, "a")
		started := make(chan struct{})
		r3M(s.Register(r3Tool("t", func(ctx context.Context, _ json.RawMessage, _ *runtime.RunContext) (any, error) {
			close(started)
			<-ctx.Done()
			return nil, errors.New("stopped by wrapper")
		})))
		r3M(s.OnExecute(func(ctx context.Context, e runtime.Execution, next func(context.Context) *runtime.Result) (*runtime.Result, error) {
			wctx, cancel := context.WithCancel(ctx)
			go func() { <-started; cancel() }()
			return next(wctx), nil
		}))
		r3Plain(t, r3Exec(t, s, context.Background(), r3Call("t", nil)), "stopped by wrapper")
	})
}

func TestExecute_R61_UnknownToolWhenDisposedBetweenEntryAndDispatch(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	var body atomic.Bool
	var fin atomic.Int32
	def := r3Tool("t", func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) {
		body.Store(true)
		return 1, nil
	})
	def.FinalizeContent = func(context.Context, runtime.Execution, *runtime.Result) ([]runtime.Block, error) {
		fin.Add(1)
		return nil, nil
	}
	dispose := r3M(s.Register(def))
	r3M(s.OnPreExecute(func(_ context.Context, e runtime.Execution, next func() (runtime.Decision, error)) (runtime.Decision, error) {
		dispose()
		return next()
	}))
	post := r3PostSpy(t, s)
	r3Unknown(t, r3Exec(t, s, context.Background(), r3Call("t", nil)), "t")
	assert.False(t, body.Load())
	assert.Equal(t, int32(1), post.Load())
	assert.Equal(t, int32(1), fin.Load(), "captured finalizer still runs")
}

func TestExecute_R61_UnknownToolWhenRestrictedAfterEntry(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	r3M(reg.Global().Register(r3Const("t", 1)))
	var once sync.Once
	r3M(s.Guard(func(context.Context, runtime.Execution) (string, bool) {
		once.Do(func() {
			_, err := s.Restrict(runtime.Restriction{Deny: []string{"t"}})
			assert.NoError(t, err)
		})
		return "", false
	}))
	r3Unknown(t, r3Exec(t, s, context.Background(), r3Call("t", nil)), "t")
}

func TestExecute_R62_R63_SuccessCreationFailures(t *testing.T) {
	type tc struct {
		def  func() runtime.Definition
		want string
	}
	prefix := `tool "t" returned invalid output: `
	cases := map[string]tc{
		"value not lossless": {def: func() runtime.Definition { return r3Const("t", math.NaN()) }, want: prefix + "value is not lossless JSON"},
		"value foreign type": {def: func() runtime.Definition { return r3Const("t", struct{}{}) }, want: prefix + "value is not lossless JSON"},
		"render panic": {def: func() runtime.Definition {
			d := r3Const("t", 1)
			d.Output.Render = func(_ context.Context, _, _ json.RawMessage) ([]runtime.Block, error) { panic("render boom") }
			return d
		}, want: prefix + "Output.Render failed: render boom"},
		"render error": {def: func() runtime.Definition {
			d := r3Const("t", 1)
			d.Output.Render = func(_ context.Context, _, _ json.RawMessage) ([]runtime.Block, error) { return nil, errors.New("nope") }
			return d
		}, want: prefix + "Output.Render failed: nope"},
		"render unsafe": {def: func() runtime.Definition {
			d := r3Const("t", 1)
			d.Output.Render = func(_ context.Context, _, _ json.RawMessage) ([]runtime.Block, error) {
				return []runtime.Block{{Type: "image", Data: json.RawMessage(`{bad`)}}, nil
			}
			return d
		}, want: prefix + "Output.Render returned non-lossless JSON"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			reg := r3Reg(t)
			s := r3Scope(t, reg, "a")
			r3M(s.Register(c.def()))
			var aroundSaw, postSaw runtime.Code
			r3M(s.OnExecute(func(ctx context.Context, e runtime.Execution, next func(context.Context) *runtime.Result) (*runtime.Result, error) {
				r := next(nil)
				aroundSaw = r.Code()
				return r, nil
			}))
			r3M(s.OnPostExecute(func(_ context.Context, e runtime.Execution, r *runtime.Result, next func() (runtime.PostDecision, error)) (runtime.PostDecision, error) {
				postSaw = r.Code()
				return next()
			}))
			res := r3Exec(t, s, context.Background(), r3Call("t", nil))
			r3Coded(t, res, runtime.NameToolOutput, runtime.CodeInvalidToolOutput, c.want)
			assert.Equal(t, runtime.CodeInvalidToolOutput, aroundSaw, "R63: around sees an ordinary failure")
			assert.Equal(t, runtime.CodeInvalidToolOutput, postSaw, "R63: post-execute sees an ordinary failure")
		})
	}
}

func TestExecute_R62_OutputSchemaViolationsListed(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	d := r3Const("t", map[string]any{"n": "x", "extra": 1})
	d.Output.Schema = map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer"}}, "required": []any{"n"}, "additionalProperties": false}
	r3M(s.Register(d))
	res := r3Exec(t, s, context.Background(), r3Call("t", nil))
	require.True(t, res.IsError())
	assert.Equal(t, runtime.CodeInvalidToolOutput, res.Code())
	assert.True(t, strings.HasPrefix(res.ErrorMessage(), `tool "t" returned invalid output: `), res.ErrorMessage())
	assert.Contains(t, res.ErrorMessage(), "value")
	assert.Contains(t, res.ErrorMessage(), "; ", "every violation is listed")
}

func TestExecute_R51_R64_PresentationMetaTopLevelOnly(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	withMeta := r3Const("meta", 1)
	withMeta.Output.PresentationMeta = func(_ context.Context, args, v json.RawMessage) (any, error) {
		return map[string]any{"shown": true}, nil
	}
	r3M(s.Register(withMeta))
	r3M(s.Register(r3Const("plain", 1)))
	var nestedHasMeta atomic.Bool
	nestedHasMeta.Store(true)
	r3M(s.Register(r3Tool("outer", func(ctx context.Context, _ json.RawMessage, rc *runtime.RunContext) (any, error) {
		r := s.Execute(ctx, runtime.Call{ID: "n", Name: "meta", Parent: rc.Token()})
		_, has := r.Meta()
		nestedHasMeta.Store(has)
		assert.Nil(t, r.Proto().MetaJson)
		return 1, nil
	})))
	res := r3Exec(t, s, context.Background(), r3Call("meta", nil))
	m, ok := res.Meta()
	require.True(t, ok)
	assert.JSONEq(t, `{"shown":true}`, string(m))

	res = r3Exec(t, s, context.Background(), r3Call("plain", nil))
	_, ok = res.Meta()
	assert.False(t, ok, "no projector: no Meta at all")
	assert.Nil(t, res.Proto().MetaJson)

	r3Success(t, r3Exec(t, s, context.Background(), r3Call("outer", nil)), "1")
	assert.False(t, nestedHasMeta.Load(), "nested calls carry no Meta")
}

func TestExecute_R64_PresentationMetaFailures(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	p := r3Const("panics", 1)
	p.Output.PresentationMeta = func(_ context.Context, _, _ json.RawMessage) (any, error) { panic("meta boom") }
	u := r3Const("unsafe", 1)
	u.Output.PresentationMeta = func(_ context.Context, _, _ json.RawMessage) (any, error) { return math.Inf(1), nil }
	r3M(s.Register(p))
	r3M(s.Register(u))
	r3Coded(t, r3Exec(t, s, context.Background(), r3Call("panics", nil)), runtime.NameToolOutput, runtime.CodeInvalidToolOutput,
		`tool "panics" returned invalid output: Output.PresentationMeta failed: meta boom`)
	r3Coded(t, r3Exec(t, s, context.Background(), r3Call("unsafe", nil)), runtime.NameToolOutput, runtime.CodeInvalidToolOutput,
		`tool "unsafe" returned invalid output: Output.PresentationMeta returned non-lossless JSON`)
}

func TestExecute_R65_OwnUnmodifiedResultPassesThrough(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	var renders atomic.Int32
	d := r3Const("t", 7)
	d.Output.Render = func(_ context.Context, _, v json.RawMessage) ([]runtime.Block, error) {
		renders.Add(1)
		return []runtime.Block{runtime.Text("r" + string(v))}, nil
	}
	r3M(s.Register(d))
	r3M(s.OnExecute(func(ctx context.Context, e runtime.Execution, next func(context.Context) *runtime.Result) (*runtime.Result, error) {
		return next(nil), nil
	}))
	res := r3Exec(t, s, context.Background(), r3Call("t", nil))
	r3Success(t, res, "7")
	assert.Equal(t, []runtime.Block{runtime.Text("r7")}, res.Content())
	assert.Equal(t, int32(1), renders.Load(), "own result is not rebuilt")
}

func TestExecute_R65_CachedForeignSuccessRevalidated(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	var bodies atomic.Int32
	d := r3Tool("t", func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) {
		bodies.Add(1)
		return "v", nil
	})
	d.Output.Render = func(_ context.Context, args, v json.RawMessage) ([]runtime.Block, error) {
		return []runtime.Block{runtime.Text(string(args) + "->" + string(v))}, nil
	}
	r3M(s.Register(d))
	var mu sync.Mutex
	var cache *runtime.Result
	r3M(s.OnExecute(func(ctx context.Context, e runtime.Execution, next func(context.Context) *runtime.Result) (*runtime.Result, error) {
		mu.Lock()
		defer mu.Unlock()
		if cache != nil {
			return cache, nil // equal in value to the earlier result, but foreign
		}
		cache = next(nil)
		return cache, nil
	}))
	res1 := r3Exec(t, s, context.Background(), r3Call("t", map[string]any{"q": 1}))
	assert.Equal(t, []runtime.Block{runtime.Text(`{"q":1}->"v"`)}, res1.Content())
	res2 := r3Exec(t, s, context.Background(), r3Call("t", map[string]any{"q": 2}))
	r3Success(t, res2, `"v"`)
	assert.Equal(t, []runtime.Block{runtime.Text(`{"q":2}->"v"`)}, res2.Content(), "re-rendered with this call's arguments")
	assert.Equal(t, int32(1), bodies.Load())
}

func TestExecute_R65_ForeignSuccessDefinitionGoneOrInvalidIsFinal(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	d := r3Const("t", "s")
	d.Output.Schema = map[string]any{"type": "string"}
	dispose := r3M(s.Register(d))
	var mode atomic.Int32
	r3M(s.OnExecute(func(ctx context.Context, e runtime.Execution, next func(context.Context) *runtime.Result) (*runtime.Result, error) {
		if mode.Load() == 1 {
			return runtime.Success(42).WithContexts(runtime.ContextMessage{Role: "r", Text: "w"}), nil
		}
		dispose()
		return runtime.Success("ok"), nil
	}))
	post := r3PostSpy(t, s)
	mode.Store(1)
	res := r3Exec(t, s, context.Background(), r3Call("t", nil))
	require.Equal(t, runtime.CodeInvalidToolOutput, res.Code())
	assert.True(t, strings.HasPrefix(res.ErrorMessage(), `tool "t" returned invalid output: `))
	assert.Equal(t, int32(0), post.Load(), "normalization failure is final")
	mode.Store(0)
	r3Unknown(t, r3Exec(t, s, context.Background(), r3Call("t", nil)), "t")
	assert.Equal(t, int32(0), post.Load())
}

func TestExecute_R65_ForeignFailureKeepsErrorDropsValue(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	r3M(s.Register(r3Tool("t", func(_ context.Context, _ json.RawMessage, rc *runtime.RunContext) (any, error) {
		rc.DeferContext(runtime.ContextMessage{Role: "system", Text: "deferred"})
		return 1, nil
	})))
	r3M(s.OnExecute(func(ctx context.Context, e runtime.Execution, next func(context.Context) *runtime.Result) (*runtime.Result, error) {
		_ = next(nil)
		// A failure that (illegally) carries a value, with Meta, Info and contexts.
		f := runtime.ResultFromProto(&messages.Result{
			IsError:            true,
			ValueJson:          []byte(`123`),
			MetaJson:           []byte(`{"m":1}`),
			ConcludesTurn:      true,
			Content:            []*messages.ContentBlock{{Type: "text", Text: "wrapper says"}},
			Error:              &messages.ToolError{Message: "wrapped", Info: &messages.ErrorInfo{Name: "WErr", Code: "W"}},
			AdditionalContexts: []*messages.ContextMessage{{Role: "system", Text: "wrapper"}},
		})
		return f, nil
	}))
	post := r3PostSpy(t, s)
	res := r3Exec(t, s, context.Background(), r3Call("t", nil))
	require.True(t, res.IsError())
	_, hasV := res.Value()
	assert.False(t, hasV, "foreign failure loses its value")
	assert.False(t, res.ConcludesTurn())
	assert.Equal(t, "wrapped", res.ErrorMessage())
	n, c, _ := res.ErrorInfo()
	assert.Equal(t, "WErr", n)
	assert.Equal(t, runtime.Code("W"), c)
	assert.Equal(t, []runtime.Block{runtime.Text("wrapper says")}, res.Content())
	m, ok := res.Meta()
	require.True(t, ok, "a wrapper-authored Meta is kept on a failure")
	assert.JSONEq(t, `{"m":1}`, string(m))
	assert.Equal(t, []runtime.ContextMessage{{Role: "system", Text: "deferred"}, {Role: "system", Text: "wrapper"}}, res.AdditionalContexts(),
		"deferred contexts are prepended")
	assert.Equal(t, int32(1), post.Load())
}

func TestExecute_R65_DeferredContextsPrependedOnSuccess(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	r3M(s.Register(r3Tool("t", func(_ context.Context, _ json.RawMessage, rc *runtime.RunContext) (any, error) {
		rc.DeferContext(runtime.ContextMessage{Role: "system", Text: "d1"})
		rc.DeferContext(runtime.ContextMessage{Role: "user", Text: "d2"})
		return 1, nil
	})))
	r3M(s.OnExecute(func(ctx context.Context, e runtime.Execution, next func(context.Context) *runtime.Result) (*runtime.Result, error) {
		return next(nil).WithContexts(runtime.ContextMessage{Role: "system", Text: "w"}), nil
	}))
	res := r3Exec(t, s, context.Background(), r3Call("t", nil))
	r3Success(t, res, "1")
	assert.Equal(t, []runtime.ContextMessage{{Role: "system", Text: "d1"}, {Role: "user", Text: "d2"}, {Role: "system", Text: "w"}}, res.AdditionalContexts())
}

func TestExecute_R66_WrapperFailureIsFinalDropsDeferredContexts(t *testing.T) {
	for name, hook := range map[string]runtime.AroundHook{
		"panic": func(ctx context.Context, e runtime.Execution, next func(context.Context) *runtime.Result) (*runtime.Result, error) {
			_ = next(nil)
			panic("wrapper boom")
		},
		"error": func(ctx context.Context, e runtime.Execution, next func(context.Context) *runtime.Result) (*runtime.Result, error) {
			_ = next(nil)
			return nil, runtime.NewError("WrapErr", "WRAP", "wrapper boom")
		},
	} {
		t.Run(name, func(t *testing.T) {
			reg := r3Reg(t)
			s := r3Scope(t, reg, "a")
			r3M(s.Register(r3Tool("t", func(_ context.Context, _ json.RawMessage, rc *runtime.RunContext) (any, error) {
				rc.DeferContext(runtime.ContextMessage{Role: "system", Text: "d"})
				rc.ConcludeTurn()
				return 1, nil
			})))
			r3M(s.OnExecute(hook))
			post := r3PostSpy(t, s)
			res := r3Exec(t, s, context.Background(), r3Call("t", nil))
			if name == "panic" {
				r3Plain(t, res, "wrapper boom")
			} else {
				r3Coded(t, res, "WrapErr", "WRAP", "wrapper boom")
			}
			assert.Empty(t, res.AdditionalContexts())
			assert.Equal(t, int32(0), post.Load())
			r3M(s.OnExecute(func(ctx context.Context, e runtime.Execution, next func(context.Context) *runtime.Result) (*runtime.Result, error) {
				return runtime.Success(2), nil
			}, runtime.WithPrepend()))
			r3Success(t, r3Exec(t, s, context.Background(), r3Call("t", nil)), "2")
		})
	}
}

// ---------------------------------------------------------------- R67–R71

func TestExecute_R67_PostExecuteAudience(t *testing.T) {
	type tc struct {
		setup   func(t *testing.T, reg *runtime.Registry, s *runtime.Scope) (context.Context, runtime.Call)
		postRan bool
	}
	bg := func(name string, args any) func(*testing.T, *runtime.Registry, *runtime.Scope) (context.Context, runtime.Call) {
		return func(*testing.T, *runtime.Registry, *runtime.Scope) (context.Context, runtime.Call) {
			return context.Background(), r3Call(name, args)
		}
	}
	cases := map[string]tc{
		"success":          {setup: bg("ok", nil), postRan: true},
		"unknown tool":     {setup: bg("ghost", nil), postRan: true},
		"body error":       {setup: bg("fails", nil), postRan: true},
		"invalid output":   {setup: bg("nan", nil), postRan: true},
		"argument failure": {setup: bg("ok", math.NaN()), postRan: false},
		"pre-cancelled": {setup: func(*testing.T, *runtime.Registry, *runtime.Scope) (context.Context, runtime.Call) {
			ctx, c := context.WithCancel(context.Background())
			c()
			return ctx, r3Call("ok", nil)
		}},
		"denial":                {setup: bg("deny", nil), postRan: true},
		"pre-execute failure":   {setup: bg("prefail", nil)},
		"guard failure":         {setup: bg("guardfail", nil)},
		"around failure":        {setup: bg("aroundfail", nil)},
		"normalization failure": {setup: bg("normfail", nil)},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			reg := r3Reg(t)
			s := r3Scope(t, reg, "a")
			r3M(s.Register(r3Const("ok", 1)))
			r3M(s.Register(r3Const("nan", math.NaN())))
			r3M(s.Register(r3Const("deny", 1)))
			r3M(s.Register(r3Const("prefail", 1)))
			r3M(s.Register(r3Const("guardfail", 1)))
			r3M(s.Register(r3Const("aroundfail", 1)))
			nf := r3Const("normfail", 1)
			nf.Output.Schema = map[string]any{"type": "integer"}
			r3M(s.Register(nf))
			r3M(s.Register(r3Tool("fails", func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) {
				return nil, errors.New("x")
			})))
			r3M(s.OnPreExecute(func(_ context.Context, e runtime.Execution, next func() (runtime.Decision, error)) (runtime.Decision, error) {
				switch e.Name() {
				case "deny":
					return runtime.Deny("no"), nil
				case "prefail":
					panic("x")
				}
				return next()
			}))
			r3M(s.Guard(func(_ context.Context, e runtime.Execution) (string, bool) {
				if e.Name() == "guardfail" {
					panic("x")
				}
				return "", false
			}))
			r3M(s.OnExecute(func(ctx context.Context, e runtime.Execution, next func(context.Context) *runtime.Result) (*runtime.Result, error) {
				switch e.Name() {
				case "aroundfail":
					return nil, errors.New("x")
				case "normfail":
					return runtime.Success("not an integer"), nil
				}
				return next(nil), nil
			}))
			post := r3PostSpy(t, s)
			ctx, call := c.setup(t, reg, s)
			res := r3Exec(t, s, ctx, call)
			assert.Equal(t, c.postRan, post.Load() == 1, "post-execute for %s (result %q)", name, res.ErrorMessage())
		})
	}
}

func TestExecute_R68_PostHooksOrderInputsDefaultAccept(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	r3M(s.Register(r3Const("t", 1)))
	var tr r3Trace
	mk := func(name string) runtime.PostExecuteHook {
		return func(_ context.Context, e runtime.Execution, r *runtime.Result, next func() (runtime.PostDecision, error)) (runtime.PostDecision, error) {
			tr.add(name + ">")
			v, _ := r.Value()
			assert.JSONEq(t, "1", string(v))
			assert.Equal(t, "caller", e.Context().Value(r3Key{}))
			// Mutating the copy we got changes nothing downstream.
			if c := r.Content(); len(c) > 0 {
				c[0].Text = "mutated"
			}
			d, err := next()
			tr.add(name + "<")
			return d, err
		}
	}
	r3M(s.OnPostExecute(mk("p1")))
	r3M(reg.Global().OnPostExecute(mk("p2")))
	r3M(s.OnPostExecute(mk("p0"), runtime.WithPrepend()))
	res := r3Exec(t, s, context.WithValue(context.Background(), r3Key{}, "caller"), r3Call("t", nil))
	r3Success(t, res, "1")
	assert.Equal(t, []runtime.Block{runtime.Text("1")}, res.Content())
	assert.Equal(t, []string{"p0>", "p1>", "p2>", "p2<", "p1<", "p0<"}, tr.get())
}

func r3PostDecide(t *testing.T, def runtime.Definition, dec func(r *runtime.Result) runtime.PostDecision) *runtime.Result {
	t.Helper()
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	r3M(s.Register(def))
	r3M(s.OnPostExecute(func(_ context.Context, e runtime.Execution, r *runtime.Result, next func() (runtime.PostDecision, error)) (runtime.PostDecision, error) {
		return dec(r), nil
	}))
	return r3Exec(t, s, context.Background(), r3Call(def.Name, nil))
}

func r3MetaTool(v any, conclude bool, fail error) runtime.Definition {
	d := r3Tool("t", func(_ context.Context, _ json.RawMessage, rc *runtime.RunContext) (any, error) {
		rc.DeferContext(runtime.ContextMessage{Role: "system", Text: "d"})
		if conclude {
			rc.ConcludeTurn()
		}
		if fail != nil {
			return nil, fail
		}
		return v, nil
	})
	d.Output.PresentationMeta = func(_ context.Context, _, v json.RawMessage) (any, error) {
		return map[string]any{"of": json.RawMessage(v)}, nil
	}
	return d
}

func TestExecute_R69_Accept(t *testing.T) {
	res := r3PostDecide(t, r3MetaTool(1, true, nil), func(*runtime.Result) runtime.PostDecision { return runtime.Accept() })
	r3Success(t, res, "1")
	assert.Equal(t, []runtime.Block{runtime.Text("1")}, res.Content())
	assert.True(t, res.ConcludesTurn())
	assert.Equal(t, []runtime.ContextMessage{{Role: "system", Text: "d"}}, res.AdditionalContexts())
}

func TestExecute_R69_AcceptContentOnSuccessKeepsEverythingElse(t *testing.T) {
	res := r3PostDecide(t, r3MetaTool(1, true, nil), func(*runtime.Result) runtime.PostDecision {
		return runtime.AcceptContent(runtime.Text("new content"))
	})
	r3Success(t, res, "1")
	assert.Equal(t, []runtime.Block{runtime.Text("new content")}, res.Content())
	m, ok := res.Meta()
	require.True(t, ok)
	assert.JSONEq(t, `{"of":1}`, string(m))
	assert.True(t, res.ConcludesTurn(), "R78: conclusion survives Accept{Content}")
}

func TestExecute_R69_AcceptContentOnFailureKeepsError(t *testing.T) {
	res := r3PostDecide(t, r3MetaTool(1, false, runtime.NewError("E", "CODE", "bad")), func(*runtime.Result) runtime.PostDecision {
		return runtime.AcceptContent(runtime.Text("softened"))
	})
	require.True(t, res.IsError())
	assert.Equal(t, "bad", res.ErrorMessage())
	assert.Equal(t, runtime.Code("CODE"), res.Code())
	assert.Equal(t, []runtime.Block{runtime.Text("softened")}, res.Content())
	_, hasV := res.Value()
	assert.False(t, hasV)
}

func TestExecute_R69_AcceptValueOnSuccessRebuilds(t *testing.T) {
	res := r3PostDecide(t, r3MetaTool(1, true, nil), func(*runtime.Result) runtime.PostDecision {
		return runtime.AcceptValue(map[string]any{"replaced": true})
	})
	r3Success(t, res, `{"replaced":true}`)
	assert.Equal(t, []runtime.Block{runtime.Text(`{"replaced":true}`)}, res.Content(), "fresh content")
	m, ok := res.Meta()
	require.True(t, ok)
	assert.JSONEq(t, `{"of":{"replaced":true}}`, string(m), "fresh meta")
	assert.True(t, res.ConcludesTurn(), "R78: conclusion survives Accept{Value}")
	assert.Equal(t, []runtime.ContextMessage{{Role: "system", Text: "d"}}, res.AdditionalContexts())
}

func TestExecute_R69_AcceptValueJSONNullIsPresent(t *testing.T) {
	res := r3PostDecide(t, r3MetaTool(1, false, nil), func(*runtime.Result) runtime.PostDecision {
		return runtime.AcceptValue(nil)
	})
	r3Success(t, res, `null`)
}

func TestExecute_R69_AcceptValueInvalidOrGone(t *testing.T) {
	res := r3PostDecide(t, r3MetaTool(1, true, nil), func(*runtime.Result) runtime.PostDecision {
		return runtime.AcceptValue(math.NaN())
	})
	r3Coded(t, res, runtime.NameToolOutput, runtime.CodeInvalidToolOutput, `tool "t" returned invalid output: value is not lossless JSON`)
	assert.Empty(t, res.AdditionalContexts(), "R71: revalidation failure has no contexts")

	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	dispose := r3M(s.Register(r3Const("t", 1)))
	r3M(s.OnPostExecute(func(_ context.Context, e runtime.Execution, r *runtime.Result, next func() (runtime.PostDecision, error)) (runtime.PostDecision, error) {
		dispose()
		return runtime.AcceptValue(2), nil
	}))
	r3Unknown(t, r3Exec(t, s, context.Background(), r3Call("t", nil)), "t")
}

func TestExecute_R69_AcceptValueOnFailureIsMisuse(t *testing.T) {
	res := r3PostDecide(t, r3MetaTool(1, false, errors.New("bad")), func(*runtime.Result) runtime.PostDecision {
		return runtime.AcceptValue(2)
	})
	r3Plain(t, res, "post-execute hook cannot replace the value of a failed result")
	assert.Empty(t, res.AdditionalContexts())
}

func TestExecute_R69_ContentAndValueTogetherIsMisuse(t *testing.T) {
	res := r3PostDecide(t, r3MetaTool(1, false, nil), func(*runtime.Result) runtime.PostDecision {
		return runtime.PostDecision{Content: []runtime.Block{runtime.Text("c")}, Value: 2, HasValue: true}
	})
	r3Plain(t, res, "post-execute hook: an accept decision cannot replace both value and content")
	assert.Empty(t, res.AdditionalContexts())
}

func TestExecute_R69_BlockedMessageDerivation(t *testing.T) {
	img := runtime.Block{Type: "image", Data: json.RawMessage(`{"url":"x"}`)}
	res := r3PostDecide(t, r3MetaTool(1, true, nil), func(*runtime.Result) runtime.PostDecision {
		return runtime.Blocked(runtime.Text("line one"), img, runtime.Text("line two"))
	})
	require.True(t, res.IsError())
	assert.Equal(t, "line one\n[image content]\nline two", res.ErrorMessage())
	assert.Equal(t, []runtime.Block{runtime.Text("line one"), img, runtime.Text("line two")}, res.Content())
	_, _, has := res.ErrorInfo()
	assert.False(t, has)
	_, hasV := res.Value()
	assert.False(t, hasV)
	assert.False(t, res.ConcludesTurn())
	assert.Empty(t, res.AdditionalContexts(), "R77: Block drops deferred contexts")

	res = r3PostDecide(t, r3MetaTool(1, false, nil), func(*runtime.Result) runtime.PostDecision { return runtime.Blocked() })
	require.True(t, res.IsError())
	assert.Equal(t, "tool result blocked by post-execute policy", res.ErrorMessage())
	assert.Empty(t, res.Content())

	res = r3PostDecide(t, r3MetaTool(1, false, nil), func(*runtime.Result) runtime.PostDecision { return runtime.Blocked(runtime.Text("")) })
	assert.Equal(t, "tool result blocked by post-execute policy", res.ErrorMessage())
}

func TestExecute_R70_ContextsRules(t *testing.T) {
	dec := runtime.ContextMessage{Role: "system", Text: "decision"}
	t.Run("accept appends after deferred and wrapper", func(t *testing.T) {
		reg := r3Reg(t)
		s := r3Scope(t, reg, "a")
		r3M(s.Register(r3MetaTool(1, false, nil)))
		r3M(s.OnExecute(func(ctx context.Context, e runtime.Execution, next func(context.Context) *runtime.Result) (*runtime.Result, error) {
			return next(nil).WithContexts(runtime.ContextMessage{Role: "system", Text: "w"}), nil
		}))
		r3M(s.OnPostExecute(func(_ context.Context, e runtime.Execution, r *runtime.Result, next func() (runtime.PostDecision, error)) (runtime.PostDecision, error) {
			return runtime.Accept().WithContexts(dec), nil
		}))
		res := r3Exec(t, s, context.Background(), r3Call("t", nil))
		assert.Equal(t, []runtime.ContextMessage{{Role: "system", Text: "d"}, {Role: "system", Text: "w"}, dec}, res.AdditionalContexts())
	})
	t.Run("block keeps only the decision's", func(t *testing.T) {
		res := r3PostDecide(t, r3MetaTool(1, false, nil), func(*runtime.Result) runtime.PostDecision {
			return runtime.Blocked(runtime.Text("no")).WithContexts(dec)
		})
		assert.Equal(t, []runtime.ContextMessage{dec}, res.AdditionalContexts())
	})
	t.Run("none is empty", func(t *testing.T) {
		res := r3Exec(t, func() *runtime.Scope {
			reg := r3Reg(t)
			s := r3Scope(t, reg, "a")
			r3M(s.Register(r3Const("t", 1)))
			return s
		}(), context.Background(), r3Call("t", nil))
		assert.Empty(t, res.AdditionalContexts())
		assert.Empty(t, res.Proto().AdditionalContexts)
	})
}

func TestExecute_R71_PostFailureGoesToFinishWithoutContexts(t *testing.T) {
	for name, hook := range map[string]runtime.PostExecuteHook{
		"panic": func(context.Context, runtime.Execution, *runtime.Result, func() (runtime.PostDecision, error)) (runtime.PostDecision, error) {
			panic("post boom")
		},
		"error": func(context.Context, runtime.Execution, *runtime.Result, func() (runtime.PostDecision, error)) (runtime.PostDecision, error) {
			return runtime.PostDecision{}, errors.New("post boom")
		},
	} {
		t.Run(name, func(t *testing.T) {
			reg := r3Reg(t)
			s := r3Scope(t, reg, "a")
			var fin atomic.Int32
			d := r3MetaTool(1, true, nil)
			d.FinalizeContent = func(_ context.Context, _ runtime.Execution, r *runtime.Result) ([]runtime.Block, error) {
				fin.Add(1)
				assert.Equal(t, "post boom", r.ErrorMessage())
				return nil, nil
			}
			r3M(s.Register(d))
			r3M(s.OnPostExecute(hook))
			res := r3Exec(t, s, context.Background(), r3Call("t", nil))
			r3Plain(t, res, "post boom")
			assert.Empty(t, res.AdditionalContexts())
			assert.Equal(t, int32(1), fin.Load())
		})
	}
}

// ---------------------------------------------------------------- R72–R76

func TestExecute_R72_R74_FinalizerOnceChangesContentOnly(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	var calls atomic.Int32
	d := r3MetaTool(1, true, nil)
	d.FinalizeContent = func(_ context.Context, e runtime.Execution, r *runtime.Result) ([]runtime.Block, error) {
		calls.Add(1)
		assert.Equal(t, "t", e.Name())
		return []runtime.Block{runtime.Text("finalized: " + r.Text())}, nil
	}
	r3M(s.Register(d))
	var observed *runtime.Result
	r3M(s.OnResult(func(_ context.Context, _ runtime.Execution, r *runtime.Result) error { observed = r; return nil }))
	res := r3Exec(t, s, context.Background(), r3Call("t", nil))
	r3Success(t, res, "1")
	assert.Equal(t, []runtime.Block{runtime.Text("finalized: 1")}, res.Content())
	m, ok := res.Meta()
	require.True(t, ok)
	assert.JSONEq(t, `{"of":1}`, string(m))
	assert.True(t, res.ConcludesTurn())
	assert.Equal(t, []runtime.ContextMessage{{Role: "system", Text: "d"}}, res.AdditionalContexts())
	assert.Equal(t, int32(1), calls.Load())
	assert.Equal(t, res.Content(), observed.Content(), "observers see the finalized result")
}

func TestExecute_R72_FinalizerNilKeepsContent(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	d := r3Const("t", 3)
	d.FinalizeContent = func(context.Context, runtime.Execution, *runtime.Result) ([]runtime.Block, error) { return nil, nil }
	r3M(s.Register(d))
	res := r3Exec(t, s, context.Background(), r3Call("t", nil))
	assert.Equal(t, []runtime.Block{runtime.Text("3")}, res.Content())
}

func TestExecute_R72_PanickingOrUnsafeFinalizerBecomesFailureNotCalledAgain(t *testing.T) {
	cases := map[string]struct {
		fin  func(context.Context, runtime.Execution, *runtime.Result) ([]runtime.Block, error)
		want string
	}{
		"panic": {fin: func(context.Context, runtime.Execution, *runtime.Result) ([]runtime.Block, error) {
			panic("finalizer boom")
		}, want: "finalizer boom"},
		"error": {fin: func(context.Context, runtime.Execution, *runtime.Result) ([]runtime.Block, error) {
			return nil, errors.New("finalizer err")
		}, want: "finalizer err"},
		"unsafe content": {fin: func(context.Context, runtime.Execution, *runtime.Result) ([]runtime.Block, error) {
			return []runtime.Block{{Type: "image", Data: json.RawMessage(`nope`)}}, nil
		}, want: "tool result must be losslessly JSON-serializable"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			reg := r3Reg(t)
			s := r3Scope(t, reg, "a")
			var calls atomic.Int32
			d := r3MetaTool(1, true, nil)
			d.FinalizeContent = func(_ context.Context, e runtime.Execution, r *runtime.Result) ([]runtime.Block, error) {
				calls.Add(1)
				return c.fin(e.Context(), e, r)
			}
			r3M(s.Register(d))
			var obs atomic.Int32
			r3M(s.OnResult(func(context.Context, runtime.Execution, *runtime.Result) error { obs.Add(1); return nil }))
			res := r3Exec(t, s, context.Background(), r3Call("t", nil))
			r3Plain(t, res, c.want)
			assert.Equal(t, int32(1), calls.Load())
			assert.Equal(t, int32(1), obs.Load())
			_, hasMeta := res.Meta()
			assert.False(t, hasMeta)
			assert.Empty(t, res.AdditionalContexts())
		})
	}
}

func TestExecute_R72_UnsafeCandidateMaterializationFailure(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	var finSaw string
	d := r3Const("t", 1)
	d.FinalizeContent = func(_ context.Context, _ runtime.Execution, r *runtime.Result) ([]runtime.Block, error) {
		finSaw = r.ErrorMessage()
		return nil, nil
	}
	r3M(s.Register(d))
	r3M(s.OnExecute(func(ctx context.Context, e runtime.Execution, next func(context.Context) *runtime.Result) (*runtime.Result, error) {
		_ = next(nil)
		return runtime.Failure(errors.New("w")).WithContent(runtime.Block{Type: "blob", Data: json.RawMessage(`{x`)}), nil
	}))
	res := r3Exec(t, s, context.Background(), r3Call("t", nil))
	r3Plain(t, res, "tool result must be losslessly JSON-serializable")
	assert.Equal(t, "tool result must be losslessly JSON-serializable", finSaw)
}

func TestExecute_R73_FinalizerRunsForFinalFailuresArgFailureAndPreCancel(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	var seen r3Trace
	d := r3Const("t", 1)
	d.FinalizeContent = func(_ context.Context, _ runtime.Execution, r *runtime.Result) ([]runtime.Block, error) {
		seen.add(r.ErrorMessage())
		return nil, nil
	}
	r3M(s.Register(d))
	var preFail atomic.Bool
	r3M(s.OnPreExecute(func(_ context.Context, e runtime.Execution, next func() (runtime.Decision, error)) (runtime.Decision, error) {
		if preFail.Load() {
			panic("pre failed")
		}
		return next()
	}))
	r3Exec(t, s, context.Background(), r3Call("t", math.NaN()))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r3Exec(t, s, ctx, r3Call("t", nil))
	preFail.Store(true)
	r3Exec(t, s, context.Background(), r3Call("t", nil))
	assert.Equal(t, []string{
		"tool execution arguments must be losslessly JSON-serializable",
		"tool call aborted before dispatch",
		"pre failed",
	}, seen.get())
}

func TestExecute_R75_ObserversOnceInOrderFailuresContained(t *testing.T) {
	var handled []error
	var hmu sync.Mutex
	reg := r3Reg(t, runtime.WithErrorHandler(func(err error) {
		hmu.Lock()
		handled = append(handled, err)
		hmu.Unlock()
	}))
	s := r3Scope(t, reg, "a")
	r3M(s.Register(r3Const("t", 1)))
	var tr r3Trace
	r3M(s.OnResult(func(_ context.Context, e runtime.Execution, r *runtime.Result) error {
		tr.add("o1")
		assert.Equal(t, "caller", e.Context().Value(r3Key{}))
		panic("observer panic")
	}))
	r3M(reg.Global().OnResult(func(context.Context, runtime.Execution, *runtime.Result) error {
		tr.add("o2")
		return errors.New("observer error")
	}))
	r3M(s.OnResult(func(context.Context, runtime.Execution, *runtime.Result) error { tr.add("o3"); return nil }))
	r3M(s.OnResult(func(context.Context, runtime.Execution, *runtime.Result) error { tr.add("o0"); return nil }, runtime.WithPrepend()))
	res := r3Exec(t, s, context.WithValue(context.Background(), r3Key{}, "caller"), runtime.Call{ID: "obs-call", Name: "t"})
	r3Success(t, res, "1")
	assert.Equal(t, []string{"o0", "o1", "o2", "o3"}, tr.get())
	hmu.Lock()
	got := append([]error(nil), handled...)
	hmu.Unlock()
	require.Len(t, got, 2, "one report per observer failure")
	assert.Contains(t, got[0].Error(), "observer panic")
	assert.Contains(t, got[0].Error(), "obs-call")
	assert.Contains(t, got[1].Error(), "observer error")
	// The scope keeps serving.
	r3Success(t, r3Exec(t, s, context.WithValue(context.Background(), r3Key{}, "caller"), r3Call("t", nil)), "1")
}

func TestExecute_R76_ImmutableOutcome(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	r3M(s.Register(r3MetaTool(map[string]any{"k": "v"}, false, nil)))
	var observed *runtime.Result
	r3M(s.OnResult(func(_ context.Context, _ runtime.Execution, r *runtime.Result) error {
		observed = r
		c := r.Content()
		c[0].Text = "observer mutated"
		v, _ := r.Value()
		v[0] = '['
		return nil
	}))
	res := r3Exec(t, s, context.Background(), r3Call("t", nil))
	r3Success(t, res, `{"k":"v"}`)
	assert.Equal(t, []runtime.Block{runtime.Text(`{"k":"v"}`)}, res.Content())

	c := res.Content()
	c[0].Text = "caller mutated"
	v, _ := res.Value()
	v[0] = '['
	m, _ := res.Meta()
	m[0] = '['
	ctxs := res.AdditionalContexts()
	ctxs[0].Text = "caller mutated"

	for _, r := range []*runtime.Result{observed, res} {
		assert.Equal(t, []runtime.Block{runtime.Text(`{"k":"v"}`)}, r.Content())
		vv, ok := r.Value()
		require.True(t, ok)
		assert.JSONEq(t, `{"k":"v"}`, string(vv))
		mm, ok := r.Meta()
		require.True(t, ok)
		assert.JSONEq(t, `{"of":{"k":"v"}}`, string(mm))
		assert.Equal(t, []runtime.ContextMessage{{Role: "system", Text: "d"}}, r.AdditionalContexts())
	}
}

func TestExecute_R76_Invariants(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	r3M(s.Register(r3Const("null", nil)))
	r3M(s.Register(r3MetaTool(1, true, errors.New("bad"))))
	res := r3Exec(t, s, context.Background(), r3Call("null", nil))
	r3Success(t, res, "null") // success ⇒ Value present, possibly JSON null
	res = r3Exec(t, s, context.Background(), r3Call("t", nil))
	require.True(t, res.IsError())
	assert.Equal(t, "bad", res.ErrorMessage())
	_, hasV := res.Value()
	assert.False(t, hasV)
	assert.False(t, res.ConcludesTurn(), "R78: no failure carries ConcludesTurn")
	_, hasMeta := res.Meta()
	assert.False(t, hasMeta, "Meta on a failure only if a wrapper authored it")
	assert.Equal(t, []runtime.ContextMessage{{Role: "system", Text: "d"}}, res.AdditionalContexts(), "R77: deferred survive body failure")
}

// ---------------------------------------------------------------- R77–R78

func TestExecute_R77_DeferContextOrderAndSurvival(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	r3M(s.Register(r3Tool("t", func(_ context.Context, _ json.RawMessage, rc *runtime.RunContext) (any, error) {
		for i := range 3 {
			rc.DeferContext(runtime.ContextMessage{Role: "system", Text: string(rune('a' + i))})
		}
		return nil, errors.New("failed anyway")
	})))
	res := r3Exec(t, s, context.Background(), r3Call("t", nil))
	require.True(t, res.IsError())
	assert.Equal(t, []runtime.ContextMessage{{Role: "system", Text: "a"}, {Role: "system", Text: "b"}, {Role: "system", Text: "c"}}, res.AdditionalContexts())
}

func TestExecute_R78_ConcludeTurnAndCompositeForwarding(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	r3M(s.Register(r3Tool("inner", func(_ context.Context, _ json.RawMessage, rc *runtime.RunContext) (any, error) {
		rc.ConcludeTurn()
		return "inner", nil
	})))
	r3M(s.Register(r3Tool("composite", func(ctx context.Context, _ json.RawMessage, rc *runtime.RunContext) (any, error) {
		r := s.Execute(ctx, runtime.Call{ID: "n", Name: "inner", Parent: rc.Token()})
		if r.ConcludesTurn() {
			rc.ConcludeTurn()
		}
		return "outer", nil
	})))
	r3M(s.Register(r3Const("plain", 1)))
	res := r3Exec(t, s, context.Background(), r3Call("inner", nil))
	r3Success(t, res, `"inner"`)
	assert.True(t, res.ConcludesTurn())
	res = r3Exec(t, s, context.Background(), r3Call("composite", nil))
	r3Success(t, res, `"outer"`)
	assert.True(t, res.ConcludesTurn())
	assert.False(t, r3Exec(t, s, context.Background(), r3Call("plain", nil)).ConcludesTurn())
}

// ------------------------------------------------- panics keep the scope up

func TestExecute_PanickingCallbacksBecomeResultsAndScopeKeepsServing(t *testing.T) {
	type tc struct {
		setup func(t *testing.T, reg *runtime.Registry, s *runtime.Scope)
		check func(t *testing.T, r *runtime.Result)
		opts  func(trigger *atomic.Bool) []runtime.Option
	}
	cases := map[string]tc{
		"body": {
			setup: func(t *testing.T, _ *runtime.Registry, s *runtime.Scope) {
				r3M(s.Register(r3Tool("x", func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) { panic("boom") })))
			},
			check: func(t *testing.T, r *runtime.Result) { r3Plain(t, r, "boom") },
		},
		"body panics with coded error": {
			setup: func(t *testing.T, _ *runtime.Registry, s *runtime.Scope) {
				r3M(s.Register(r3Tool("x", func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) {
					panic(runtime.NewError("BodyErr", "BODY", "coded boom"))
				})))
			},
			check: func(t *testing.T, r *runtime.Result) { r3Coded(t, r, "BodyErr", "BODY", "coded boom") },
		},
		"pre-execute hook": {
			setup: func(t *testing.T, _ *runtime.Registry, s *runtime.Scope) {
				r3M(s.Register(r3Const("x", 1)))
				r3M(s.OnPreExecute(func(_ context.Context, e runtime.Execution, next func() (runtime.Decision, error)) (runtime.Decision, error) {
					if e.Name() == "x" {
						panic("boom")
					}
					return next()
				}))
			},
			check: func(t *testing.T, r *runtime.Result) { r3Plain(t, r, "boom") },
		},
		"around hook": {
			setup: func(t *testing.T, _ *runtime.Registry, s *runtime.Scope) {
				r3M(s.Register(r3Const("x", 1)))
				r3M(s.OnExecute(func(ctx context.Context, e runtime.Execution, next func(context.Context) *runtime.Result) (*runtime.Result, error) {
					if e.Name() == "x" {
						panic("boom")
					}
					return next(nil), nil
				}))
			},
			check: func(t *testing.T, r *runtime.Result) { r3Plain(t, r, "boom") },
		},
		"post-execute hook": {
			setup: func(t *testing.T, _ *runtime.Registry, s *runtime.Scope) {
				r3M(s.Register(r3Const("x", 1)))
				r3M(s.OnPostExecute(func(_ context.Context, e runtime.Execution, _ *runtime.Result, next func() (runtime.PostDecision, error)) (runtime.PostDecision, error) {
					if e.Name() == "x" {
						panic("boom")
					}
					return next()
				}))
			},
			check: func(t *testing.T, r *runtime.Result) { r3Plain(t, r, "boom") },
		},
		"guard": {
			setup: func(t *testing.T, _ *runtime.Registry, s *runtime.Scope) {
				r3M(s.Register(r3Const("x", 1)))
				r3M(s.Guard(func(_ context.Context, e runtime.Execution) (string, bool) {
					if e.Name() == "x" {
						panic("boom")
					}
					return "", false
				}))
			},
			check: func(t *testing.T, r *runtime.Result) { r3Plain(t, r, "boom") },
		},
		"classifier": {
			setup: func(t *testing.T, _ *runtime.Registry, s *runtime.Scope) {
				d := r3Const("x", 1)
				d.IsConcurrencySafe = func(context.Context, json.RawMessage) (bool, error) { panic("boom") }
				r3M(s.Register(d))
				assert.Equal(t, runtime.Exclusive, s.ExecutionMode(r3Call("x", nil)))
			},
			check: func(t *testing.T, r *runtime.Result) { r3Success(t, r, "1") },
		},
		"renderer": {
			setup: func(t *testing.T, _ *runtime.Registry, s *runtime.Scope) {
				d := r3Const("x", 1)
				d.Output.Render = func(_ context.Context, _, _ json.RawMessage) ([]runtime.Block, error) { panic("boom") }
				r3M(s.Register(d))
			},
			check: func(t *testing.T, r *runtime.Result) {
				r3Coded(t, r, runtime.NameToolOutput, runtime.CodeInvalidToolOutput, `tool "x" returned invalid output: Output.Render failed: boom`)
			},
		},
		"finalizer": {
			setup: func(t *testing.T, _ *runtime.Registry, s *runtime.Scope) {
				d := r3Const("x", 1)
				d.FinalizeContent = func(context.Context, runtime.Execution, *runtime.Result) ([]runtime.Block, error) { panic("boom") }
				r3M(s.Register(d))
			},
			check: func(t *testing.T, r *runtime.Result) { r3Plain(t, r, "boom") },
		},
		"observer": {
			setup: func(t *testing.T, _ *runtime.Registry, s *runtime.Scope) {
				r3M(s.Register(r3Const("x", 1)))
				r3M(s.OnResult(func(context.Context, runtime.Execution, *runtime.Result) error { panic("boom") }))
			},
			check: func(t *testing.T, r *runtime.Result) { r3Success(t, r, "1") },
		},
		"approver": {
			opts: func(trigger *atomic.Bool) []runtime.Option {
				return []runtime.Option{runtime.WithApprover(func(context.Context, runtime.ApprovalRequest) (runtime.ApprovalOutcome, error) {
					panic("boom")
				})}
			},
			setup: func(t *testing.T, _ *runtime.Registry, s *runtime.Scope) {
				r3M(s.Register(r3Const("x", 1)))
				r3M(s.OnPreExecute(func(_ context.Context, e runtime.Execution, next func() (runtime.Decision, error)) (runtime.Decision, error) {
					if e.Name() == "x" {
						return runtime.Ask(), nil
					}
					return next()
				}))
			},
			check: func(t *testing.T, r *runtime.Result) { r3Plain(t, r, "boom") },
		},
		"error with panicking Error method": {
			setup: func(t *testing.T, _ *runtime.Registry, s *runtime.Scope) {
				r3M(s.Register(r3Tool("x", func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) {
					return nil, r3BadErr{}
				})))
			},
			check: func(t *testing.T, r *runtime.Result) { r3Plain(t, r, "<unprintable value>") },
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			var opts []runtime.Option
			if c.opts != nil {
				opts = c.opts(nil)
			}
			reg := r3Reg(t, opts...)
			s := r3Scope(t, reg, "a")
			r3M(s.Register(r3Const("healthy", "fine")))
			c.setup(t, reg, s)
			c.check(t, r3Exec(t, s, context.Background(), r3Call("x", nil)))
			for range 3 {
				r3Success(t, r3Exec(t, s, context.Background(), r3Call("healthy", nil)), `"fine"`)
			}
			c.check(t, r3Exec(t, s, context.Background(), r3Call("x", nil)))
		})
	}
}

type r3BadErr struct{}

func (r3BadErr) Error() string { panic("cannot print") }
