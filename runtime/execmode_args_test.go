package runtime_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolscope/toolscope/runtime"
)

// TestExecutionMode_R45_AbsentArgumentsClassifyAsEmptyObject: ExecutionMode
// reads a call's arguments as Execute does (R36, R45): absent arguments — a
// nil Call.Arguments, a nil or empty json.RawMessage — are {}, so a typed
// parallel tool that takes no parameters is parallel for them, and a
// classifier sees {} from ExecutionMode exactly as from the call itself.
func TestExecutionMode_R45_AbsentArgumentsClassifyAsEmptyObject(t *testing.T) {
	type none struct{}
	cases := []struct {
		name string
		args any
		want runtime.Mode // for both tools
		seen string       // what the raw tool's classifier is given
	}{
		{"nil", nil, runtime.Parallel, `{}`},
		{"nil RawMessage", json.RawMessage(nil), runtime.Parallel, `{}`},
		{"empty RawMessage", json.RawMessage{}, runtime.Parallel, `{}`},
		{"{}", json.RawMessage(`{}`), runtime.Parallel, `{}`},
		{"empty map", map[string]any{}, runtime.Parallel, `{}`},
		{"explicit null", json.RawMessage(`null`), runtime.Exclusive, `null`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reg := rrNew(t)
			typed, err := runtime.NewTool("typed", "T", func(context.Context, none, *runtime.RunContext) (string, error) {
				return "ok", nil
			}, runtime.WithParallel())
			require.NoError(t, err)
			_, err = reg.Global().Register(typed)
			require.NoError(t, err)

			var mu sync.Mutex
			var seen []string
			raw := rrDef("raw", "R")
			raw.IsConcurrencySafe = func(_ context.Context, a json.RawMessage) (bool, error) {
				mu.Lock()
				seen = append(seen, string(a))
				mu.Unlock()
				return string(a) == `{}`, nil
			}
			_, err = reg.Global().Register(raw)
			require.NoError(t, err)

			for _, name := range []string{"typed", "raw"} {
				call := runtime.Call{Name: name, Arguments: tc.args}
				assert.Equal(t, tc.want, reg.View("").ExecutionMode(call), "%s: the view's ExecutionMode", name)
				assert.Equal(t, tc.want, reg.Global().ExecutionMode(call), "%s: the scope's ExecutionMode", name)
			}
			res := reg.Execute(context.Background(), runtime.Call{ID: "c", Name: "raw", Arguments: tc.args})
			require.NotNil(t, res)
			mu.Lock()
			defer mu.Unlock()
			require.Len(t, seen, 3, "two ExecutionMode classifications and the call's own")
			for i, s := range seen {
				assert.Equal(t, tc.seen, s, "classification %d", i)
			}
		})
	}
}
