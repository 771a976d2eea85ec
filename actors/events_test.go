package actors_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolscope/toolscope/actors"
	"github.com/toolscope/toolscope/messages"
	"github.com/toolscope/toolscope/runtime"
)

type streamEvents struct {
	mu       sync.Mutex
	started  []*messages.ExecutionStarted
	finished []*messages.ExecutionFinished
	order    []string
}

func listen(t *testing.T, sys *actor.ActorSystem) *streamEvents {
	ev := &streamEvents{}
	sub := sys.EventStream.Subscribe(func(evt any) {
		ev.mu.Lock()
		defer ev.mu.Unlock()
		switch m := evt.(type) {
		case *messages.ExecutionStarted:
			ev.started = append(ev.started, m)
			ev.order = append(ev.order, "start:"+m.GetCallId())
		case *messages.ExecutionFinished:
			ev.finished = append(ev.finished, m)
			ev.order = append(ev.order, "finish:"+m.GetCallId())
		}
	})
	t.Cleanup(func() { sys.EventStream.Unsubscribe(sub) })
	return ev
}

// Every call publishes one ExecutionStarted and one ExecutionFinished, in
// that order, with the call's scope, tool, mode and times, and the outcome
// code: "" for a success, the code of a coded failure, DENIED for an
// uncoded denial, ERROR for any other uncoded failure. A call that came by
// message publishes the same pair.
func TestEvents_ExecutionEventsPairUpWithOutcomeCode(t *testing.T) {
	h, s := protoSetup(t, actors.WithEvents())
	ev := listen(t, h.System())
	mustRegister(t, s, tool("fails", false, func(context.Context, json.RawMessage) (any, error) {
		return nil, errors.New("plain failure")
	}))
	mustRegister(t, s, constTool("denied", false, 1))
	_, err := s.OnPreExecute(func(_ context.Context, e runtime.Execution, next func() (runtime.Decision, error)) (runtime.Decision, error) {
		if e.Name() == "denied" {
			return runtime.Deny("no"), nil
		}
		return next()
	})
	require.NoError(t, err)
	before := time.Now().UnixNano()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	calls := []struct {
		id, tool, code string
		outcome        messages.Outcome
		ctx            context.Context
		mode           messages.ExecutionMode
		isError        bool
	}{
		{"e-ok", "echo", "", messages.OutcomeOK, context.Background(), messages.ModeParallel, false},
		{"e-unknown", "ghost", string(runtime.CodeUnknownTool), messages.OutcomeFailed, context.Background(), messages.ModeExclusive, true},
		{"e-fail", "fails", "", messages.OutcomeFailed, context.Background(), messages.ModeExclusive, true},
		{"e-denied", "denied", "", messages.OutcomeDenied, context.Background(), messages.ModeUnspecified, true},
		{"e-abort", "echo", string(runtime.CodeAbortedBeforeDispatch), messages.OutcomeCancelled, cancelled, messages.ModeUnspecified, true},
	}
	for _, c := range calls {
		res := s.Execute(c.ctx, runtime.Call{ID: c.id, Name: c.tool})
		require.Equal(t, c.isError, res.IsError(), c.id)
	}
	ask(t, h, h.PID(s), &messages.ExecuteRequest{Call: &messages.Call{CallId: "e-msg", Name: "echo"}})

	ev.mu.Lock()
	defer ev.mu.Unlock()
	require.Len(t, ev.started, len(calls)+1)
	require.Len(t, ev.finished, len(calls)+1)
	for i, c := range append(calls, calls[0]) {
		id := c.id
		if i == len(calls) {
			id = "e-msg"
		}
		st, fi := ev.started[i], ev.finished[i]
		assert.Equal(t, id, st.GetCallId())
		assert.Equal(t, id, fi.GetCallId())
		assert.Equal(t, []string{"start:" + id, "finish:" + id}, ev.order[2*i:2*i+2], "events pair up in order")
		assert.Equal(t, "agent", st.GetScope())
		assert.Equal(t, "agent", fi.GetScope())
		assert.Equal(t, c.tool, st.GetTool())
		assert.Equal(t, c.tool, fi.GetTool())
		assert.Equal(t, c.code, fi.GetOutcomeCode(), id)
		assert.Equal(t, c.outcome, fi.GetOutcome(), id)
		assert.Equal(t, c.isError, fi.GetIsError(), id)
		assert.Equal(t, st.GetUnixNanos(), fi.GetStartedUnixNanos())
		assert.GreaterOrEqual(t, st.GetUnixNanos(), before)
		assert.GreaterOrEqual(t, fi.GetFinishedUnixNanos(), st.GetUnixNanos())
		if c.mode != messages.ModeUnspecified {
			assert.Equal(t, c.mode, st.GetMode(), id)
			assert.Equal(t, c.mode, fi.GetMode(), id)
		}
		if !c.isError {
			assert.GreaterOrEqual(t, fi.GetDispatchDoneUnixNanos(), st.GetUnixNanos(), "a dispatched call's dispatch end")
		}
	}
}

