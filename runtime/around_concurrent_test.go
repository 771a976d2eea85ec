package runtime_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolscope/toolscope/runtime"
)

// An around hook may call next again once the previous call returned (a
// retrying wrapper gets a fresh dispatch each time), but not while it is
// still running: the second, concurrent call is refused at once with a
// failure result that says so, and the dispatch in flight is untouched
// (issue 11 §6; two dispatches of one execution would share its state).
// The body holds the first dispatch until the second call has answered.
func TestAround_ConcurrentNextRefused(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	var entered, overlapped atomic.Int32
	started := make(chan struct{})
	release := make(chan struct{})
	r3M(s.Register(r3Tool("t", func(ctx context.Context, _ json.RawMessage, _ *runtime.RunContext) (any, error) {
		if entered.Add(1) == 1 {
			close(started)
			<-release
			return "first", nil
		}
		overlapped.Add(1)
		return "second", nil
	})))
	var refused *runtime.Result
	r3M(s.OnExecute(func(ctx context.Context, _ runtime.Execution, next func(context.Context) *runtime.Result) (*runtime.Result, error) {
		first := make(chan *runtime.Result, 1)
		go func() { first <- next(nil) }()
		r3Await(t, started)
		second := make(chan *runtime.Result, 1)
		go func() { second <- next(ctx) }()
		refused = r3Await(t, second)
		close(release)
		return r3Await(t, first), nil
	}))
	res := r3Exec(t, s, context.Background(), r3Call("t", nil))
	r3Success(t, res, `"first"`)
	assert.Equal(t, int32(0), overlapped.Load(), "the body ran twice at once for one execution")
	require.NotNil(t, refused)
	require.True(t, refused.IsError(), "the concurrent next must be refused, got %v", refused)
	assert.Contains(t, refused.ErrorMessage(), "next called while a previous call of it is still running")
}

// Sequential calls of next are retries: each gets a fresh dispatch.
func TestAround_SequentialNextRetries(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	var n atomic.Int32
	r3M(s.Register(r3Tool("t", func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) {
		return n.Add(1), nil
	})))
	r3M(s.OnExecute(func(ctx context.Context, _ runtime.Execution, next func(context.Context) *runtime.Result) (*runtime.Result, error) {
		_ = next(nil)
		_ = next(ctx)
		return next(nil), nil
	}))
	r3Success(t, r3Exec(t, s, context.Background(), r3Call("t", nil)), "3")
}

// A next kept past its hook's return and called later is refused: the
// execution it belongs to has moved on (or ended).
func TestAround_NextAfterReturnRefused(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	var bodies atomic.Int32
	r3M(s.Register(r3Tool("t", func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) {
		return bodies.Add(1), nil
	})))
	var kept func(context.Context) *runtime.Result
	r3M(s.OnExecute(func(ctx context.Context, _ runtime.Execution, next func(context.Context) *runtime.Result) (*runtime.Result, error) {
		kept = next
		return next(nil), nil
	}))
	r3Success(t, r3Exec(t, s, context.Background(), r3Call("t", nil)), "1")
	late := kept(context.Background())
	require.True(t, late.IsError())
	assert.Contains(t, late.ErrorMessage(), "next called after the hook returned")
	assert.Equal(t, int32(1), bodies.Load(), "a late next ran the body")
}
