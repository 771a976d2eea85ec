package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolscope/toolscope/runtime"
)

// Typed events (issue 14, item 1).

type eventLog struct {
	mu     sync.Mutex
	events []runtime.Event
	got    chan struct{}
}

func newEventLog() *eventLog { return &eventLog{got: make(chan struct{}, 1<<16)} }

func (l *eventLog) add(e runtime.Event) {
	l.mu.Lock()
	l.events = append(l.events, e)
	l.mu.Unlock()
	l.got <- struct{}{}
}

// waitFor waits (bounded) until n events arrived.
func (l *eventLog) waitFor(t *testing.T, n int) []runtime.Event {
	t.Helper()
	for {
		l.mu.Lock()
		if len(l.events) >= n {
			out := append([]runtime.Event(nil), l.events...)
			l.mu.Unlock()
			return out
		}
		l.mu.Unlock()
		nestAwait(t, l.got)
	}
}

// eventually polls cond (bounded) for what an asynchronous subscriber does;
// on timeout it fails with a goroutine dump.
func eventually(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(nestTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			ch := make(chan struct{})
			nestAwaitFor(t, ch, 0) // fails with the dump
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// registerEveryKind registers, on s, a parallel tool (par), an exclusive
// one (excl), a failing one (fail), a denied one (denied: a guard refuses
// it) and an exclusive one (outer) that calls par nested, as call "inner".
func registerEveryKind(s *runtime.Scope) {
	r3M(s.Register(nestTool("par", true, func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) { return "p", nil })))
	r3M(s.Register(nestTool("excl", false, func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) { return "x", nil })))
	r3M(s.Register(nestTool("fail", true, func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) {
		return nil, errors.New("boom")
	})))
	r3M(s.Register(nestTool("denied", true, func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) { return "no", nil })))
	r3M(s.Register(nestTool("outer", false, func(ctx context.Context, _ json.RawMessage, rc *runtime.RunContext) (any, error) {
		return s.Execute(ctx, runtime.Call{ID: "inner", Name: "par"}).Text(), nil
	})))
	r3M(s.Guard(func(_ context.Context, e runtime.Execution) (string, bool) {
		return "not allowed", e.Name() == "denied"
	}))
}

