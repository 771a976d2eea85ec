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
		Output:      &runtime.Output{Schema: map[string]any{}, Render: func(_, v json.RawMessage) ([]runtime.Block, error) { return nil, nil }},
		Execute:     func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) { return nil, nil },
	})
	require.NoError(t, err)
	ss, err := reg.Schemas("")
	require.NoError(t, err)
	b, err := json.Marshal(ss)
	require.NoError(t, err)
	assert.JSONEq(t, `[{"name":"read","description":"reads a file","parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}]`, string(b))

	var back []runtime.ToolSchema
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, ss, back)
}
