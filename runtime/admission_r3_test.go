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

// Admission defects of issue 20 (items 1, 2, 3, 6, 8). Every wait is
// bounded and dumps the goroutines when it runs out.

// R51: a ctx that passed through another registry still carries this
// registry's execution. Registry 1's exclusive body calls registry 2 with
// its ctx; registry 2's body calls back into registry 1 with its own ctx
// (derived from the first): registry 1 finds its own execution further up
// the chain and nests the call inside it, instead of queueing it behind
// its own ancestor.
func TestNested_R51_CtxThroughAnotherRegistryKeepsNesting(t *testing.T) {
	reg1, reg2 := r3Reg(t), r3Reg(t)
	occ := newOccupancy()
	var outer runtime.Token
	r3M(reg1.Global().Register(nestTool("x1", false, func(ctx context.Context, _ json.RawMessage, rc *runtime.RunContext) (any, error) {
		defer occ.enter(rc, true)()
		outer = rc.Execution().Token()
		if err := resErr(reg2.Execute(ctx, runtime.Call{ID: "y", Name: "y2"})); err != nil {
			return nil, err
		}
		return "x1", nil
	})))
	r3M(reg1.Global().Register(nestTool("z1", false, func(_ context.Context, _ json.RawMessage, rc *runtime.RunContext) (any, error) {
		defer occ.enter(rc, true)()
		if rc.Execution().Parent() != outer {
			t.Errorf("z1's parent is not registry 1's execution x1")
		}
		return "z1", nil
	})))
	r3M(reg2.Global().Register(nestTool("y2", false, func(ctx context.Context, _ json.RawMessage, _ *runtime.RunContext) (any, error) {
		if e, ok := runtime.ExecutionFromContext(ctx); !ok || e.Name() != "y2" {
			t.Errorf("ExecutionFromContext in registry 2's body is not its own execution")
		}
		res := reg1.Execute(ctx, runtime.Call{ID: "z", Name: "z1"})
		return nil, resErr(res)
	})))
	// Before the fix z1 queued behind x1 until this ctx ended.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res := nestAwait(t, nestGo(reg1.Global(), ctx, runtime.Call{ID: "x", Name: "x1"}))
	nestOK(t, res)
	occ.check(t)
}

var (
	_ = assert.Equal
	_ = require.NoError
)
