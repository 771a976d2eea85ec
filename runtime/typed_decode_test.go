package runtime_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolscope/toolscope/runtime"
)

type decodeIn struct {
	Path  string            `json:"path"`
	Lines []int             `json:"lines,omitempty"`
	Small int8              `json:"small,omitempty"`
	Ratio float64           `json:"ratio,omitempty"`
	Tags  map[string]string `json:"tags,omitempty"`
	Next  *decodeNext       `json:"next,omitempty"`
	Extra any               `json:"extra,omitempty"`
	Raw   json.RawMessage   `json:"raw,omitempty"` // outside the fast decoder: encoding/json decodes
}

type decodeNext struct {
	Path  string   `json:"path"`
	Lines []int    `json:"lines,omitempty"`
	Inner *float64 `json:"inner,omitempty"`
}

type decodeFast struct {
	Path  string            `json:"path"`
	Lines []int             `json:"lines,omitempty"`
	Small int8              `json:"small,omitempty"`
	Tags  map[string]string `json:"tags,omitempty"`
	Next  *decodeNext       `json:"next,omitempty"`
	Extra any               `json:"extra,omitempty"`
}

// R105: a typed tool's body gets exactly what encoding/json decodes from
// the validated arguments, whichever decoder ran, and a decode error is an
// INVALID_ARGS failure worded by encoding/json.
func TestNewTool_R105_ArgumentsDecodeAsEncodingJSON(t *testing.T) {
	reg, err := runtime.New()
	require.NoError(t, err)
	t.Cleanup(func() { _ = reg.Close(context.Background()) })

	var gotFast decodeFast
	fast, err := runtime.NewTool("fast", "d", func(_ context.Context, in decodeFast, _ *runtime.RunContext) (string, error) {
		gotFast = in
		return "ok", nil
	})
	require.NoError(t, err)
	var gotSlow decodeIn
	slow, err := runtime.NewTool("slow", "d", func(_ context.Context, in decodeIn, _ *runtime.RunContext) (string, error) {
		gotSlow = in
		return "ok", nil
	})
	require.NoError(t, err)
	_, err = reg.Global().Register(fast)
	require.NoError(t, err)
	_, err = reg.Global().Register(slow)
	require.NoError(t, err)

	for _, args := range []string{
		`{"path":"a"}`,
		`{"path":"caf\u00e9 \ud83d\ude00","lines":[1,2,3],"small":-7,"tags":{"k":"v","e":""}}`,
		`{"path":"x","next":{"path":"y","lines":[],"inner":2.5},"extra":{"a":[1,"b",null,true]}}`,
		`{"path":"p","SMALL":3,"Lines":[4]}`,
		`{"path":"dup","path":"last wins","lines":[9],"lines":[8,7]}`,
		`{"path":"r","raw":{"kept":[1,2]}}`,
	} {
		t.Run(args, func(t *testing.T) {
			var wantFast decodeFast
			require.NoError(t, json.Unmarshal([]byte(args), &wantFast))
			gotFast = decodeFast{}
			r := reg.Execute(context.Background(), runtime.Call{ID: "1", Name: "fast", Arguments: json.RawMessage(args)})
			require.False(t, r.IsError(), r.Text())
			assert.Equal(t, wantFast, gotFast)

			var wantSlow decodeIn
			require.NoError(t, json.Unmarshal([]byte(args), &wantSlow))
			gotSlow = decodeIn{}
			r = reg.Execute(context.Background(), runtime.Call{ID: "2", Name: "slow", Arguments: json.RawMessage(args)})
			require.False(t, r.IsError(), r.Text())
			// Raw keeps encoding/json's bytes; compare it as JSON.
			if wantSlow.Raw != nil {
				assert.JSONEq(t, string(wantSlow.Raw), string(gotSlow.Raw))
			}
			wantSlow.Raw, gotSlow.Raw = nil, nil
			assert.Equal(t, wantSlow, gotSlow)
		})
	}

	// The schema says integer; int8 overflows: encoding/json's error, coded.
	r := reg.Execute(context.Background(), runtime.Call{ID: "3", Name: "fast", Arguments: json.RawMessage(`{"path":"a","small":300}`)})
	require.True(t, r.IsError())
	assert.Equal(t, runtime.CodeInvalidArgs, r.Code())
	assert.True(t, strings.Contains(r.Text(), "cannot unmarshal number 300"), r.Text())
}

// R18: schemas derived from one Go type are compiled once and shared by
// the registry, but every Definition holds its own copy: changing one
// tool's schema text, before or after Register, changes no other tool.
func TestNewTool_R18_DerivedSchemasAreCopiesPerDefinition(t *testing.T) {
	reg, err := runtime.New()
	require.NoError(t, err)
	t.Cleanup(func() { _ = reg.Close(context.Background()) })
	body := func(_ context.Context, in decodeFast, _ *runtime.RunContext) (string, error) { return in.Path, nil }
	a, err := runtime.NewTool("a", "d", body)
	require.NoError(t, err)
	b, err := runtime.NewTool("b", "d", body)
	require.NoError(t, err)
	want := string(a.Parameters.(json.RawMessage))
	wantOut := string(a.Output.Schema.(json.RawMessage))

	_, err = reg.Global().Register(a)
	require.NoError(t, err)
	// Scribble over a's copies after Register, and over b's before.
	for _, d := range []runtime.Definition{a, b} {
		p := d.Parameters.(json.RawMessage)
		o := d.Output.Schema.(json.RawMessage)
		for i := range p {
			p[i] = ' '
		}
		for i := range o {
			o[i] = ' '
		}
	}
	// b's scribbled schemas are not valid JSON: Register rejects b.
	_, err = reg.Global().Register(b)
	require.Error(t, err)

	got, ok := reg.Global().Get("a")
	require.True(t, ok)
	assert.Equal(t, want, string(got.Parameters.(json.RawMessage)))
	assert.Equal(t, wantOut, string(got.Output.Schema.(json.RawMessage)))
	c, err := runtime.NewTool("c", "d", body)
	require.NoError(t, err)
	assert.Equal(t, want, string(c.Parameters.(json.RawMessage)))
	assert.Equal(t, wantOut, string(c.Output.Schema.(json.RawMessage)))
	r := reg.Execute(context.Background(), runtime.Call{ID: "1", Name: "a", Arguments: json.RawMessage(`{"path":"p"}`)})
	require.False(t, r.IsError(), r.Text())
}

// The typed helper's default renderer, called by whoever holds the
// Definition, returns text that does not change with the caller's bytes.
func TestNewTool_DefaultRenderCopiesCallersBytes(t *testing.T) {
	def, err := runtime.NewTool("t", "d", func(context.Context, decodeFast, *runtime.RunContext) (string, error) { return "", nil })
	require.NoError(t, err)
	value := []byte(`"hello"`)
	blocks, err := def.Output.Render(context.Background(), nil, value)
	require.NoError(t, err)
	copy(value, `"HELLO"`)
	require.Len(t, blocks, 1)
	assert.Equal(t, "hello", blocks[0].Text)
}
