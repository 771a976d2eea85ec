package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolscope/toolscope/runtime"
)

const validateSchema = `{"type":"object","properties":{"path":{"type":"string"},"line":{"type":"integer"},` +
	`"tags":{"type":"array","items":{"type":"string","enum":["a","b"]}}},"required":["path"],"additionalProperties":false}`

// TestValidateValue_R102_MessagesAsRegistry: the exported validator reports
// what the registry reports, in R102's order and wording, for outputs
// (root "value") and arguments (root shown as "arguments").
func TestValidateValue_R102_MessagesAsRegistry(t *testing.T) {
	schema := json.RawMessage(validateSchema)
	for _, tc := range []struct {
		name  string
		in    any
		value []string
		args  []string
	}{
		{"valid raw", json.RawMessage(`{"path":"x","line":3,"tags":["a"]}`), nil, nil},
		{"valid Go value", map[string]any{"path": "x", "line": 3, "tags": []any{"b"}}, nil, nil},
		{"not an object", json.RawMessage(`[1]`), []string{`"value" must be an object`}, []string{`"arguments" must be an object`}},
		{"walk order", json.RawMessage(`{"line":1.5,"tags":["c",1],"zz":true}`),
			[]string{`missing required property "value.path"`, `"value.line" must be an integer`,
				`"value.tags[0]" must be one of ["a","b"]`, `"value.tags[1]" must be a string`,
				`"value.zz" is not a declared property (additionalProperties: false)`},
			[]string{`missing required property "path"`, `"line" must be an integer`,
				`"tags[0]" must be one of ["a","b"]`, `"tags[1]" must be a string`,
				`"zz" is not a declared property (additionalProperties: false)`}},
		{"NaN where a number is expected", map[string]any{"path": "x", "line": math.NaN()},
			[]string{`"value.line" must be an integer`}, []string{`"line" must be an integer`}},
		{"lossy under an undeclared key", map[string]any{"path": "x", "zz": math.Inf(1)},
			[]string{`"value.zz" is not a declared property (additionalProperties: false)`},
			[]string{`"zz" is not a declared property (additionalProperties: false)`}},
		{"unsupported Go type", map[string]any{"path": struct{}{}},
			[]string{`"value.path" must be a string`}, []string{`"path" must be a string`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := runtime.ValidateValue(schema, tc.in)
			require.NoError(t, err)
			assert.Equal(t, tc.value, got)
			got, err = runtime.ValidateArguments(schema, tc.in)
			require.NoError(t, err)
			assert.Equal(t, tc.args, got)
		})
	}
}

// TestValidateValue_R102_LosslessWhole: an open object whose declared
// parts pass must still be lossless as a whole.
func TestValidateValue_R102_LosslessWhole(t *testing.T) {
	got, err := runtime.ValidateValue(map[string]any{"type": "object"}, map[string]any{"x": math.NaN()})
	require.NoError(t, err)
	assert.Equal(t, []string{`"value" must be a lossless JSON object`}, got)
	got, err = runtime.ValidateValue(map[string]any{}, json.RawMessage(`-1e-400`))
	require.NoError(t, err)
	assert.Equal(t, []string{`"value" must be a lossless JSON value`}, got)
}

// TestValidateValue_R100_InvalidSchemaIsUnsupportedSchema: a schema outside
// the subset is the coded UNSUPPORTED_SCHEMA error Register returns, with
// every violation.
func TestValidateValue_R100_InvalidSchemaIsUnsupportedSchema(t *testing.T) {
	schema := map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "strin"}}, "minItems": 1}
	got, err := runtime.ValidateValue(schema, map[string]any{})
	assert.Nil(t, got)
	var coded runtime.Coded
	require.True(t, errors.As(err, &coded), "%v", err)
	assert.Equal(t, runtime.CodeUnsupportedSchema, runtime.Code(coded.Code()))
	assert.Equal(t, runtime.NameJSONSchema, coded.Name())

	reg, rerr := runtime.New()
	require.NoError(t, rerr)
	t.Cleanup(func() { _ = reg.Close(context.Background()) })
	_, rerr = reg.Global().Register(runtime.Definition{Name: "t",
		Output:  &runtime.Output{Schema: schema, Render: func(_ context.Context, _, v json.RawMessage) ([]runtime.Block, error) { return nil, nil }},
		Execute: func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) { return nil, nil }})
	require.Error(t, rerr)
	assert.Equal(t, rerr.Error(), err.Error(), "the same error as Register")
	assert.True(t, strings.HasPrefix(err.Error(), "unsupported JSON schema: "))
}

// TestValidateValue_R102_AgreesWithExecute: a registered tool's output
// violations, as Execute reports them, are ValidateValue's for the schema
// Get returns.
func TestValidateValue_R102_AgreesWithExecute(t *testing.T) {
	reg, err := runtime.New()
	require.NoError(t, err)
	t.Cleanup(func() { _ = reg.Close(context.Background()) })
	out := map[string]any{"line": "three", "tags": []any{"q"}}
	_, err = reg.Global().Register(runtime.Definition{Name: "t",
		Output:  &runtime.Output{Schema: json.RawMessage(validateSchema), Render: func(_ context.Context, _, v json.RawMessage) ([]runtime.Block, error) { return nil, nil }},
		Execute: func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) { return out, nil }})
	require.NoError(t, err)
	res := reg.Execute(context.Background(), runtime.Call{ID: "c", Name: "t", Arguments: json.RawMessage(`{}`)})
	require.True(t, res.IsError())
	def, ok := reg.View("").Get("t")
	require.True(t, ok)
	got, err := runtime.ValidateValue(def.Output.Schema, out)
	require.NoError(t, err)
	assert.Equal(t, `tool "t" returned invalid output: `+strings.Join(got, "; "), res.ErrorMessage())
}

func ExampleValidateValue() {
	schema := json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"line":{"type":"integer"}},"required":["path"]}`)

	violations, err := runtime.ValidateValue(schema, map[string]any{"line": 2.5})
	fmt.Println(violations, err)

	violations, err = runtime.ValidateArguments(schema, json.RawMessage(`{"path":"a.txt","line":3}`))
	fmt.Println(violations, err)

	_, err = runtime.ValidateValue(map[string]any{"type": "strin"}, "x")
	fmt.Println(err)
	// Output:
	// [missing required property "value.path" "value.line" must be an integer] <nil>
	// [] <nil>
	// unsupported JSON schema: schema.type must be one of object/array/string/number/integer/boolean/null
}
