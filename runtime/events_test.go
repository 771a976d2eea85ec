package runtime_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolscope/toolscope/runtime"
)

// A call decides at entry whether anyone listens: a subscriber that joins
// while the call runs sees neither of its events, and both events of the
// next call.
func TestEvents_SubscriberJoiningMidCallSeesNoHalfPair(t *testing.T) {
	reg, err := runtime.New()
	require.NoError(t, err)
	t.Cleanup(func() { _ = reg.Close(context.Background()) })
	var (
		mu  sync.Mutex
		evs []runtime.Event
		sub *runtime.Subscription
	)
	mustRegister(t, reg.Global(), hdef("join", true, func(context.Context) (any, error) {
		if sub == nil {
			var err error
			sub, err = reg.Subscribe(func(e runtime.Event) { // joins mid-call
				if e.Kind == runtime.ExecutionStarted || e.Kind == runtime.ExecutionFinished {
					mu.Lock()
					evs = append(evs, e)
					mu.Unlock()
				}
			})
			if err != nil {
				return nil, err
			}
		}
		return "ok", nil
	}))
	r := reg.Execute(context.Background(), runtime.Call{ID: "first", Name: "join"})
	require.False(t, r.IsError(), r.Text())
	require.NotNil(t, sub)
	defer sub.Close()

	r = reg.Execute(context.Background(), runtime.Call{ID: "second", Name: "join"})
	require.False(t, r.IsError(), r.Text())
	// Delivery is in order: an event of the first call would come first.
	waitFor(t, "the second call's events", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(evs) >= 2
	})
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, evs, 2)
	assert.Equal(t, runtime.ExecutionStarted, evs[0].Kind)
	assert.Equal(t, runtime.ExecutionFinished, evs[1].Kind)
	assert.Equal(t, "second", evs[0].CallID)
	assert.Equal(t, "second", evs[1].CallID)
}
