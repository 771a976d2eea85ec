package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/toolscope/toolscope/messages"
	"github.com/toolscope/toolscope/runtime"
)

// answer answers one request sent to rec's PID and sends the reply to the
// sender. It runs on one of the host's workers, never inside Receive: the
// request runs user code (hooks, classifiers, bodies), which may send to
// this very PID and wait.
func (h *Host) answer(rec *actorRec, sender *actor.PID, msg any) {
	h.send(sender, h.handle(rec.scope, msg))
}

// handle answers msg for scope s. Every request is answered by the scope's
// own public method — the one a Go caller calls — so a request by message
// is the same call as one by Go (go-ahead, parent inference, overload,
// tracing, events): Execute, ExecuteTurn, ExecutionMode, Get, Schemas. The
// ctx is context.Background(): a message carries no ctx, so a request is
// never nested in an execution (see the package doc).
func (h *Host) handle(s *runtime.Scope, msg any) any {
	key := s.Key()
	if key != "" && isDone(s.Done()) {
		return &messages.ErrorReply{Error: fmt.Sprintf("toolscope: scope %q was disposed; its PID answers no more requests", key)}
	}
	switch m := msg.(type) {
	case *messages.ExecuteRequest:
		c := m.GetCall()
		if why := agentRefusal(key, c); why != "" {
			return runtime.Failure(errors.New(why)).ExecuteReply(c.GetCallId())
		}
		res := s.Execute(context.Background(), runtime.Call{
			ID: c.GetCallId(), RootID: c.GetRootCallId(), Name: c.GetName(), Arguments: argsFromProto(c.GetArgumentsJson()),
		})
		return res.ExecuteReply(c.GetCallId())
	case *messages.ExecutionModeRequest:
		c := m.GetCall()
		if why := agentRefusal(key, c); why != "" {
			return &messages.ErrorReply{Error: why}
		}
		return &messages.ExecutionModeReply{Mode: modeProto(s.ExecutionMode(runtime.Call{Name: c.GetName(), Arguments: argsFromProto(c.GetArgumentsJson())}))}
	case *messages.GetRequest:
		d, ok := s.Get(m.GetName())
		if !ok {
			return &messages.GetReply{}
		}
		t := &messages.ToolSchema{Name: d.Name, Description: d.Description}
		if raw, ok := d.Parameters.(json.RawMessage); ok {
			t.ParametersJson = raw // a fresh copy (Get)
		}
		return &messages.GetReply{Found: true, Tool: t}
	case *messages.SchemasRequest:
		list, err := s.Schemas()
		if err != nil {
			return &messages.SchemasReply{Error: err.Error()}
		}
		out := &messages.SchemasReply{Tools: make([]*messages.ToolSchema, len(list))}
		for i, t := range list {
			out.Tools[i] = &messages.ToolSchema{Name: t.Name, Description: t.Description, ParametersJson: t.Parameters}
		}
		return out
	case *messages.TurnRequest:
		return turn(s, m)
	}
	return &messages.ErrorReply{Error: fmt.Sprintf("toolscope: the PID of scope %q does not answer a %T; it answers ExecuteRequest, ExecutionModeRequest, GetRequest, SchemasRequest and TurnRequest (package messages)", key, msg)}
}

// agentRefusal is the refusal of a call whose agent names a scope other
// than the one whose PID received it ("" when the agent is empty or the
// scope's own key): a scope's PID answers in its own view only, as the
// scope's Execute does (R41), and a call must not run silently in a view
// other than the one it names.
func agentRefusal(key string, c *messages.Call) string {
	agent := c.GetAgent()
	if agent == "" || agent == key {
		return ""
	}
	return fmt.Sprintf("call.agent %q is not the key of the scope whose PID received the request (%q): a scope's PID runs calls in its own view only; send the request to that scope's PID, or leave agent empty", agent, key)
}

// turn answers a TurnRequest by Scope.ExecuteTurn.
func turn(s *runtime.Scope, m *messages.TurnRequest) *messages.TurnReply {
	opts := []runtime.TurnOption{runtime.WithTurnID(m.GetTurnId())}
	if n := m.GetMaxParallel(); n != 0 {
		opts = append(opts, runtime.WithMaxParallel(int(n))) // a negative one is refused as ExecuteTurn refuses it
	}
	calls := make([]runtime.TurnCall, len(m.GetCalls()))
	for i, c := range m.GetCalls() {
		calls[i] = runtime.TurnCall{ID: c.GetCallId(), Name: c.GetName(), ArgumentsText: c.GetArgumentsText()}
	}
	res, err := s.ExecuteTurn(context.Background(), calls, opts...)
	return turnReply(res, err)
}

// turnReply converts what Scope.ExecuteTurn returned to the reply of a
// TurnRequest: the committed results, the record and the contexts, and the
// error's text (a configuration or internal failure, R98; with a nil
// result, nothing else).
func turnReply(res *runtime.TurnResult, err error) *messages.TurnReply {
	if res == nil {
		msg := "toolscope: ExecuteTurn returned no result"
		if err != nil {
			msg = err.Error()
		}
		return &messages.TurnReply{Error: msg}
	}
	reply := &messages.TurnReply{Concluded: res.Concluded}
	if err != nil {
		reply.Error = err.Error()
	}
	for _, x := range res.Results {
		reply.Results = append(reply.Results, x.Proto())
	}
	for _, e := range res.Events {
		k := messages.TurnEventCallStarted
		if e.Kind == runtime.ResultRecorded {
			k = messages.TurnEventResult
		}
		reply.Events = append(reply.Events, &messages.TurnEvent{Kind: k, CallId: e.CallID})
	}
	for _, c := range res.Contexts {
		reply.Contexts = append(reply.Contexts, &messages.ContextMessage{Role: c.Role, Text: c.Text})
	}
	return reply
}

func argsFromProto(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return json.RawMessage(b)
}

func modeProto(m runtime.Mode) messages.ExecutionMode {
	if m == runtime.Parallel {
		return messages.ModeParallel
	}
	return messages.ModeExclusive
}
