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

// Tests of how a turn is driven (docs/ARCHITECTURE.md, "Turns"): whoever
// holds the turn runs classify/prepare/commit, and the dispatch prepared
// last before a wait is run by the driver itself once it lets go.

// A dispatch held back for the driver to run itself must start before the
// driver runs any more user code. Here the observer of a (committed as soon
// as a finishes, R95) waits for b's body to start; b's pre-execute hook
// waits for a's body to have returned, so a's outcome is already reported
// when b's prepare ends and the driver's next step is a's commit. If b were
// still held, the observer would wait forever.
func TestTurnR95_HeldDispatchStartsBeforeNextCommit(t *testing.T) {
	reg, err := runtime.New()
	require.NoError(t, err)
	t.Cleanup(func() { _ = reg.Close(context.Background()) })
	sc, err := reg.NewScope("agent")
	require.NoError(t, err)

	aReturned := make(chan struct{})
	bStarted := make(chan struct{})
	_, err = sc.Register(tool("t", always, func(_ context.Context, _ json.RawMessage, rc *runtime.RunContext) (any, error) {
		switch rc.Execution().CallID() {
		case "a":
			defer close(aReturned)
		case "b":
			close(bStarted)
		}
		return "ok", nil
	}))
	require.NoError(t, err)
	_, err = sc.OnPreExecute(func(_ context.Context, ex runtime.Execution, next func() (runtime.Decision, error)) (runtime.Decision, error) {
		if ex.CallID() == "b" {
			<-aReturned
			time.Sleep(time.Millisecond) // let a's worker report (either way the test must pass)
		}
		return next()
	})
	require.NoError(t, err)
	observed := make(chan string, 2)
	_, err = sc.OnResult(func(_ context.Context, ex runtime.Execution, _ *runtime.Result) error {
		if ex.CallID() == "a" {
			select {
			case <-bStarted:
			case <-time.After(waitLimit):
				observed <- "a: b never started"
				return nil
			}
		}
		observed <- ex.CallID()
		return nil
	})
	require.NoError(t, err)

	res, err := sc.ExecuteTurn(context.Background(), calls("t", "a", "b"), runtime.WithMaxParallel(4))
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, []string{<-observed, <-observed})
	for _, r := range res.Results {
		assert.False(t, r.IsError(), "%v", r)
	}
}

// A long turn of exclusive calls runs each dispatch on the driver (the
// turn waits after every prepare): results and records stay in model
// order, and the driver loops rather than nesting a frame per call.
func TestTurnR93_LongExclusiveTurnInModelOrder(t *testing.T) {
	reg, err := runtime.New()
	require.NoError(t, err)
	t.Cleanup(func() { _ = reg.Close(context.Background()) })
	sc, err := reg.NewScope("agent")
	require.NoError(t, err)
	_, err = sc.Register(tool("t", nil, func(_ context.Context, _ json.RawMessage, rc *runtime.RunContext) (any, error) {
		return rc.Execution().CallID(), nil
	}))
	require.NoError(t, err)

	const n = 3000
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("c%d", i)
	}
	res, err := sc.ExecuteTurn(context.Background(), calls("t", ids...))
	require.NoError(t, err)
	require.Len(t, res.Results, n)
	require.Len(t, res.Events, 2*n)
	for i, r := range res.Results {
		v, ok := r.Value()
		require.True(t, ok, "result %d: %v", i, r)
		require.Equal(t, `"`+ids[i]+`"`, string(v), "result %d", i)
		require.Equal(t, "call:"+ids[i], res.Events[2*i].String())
		require.Equal(t, "result:"+ids[i], res.Events[2*i+1].String())
	}
}
