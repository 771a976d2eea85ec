package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolscope/toolscope/messages"
	"github.com/toolscope/toolscope/runtime"
)

// Message-based use of a scope's PID (issue 3, item 8) and the execution
// events on the actor system's event stream (item 9).

type r3Send struct {
	to  *actor.PID
	msg any
}

// r3Client spawns a small actor that forwards a request to a PID with
// itself as sender and hands every reply it receives to the returned channel.
func r3Client(t *testing.T, sys *actor.ActorSystem) (*actor.PID, <-chan any) {
	t.Helper()
	replies := make(chan any, 16)
	pid := sys.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		switch m := c.Message().(type) {
		case *r3Send:
			c.Request(m.to, m.msg)
		case *actor.Started, *actor.Stopping, *actor.Stopped, *actor.Restarting:
		default:
			replies <- m
		}
	}))
	t.Cleanup(func() { sys.Root.Stop(pid) })
	return pid, replies
}

func r3ProtoSetup(t *testing.T) (*runtime.Registry, *runtime.Scope) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "agent")
	d := r3Tool("echo", func(_ context.Context, args json.RawMessage, rc *runtime.RunContext) (any, error) {
		rc.DeferContext(runtime.Message{Role: "system", Text: "ctx"})
		return args, nil
	})
	d.IsConcurrencySafe = func(context.Context, json.RawMessage) (bool, error) { return true, nil }
	r3M(s.Register(d))
	r3M(reg.Global().Register(r3Const("global_tool", "g")))
	return reg, s
}

func TestProtocol_ExecuteRequestFromAnActor(t *testing.T) {
	reg, s := r3ProtoSetup(t)
	sys := reg.ActorSystem()
	client, replies := r3Client(t, sys)
	sys.Root.Send(client, &r3Send{to: s.PID(), msg: &messages.ExecuteRequest{Call: &messages.Call{
		CallId: "m1", Name: "echo", ArgumentsJson: []byte(`{"x":1}`),
	}}})
	reply, ok := r3Await(t, replies).(*messages.ExecuteReply)
	require.True(t, ok)
	assert.Equal(t, "m1", reply.GetCallId())
	res := runtime.ResultFromProto(reply.GetResult())
	r3Success(t, res, `{"x":1}`)
	assert.Equal(t, []runtime.Block{runtime.Text(`{"x":1}`)}, res.Content())
	assert.Equal(t, []runtime.Message{{Role: "system", Text: "ctx"}}, res.AdditionalContexts())

	// A failure travels as a failure with its Info.
	sys.Root.Send(client, &r3Send{to: s.PID(), msg: &messages.ExecuteRequest{Call: &messages.Call{CallId: "m2", Name: "ghost"}}})
	reply, ok = r3Await(t, replies).(*messages.ExecuteReply)
	require.True(t, ok)
	r3Unknown(t, runtime.ResultFromProto(reply.GetResult()), "ghost")
}

func TestProtocol_RequestFutureReadsAndTurn(t *testing.T) {
	reg, s := r3ProtoSetup(t)
	root := reg.ActorSystem().Root
	ask := func(msg any) any {
		t.Helper()
		v, err := root.RequestFuture(s.PID(), msg, r3Timeout).Result()
		require.NoError(t, err)
		return v
	}

	mode, ok := ask(&messages.ExecutionModeRequest{Call: &messages.Call{Name: "echo", ArgumentsJson: []byte(`{}`)}}).(*messages.ExecutionModeReply)
	require.True(t, ok)
	assert.Equal(t, messages.ModeParallel, mode.GetMode())
	mode, ok = ask(&messages.ExecutionModeRequest{Call: &messages.Call{Name: "global_tool"}}).(*messages.ExecutionModeReply)
	require.True(t, ok)
	assert.Equal(t, messages.ModeExclusive, mode.GetMode())

	get, ok := ask(&messages.GetRequest{Name: "echo"}).(*messages.GetReply)
	require.True(t, ok)
	assert.True(t, get.GetFound())
	assert.Equal(t, "echo", get.GetTool().GetName())
	assert.Equal(t, "tool echo", get.GetTool().GetDescription())
	assert.JSONEq(t, `{"type":"object"}`, string(get.GetTool().GetParametersJson()))
	get, ok = ask(&messages.GetRequest{Name: "ghost"}).(*messages.GetReply)
	require.True(t, ok)
	assert.False(t, get.GetFound())

	sch, ok := ask(&messages.SchemasRequest{}).(*messages.SchemasReply)
	require.True(t, ok)
	assert.Empty(t, sch.GetError())
	var names []string
	for _, tool := range sch.GetTools() {
		names = append(names, tool.GetName())
	}
	assert.Equal(t, []string{"global_tool", "echo"}, names)

	ex, ok := ask(&messages.ExecuteRequest{Call: &messages.Call{CallId: "f1", Name: "global_tool"}}).(*messages.ExecuteReply)
	require.True(t, ok)
	r3Success(t, runtime.ResultFromProto(ex.GetResult()), `"g"`)

	turn, ok := ask(&messages.TurnRequest{TurnId: "turn-1", Calls: []*messages.TurnCall{
		{CallId: "t1", Name: "echo", ArgumentsText: `{"a":1}`},
		{CallId: "t2", Name: "global_tool", ArgumentsText: `{}`},
	}}).(*messages.TurnReply)
	require.True(t, ok)
	require.Len(t, turn.GetResults(), 2)
	r3Success(t, runtime.ResultFromProto(turn.GetResults()[0]), `{"a":1}`)
	r3Success(t, runtime.ResultFromProto(turn.GetResults()[1]), `"g"`)

	// The global scope's PID answers in the global view.
	gs, err := root.RequestFuture(reg.Global().PID(), &messages.GetRequest{Name: "echo"}, r3Timeout).Result()
	require.NoError(t, err)
	assert.False(t, gs.(*messages.GetReply).GetFound())
}

