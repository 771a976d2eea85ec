package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolscope/toolscope/runtime"
)

// R98: an internal scheduler failure stops new starts, waits for every
// in-flight dispatch and returns the failure — with the results committed
// before it, not a nil result. Turn [a, b, c], all parallel: a's body waits
// until b and c have started, so all three are in flight; a failure is
// injected right after a's commit. The result holds a's result only (the
// committed prefix), the record so far, and no observer ran for b or c.
func TestTurnR98_PartialResultWithError(t *testing.T) {
	injected := errors.New("injected scheduler failure")
	reg := r3Reg(t, runtime.WithCommitFailureForTest(func(call int) error {
		if call == 0 {
			return injected
		}
		return nil
	}))
	sc := r3Scope(t, reg, "agent")

	bStarted, cStarted := make(chan struct{}), make(chan struct{})
	_, err := sc.Register(tool("t", always, func(_ context.Context, _ json.RawMessage, rc *runtime.RunContext) (any, error) {
		switch id := rc.Execution().CallID(); id {
		case "a":
			if !awaitClosed(t, bStarted, "a waits for b") || !awaitClosed(t, cStarted, "a waits for c") {
				return nil, assert.AnError
			}
		case "b":
			close(bStarted)
		case "c":
			close(cStarted)
		}
		return rc.Execution().CallID(), nil
	}))
	require.NoError(t, err)
	var mu sync.Mutex
	var observed []string
	_, err = sc.OnResult(func(_ context.Context, ex runtime.Execution, _ *runtime.Result) error {
		mu.Lock()
		defer mu.Unlock()
		observed = append(observed, ex.CallID())
		return nil
	})
	require.NoError(t, err)

	type answer struct {
		res *runtime.TurnResult
		err error
	}
	got := make(chan answer, 1)
	go func() {
		res, err := sc.ExecuteTurn(context.Background(), calls("t", "a", "b", "c"), runtime.WithMaxParallel(4))
		got <- answer{res, err}
	}()
	var a answer
	select {
	case a = <-got:
	case <-time.After(2 * waitLimit):
		failHung(t, "turn never finished")
		t.FailNow()
	}

	require.ErrorIs(t, a.err, injected)
	require.NotNil(t, a.res, "R98: the committed results come with the error")
	require.Len(t, a.res.Results, 1, "only a was committed")
	v, ok := a.res.Results[0].Value()
	require.True(t, ok, "%v", a.res.Results[0])
	assert.Equal(t, `"a"`, string(v))
	var events []string
	for _, e := range a.res.Events {
		events = append(events, e.String())
	}
	assert.Equal(t, []string{"call:a", "call:b", "call:c", "result:a"}, events)
	assert.False(t, a.res.Concluded)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"a"}, observed, "b and c were dispatched but never committed")
}

// The turn driver's test seams belong to one registry: a commit failure
// injected into one registry's turns leaves another registry's turns,
// running at the same time, untouched (no package-level seam).
func TestTurnR98_InjectedFailureStaysInItsRegistry(t *testing.T) {
	injected := errors.New("injected scheduler failure")
	failing := r3Scope(t, r3Reg(t, runtime.WithCommitFailureForTest(func(int) error { return injected })), "agent")
	healthy := r3Scope(t, r3Reg(t), "agent")
	for _, sc := range []*runtime.Scope{failing, healthy} {
		_, err := sc.Register(tool("t", always, func(_ context.Context, _ json.RawMessage, rc *runtime.RunContext) (any, error) {
			return rc.Execution().CallID(), nil
		}))
		require.NoError(t, err)
	}
	errs := make(chan error, 2)
	for _, sc := range []*runtime.Scope{failing, healthy} {
		go func() {
			_, err := sc.ExecuteTurn(context.Background(), calls("t", "a", "b"))
			errs <- err
		}()
	}
	var got []error
	for range 2 {
		select {
		case err := <-errs:
			got = append(got, err)
		case <-time.After(2 * waitLimit):
			failHung(t, "a turn never finished")
			t.FailNow()
		}
	}
	failed := 0
	for _, err := range got {
		if err != nil {
			require.ErrorIs(t, err, injected)
			failed++
		}
	}
	assert.Equal(t, 1, failed, "only the turn of the registry with the seam fails: %v", got)
}
