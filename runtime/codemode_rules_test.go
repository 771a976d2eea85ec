package runtime_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolscope/toolscope/runtime"
)

// ---- §11 R107: presentation modes ----

// cmRunCode is a run_code whose body answers "ran" and whose description
// lists the view's tools, so a test sees it follow the view.
func cmRunCode(*runtime.Registry) (runtime.RunCodeTool, error) {
	def := rrDef("ignored", "static")
	def.Execute = func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) { return "ran", nil }
	return runtime.RunCodeTool{
		Definition: def,
		Describe: func(key string, tools []runtime.ToolSchema) string {
			names := make([]string, len(tools))
			for i, t := range tools {
				names[i] = t.Name
			}
			return key + ":" + strings.Join(names, ",")
		},
	}, nil
}

func cmNew(t testing.TB, opts ...runtime.Option) *runtime.Registry {
	t.Helper()
	reg, err := runtime.New(append([]runtime.Option{runtime.WithCodeMode(cmRunCode)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = reg.Close(context.Background()) })
	return reg
}

func cmPresent(t testing.TB, s *runtime.Scope, p runtime.Presentation) {
	t.Helper()
	require.NoError(t, s.SetPresentation(p))
}

func TestRunCode_R107_DefaultNativeHasNoRunCode(t *testing.T) {
	reg := cmNew(t)
	rrReg(t, reg.Global(), "read", "R")
	a := rrScope(t, reg, "a")
	for _, key := range []string{"", "a"} {
		assert.Equal(t, []string{"read"}, rrView(t, reg, key))
		assert.Equal(t, []string{"read"}, reg.View(key).Tools())
		_, ok := reg.View(key).Get("run_code")
		assert.False(t, ok)
		assert.Equal(t, runtime.PresentationNative, reg.View(key).Presentation())
	}
	res := rrExec(a, "run_code")
	assert.Equal(t, runtime.CodeUnknownTool, res.Code())
	assert.Equal(t, `unknown tool "run_code"`, res.ErrorMessage())
	assert.Equal(t, "R", rrExec(a, "read").Text(), "native: direct calls run")
}

func TestRunCode_R107_CodeModeAppendsRunCodeAndCollapsesDirectCalls(t *testing.T) {
	reg := cmNew(t)
	g := reg.Global()
	rrReg(t, g, "read", "R")
	rrReg(t, g, "write", "W")
	a := rrScope(t, reg, "a")
	cmPresent(t, a, runtime.PresentationCode)

	assert.Equal(t, []string{"read", "write", "run_code"}, rrView(t, reg, "a"))
	assert.Equal(t, []string{"read", "write", "run_code"}, a.Tools())
	assert.Equal(t, []string{"read=R", "write=W", "run_code=a:read,write"}, rrViewTags(t, reg, "a"))
	d, ok := a.Get("run_code")
	require.True(t, ok)
	assert.Equal(t, "run_code", d.Name)
	assert.Equal(t, "a:read,write", d.Description, "Get writes the description for the view")
	assert.Equal(t, []string{"read", "write"}, rrView(t, reg, ""), "the global view stays native")

	// Hooks, observers and the finalizer see nothing of a collapsed call.
	var pre, observed, finalized atomic.Int64
	_, err := g.OnPreExecute(func(ctx context.Context, e runtime.Execution, next func() (runtime.Decision, error)) (runtime.Decision, error) {
		pre.Add(1)
		return next()
	})
	require.NoError(t, err)
	_, err = g.OnResult(func(_ context.Context, e runtime.Execution, r *runtime.Result) error { observed.Add(1); return nil })
	require.NoError(t, err)
	fin := rrDef("fin", "F")
	fin.FinalizeContent = func(context.Context, runtime.Execution, *runtime.Result) ([]runtime.Block, error) {
		finalized.Add(1)
		return nil, nil
	}
	_, err = g.Register(fin)
	require.NoError(t, err)

	for _, name := range []string{"read", "fin"} {
		res := rrExec(a, name)
		require.True(t, res.IsError(), name)
		assert.Equal(t, runtime.CodeUnknownTool, res.Code())
		assert.Equal(t, `unknown tool "`+name+`": only run_code can be called directly here; call `+name+` from inside a run_code program`, res.ErrorMessage())
	}
	assert.Zero(t, pre.Load(), "a collapsed call ends before any hook")
	assert.Zero(t, observed.Load())
	assert.Zero(t, finalized.Load(), "the captured finalizer is dropped")

	// A tool the view does not have is a plain unknown tool.
	res := rrExec(a, "nope")
	assert.Equal(t, `unknown tool "nope"`, res.ErrorMessage())
	// run_code itself runs through the pipeline.
	res = rrExec(a, "run_code")
	require.False(t, res.IsError(), res.ErrorMessage())
	assert.Equal(t, "ran", res.Text())
	assert.Equal(t, int64(2), pre.Load())

	// A cancelled ctx: aborted before dispatch, the finalizer kept.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res = a.Execute(ctx, runtime.Call{ID: "x", Name: "fin", Arguments: json.RawMessage(`{}`)})
	assert.Equal(t, runtime.CodeAbortedBeforeDispatch, res.Code())
	assert.Equal(t, int64(1), finalized.Load())
}

func TestRunCode_R107_NestedCallsAreExempt(t *testing.T) {
	reg := cmNew(t)
	g := reg.Global()
	def := rrDef("read", "R")
	def.IsConcurrencySafe = func(context.Context, json.RawMessage) (bool, error) { return true, nil }
	_, err := g.Register(def)
	require.NoError(t, err)
	a := rrScope(t, reg, "a")
	cmPresent(t, a, runtime.PresentationCode)
	// A body calling read with its ctx (the parent inferred, R51) and one
	// with an explicit Parent both reach read.
	outer := rrDef("outer", "O")
	outer.Execute = func(ctx context.Context, _ json.RawMessage, rc *runtime.RunContext) (any, error) {
		inferred := reg.Execute(ctx, runtime.Call{ID: "i1", Name: "read", Agent: "a"})
		explicit := reg.Execute(context.Background(), runtime.Call{ID: "i2", Name: "read", Agent: "a", Parent: rc.Token()})
		mode := reg.View("a").ExecutionMode(runtime.Call{Name: "read", Parent: rc.Token()})
		return inferred.Text() + explicit.Text() + mode.String(), nil
	}
	_, err = reg.Global().Register(outer)
	require.NoError(t, err)
	b := rrScope(t, reg, "b")
	cmPresent(t, b, runtime.PresentationBoth)
	res := b.Execute(context.Background(), runtime.Call{ID: "o", Name: "outer", Agent: "b"})
	require.False(t, res.IsError(), res.ErrorMessage())
	// outer runs in b (both), its nested calls go to a (code): exempt.
	assert.Equal(t, "RR"+runtime.Parallel.String(), res.Text())
	assert.Equal(t, runtime.Exclusive, a.ExecutionMode(runtime.Call{Name: "read"}), "a collapsed call is exclusive")
	assert.Equal(t, runtime.Parallel, b.ExecutionMode(runtime.Call{Name: "read"}))
}

func TestRunCode_R107_BothModeKeepsDirectCalls(t *testing.T) {
	reg := cmNew(t)
	rrReg(t, reg.Global(), "read", "R")
	a := rrScope(t, reg, "a")
	cmPresent(t, a, runtime.PresentationBoth)
	assert.Equal(t, []string{"read", "run_code"}, a.Tools())
	assert.Equal(t, "R", rrExec(a, "read").Text())
	assert.Equal(t, "ran", rrExec(a, "run_code").Text())
}

func TestRunCode_R107_NearestDeclaringScopeWins(t *testing.T) {
	reg := cmNew(t)
	g := reg.Global()
	rrReg(t, g, "read", "R")
	a := rrScope(t, reg, "a")
	b := rrScope(t, a, "b")
	c := rrScope(t, b, "c")
	changes := rrChanges(t, g)

	cmPresent(t, g, runtime.PresentationBoth)
	assert.Equal(t, int64(1), changes.Load(), "a mode change notifies (R88)")
	cmPresent(t, g, runtime.PresentationBoth)
	assert.Equal(t, int64(1), changes.Load(), "declaring the same mode again changes nothing")
	cmPresent(t, a, runtime.PresentationCode)
	cmPresent(t, b, runtime.PresentationNative)
	want := map[string]runtime.Presentation{"": runtime.PresentationBoth, "a": runtime.PresentationCode,
		"b": runtime.PresentationNative, "c": runtime.PresentationNative}
	for key, p := range want {
		assert.Equal(t, p, reg.View(key).Presentation(), key)
	}
	assert.Equal(t, []string{"read"}, c.Tools())
	cmPresent(t, b, runtime.PresentationUnset)
	assert.Equal(t, runtime.PresentationCode, c.Presentation(), "unset inherits the nearest declaration")
	assert.Equal(t, []string{"read", "run_code"}, c.Tools())
	assert.Equal(t, runtime.CodeUnknownTool, rrExec(c, "read").Code())

	// Registry default.
	reg2 := cmNew(t, runtime.WithDefaultPresentation(runtime.PresentationCode))
	rrReg(t, reg2.Global(), "read", "R")
	assert.Equal(t, []string{"read", "run_code"}, reg2.View("").Tools())
	assert.Equal(t, []string{"read", "run_code"}, reg2.View("never-created").Tools())
}

func TestRunCode_R107_ImmuneToRestrictionsAndShadowing(t *testing.T) {
	reg := cmNew(t)
	g := reg.Global()
	rrReg(t, g, "read", "R")
	rrReg(t, g, "write", "W")
	a := rrScope(t, reg, "a")
	cmPresent(t, a, runtime.PresentationCode)
	b := rrScope(t, a, "b")
	_, err := b.Restrict(runtime.Restriction{Allow: []string{"read"}})
	require.NoError(t, err)
	assert.Equal(t, []string{"read", "run_code"}, b.Tools())
	assert.Equal(t, "b:read", rrTag(reg, "run_code", "b"), "the hidden tool is not named")
	_, err = b.Restrict(runtime.Restriction{Deny: []string{"read"}})
	require.NoError(t, err)
	assert.Equal(t, []string{"run_code"}, b.Tools())

	// The name stays reserved from users in every mode.
	for _, s := range []*runtime.Scope{g, a, b} {
		_, err := s.Register(rrDef("run_code", "mine"))
		assert.ErrorIs(t, err, runtime.ErrInvalidDefinition)
	}
	_, err = b.Restrict(runtime.Restriction{Deny: []string{"run_code"}})
	assert.ErrorIs(t, err, runtime.ErrInvalidRestriction)
	assert.Equal(t, "ran", rrExec(b, "run_code").Text())
}

func TestRunCode_R107_TurnCollapsesDirectCalls(t *testing.T) {
	reg := cmNew(t)
	def := rrDef("read", "R")
	def.IsConcurrencySafe = func(context.Context, json.RawMessage) (bool, error) { return true, nil }
	_, err := reg.Global().Register(def)
	require.NoError(t, err)
	a := rrScope(t, reg, "a")
	cmPresent(t, a, runtime.PresentationCode)
	var pre atomic.Int64
	_, err = a.OnPreExecute(func(ctx context.Context, e runtime.Execution, next func() (runtime.Decision, error)) (runtime.Decision, error) {
		pre.Add(1)
		return next()
	})
	require.NoError(t, err)
	tr, err := a.ExecuteTurn(context.Background(), []runtime.TurnCall{{ID: "1", Name: "read"}, {ID: "2", Name: "run_code"}, {ID: "3", Name: "read"}})
	require.NoError(t, err)
	require.Len(t, tr.Results, 3)
	assert.Equal(t, runtime.CodeUnknownTool, tr.Results[0].Code())
	assert.Contains(t, tr.Results[0].ErrorMessage(), "from inside a run_code program")
	assert.Equal(t, "ran", tr.Results[1].Text())
	assert.Equal(t, runtime.CodeUnknownTool, tr.Results[2].Code())
	assert.Equal(t, int64(1), pre.Load(), "only run_code reached the hooks")
}

func TestRunCode_R107_ModesNeedCodeMode(t *testing.T) {
	reg := rrNew(t)
	a := rrScope(t, reg, "a")
	assert.ErrorIs(t, a.SetPresentation(runtime.PresentationCode), runtime.ErrInvalidConfig)
	assert.ErrorIs(t, a.SetPresentation(runtime.PresentationBoth), runtime.ErrInvalidConfig)
	assert.NoError(t, a.SetPresentation(runtime.PresentationNative))
	assert.ErrorIs(t, a.SetPresentation(runtime.Presentation(9)), runtime.ErrInvalidConfig)
	_, err := runtime.New(runtime.WithDefaultPresentation(runtime.PresentationCode))
	assert.ErrorIs(t, err, runtime.ErrInvalidConfig)
	_, err = runtime.New(runtime.WithCodeMode(nil))
	assert.ErrorIs(t, err, runtime.ErrInvalidConfig)
	bad := func(*runtime.Registry) (runtime.RunCodeTool, error) { return runtime.RunCodeTool{}, nil }
	_, err = runtime.New(runtime.WithCodeMode(bad))
	assert.ErrorIs(t, err, runtime.ErrInvalidDefinition, "the definition is validated as Register's")
}
