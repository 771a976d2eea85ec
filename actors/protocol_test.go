package actors_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/toolscope/toolscope/actors"
	"github.com/toolscope/toolscope/messages"
	"github.com/toolscope/toolscope/runtime"
)

// protoSetup is a host with scope "agent" holding a parallel "echo" (which
// defers a context message) and a global "global_tool".
func protoSetup(t *testing.T, opts ...actors.Option) (*actors.Host, *runtime.Scope) {
	h := newHost(t, opts...)
	s := newScope(t, h.Registry(), "agent")
	d := tool("echo", true, nil)
	d.Execute = func(_ context.Context, args json.RawMessage, rc *runtime.RunContext) (any, error) {
		rc.DeferContext(runtime.ContextMessage{Role: "system", Text: "ctx"})
		return args, nil
	}
	mustRegister(t, s, d)
	mustRegister(t, h.Registry().Global(), constTool("global_tool", false, "g"))
	return h, s
}

// An actor sends an ExecuteRequest with itself as sender (Request) and
// gets the ExecuteReply: the result with its content and contexts, and a
// failure with its Info.
func TestProtocol_ExecuteRequestFromAnActor(t *testing.T) {
	h, s := protoSetup(t)
	sys := h.System()
	c, replies := client(t, sys)
	sys.Root.Send(c, &clientSend{to: h.PID(s), msg: &messages.ExecuteRequest{Call: &messages.Call{
		CallId: "m1", Name: "echo", ArgumentsJson: []byte(`{"x":1}`),
	}}})
	reply, ok := await(t, replies).(*messages.ExecuteReply)
	require.True(t, ok)
	assert.Equal(t, "m1", reply.GetCallId())
	res := runtime.ResultFromProto(reply.GetResult())
	success(t, res, `{"x":1}`)
	assert.Equal(t, []runtime.Block{runtime.Text(`{"x":1}`)}, res.Content())
	assert.Equal(t, []runtime.ContextMessage{{Role: "system", Text: "ctx"}}, res.AdditionalContexts())

	sys.Root.Send(c, &clientSend{to: h.PID(s), msg: &messages.ExecuteRequest{Call: &messages.Call{CallId: "m2", Name: "ghost"}}})
	reply, ok = await(t, replies).(*messages.ExecuteReply)
	require.True(t, ok)
	res = runtime.ResultFromProto(reply.GetResult())
	require.True(t, res.IsError())
	assert.Equal(t, runtime.CodeUnknownTool, res.Code())
	assert.Equal(t, `unknown tool "ghost"`, res.ErrorMessage())
}

// Every request of package messages, by RequestFuture: execution mode,
// get, schemas, execute, turn; and the global scope's PID answers in the
// global view.
func TestProtocol_RequestFutureReadsAndTurn(t *testing.T) {
	h, s := protoSetup(t)
	pid := h.PID(s)

	mode, ok := ask(t, h, pid, &messages.ExecutionModeRequest{Call: &messages.Call{Name: "echo", ArgumentsJson: []byte(`{}`)}}).(*messages.ExecutionModeReply)
	require.True(t, ok)
	assert.Equal(t, messages.ModeParallel, mode.GetMode())
	mode, ok = ask(t, h, pid, &messages.ExecutionModeRequest{Call: &messages.Call{Name: "global_tool"}}).(*messages.ExecutionModeReply)
	require.True(t, ok)
	assert.Equal(t, messages.ModeExclusive, mode.GetMode())

	get, ok := ask(t, h, pid, &messages.GetRequest{Name: "echo"}).(*messages.GetReply)
	require.True(t, ok)
	assert.True(t, get.GetFound())
	assert.Equal(t, "echo", get.GetTool().GetName())
	assert.Equal(t, "tool echo", get.GetTool().GetDescription())
	assert.JSONEq(t, `{"type":"object"}`, string(get.GetTool().GetParametersJson()))
	get, ok = ask(t, h, pid, &messages.GetRequest{Name: "ghost"}).(*messages.GetReply)
	require.True(t, ok)
	assert.False(t, get.GetFound())

	sch, ok := ask(t, h, pid, &messages.SchemasRequest{}).(*messages.SchemasReply)
	require.True(t, ok)
	assert.Empty(t, sch.GetError())
	var names []string
	for _, tl := range sch.GetTools() {
		names = append(names, tl.GetName())
	}
	assert.Equal(t, []string{"global_tool", "echo"}, names)

	ex, ok := ask(t, h, pid, &messages.ExecuteRequest{Call: &messages.Call{CallId: "f1", Name: "global_tool"}}).(*messages.ExecuteReply)
	require.True(t, ok)
	success(t, runtime.ResultFromProto(ex.GetResult()), `"g"`)

	turn, ok := ask(t, h, pid, &messages.TurnRequest{TurnId: "turn-1", Calls: []*messages.TurnCall{
		{CallId: "t1", Name: "echo", ArgumentsText: `{"a":1}`},
		{CallId: "t2", Name: "global_tool", ArgumentsText: `{}`},
	}}).(*messages.TurnReply)
	require.True(t, ok)
	require.Empty(t, turn.GetError())
	require.Len(t, turn.GetResults(), 2)
	success(t, runtime.ResultFromProto(turn.GetResults()[0]), `{"a":1}`)
	success(t, runtime.ResultFromProto(turn.GetResults()[1]), `"g"`)
	assert.Equal(t, []*messages.ContextMessage{{Role: "system", Text: "ctx"}}, turn.GetContexts())
	assert.Len(t, turn.GetEvents(), 4)

	// A negative max_parallel is refused as ExecuteTurn refuses it (R91).
	bad, ok := ask(t, h, pid, &messages.TurnRequest{MaxParallel: -1, Calls: []*messages.TurnCall{{CallId: "x", Name: "echo"}}}).(*messages.TurnReply)
	require.True(t, ok)
	assert.Contains(t, bad.GetError(), "MaxParallel must be at least 1, got -1")
	assert.Empty(t, bad.GetResults())

	gs, ok := ask(t, h, h.PID(h.Registry().Global()), &messages.GetRequest{Name: "echo"}).(*messages.GetReply)
	require.True(t, ok)
	assert.False(t, gs.GetFound(), "the global scope's PID reads the global view")
}

