package runtime_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolscope/toolscope/runtime"
)

// A declared timeout is enforced with no hook registered by hand (issue 12,
// item 5; by default since issue 25, item 7); with WithoutTimeouts it is
// metadata (R19).
func TestTimeouts_R83_WithTimeoutsEnforcesDeclaredTimeouts(t *testing.T) {
	slow := func(ctx context.Context, _ struct{}, _ *runtime.RunContext) (string, error) {
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(nestTimeout):
			return "ran to the end", nil
		}
	}
	quick := func(ctx context.Context, _ struct{}, _ *runtime.RunContext) (string, error) {
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(30 * time.Millisecond):
			return "ran to the end", nil
		}
	}
	for _, enforce := range []bool{true, false} {
		var opts []runtime.Option
		if !enforce {
			opts = append(opts, runtime.WithoutTimeouts())
		}
		reg := r3Reg(t, opts...)
		tool, err := runtime.NewTool("slow", "sleeps", slow, runtime.WithTimeout(20*time.Millisecond))
		require.NoError(t, err)
		r3M(reg.Global().Register(tool))
		q, err := runtime.NewTool("quick", "sleeps briefly", quick, runtime.WithTimeout(time.Millisecond))
		require.NoError(t, err)
		r3M(reg.Global().Register(q))
		if enforce {
			res := nestAwait(t, nestGo(reg.Global(), context.Background(), runtime.Call{ID: "s", Name: "slow", Arguments: json.RawMessage(`{}`)}))
			assert.Equal(t, runtime.CodeToolTimeout, res.Code())
			assert.Equal(t, "tool call timed out after 20ms", res.ErrorMessage())
			continue
		}
		res := nestAwait(t, nestGo(reg.Global(), context.Background(), runtime.Call{ID: "q", Name: "quick", Arguments: json.RawMessage(`{}`)}))
		nestOK(t, res)
	}
}
