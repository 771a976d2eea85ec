package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolscope/toolscope/runtime"
)

// sharedSchema is levels object schemas, each declaring two properties
// that share the schema below: 2^levels leaves once written as JSON.
func sharedSchema(levels int) map[string]any {
	s := map[string]any{"type": "string"}
	for range levels {
		s = map[string]any{"type": "object", "properties": map[string]any{"a": s, "b": s}}
	}
	return s
}

func assertUnsupportedSchema(t *testing.T, err error, contains string) {
	t.Helper()
	var coded runtime.Coded
	if assert.True(t, errors.As(err, &coded), "want a coded error, got %v", err) {
		assert.Equal(t, runtime.CodeUnsupportedSchema, runtime.Code(coded.Code()))
		assert.Contains(t, err.Error(), contains)
	}
}

// TestSchema_R100_SharedSubschemaBounded: a sub-schema shared by sibling
// positions (R100) at 81 levels is refused promptly, with work and memory
// linear in the input, by every path a DAG of Go maps reaches from
// Register, NewTool, Execute and ValidateValue; the refusal is the coded
// UNSUPPORTED_SCHEMA error saying why.
func TestSchema_R100_SharedSubschemaBounded(t *testing.T) {
	reg, err := runtime.New()
	require.NoError(t, err)
	t.Cleanup(func() { _ = reg.Close(context.Background()) })
	dag := sharedSchema(81)
	render := func(_ context.Context, _, v json.RawMessage) ([]runtime.Block, error) { return nil, nil }
	withinOrDump(t, 20*time.Second, "Register, NewTool and Execute with 81 shared levels", func() {
		_, err := reg.Global().Register(runtime.Definition{Name: "out", Output: &runtime.Output{Schema: dag, Render: render},
			Execute: func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) { return nil, nil }})
		assertUnsupportedSchema(t, err, "schema expands to more than 65536 repeated values")

		_, err = reg.Global().Register(runtime.Definition{Name: "params", Parameters: dag,
			Output:  &runtime.Output{Schema: map[string]any{}, Render: render},
			Execute: func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) { return nil, nil }})
		assertUnsupportedSchema(t, err, "parameters expand to more than 65536 repeated values")

		body := func(context.Context, struct{}, *runtime.RunContext) (string, error) { return "", nil }
		_, err = runtime.NewTool("typed", "", body, runtime.WithParametersSchema(dag))
		assertUnsupportedSchema(t, err, "schema expands to more than 65536 repeated values")
		_, err = runtime.NewTool("typed", "", body, runtime.WithOutputSchema(dag))
		assertUnsupportedSchema(t, err, "schema expands to more than 65536 repeated values")

		_, err = runtime.ValidateValue(dag, "x")
		assertUnsupportedSchema(t, err, "schema expands to more than 65536 repeated values")
		violations, err := runtime.ValidateValue(map[string]any{}, dag)
		assert.NoError(t, err)
		assert.Equal(t, []string{`"value" must be a lossless JSON value`}, violations)

		// A DAG as arguments or output is not lossless JSON either.
		_, err = reg.Global().Register(runtime.Definition{Name: "echo", Output: &runtime.Output{Schema: map[string]any{}, Render: render},
			IsConcurrencySafe: func(context.Context, json.RawMessage) (bool, error) { return true, nil },
			Execute:           func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) { return dag, nil }})
		if !assert.NoError(t, err) {
			return
		}
		res := reg.Execute(context.Background(), runtime.Call{ID: "a", Name: "echo", Arguments: dag})
		assert.Equal(t, "tool execution arguments must be losslessly JSON-serializable", res.ErrorMessage())
		assert.Equal(t, runtime.Exclusive, reg.View("").ExecutionMode(runtime.Call{Name: "echo", Arguments: dag}))
		res = reg.Execute(context.Background(), runtime.Call{ID: "b", Name: "echo", Arguments: json.RawMessage(`{}`)})
		assert.Equal(t, `tool "echo" returned invalid output: value is not lossless JSON`, res.ErrorMessage())
		assert.True(t, runtime.Success(dag).IsError())
	})
	_, ok := reg.View("").Get("out")
	assert.False(t, ok, "nothing was registered")
}

// TestSchema_R100_SharedSubschemaAccepted: moderate sharing registers and
// reads back as the expanded tree it stands for, in Get and Schemas.
func TestSchema_R100_SharedSubschemaAccepted(t *testing.T) {
	reg, err := runtime.New()
	require.NoError(t, err)
	t.Cleanup(func() { _ = reg.Close(context.Background()) })
	dag := sharedSchema(6)
	want, err := json.Marshal(dag) // encoding/json expands it
	require.NoError(t, err)
	_, err = reg.Global().Register(runtime.Definition{Name: "t", Parameters: dag,
		Output:  &runtime.Output{Schema: dag, Render: func(_ context.Context, _, v json.RawMessage) ([]runtime.Block, error) { return nil, nil }},
		Execute: func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) { return nil, nil }})
	require.NoError(t, err)
	def, ok := reg.View("").Get("t")
	require.True(t, ok)
	assert.JSONEq(t, string(want), string(def.Output.Schema.(json.RawMessage)))
	assert.JSONEq(t, string(want), string(def.Parameters.(json.RawMessage)))
	ss, err := reg.View("").Schemas()
	require.NoError(t, err)
	require.Len(t, ss, 1)
	assert.JSONEq(t, string(want), string(ss[0].Parameters))
	assert.Equal(t, 1<<6, strings.Count(string(ss[0].Parameters), `{"type":"string"}`))
}
