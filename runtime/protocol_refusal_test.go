package runtime_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/toolscope/toolscope/messages"
	"github.com/toolscope/toolscope/runtime"
)

// A scope's PID runs calls in that scope's view, as the scope's own
// Execute does (R5, R41): Call.agent may be empty or that scope's key;
// a call naming another scope is refused with a failure result that says
// so, and nothing runs — never run silently in the PID's own view (issue
// 20, item 13: "bob" ran in the PID's scope). The same holds for an
// ExecutionModeRequest (answered with an ErrorReply: its reply has no room
// for an error) and at the global scope's PID.
func TestProtocol_CallAgentOfAnotherScopeRefused(t *testing.T) {
	reg, s := r3ProtoSetup(t)
	var ran atomic.Int32
	r3M(s.Register(r3Tool("count", func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) {
		ran.Add(1)
		return "ran", nil
	})))
	r3M(reg.Global().Register(r3Tool("gcount", func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) {
		ran.Add(1)
		return "ran", nil
	})))
	r3Scope(t, reg, "bob")
	root := reg.ActorSystem().Root
	ask := func(global bool, msg any) any {
		t.Helper()
		to := s.PID()
		if global {
			to = reg.Global().PID()
		}
		v, err := root.RequestFuture(to, msg, r3Timeout).Result()
		require.NoError(t, err)
		return v
	}

	// The scope's own key, or none, runs in its view.
	for _, agent := range []string{"", "agent"} {
		rep, ok := ask(false, &messages.ExecuteRequest{Call: &messages.Call{CallId: "ok-" + agent, Name: "count", Agent: agent}}).(*messages.ExecuteReply)
		require.True(t, ok)
		r3Success(t, runtime.ResultFromProto(rep.GetResult()), `"ran"`)
	}
	require.Equal(t, int32(2), ran.Load())

	// Another key (existing or not) is refused, naming both keys.
	for _, agent := range []string{"bob", "nobody"} {
		rep, ok := ask(false, &messages.ExecuteRequest{Call: &messages.Call{CallId: "x-" + agent, Name: "count", Agent: agent}}).(*messages.ExecuteReply)
		require.True(t, ok, "an ExecuteRequest is answered with an ExecuteReply")
		assert.Equal(t, "x-"+agent, rep.GetCallId())
		res := runtime.ResultFromProto(rep.GetResult())
		require.True(t, res.IsError(), "agent %q at scope agent's PID: %s", agent, res.Text())
		assert.Contains(t, res.ErrorMessage(), `"`+agent+`"`)
		assert.Contains(t, res.ErrorMessage(), `"agent"`)

		mode := ask(false, &messages.ExecutionModeRequest{Call: &messages.Call{Name: "echo", Agent: agent}})
		er, ok := mode.(*messages.ErrorReply)
		require.True(t, ok, "an ExecutionModeRequest naming another scope gets an ErrorReply, got %T", mode)
		assert.Contains(t, er.GetError(), `"`+agent+`"`)
	}
	// The global scope's PID is the global scope's: "" only.
	rep, ok := ask(true, &messages.ExecuteRequest{Call: &messages.Call{CallId: "g-bob", Name: "gcount", Agent: "bob"}}).(*messages.ExecuteReply)
	require.True(t, ok)
	assert.True(t, runtime.ResultFromProto(rep.GetResult()).IsError(), "agent bob at the global PID")
	rep, ok = ask(true, &messages.ExecuteRequest{Call: &messages.Call{CallId: "g", Name: "gcount"}}).(*messages.ExecuteReply)
	require.True(t, ok)
	r3Success(t, runtime.ResultFromProto(rep.GetResult()), `"ran"`)
	assert.Equal(t, int32(3), ran.Load(), "no refused call ran")
}

// A message a scope's PID does not know, sent with Request or
// RequestFuture, is answered with an ErrorReply naming its type and the
// requests the PID answers — never dropped, leaving the sender's future to
// time out (issue 20, item 13). The actor goes on answering.
func TestProtocol_UnknownMessageGetsErrorReply(t *testing.T) {
	reg, s := r3ProtoSetup(t)
	root := reg.ActorSystem().Root
	for _, msg := range []any{wrapperspb.String("hello"), &messages.ExecuteReply{}, struct{ X int }{1}} {
		v, err := root.RequestFuture(s.PID(), msg, r3Timeout).Result()
		require.NoError(t, err, "%T is answered", msg)
		er, ok := v.(*messages.ErrorReply)
		require.True(t, ok, "%T: an ErrorReply, got %T", msg, v)
		assert.True(t, strings.Contains(er.GetError(), "ExecuteRequest"), "the reply lists what the PID answers: %s", er.GetError())
	}
	// Through an actor's Request too.
	client, replies := r3Client(t, reg.ActorSystem())
	root.Send(client, &r3Send{to: s.PID(), msg: wrapperspb.Bool(true)})
	_, ok := r3Await(t, replies).(*messages.ErrorReply)
	require.True(t, ok)
	v, err := root.RequestFuture(s.PID(), &messages.GetRequest{Name: "echo"}, r3Timeout).Result()
	require.NoError(t, err)
	assert.True(t, v.(*messages.GetReply).GetFound(), "the scope still answers")
}
