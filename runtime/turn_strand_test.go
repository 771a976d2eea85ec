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

// R94, R95: a dispatch that finishes while the driver still holds the turn,
// just before the driver lets go and runs its held dispatch itself, must
// not be stranded. Turn [a, b, c], all parallel, MaxParallel 2: the driver
// starts a on a worker, prepares b and holds it (the pool is full: wait).
// The hook, in the window between that session and letting go, lets a
// finish and waits until a's outcome is on the done list (a's worker found
// the turn driven and left it to the driver). b's body then waits for c's
// body to start. c can start only once a's outcome frees its slot: if the
// driver ran b without looking at the done list again, nobody would process
// a, c would never start, and the turn would never finish.
func TestTurnR94_FinishedDispatchNotStrandedBeforeInline(t *testing.T) {
	aGo := make(chan struct{})
	cStarted := make(chan struct{})
	hooked := make(chan string, 8)
	reg := r3Reg(t, runtime.WithBeforeInlineHookForTest(func(id string, leftToDriver <-chan struct{}) {
		hooked <- id
		if id != "b" {
			return
		}
		close(aGo)
		// Wait (bounded) until a's worker, done, found the turn driven and
		// left its outcome to the driver.
		select {
		case <-leftToDriver:
		case <-time.After(waitLimit):
			failHung(t, "a's worker never tried to take over the turn")
		}
	}))
	sc := r3Scope(t, reg, "agent")

	_, err := sc.Register(tool("t", always, func(_ context.Context, _ json.RawMessage, rc *runtime.RunContext) (any, error) {
		switch rc.Execution().CallID() {
		case "a":
			<-aGo
		case "b":
			if !awaitClosed(t, cStarted, "b waits for c to start: a's finished dispatch was stranded (R94)") {
				return nil, assert.AnError
			}
		case "c":
			close(cStarted)
		}
		return "ok", nil
	}))
	require.NoError(t, err)

	type answer struct {
		res *runtime.TurnResult
		err error
	}
	got := make(chan answer, 1)
	go func() {
		res, err := sc.ExecuteTurn(context.Background(), calls("t", "a", "b", "c"), runtime.WithMaxParallel(2))
		got <- answer{res, err}
	}()
	var a answer
	select {
	case a = <-got:
	case <-time.After(2 * waitLimit):
		failHung(t, "turn never finished")
		t.FailNow()
	}
	require.NoError(t, a.err)
	require.Len(t, a.res.Results, 3)
	for i, r := range a.res.Results {
		assert.False(t, r.IsError(), "result %d: %v", i, r)
	}
	select {
	case id := <-hooked:
		assert.Equal(t, "b", id, "the first dispatch held back is b's")
	default:
		t.Fatal("the driver never held a dispatch back: the test did not reach the window")
	}
}