// A scope's PID runs calls in that scope's view, as the scope's own
// Execute does (R5, R41): Call.agent may be empty or that scope's key; a
// call naming another scope is refused with a failure result that says so,
// and nothing runs. The same holds for an ExecutionModeRequest (an
// ErrorReply: its reply has no room for an error) and at the global PID.
func TestProtocol_CallAgentOfAnotherScopeRefused(t *testing.T) {
	h, s := protoSetup(t)
	reg := h.Registry()
	var ran atomic.Int32
	count := func(context.Context, json.RawMessage) (any, error) { ran.Add(1); return "ran", nil }
	mustRegister(t, s, tool("count", false, count))
	mustRegister(t, reg.Global(), tool("gcount", false, count))
	newScope(t, reg, "bob")
	pid, gpid := h.PID(s), h.PID(reg.Global())

	for _, agent := range []string{"", "agent"} {
		rep, ok := ask(t, h, pid, &messages.ExecuteRequest{Call: &messages.Call{CallId: "ok-" + agent, Name: "count", Agent: agent}}).(*messages.ExecuteReply)
		require.True(t, ok)
		success(t, runtime.ResultFromProto(rep.GetResult()), `"ran"`)
	}
	require.Equal(t, int32(2), ran.Load())

	for _, agent := range []string{"bob", "nobody"} {
		rep, ok := ask(t, h, pid, &messages.ExecuteRequest{Call: &messages.Call{CallId: "x-" + agent, Name: "count", Agent: agent}}).(*messages.ExecuteReply)
		require.True(t, ok, "an ExecuteRequest is answered with an ExecuteReply")
		assert.Equal(t, "x-"+agent, rep.GetCallId())
		res := runtime.ResultFromProto(rep.GetResult())
		require.True(t, res.IsError(), "agent %q at scope agent's PID: %s", agent, res.Text())
		assert.Contains(t, res.ErrorMessage(), `"`+agent+`"`)
		assert.Contains(t, res.ErrorMessage(), `"agent"`)

		mode := ask(t, h, pid, &messages.ExecutionModeRequest{Call: &messages.Call{Name: "echo", Agent: agent}})
		er, ok := mode.(*messages.ErrorReply)
		require.True(t, ok, "an ExecutionModeRequest naming another scope gets an ErrorReply, got %T", mode)
		assert.Contains(t, er.GetError(), `"`+agent+`"`)
	}
	rep, ok := ask(t, h, gpid, &messages.ExecuteRequest{Call: &messages.Call{CallId: "g-bob", Name: "gcount", Agent: "bob"}}).(*messages.ExecuteReply)
	require.True(t, ok)
	assert.True(t, runtime.ResultFromProto(rep.GetResult()).IsError(), "agent bob at the global PID")
	rep, ok = ask(t, h, gpid, &messages.ExecuteRequest{Call: &messages.Call{CallId: "g", Name: "gcount"}}).(*messages.ExecuteReply)
	require.True(t, ok)
	success(t, runtime.ResultFromProto(rep.GetResult()), `"ran"`)
	assert.Equal(t, int32(3), ran.Load(), "no refused call ran")
}

// A message a scope's PID does not know, sent with Request or
// RequestFuture, is answered with an ErrorReply naming its type and the
// requests the PID answers — never dropped, leaving the sender's future to
// time out. Malformed requests (no call at all) are answered too. The
// actor goes on answering.
func TestProtocol_UnknownOrMalformedMessageGetsAnAnswer(t *testing.T) {
	h, s := protoSetup(t)
	pid := h.PID(s)
	for _, msg := range []any{wrapperspb.String("hello"), &messages.ExecuteReply{}, struct{ X int }{1}, &actor.Started{}, &actor.Stopping{}, &actor.Terminated{}} {
		v := ask(t, h, pid, msg) // protoactor's lifecycle messages with a sender too: forged, answered, not acted on
		er, ok := v.(*messages.ErrorReply)
		require.True(t, ok, "%T: an ErrorReply, got %T", msg, v)
		assert.True(t, strings.Contains(er.GetError(), "ExecuteRequest"), "the reply lists what the PID answers: %s", er.GetError())
	}
	rep, ok := ask(t, h, pid, &messages.ExecuteRequest{}).(*messages.ExecuteReply)
	require.True(t, ok)
	assert.Equal(t, runtime.CodeUnknownTool, runtime.ResultFromProto(rep.GetResult()).Code(), "a request without a call: a call of no tool")
	_, ok = ask(t, h, pid, &messages.TurnRequest{}).(*messages.TurnReply)
	require.True(t, ok, "an empty turn is answered")

	c, replies := client(t, h.System())
	h.System().Root.Send(c, &clientSend{to: pid, msg: wrapperspb.Bool(true)})
	_, ok = await(t, replies).(*messages.ErrorReply)
	require.True(t, ok)
	assert.True(t, ask(t, h, pid, &messages.GetRequest{Name: "echo"}).(*messages.GetReply).GetFound(), "the scope still answers")
}
