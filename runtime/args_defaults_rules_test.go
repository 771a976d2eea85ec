package runtime_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolscope/toolscope/runtime"
)

// argsRegistry registers "raw" (a raw tool echoing the arguments it got),
// "none" (a typed tool with no parameters) and "read" (a typed tool taking
// an object with a path).
func argsRegistry(t *testing.T) (*runtime.Registry, *runtime.Scope) {
	t.Helper()
	reg, err := runtime.New()
	require.NoError(t, err)
	render := func(context.Context, json.RawMessage, json.RawMessage) ([]runtime.Block, error) { return nil, nil }
	_, err = reg.Global().Register(runtime.Definition{Name: "raw", Output: &runtime.Output{Schema: map[string]any{}, Render: render},
		Execute: func(_ context.Context, args json.RawMessage, _ *runtime.RunContext) (any, error) {
			return string(args), nil
		}})
	require.NoError(t, err)
	none, err := runtime.NewTool("none", "no parameters",
		func(context.Context, struct{}, *runtime.RunContext) (string, error) { return "ok", nil })
	require.NoError(t, err)
	_, err = reg.Global().Register(none)
	require.NoError(t, err)
	type readIn struct {
		Path string `json:"path"`
	}
	read, err := runtime.NewTool("read", "reads a path",
		func(_ context.Context, in readIn, _ *runtime.RunContext) (string, error) { return in.Path, nil })
	require.NoError(t, err)
	_, err = reg.Global().Register(read)
	require.NoError(t, err)
	s, err := reg.NewScope("agent")
	require.NoError(t, err)
	return reg, s
}

func argsValue(t *testing.T, res *runtime.Result) string {
	t.Helper()
	require.False(t, res.IsError(), res.ErrorMessage())
	v, ok := res.Value()
	require.True(t, ok)
	return string(v)
}

// R45: absent arguments (a nil Call.Arguments, an empty json.RawMessage)
// are {}, as an empty TurnCall.ArgumentsText is (R91).
func TestArgs_R45_AbsentArgumentsAreAnEmptyObject(t *testing.T) {
	reg, _ := argsRegistry(t)
	cases := []struct {
		name string
		args any
	}{
		{"nil", nil},
		{"nil RawMessage", json.RawMessage(nil)},
		{"empty RawMessage", json.RawMessage{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := reg.Execute(context.Background(), runtime.Call{ID: "1", Name: "raw", Arguments: tc.args})
			assert.Equal(t, `"{}"`, argsValue(t, res), "the body gets {}")
			res = reg.Execute(context.Background(), runtime.Call{ID: "2", Name: "none", Arguments: tc.args})
			assert.Equal(t, `"ok"`, argsValue(t, res), "a tool with no parameters runs")
		})
	}
}

// R48: a Go value that is not lossless JSON is named by its Go type, and
// JSON text that does not parse says where it breaks.
func TestArgs_R48_RefusalNamesTheTypeOrTheSyntaxError(t *testing.T) {
	reg, _ := argsRegistry(t)
	const prefix = "tool execution arguments must be losslessly JSON-serializable"
	type st struct{ A int }
	cases := []struct {
		name string
		args any
		msg  string
	}{
		{"typed map", map[string]string{"a": "b"}, prefix + ": arguments of type map[string]string are not lossless JSON (use map[string]any, []any or json.RawMessage)"},
		{"typed slice", []string{"a"}, prefix + ": arguments of type []string are not lossless JSON (use map[string]any, []any or json.RawMessage)"},
		{"struct", st{A: 1}, prefix + ": arguments of type runtime_test.st are not lossless JSON (use map[string]any, []any or json.RawMessage)"},
		{"truncated text", json.RawMessage(`{"path":`), prefix + `: the argument text is not valid JSON: it ends at byte 8 before the value is complete (truncated?)`},
		{"bad character", json.RawMessage(`{"path" 1}`), prefix + `: the argument text is not valid JSON: invalid character '1' after object key at byte offset 8`},
		{"not lossless inside a map stays plain", map[string]any{"a": []string{"x"}}, prefix},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := reg.Execute(context.Background(), runtime.Call{ID: "1", Name: "raw", Arguments: tc.args})
			require.True(t, res.IsError())
			assert.Equal(t, tc.msg, res.ErrorMessage())
		})
	}
}

// R91/R105: argument text that is not valid JSON still reaches a raw tool
// as a JSON string, but a typed tool's INVALID_ARGS says the text is not
// valid JSON and where, so a model can fix it.
func TestTurn_R91_MalformedArgumentTextIsReportedAsSuch(t *testing.T) {
	_, s := argsRegistry(t)
	cases := []struct {
		name, tool, text, want string
		invalid                bool
	}{
		{"truncated, typed", "read", `{"path":`, `invalid arguments: the argument text is not valid JSON: it ends at byte 8 before the value is complete (truncated?)`, true},
		{"bad character, typed", "read", `{"path" 1}`, `invalid arguments: the argument text is not valid JSON: invalid character '1' after object key at byte offset 8`, true},
		{"truncated, raw tool gets the string", "raw", `{"path":`, `"\"{\\\"path\\\":\""`, false},
		{"empty is {}", "none", ``, `"ok"`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := s.ExecuteTurn(context.Background(), []runtime.TurnCall{{ID: "c", Name: tc.tool, ArgumentsText: tc.text}})
			require.NoError(t, err)
			res := tr.Results[0]
			if !tc.invalid {
				assert.Equal(t, tc.want, argsValue(t, res))
				return
			}
			require.True(t, res.IsError())
			assert.Equal(t, runtime.CodeInvalidArgs, res.Code())
			assert.Equal(t, tc.want, res.ErrorMessage())
		})
	}
}

// R105: a Go string holding JSON text, passed where a typed tool wants an
// object, gets a hint to pass json.RawMessage.
func TestTyped_R105_GoStringHoldingJSONTextGetsAHint(t *testing.T) {
	reg, _ := argsRegistry(t)
	cases := []struct {
		name string
		args any
		msg  string
	}{
		{"JSON object text", `{"path":"a"}`, `invalid arguments: "arguments" must be an object (the arguments are a Go string holding JSON text: pass json.RawMessage(text) for JSON text)`},
		{"plain string gets no hint", `a`, `invalid arguments: "arguments" must be an object`},
		{"RawMessage works", json.RawMessage(`{"path":"a"}`), ``},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := reg.Execute(context.Background(), runtime.Call{ID: "1", Name: "read", Arguments: tc.args})
			if tc.msg == "" {
				assert.Equal(t, `"a"`, argsValue(t, res))
				return
			}
			require.True(t, res.IsError())
			assert.Equal(t, runtime.CodeInvalidArgs, res.Code())
			assert.Equal(t, tc.msg, res.ErrorMessage())
		})
	}
}
