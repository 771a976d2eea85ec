package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolscope/toolscope/runtime"
)

// schemaOfSize returns a valid object schema whose JSON text is exactly n
// bytes (n >= 64): the length is in a description.
func schemaOfSize(n int) json.RawMessage {
	head, tail := `{"type":"object","description":"`, `"}`
	return json.RawMessage(head + strings.Repeat("d", n-len(head)-len(tail)) + tail)
}

// argsOfSize returns a JSON object of exactly n bytes (n >= 16).
func argsOfSize(n int) json.RawMessage {
	head, tail := `{"s":"`, `"}`
	return json.RawMessage(head + strings.Repeat("a", n-len(head)-len(tail)) + tail)
}

// requireSchemaTooLarge checks err is Register's refusal of a schema over
// the bound: the coded UNSUPPORTED_SCHEMA error naming the schema, its
// size and the bound.
func requireSchemaTooLarge(t *testing.T, err error, what string, size, bound int) {
	t.Helper()
	require.Error(t, err, "a %s schema of %d bytes, bound %d", what, size, bound)
	var ce *runtime.Error
	require.True(t, errors.As(err, &ce), "coded: %v", err)
	assert.Equal(t, string(runtime.CodeUnsupportedSchema), ce.Code())
	assert.Contains(t, err.Error(), what)
	assert.Contains(t, err.Error(), itoa(size))
	assert.Contains(t, err.Error(), itoa(bound))
}

func itoa(n int) string { return strconv.Itoa(n) }

// A registry refuses a schema whose text is longer than its bound
// (WithMaxSchemaBytes; DefaultMaxSchemaBytes, 1 MiB, without it) with the
// coded UNSUPPORTED_SCHEMA error, before parsing it — parameters and
// output schema alike, text or Go value — and registers one at the bound
// (issue 20, item 31: a 58 MB schema took 20 s and 2 GB to register).
func TestRegister_SchemaTextOverBoundRefused(t *testing.T) {
	t.Run("default", func(t *testing.T) {
		reg := r3Reg(t)
		g := reg.Global()
		at, over := schemaOfSize(runtime.DefaultMaxSchemaBytes), schemaOfSize(runtime.DefaultMaxSchemaBytes+1)
		d := r3Const("params_over", 1)
		d.Parameters = over
		_, err := g.Register(d)
		requireSchemaTooLarge(t, err, "parameters", len(over), runtime.DefaultMaxSchemaBytes)
		d = r3Const("output_over", 1)
		d.Output.Schema = over
		_, err = g.Register(d)
		requireSchemaTooLarge(t, err, "output", len(over), runtime.DefaultMaxSchemaBytes)
		d = r3Const("at_bound", 1)
		d.Parameters, d.Output.Schema = at, at
		_, err = g.Register(d)
		require.NoError(t, err)
		_, ok := reg.View("").Get("params_over")
		assert.False(t, ok, "nothing registered")
	})
	t.Run("configured", func(t *testing.T) {
		const bound = 200
		reg := r3Reg(t, runtime.WithMaxSchemaBytes(bound))
		g := reg.Global()
		d := r3Const("raw_over", 1)
		d.Output.Schema = schemaOfSize(bound + 1)
		_, err := g.Register(d)
		requireSchemaTooLarge(t, err, "output", bound+1, bound)

		// A Go value is measured by its canonical text.
		goSchema := map[string]any{"type": "object", "description": strings.Repeat("d", bound)}
		d = r3Const("go_over", 1)
		d.Parameters = goSchema
		_, err = g.Register(d)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "parameters")
		d = r3Const("go_output_over", 1)
		d.Output.Schema = goSchema
		_, err = g.Register(d)
		require.Error(t, err)

		d = r3Const("ok", 1)
		d.Parameters, d.Output.Schema = schemaOfSize(bound), schemaOfSize(bound)
		_, err = g.Register(d)
		require.NoError(t, err)
	})
	t.Run("invalid bound", func(t *testing.T) {
		_, err := runtime.New(runtime.WithMaxSchemaBytes(0))
		assert.ErrorIs(t, err, runtime.ErrInvalidConfig)
		_, err = runtime.New(runtime.WithMaxArgumentBytes(-1))
		assert.ErrorIs(t, err, runtime.ErrInvalidConfig)
	})
}