type r3Events struct {
	mu       sync.Mutex
	started  []*messages.ExecutionStarted
	finished []*messages.ExecutionFinished
	order    []string
}

func r3Subscribe(t *testing.T, reg *runtime.Registry) *r3Events {
	ev := &r3Events{}
	es := reg.ActorSystem().EventStream
	sub := es.Subscribe(func(evt any) {
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
	t.Cleanup(func() { es.Unsubscribe(sub) })
	return ev
}

func TestProtocol_ExecutionEventsPairUpWithOutcomeCode(t *testing.T) {
	reg, s := r3ProtoSetup(t)
	ev := r3Subscribe(t, reg)
	r3M(s.Register(r3Tool("fails", func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) {
		return nil, errors.New("plain failure")
	})))
	r3M(s.Register(r3Const("denied", 1)))
	r3M(s.OnPreExecute(func(_ context.Context, e runtime.Execution, next func() (runtime.Decision, error)) (runtime.Decision, error) {
		if e.Name() == "denied" {
			return runtime.Deny("no"), nil
		}
		return next()
	}))
	before := time.Now().UnixNano()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	calls := []struct {
		id, tool, code string
		ctx            context.Context
		mode           messages.ExecutionMode
		isError        bool
	}{
		{"e-ok", "echo", "", context.Background(), messages.ModeParallel, false},
		{"e-unknown", "ghost", string(runtime.CodeUnknownTool), context.Background(), messages.ModeExclusive, true},
		{"e-fail", "fails", messages.OutcomeError, context.Background(), messages.ModeExclusive, true},
		{"e-denied", "denied", messages.OutcomeDenied, context.Background(), messages.ModeUnspecified, true},
		{"e-abort", "echo", string(runtime.CodeAbortedBeforeDispatch), cancelled, messages.ModeUnspecified, true},
	}
	for _, c := range calls {
		res := r3Exec(t, s, c.ctx, runtime.Call{ID: c.id, Name: c.tool})
		require.Equal(t, c.isError, res.IsError(), c.id)
	}
	// Also a call that arrives as a message.
	_, err := reg.ActorSystem().Root.RequestFuture(s.PID(), &messages.ExecuteRequest{Call: &messages.Call{CallId: "e-msg", Name: "echo"}}, r3Timeout).Result()
	require.NoError(t, err)

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
		assert.Equal(t, c.isError, fi.GetIsError(), id)
		assert.Equal(t, st.GetUnixNanos(), fi.GetStartedUnixNanos())
		assert.GreaterOrEqual(t, st.GetUnixNanos(), before)
		assert.GreaterOrEqual(t, fi.GetFinishedUnixNanos(), st.GetUnixNanos())
		if c.mode != messages.ModeUnspecified {
			assert.Equal(t, c.mode, st.GetMode(), id)
			assert.Equal(t, c.mode, fi.GetMode(), id)
		}
	}
}

func TestProtocol_EventsForNoAgentCallsAndDisabled(t *testing.T) {
	reg := r3Reg(t)
	ev := r3Subscribe(t, reg)
	r3M(reg.Global().Register(r3Const("t", 1)))
	r3Success(t, reg.Execute(context.Background(), runtime.Call{ID: "g1", Name: "t"}), "1")
	ev.mu.Lock()
	require.Len(t, ev.finished, 1)
	assert.Equal(t, "", ev.finished[0].GetScope())
	assert.Equal(t, "", ev.finished[0].GetOutcomeCode())
	ev.mu.Unlock()

	off := r3Reg(t, runtime.WithEvents(false))
	evOff := r3Subscribe(t, off)
	r3M(off.Global().Register(r3Const("t", 1)))
	r3Success(t, off.Execute(context.Background(), runtime.Call{ID: "g2", Name: "t"}), "1")
	evOff.mu.Lock()
	defer evOff.mu.Unlock()
	assert.Empty(t, evOff.started)
	assert.Empty(t, evOff.finished)
}
