package runtime_test

import (
	"context"
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
	var log *streamLog
	mustRegister(t, reg.Global(), hdef("join", true, func(context.Context) (any, error) {
		if log == nil {
			log = subscribe(t, reg) // joins mid-call
		}
		return "ok", nil
	}))
	r := reg.Execute(context.Background(), runtime.Call{ID: "first", Name: "join"})
	require.False(t, r.IsError(), r.Text())
	require.NotNil(t, log)
	log.mu.Lock()
	assert.Empty(t, log.evs, "the call that was running when the subscriber joined")
	log.mu.Unlock()

	r = reg.Execute(context.Background(), runtime.Call{ID: "second", Name: "join"})
	require.False(t, r.IsError(), r.Text())
	log.mu.Lock()
	defer log.mu.Unlock()
	require.Len(t, log.evs, 2)
	assert.True(t, log.evs[0].started)
	assert.False(t, log.evs[1].started)
	assert.Equal(t, "second", log.evs[0].callID)
	assert.Equal(t, "second", log.evs[1].callID)
}