// NewTool, which has no registry, holds the schemas given to it to
// DefaultMaxSchemaBytes, or to its own WithMaxSchemaBytes.
func TestNewTool_SchemaTextOverBoundRefused(t *testing.T) {
	body := func(context.Context, map[string]any, *runtime.RunContext) (string, error) { return "x", nil }
	over := schemaOfSize(runtime.DefaultMaxSchemaBytes + 1)
	_, err := runtime.NewTool("p", "", body, runtime.WithParametersSchema(over))
	requireSchemaTooLarge(t, err, "parameters", len(over), runtime.DefaultMaxSchemaBytes)
	_, err = runtime.NewTool("o", "", body, runtime.WithOutputSchema(over))
	requireSchemaTooLarge(t, err, "output", len(over), runtime.DefaultMaxSchemaBytes)

	_, err = runtime.NewTool("small", "", body, runtime.WithMaxSchemaBytes(100), runtime.WithParametersSchema(schemaOfSize(101)))
	requireSchemaTooLarge(t, err, "parameters", 101, 100)
	_, err = runtime.NewTool("raised", "", body, runtime.WithMaxSchemaBytes(len(over)), runtime.WithParametersSchema(over))
	require.NoError(t, err)
	_, err = runtime.NewTool("bad", "", body, runtime.WithMaxSchemaBytes(0))
	assert.ErrorIs(t, err, runtime.ErrInvalidConfig)
}

// A call whose argument text is longer than the registry's bound
// (WithMaxArgumentBytes) is refused with the coded INVALID_ARGS failure
// before the text is parsed, and — like arguments that are not lossless
// (R48) — runs no hook and no body; its observers see no arguments. The
// bound holds for Execute (text or Go value) and a turn's ArgumentsText
// alike (the protobuf requests' half of this test is in package actors); a
// call at the bound runs (issue 20, item 31).
func TestExecute_ArgumentTextOverBoundInvalidArgs(t *testing.T) {
	const bound = 300
	reg := r3Reg(t, runtime.WithMaxArgumentBytes(bound))
	s := r3Scope(t, reg, "agent")
	var bodies, pres, observed, withArgs atomic.Int32
	r3M(s.Register(r3Tool("echo", func(_ context.Context, args json.RawMessage, _ *runtime.RunContext) (any, error) {
		bodies.Add(1)
		return len(args), nil
	})))
	r3M(s.OnPreExecute(func(_ context.Context, _ runtime.Execution, next func() (runtime.Decision, error)) (runtime.Decision, error) {
		pres.Add(1)
		return next()
	}))
	r3M(s.OnResult(func(_ context.Context, e runtime.Execution, _ *runtime.Result) error {
		observed.Add(1)
		if _, ok := e.Arguments(); ok {
			withArgs.Add(1)
		}
		return nil
	}))
	tooLarge := func(res *runtime.Result, size int) {
		t.Helper()
		require.True(t, res.IsError(), "%d bytes of arguments, bound %d: %s", size, bound, res.Text())
		assert.Equal(t, runtime.CodeInvalidArgs, res.Code())
		assert.Contains(t, res.ErrorMessage(), "invalid arguments")
		assert.Contains(t, res.ErrorMessage(), itoa(size))
		assert.Contains(t, res.ErrorMessage(), itoa(bound))
	}
	ctx := context.Background()

	r3Success(t, s.Execute(ctx, runtime.Call{ID: "at", Name: "echo", Arguments: argsOfSize(bound)}), itoa(bound))
	tooLarge(s.Execute(ctx, runtime.Call{ID: "raw", Name: "echo", Arguments: argsOfSize(bound + 1)}), bound+1)
	goArgs := map[string]any{"s": strings.Repeat("a", bound)} // canonical text: bound+8 bytes
	tooLarge(s.Execute(ctx, runtime.Call{ID: "go", Name: "echo", Arguments: goArgs}), bound+8)
	// Over the bound wins over an unknown name, as R48 does.
	tooLarge(s.Execute(ctx, runtime.Call{ID: "ghost", Name: "ghost", Arguments: argsOfSize(bound + 1)}), bound+1)

	tr, err := s.ExecuteTurn(ctx, []runtime.TurnCall{
		{ID: "t1", Name: "echo", ArgumentsText: string(argsOfSize(bound + 1))},
		{ID: "t2", Name: "echo", ArgumentsText: string(argsOfSize(bound))},
		{ID: "t3", Name: "echo", ArgumentsText: strings.Repeat("x", bound+1)}, // not JSON: still text over the bound
	})
	require.NoError(t, err)
	tooLarge(tr.Results[0], bound+1)
	r3Success(t, tr.Results[1], itoa(bound))
	tooLarge(tr.Results[2], bound+1)

	assert.Equal(t, int32(2), bodies.Load(), "only the calls at the bound ran")
	assert.Equal(t, int32(2), pres.Load(), "no hook ran for a call over the bound")
	assert.Equal(t, int32(7), observed.Load(), "every call's observers were told once")
	assert.Equal(t, int32(2), withArgs.Load(), "a call over the bound has no argument snapshot")
}

