package codemode_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolscope/toolscope/codemode"
	"github.com/toolscope/toolscope/runtime"
)

// runCodeSchema is the view's last schema, which must be run_code.
func runCodeSchema(t testing.TB, v interface {
	Schemas() ([]runtime.ToolSchema, error)
}) runtime.ToolSchema {
	t.Helper()
	sc, err := v.Schemas()
	require.NoError(t, err)
	require.NotEmpty(t, sc)
	last := sc[len(sc)-1]
	require.Equal(t, "run_code", last.Name)
	return last
}

func TestDescription_FollowsTheView(t *testing.T) {
	reg, s := setup(t, codemode.Config{})
	desc := runCodeSchema(t, s).Description
	assert.Contains(t, desc, "def read(path: str): Read a file\n")
	assert.Contains(t, desc, "def list_files(): List files\n")
	assert.NotContains(t, desc, "secret")

	// A tool added anywhere on the chain appears; Get agrees with Schemas.
	d, err := runtime.NewTool("secret", "Top secret", func(_ ctxT, in pathIn, _ *runtime.RunContext) (string, error) { return "", nil })
	mustRegister(t, reg.Global(), d, err)
	desc = runCodeSchema(t, s).Description
	assert.Contains(t, desc, "def secret(path: str): Top secret\n")
	got, ok := s.Get("run_code")
	require.True(t, ok)
	assert.Equal(t, desc, got.Description)

	// A sub-agent that cannot see it gets a description without it.
	sub, err := s.NewScope("sub")
	require.NoError(t, err)
	_, err = sub.Restrict(runtime.Restriction{Deny: []string{"secret"}})
	require.NoError(t, err)
	assert.NotContains(t, runCodeSchema(t, sub).Description, "secret")
	assert.Contains(t, runCodeSchema(t, s).Description, "secret")
	// ... and its program cannot call it either.
	res := runCode(t, sub, `call("secret", path="x").error`)
	assert.Equal(t, `"unknown tool \"secret\""`, string(valueOf(t, res).Value))
}

func TestDescription_StubsCarryParametersAndTypes(t *testing.T) {
	reg, s := setup(t, codemode.Config{Limits: codemode.Limits{Calls: 7}})
	schema := json.RawMessage(`{"type":"object","properties":{
		"query":{"type":"string","description":"what to look for"},
		"limit":{"type":"integer"},
		"tags":{"type":"array","items":{"type":"string"}},
		"mode":{"enum":["fast","exact"]},
		"filter":{"type":"object"},
		"score":{"type":["number","null"]}},
		"required":["query"]}`)
	d := runtime.Definition{Name: "search", Description: "Search\n  the   index", Parameters: schema,
		Output: &runtime.Output{Schema: map[string]any{}, Render: func(_ context.Context, _, v json.RawMessage) ([]runtime.Block, error) {
			return []runtime.Block{runtime.Text(string(v))}, nil
		}},
		Execute: func(ctxT, json.RawMessage, *runtime.RunContext) (any, error) { return nil, nil }}
	mustRegister(t, reg.Global(), d, nil)
	desc := runCodeSchema(t, s).Description
	assert.Contains(t, desc, `def search(query: str (what to look for), limit: int = None, tags: list[str] = None, `+
		`mode: one of "fast"|"exact" = None, filter: dict = None, score: float|None = None): Search the index`+"\n")
	assert.Contains(t, desc, "7 tool calls")
	assert.Contains(t, desc, "parallel([(name, {args}), ...], limit=10)")
}

// TestDescription_SizeFor20Tools measures the figure: for a scope
// of 20 tools, run_code's schema (what a code-mode model is sent) against
// the 20 native schemas, in bytes of JSON as a token proxy.
func TestDescription_SizeFor20Tools(t *testing.T) {
	reg, s := setup(t, codemode.Config{})
	for i := 0; i < 18; i++ { // plus read and list_files
		schema := (`{"type":"object","properties":{
			"id":{"type":"string","description":"the record's identifier"},
			"fields":{"type":"array","items":{"type":"string"},"description":"which fields to return"},
			"limit":{"type":"integer","description":"at most this many records"}},
			"required":["id"],"additionalProperties":false}`)
		d := runtime.Definition{Name: fmt.Sprintf("tool_%02d", i), Description: fmt.Sprintf("Look up records of kind %d in the store and return the requested fields.", i),
			Parameters: json.RawMessage(schema),
			Output: &runtime.Output{Schema: map[string]any{}, Render: func(_ context.Context, _, v json.RawMessage) ([]runtime.Block, error) {
				return []runtime.Block{runtime.Text(string(v))}, nil
			}},
			Execute: func(ctxT, json.RawMessage, *runtime.RunContext) (any, error) { return nil, nil }}
		mustRegister(t, reg.Global(), d, nil)
	}
	sc, err := s.Schemas()
	require.NoError(t, err)
	require.Len(t, sc, 21)
	native, err := json.Marshal(sc[:20])
	require.NoError(t, err)
	code, err := json.Marshal(sc[20:])
	require.NoError(t, err)
	t.Logf("20 tools: native schemas %d bytes, run_code schema %d bytes (%.0f%%)", len(native), len(code), 100*float64(len(code))/float64(len(native)))
	assert.Less(t, len(code), len(native), "the description is smaller than the schemas it replaces")
	assert.Equal(t, 20, strings.Count(sc[20].Description, "\ndef "))
}
