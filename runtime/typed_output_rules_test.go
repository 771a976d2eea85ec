package runtime_test

import (
	"context"
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolscope/toolscope/runtime"
)

type lossyOut struct {
	X float64 `json:"x"`
}

type badMarshaler struct{}

func (badMarshaler) MarshalJSON() ([]byte, error) { return nil, assert.AnError }

// TestTyped_R62_LossyOutputIsInvalidToolOutput: a NewTool body returning a
// value encoding/json cannot encode (NaN, ±Inf, a failing MarshalJSON)
// fails exactly as a raw tool returning a lossy value does: the coded
// INVALID_TOOL_OUTPUT "value is not lossless JSON" (R62 step 1, R63, R105),
// which post-execute sees as an ordinary dispatch failure.
func TestTyped_R62_LossyOutputIsInvalidToolOutput(t *testing.T) {
	reg, err := runtime.New()
	require.NoError(t, err)
	t.Cleanup(func() { _ = reg.Close(context.Background()) })
	g := reg.Global()

	raw := runtime.Definition{
		Name:   "raw",
		Output: &runtime.Output{Schema: map[string]any{}, Render: func(_ context.Context, _, v json.RawMessage) ([]runtime.Block, error) { return nil, nil }},
		Execute: func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) {
			return map[string]any{"x": math.NaN()}, nil
		},
	}
	_, err = g.Register(raw)
	require.NoError(t, err)
	register := func(d runtime.Definition, err error) {
		t.Helper()
		require.NoError(t, err)
		_, err = g.Register(d)
		require.NoError(t, err)
	}
	register(runtime.NewTool("nan", "", func(context.Context, struct{}, *runtime.RunContext) (lossyOut, error) {
		return lossyOut{X: math.NaN()}, nil
	}))
	register(runtime.NewTool("inf", "", func(context.Context, struct{}, *runtime.RunContext) (map[string]float64, error) {
		return map[string]float64{"x": math.Inf(-1)}, nil
	}))
	register(runtime.NewTool("float32", "", func(context.Context, struct{}, *runtime.RunContext) (float32, error) {
		return float32(math.Inf(1)), nil
	}))
	register(runtime.NewTool("marshaler", "", func(context.Context, struct{}, *runtime.RunContext) (badMarshaler, error) {
		return badMarshaler{}, nil
	}))
	var posts []string
	_, err = g.OnPostExecute(func(_ context.Context, e runtime.Execution, r *runtime.Result, next func() (runtime.PostDecision, error)) (runtime.PostDecision, error) {
		posts = append(posts, e.Name()+":"+string(r.Code()))
		return next()
	})
	require.NoError(t, err)

	for _, name := range []string{"raw", "nan", "inf", "float32", "marshaler"} {
		res := reg.Execute(context.Background(), runtime.Call{ID: name, Name: name, Arguments: json.RawMessage(`{}`)})
		require.True(t, res.IsError(), name)
		assert.Equal(t, runtime.CodeInvalidToolOutput, res.Code(), name)
		assert.Equal(t, `tool "`+name+`" returned invalid output: value is not lossless JSON`, res.ErrorMessage(), name)
		gotName, code, ok := res.ErrorInfo()
		assert.True(t, ok, name)
		assert.Equal(t, runtime.NameToolOutput, gotName, name)
		assert.Equal(t, runtime.CodeInvalidToolOutput, code, name)
	}
	assert.Equal(t, []string{"raw:INVALID_TOOL_OUTPUT", "nan:INVALID_TOOL_OUTPUT", "inf:INVALID_TOOL_OUTPUT",
		"float32:INVALID_TOOL_OUTPUT", "marshaler:INVALID_TOOL_OUTPUT"}, posts)
}
