package runtime_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolscope/toolscope/messages"
	"github.com/toolscope/toolscope/runtime"
)

// Regression tests for the input defects of issue 11 (§3, §4, §5).

// TestProtocol_ResultFromProtoNilIsEmpty: a nil *messages.Result reads as
// the empty message (what the generated getters return for nil), not a
// panic.
func TestProtocol_ResultFromProtoNilIsEmpty(t *testing.T) {
	var r *runtime.Result
	require.NotPanics(t, func() { r = runtime.ResultFromProto(nil) })
	require.NotNil(t, r)
	empty := runtime.ResultFromProto(&messages.Result{})
	assert.Equal(t, empty.IsError(), r.IsError())
	_, hasValue := r.Value()
	assert.False(t, hasValue)
	_, hasMeta := r.Meta()
	assert.False(t, hasMeta)
	assert.Empty(t, r.Content())
	assert.Empty(t, r.AdditionalContexts())
	assert.False(t, r.ConcludesTurn())
	assert.Equal(t, empty.Proto().String(), r.Proto().String())
}

// TestSchemas_R31_ModelFacingJSONNames: a ToolSchema marshals with the
// names every model API uses and round-trips, Parameters included.
func TestSchemas_R31_ModelFacingJSONNames(t *testing.T) {
	reg, err := runtime.New()
	require.NoError(t, err)
	t.Cleanup(func() { _ = reg.Close(context.Background()) })
	_, err = reg.Global().Register(runtime.Definition{
		Name:        "read",
		Description: "reads a file",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`),
		Output:      &runtime.Output{Schema: map[string]any{}, Render: func(_ context.Context, _, v json.RawMessage) ([]runtime.Block, error) { return nil, nil }},
		Execute:     func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) { return nil, nil },
	})
	require.NoError(t, err)
	ss, err := reg.View("").Schemas()
	require.NoError(t, err)
	b, err := json.Marshal(ss)
	require.NoError(t, err)
	assert.JSONEq(t, `[{"name":"read","description":"reads a file","parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}]`, string(b))

	var back []runtime.ToolSchema
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, ss, back)
}

// TestLossless_R47_LiteralsNotFiniteAsFloat64: a number literal that is
// ±Inf or −0 as a float64 (1e999, 2e308, -1e-400) is refused like the
// literal -0 at every entry point: Call.Arguments text, a turn's argument
// text (R91, R48), a body's json.RawMessage output
// (R62), Block.Data (R62 step 3) and Parameters (R33).
func TestLossless_R47_LiteralsNotFiniteAsFloat64(t *testing.T) {
	reg, err := runtime.New()
	require.NoError(t, err)
	t.Cleanup(func() { _ = reg.Close(context.Background()) })
	g := reg.Global()
	render := func(_ context.Context, _, v json.RawMessage) ([]runtime.Block, error) {
		return []runtime.Block{runtime.Text(string(v))}, nil
	}
	var lastArgs json.RawMessage
	echo := func(_ context.Context, args json.RawMessage, _ *runtime.RunContext) (any, error) {
		lastArgs = args
		return "ok", nil
	}
	_, err = g.Register(runtime.Definition{Name: "echo", Output: &runtime.Output{Schema: map[string]any{}, Render: render}, Execute: echo})
	require.NoError(t, err)
	var out json.RawMessage
	_, err = g.Register(runtime.Definition{Name: "out", Output: &runtime.Output{Schema: map[string]any{}, Render: render},
		Execute: func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) { return out, nil }})
	require.NoError(t, err)
	var data json.RawMessage
	_, err = g.Register(runtime.Definition{Name: "block", Output: &runtime.Output{Schema: map[string]any{},
		Render: func(_ context.Context, _, v json.RawMessage) ([]runtime.Block, error) {
			return []runtime.Block{{Type: "json", Data: data}}, nil
		}},
		Execute: func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) { return "ok", nil }})
	require.NoError(t, err)
	s, err := reg.NewScope("agent")
	require.NoError(t, err)

	for _, lit := range []string{"1e999", "2e308", "-2e308", "-1e-400", "-0"} {
		t.Run(lit, func(t *testing.T) {
			res := reg.Execute(context.Background(), runtime.Call{ID: "a", Name: "echo", Arguments: json.RawMessage(`{"n":` + lit + `}`)})
			assert.Equal(t, "tool execution arguments must be losslessly JSON-serializable", res.ErrorMessage())
			res = reg.Execute(context.Background(), runtime.Call{ID: "a", Name: "echo", Arguments: map[string]any{"n": json.Number(lit)}})
			assert.Equal(t, "tool execution arguments must be losslessly JSON-serializable", res.ErrorMessage())

			// Valid JSON text that is not lossless parses, as in the
			// reference, and then fails the snapshot (R91, R48).
			lastArgs = nil
			tr, err := s.ExecuteTurn(context.Background(), []runtime.TurnCall{{ID: "t", Name: "echo", ArgumentsText: `{"n":` + lit + `}`}})
			require.NoError(t, err)
			assert.Equal(t, "tool execution arguments must be losslessly JSON-serializable", tr.Results[0].ErrorMessage())
			assert.Nil(t, lastArgs, "the body is not invoked")

			out = json.RawMessage(`{"x":[` + lit + `]}`)
			res = reg.Execute(context.Background(), runtime.Call{ID: "o", Name: "out", Arguments: json.RawMessage(`{}`)})
			assert.Equal(t, runtime.CodeInvalidToolOutput, res.Code())
			assert.Equal(t, `tool "out" returned invalid output: value is not lossless JSON`, res.ErrorMessage())

			data = json.RawMessage(`{"x":` + lit + `}`)
			res = reg.Execute(context.Background(), runtime.Call{ID: "b", Name: "block", Arguments: json.RawMessage(`{}`)})
			assert.Equal(t, runtime.CodeInvalidToolOutput, res.Code())
			assert.Equal(t, `tool "block" returned invalid output: Output.Render returned non-lossless JSON`, res.ErrorMessage())

			dispose, err := s.Register(runtime.Definition{Name: "params", Parameters: json.RawMessage(`{"type":"number","default":` + lit + `}`),
				Output: &runtime.Output{Schema: map[string]any{}, Render: render}, Execute: echo})
			require.NoError(t, err, "parameters are not validated at Register (R11)")
			_, err = s.Schemas()
			assert.EqualError(t, err, `tool "params" parameters must be lossless JSON before schema projection`)
			dispose()
		})
	}
	// The finite neighbours still pass.
	res := reg.Execute(context.Background(), runtime.Call{ID: "a", Name: "echo", Arguments: json.RawMessage(`{"n":[1e308,1e-400,-4.9e-324]}`)})
	require.False(t, res.IsError(), res.ErrorMessage())
	assert.JSONEq(t, `{"n":[1e308,1e-400,-4.9e-324]}`, string(lastArgs))
}