// A turn of parallel, exclusive, denied, failed and nested calls: every
// call has exactly one started and one finished event, in that order, with
// its outcome; nested calls name their parent; the turn is bracketed by
// its own events; a registration is a RegistryChanged.
func TestEvents_TypedTurnOfEveryKind(t *testing.T) {
	reg := r3Reg(t)
	log := newEventLog()
	sub, err := reg.Subscribe(log.add)
	require.NoError(t, err)
	defer sub.Close()

	s := r3Scope(t, reg, "agent")
	registerEveryKind(s)
	changes := len(log.waitFor(t, 5))

	tr, err := s.ExecuteTurn(context.Background(), []runtime.TurnCall{
		{ID: "1", Name: "par"}, {ID: "2", Name: "excl"}, {ID: "3", Name: "fail"}, {ID: "4", Name: "denied"},
		{ID: "5", Name: "outer"}, {ID: "6", Name: "ghost"},
	}, runtime.WithTurnID("t1"))
	require.NoError(t, err)
	require.Len(t, tr.Results, 6)
	// 7 calls (inner included) × 2 + the turn's 2.
	events := log.waitFor(t, changes+16)

	for _, e := range events[:changes] {
		assert.Equal(t, runtime.RegistryChanged, e.Kind)
	}
	turn := events[changes:]
	assert.Equal(t, runtime.TurnStarted, turn[0].Kind)
	assert.Equal(t, runtime.TurnFinished, turn[len(turn)-1].Kind)
	assert.Equal(t, "t1", turn[0].TurnID)
	assert.Equal(t, 6, turn[0].Calls)

	started := map[string]runtime.Event{}
	finished := map[string]runtime.Event{}
	for _, e := range turn[1 : len(turn)-1] {
		switch e.Kind {
		case runtime.ExecutionStarted:
			_, dup := started[e.CallID]
			assert.False(t, dup, "two started events for %s", e.CallID)
			started[e.CallID] = e
		case runtime.ExecutionFinished:
			_, dup := finished[e.CallID]
			assert.False(t, dup, "two finished events for %s", e.CallID)
			_, ok := started[e.CallID]
			assert.True(t, ok, "%s finished before it started", e.CallID)
			finished[e.CallID] = e
		default:
			t.Errorf("unexpected %v inside the turn", e.Kind)
		}
	}
	ids := make([]string, 0, len(finished))
	for id := range finished {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	assert.Equal(t, []string{"1", "2", "3", "4", "5", "6", "inner"}, ids)
	outcomes := map[string]runtime.Outcome{}
	for id, e := range finished {
		outcomes[id] = e.Outcome
		assert.Equal(t, "agent", e.Scope)
		assert.False(t, e.EnteredAt.IsZero(), "%s has its entry time", id)
		assert.False(t, e.StartedAt.Before(e.EnteredAt), "%s started before it entered", id)
	}
	assert.Equal(t, map[string]runtime.Outcome{
		"1": runtime.OutcomeOK, "2": runtime.OutcomeOK, "3": runtime.OutcomeFailed, "4": runtime.OutcomeDenied,
		"5": runtime.OutcomeOK, "6": runtime.OutcomeFailed, "inner": runtime.OutcomeOK,
	}, outcomes)
	assert.Equal(t, runtime.CodeUnknownTool, finished["6"].Code)
	assert.Equal(t, runtime.Parallel, finished["1"].Mode)
	assert.Equal(t, runtime.Exclusive, finished["2"].Mode)
	assert.Equal(t, finished["5"].Token, finished["inner"].Parent, "the nested call names its parent")
	assert.True(t, finished["inner"].TurnID == "", "the nested call is a single Execute, not a turn call")
	assert.False(t, finished["1"].DispatchDoneAt.IsZero(), "a dispatched call has its dispatch end")
	assert.True(t, finished["4"].DispatchDoneAt.IsZero(), "a denied call never dispatched")
	assert.NotEqual(t, finished["1"].Group, finished["2"].Group, "an exclusive call is a group of its own")
}

// A panicking subscriber is contained and keeps receiving; a blocked one
// loses events (counted), and neither stalls a call.
func TestEvents_TypedSlowAndPanickingSubscribers(t *testing.T) {
	var handled atomic.Int32
	reg := r3Reg(t, runtime.WithErrorHandler(func(error) { handled.Add(1) }))
	r3M(reg.Global().Register(r3Const("t", "ok")))
	var seen atomic.Int32
	panicky, err := reg.Subscribe(func(e runtime.Event) {
		seen.Add(1)
		panic("subscriber bug")
	})
	require.NoError(t, err)
	defer panicky.Close()
	block := make(chan struct{})
	blocked, err := reg.Subscribe(func(runtime.Event) { <-block }, runtime.WithBuffer(4))
	require.NoError(t, err)
	defer func() { close(block); blocked.Close() }()

	const calls = 50
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range calls {
			res := reg.Global().Execute(context.Background(), runtime.Call{ID: fmt.Sprint(i), Name: "t"})
			assert.False(t, res.IsError())
		}
	}()
	nestAwait(t, done)
	assert.Greater(t, blocked.Dropped(), int64(0), "a blocked subscriber's overflow is counted")
	eventually(t, func() bool { return seen.Load() >= 2*calls && handled.Load() >= 2*calls })
	assert.Equal(t, int64(0), panicky.Dropped())
}

// Close of the registry delivers what subscribers still buffer, then ends
// them; Subscribe after Close is refused; nil is refused.
func TestEvents_TypedSubscriptionLifecycle(t *testing.T) {
	reg, err := runtime.New()
	require.NoError(t, err)
	r3M(reg.Global().Register(r3Const("t", "ok")))
	_, err = reg.Subscribe(nil)
	require.ErrorIs(t, err, runtime.ErrInvalidConfig)
	var n atomic.Int32
	gate := make(chan struct{})
	sub, err := reg.Subscribe(func(e runtime.Event) {
		<-gate
		if e.Kind == runtime.ExecutionFinished {
			n.Add(1)
		}
	})
	require.NoError(t, err)
	for i := range 10 {
		reg.Global().Execute(context.Background(), runtime.Call{ID: fmt.Sprint(i), Name: "t"})
	}
	close(gate)
	require.NoError(t, reg.Close(context.Background()))
	// Close waits for nothing of the subscriber's, but the buffered events
	// are delivered before its goroutine ends.
	eventually(t, func() bool { return n.Load() == 10 })
	sub.Close() // idempotent after the registry ended it
	_, err = reg.Subscribe(func(runtime.Event) {})
	require.ErrorIs(t, err, runtime.ErrClosed)
}
