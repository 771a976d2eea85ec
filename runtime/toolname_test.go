package runtime_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolscope/toolscope/runtime"
)

// NewTool refuses the reserved and the empty name at definition time, as
// Register does (R11.4, R107; issue 12, item 9).
func TestNewTool_R11_NamesRefusedAtDefinition(t *testing.T) {
	body := func(context.Context, struct{}, *runtime.RunContext) (string, error) { return "", nil }
	reg := r3Reg(t)
	for name, want := range map[string]string{"run_code": `tool name "run_code" is reserved`, "": "tool name must not be empty"} {
		_, err := runtime.NewTool(name, "d", body)
		require.ErrorIs(t, err, runtime.ErrInvalidDefinition, "NewTool(%q)", name)
		assert.Contains(t, err.Error(), want)

		raw := r3Tool(name, func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) { return nil, nil })
		_, err = reg.Global().Register(raw)
		require.ErrorIs(t, err, runtime.ErrInvalidDefinition, "Register(%q)", name)
		assert.Contains(t, err.Error(), want)
	}
}