// A turn's calls carry its id and their group; a call the turn aborted
// before it started gets its synthetic pair (R97), coded
// ABORTED_BEFORE_DISPATCH, unclassified.
func TestEvents_TurnCallsCarryTurnAndGroup(t *testing.T) {
	h, s := protoSetup(t, actors.WithEvents())
	ev := listen(t, h.System())
	ctx, cancel := context.WithCancel(context.Background())
	mustRegister(t, s, tool("cancel", false, func(context.Context, json.RawMessage) (any, error) { cancel(); return 1, nil }))
	tr, err := s.ExecuteTurn(ctx, []runtime.TurnCall{
		{ID: "a", Name: "echo"}, {ID: "b", Name: "echo"}, {ID: "c", Name: "cancel"}, {ID: "d", Name: "echo"},
	}, runtime.WithTurnID("T"))
	require.NoError(t, err)
	require.Len(t, tr.Results, 4)
	ev.mu.Lock()
	defer ev.mu.Unlock()
	require.Len(t, ev.started, 4)
	require.Len(t, ev.finished, 4)
	byID := map[string]*messages.ExecutionFinished{}
	for _, f := range ev.finished {
		byID[f.GetCallId()] = f
		assert.Equal(t, "T", f.GetTurnId())
	}
	assert.Equal(t, int32(1), byID["a"].GetGroup())
	assert.Equal(t, int32(1), byID["b"].GetGroup())
	assert.Equal(t, int32(2), byID["c"].GetGroup())
	assert.Equal(t, messages.ModeParallel, byID["a"].GetMode())
	assert.Equal(t, messages.ModeExclusive, byID["c"].GetMode())
	assert.Equal(t, string(runtime.CodeAbortedBeforeDispatch), byID["d"].GetOutcomeCode())
	assert.True(t, byID["d"].GetIsError())
	assert.Equal(t, int64(0), byID["d"].GetDispatchDoneUnixNanos())
}

// Events go to every subscriber, whenever it joined: one that subscribed
// to the user's system before Start receives both events of a call; so do
// later ones. A call without an agent has the empty scope.
func TestEvents_SubscriberBeforeStartReceivesEvents(t *testing.T) {
	sys := quietSystem(t)
	early := listen(t, sys)
	h, err := actors.Start(sys, actors.WithEvents())
	require.NoError(t, err)
	t.Cleanup(func() { closeHost(t, h) })
	mustRegister(t, h.Registry().Global(), constTool("t", true, 1))
	success(t, h.Registry().Execute(context.Background(), runtime.Call{ID: "1", Name: "t"}), "1")
	late := listen(t, sys)
	success(t, h.Registry().Execute(context.Background(), runtime.Call{ID: "2", Name: "t"}), "1")
	for _, l := range []*streamEvents{early, late} {
		l.mu.Lock()
		require.NotEmpty(t, l.finished)
		assert.Equal(t, "", l.finished[0].GetScope())
		assert.Equal(t, "", l.finished[0].GetOutcomeCode())
		l.mu.Unlock()
	}
	assert.Len(t, early.order, 4)
	assert.Equal(t, []string{"start:2", "finish:2"}, late.order)
}

// Only a host asked for events publishes them: without WithEvents nothing
// reaches the event stream, whoever listens, and a plain runtime.Registry
// publishes nothing to any event stream.
func TestEvents_OnlyAHostAskedForEventsPublishes(t *testing.T) {
	sys := quietSystem(t)
	ev := listen(t, sys)
	h, err := actors.Start(sys)
	require.NoError(t, err)
	t.Cleanup(func() { closeHost(t, h) })
	mustRegister(t, h.Registry().Global(), constTool("t", true, 1))
	success(t, h.Registry().Execute(context.Background(), runtime.Call{ID: "1", Name: "t"}), "1")
	ask(t, h, h.PID(h.Registry().Global()), &messages.ExecuteRequest{Call: &messages.Call{CallId: "2", Name: "t"}})
	ev.mu.Lock()
	defer ev.mu.Unlock()
	assert.Empty(t, ev.order)
}

// A panic in an event-stream subscriber never escapes Execute, never kills
// a turn's worker (it would take the process down), and is reported to
// the registry's error handler. Every call still returns its result.
func TestEvents_PanickingStreamSubscriberTakesNothingDown(t *testing.T) {
	var contained atomic.Int32
	h := newHost(t, actors.WithEvents(), actors.WithRegistry(runtime.WithErrorHandler(func(error) { contained.Add(1) })))
	sub := h.System().EventStream.Subscribe(func(evt any) {
		switch evt.(type) {
		case *messages.ExecutionStarted, *messages.ExecutionFinished:
			panic("subscriber panics")
		}
	})
	defer h.System().EventStream.Unsubscribe(sub)
	s := newScope(t, h.Registry(), "a")
	mustRegister(t, s, constTool("p", true, 1))
	mustRegister(t, s, constTool("x", false, 2))
	boundedWait(t, 2*waitLimit, "Execute, ExecuteTurn and requests with a panicking subscriber", func() {
		for i := range 5 {
			if r := s.Execute(context.Background(), runtime.Call{ID: fmt.Sprint(i), Name: "x"}); r.IsError() {
				t.Errorf("Execute: %s", r.Text())
			}
			tr, err := s.ExecuteTurn(context.Background(), []runtime.TurnCall{
				{ID: "a", Name: "p"}, {ID: "b", Name: "p"}, {ID: "c", Name: "x"}, {ID: "d", Name: "missing"},
			})
			if err != nil || len(tr.Results) != 4 {
				t.Errorf("ExecuteTurn: %v", err)
			}
			if _, ok := ask(t, h, h.PID(s), &messages.ExecuteRequest{Call: &messages.Call{CallId: "m", Name: "p"}}).(*messages.ExecuteReply); !ok {
				t.Error("no ExecuteReply")
			}
		}
	})
	require.NotZero(t, contained.Load(), "the subscriber's panics were not reported to the error handler")
}
