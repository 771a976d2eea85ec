package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolscope/toolscope/runtime"
)

// R83: the tool's own deadline fires first; while the body is still
// cleaning up, the caller cancels. The timeout happened first, so the
// result is TOOL_TIMEOUT (a failure, never overridden by the later
// cancellation), not ABORTED. The body decides nothing by time: it waits
// for its ctx to end (only the deadline can end it then), tells the test,
// and returns once the test has cancelled the caller.
func TestCancel_R83_TimeoutThenCancelStaysTimeout(t *testing.T) {
	for _, tc := range []struct {
		name string
		ret  func(ctx context.Context) (any, error)
	}{
		{"body succeeds after cleanup", func(context.Context) (any, error) { return "cleaned up", nil }},
		{"body fails after cleanup", func(ctx context.Context) (any, error) { return nil, ctx.Err() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A deadline short enough to end while the body runs can end
			// before it starts on a loaded machine (the call is then a
			// TOOL_TIMEOUT whose body never ran, R83 too): retry with a
			// longer one until the body saw it.
			for _, d := range []time.Duration{time.Millisecond, 20 * time.Millisecond, 200 * time.Millisecond, 2 * time.Second} {
				if timeoutThenCancel(t, d, tc.ret) {
					return
				}
			}
			t.Fatal("the deadline ended before the body started every time")
		})
	}
}

// timeoutThenCancel runs one call whose body waits for its d deadline,
// after which the caller cancels; the result must stay TOOL_TIMEOUT. It
// reports false when the deadline ended before the body started.
func timeoutThenCancel(t *testing.T, d time.Duration, ret func(ctx context.Context) (any, error)) bool {
	t.Helper()
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	cleaning := make(chan error, 1)
	cancelled := make(chan struct{})
	def := r3Tool("t", func(ctx context.Context, _ json.RawMessage, _ *runtime.RunContext) (any, error) {
		<-ctx.Done() // the deadline: the caller has not cancelled yet
		cleaning <- context.Cause(ctx)
		<-cancelled
		return ret(ctx)
	})
	def.Timeout = &d
	r3M(s.Register(def))
	r3M(s.OnExecute(reg.TimeoutHook()))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan *runtime.Result, 1)
	go func() { done <- s.Execute(ctx, r3Call("t", nil)) }()
	msg := fmt.Sprintf("tool call timed out after %dms", d.Milliseconds())
	timer := time.NewTimer(r3Timeout)
	defer timer.Stop()
	var cause error
	select {
	case cause = <-cleaning:
	case res := <-done:
		r3Coded(t, res, runtime.NameToolTimeout, runtime.CodeToolTimeout, msg)
		return false
	case <-timer.C:
		t.Fatal("timed out (deadlock?)")
	}
	require.NoError(t, ctx.Err(), "the caller has not cancelled when the body's ctx ends")
	assert.NotErrorIs(t, cause, context.Canceled, "the body's ctx ended by its deadline")
	cancel()
	close(cancelled)
	r3Coded(t, r3Await(t, done), runtime.NameToolTimeout, runtime.CodeToolTimeout, msg)
	return true
}