// Without WithMaxArgumentBytes the bound is DefaultMaxArgumentBytes.
func TestExecute_DefaultArgumentBound(t *testing.T) {
	reg := r3Reg(t)
	r3M(reg.Global().Register(r3Const("c", 1)))
	res := reg.Global().Execute(context.Background(), runtime.Call{ID: "big", Name: "c", Arguments: argsOfSize(runtime.DefaultMaxArgumentBytes + 1)})
	require.True(t, res.IsError())
	assert.Equal(t, runtime.CodeInvalidArgs, res.Code())
	r3Success(t, reg.Global().Execute(context.Background(), runtime.Call{ID: "ok", Name: "c", Arguments: argsOfSize(runtime.DefaultMaxArgumentBytes)}), "1")
}

// Classification never reads arguments the registry would refuse: over the
// bound, a call is exclusive without its classifier being asked (R36).
func TestExecutionMode_ArgumentsOverBoundExclusive(t *testing.T) {
	const bound = 100
	reg := r3Reg(t, runtime.WithMaxArgumentBytes(bound))
	var asked atomic.Int32
	d := r3Const("par", 1)
	d.IsConcurrencySafe = func(context.Context, json.RawMessage) (bool, error) { asked.Add(1); return true, nil }
	r3M(reg.Global().Register(d))
	v := reg.View("")
	assert.Equal(t, runtime.Parallel, v.ExecutionMode(runtime.Call{Name: "par", Arguments: argsOfSize(bound)}))
	assert.Equal(t, runtime.Exclusive, v.ExecutionMode(runtime.Call{Name: "par", Arguments: argsOfSize(bound + 1)}))
	assert.Equal(t, runtime.Exclusive, v.ExecutionMode(runtime.Call{Name: "par", Arguments: map[string]any{"s": strings.Repeat("a", bound)}}))
	assert.Equal(t, int32(1), asked.Load(), "the classifier saw only the arguments within the bound")
}

// ValidateValue and ValidateArguments hold the schema to
// DefaultMaxSchemaBytes, as Register does by default.
func TestValidateValue_SchemaOverDefaultBoundRefused(t *testing.T) {
	over := schemaOfSize(runtime.DefaultMaxSchemaBytes + 1)
	_, err := runtime.ValidateValue(over, map[string]any{})
	requireSchemaTooLarge(t, err, "schema", len(over), runtime.DefaultMaxSchemaBytes)
	_, err = runtime.ValidateArguments(over, map[string]any{})
	require.Error(t, err)
	v, err := runtime.ValidateValue(schemaOfSize(runtime.DefaultMaxSchemaBytes), map[string]any{})
	require.NoError(t, err)
	assert.Empty(t, v)
}
