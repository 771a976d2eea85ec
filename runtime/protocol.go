package runtime

import (
	"context"
	"encoding/json"

	"github.com/toolscope/toolscope/internal/core"
	"github.com/toolscope/toolscope/messages"
)

// messageHandler answers the protobuf requests a scope's PID receives, for
// actors that use toolscope without the Go facade. It runs on a goroutine
// of its own (never inside Receive), because answering may run user code.
type messageHandler struct {
	reg   *Registry
	node  *core.Node
	shell *shell
}

// viewNode is nil for the global scope (the global view).
func (h *messageHandler) viewNode() *core.Node {
	if h.node.Key == "" {
		return nil
	}
	return h.node
}

// Handle implements actorsys.Handler.
func (h *messageHandler) Handle(msg any) any {
	switch m := msg.(type) {
	case *messages.ExecuteRequest:
		call := callFromProto(m.GetCall())
		call.Agent = h.node.Key
		res := h.reg.executeOn(context.Background(), h.viewNode(), call)
		return &messages.ExecuteReply{CallId: call.ID, Result: res.Proto()}
	case *messages.ExecutionModeRequest:
		c := m.GetCall()
		mode := h.reg.executionMode(h.viewNode(), c.GetName(), argsFromProto(c.GetArgumentsJson()))
		return &messages.ExecutionModeReply{Mode: modeProto(mode)}
	case *messages.GetRequest:
		td, ok := h.reg.resolve(h.viewNode(), m.GetName())
		if !ok {
			return &messages.GetReply{}
		}
		return &messages.GetReply{Found: true, Tool: &messages.ToolSchema{
			Name: td.name, Description: td.def.Description, ParametersJson: cloneBytes(td.params)}}
	case *messages.SchemasRequest:
		list, err := h.reg.schemas(h.viewNode())
		if err != nil {
			return &messages.SchemasReply{Error: err.Error()}
		}
		out := &messages.SchemasReply{Tools: make([]*messages.ToolSchema, len(list))}
		for i, t := range list {
			out.Tools[i] = &messages.ToolSchema{Name: t.Name, Description: t.Description, ParametersJson: t.Parameters}
		}
		return out
	case *messages.TurnRequest:
		// Counted in flight like ExecuteTurn, so Close drains it (close.go).
		if err := h.reg.enterTurn(); err != nil {
			return &messages.TurnReply{Error: err.Error()}
		}
		c := &callCtx{}
		c.init(context.Background(), &h.reg.life)
		defer h.reg.exit(c)
		return h.reg.turnFromProto(c, h, m)
	}
	return nil
}

func argsFromProto(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return json.RawMessage(b)
}

func callFromProto(c *messages.Call) Call {
	return Call{
		ID:        c.GetCallId(),
		RootID:    c.GetRootCallId(),
		Name:      c.GetName(),
		Arguments: argsFromProto(c.GetArgumentsJson()),
	}
}

func modeProto(m Mode) messages.ExecutionMode {
	if m == Parallel {
		return messages.ModeParallel
	}
	return messages.ModeExclusive
}

// Proto converts the result to its protobuf form.
func (r *Result) Proto() *messages.Result {
	out := &messages.Result{IsError: r.isError, ConcludesTurn: r.concludes}
	if r.value != nil {
		out.ValueJson = cloneBytes(r.value)
	}
	if r.meta != nil {
		out.MetaJson = cloneBytes(r.meta)
	}
	if len(r.content) > 0 {
		out.Content = make([]*messages.ContentBlock, len(r.content))
		for i, b := range r.content {
			out.Content[i] = &messages.ContentBlock{Type: b.Type, Text: b.Text, DataJson: cloneBytes(b.Data)}
		}
	}
	if r.isError {
		out.Error = &messages.ToolError{Message: r.errMsg}
		if r.hasInfo {
			out.Error.Info = &messages.ErrorInfo{Name: r.errName, Code: string(r.errCode)}
		}
	}
	for _, c := range r.contexts {
		out.AdditionalContexts = append(out.AdditionalContexts, &messages.ContextMessage{Role: c.Role, Text: c.Text})
	}
	return out
}

// ResultFromProto rebuilds a result received as a protobuf message. A nil
// message reads as the empty message, as the generated getters read it: a
// success with no value, content or metadata.
func ResultFromProto(m *messages.Result) *Result {
	r := &Result{isError: m.GetIsError(), concludes: m.GetConcludesTurn()}
	if v := m.GetValueJson(); v != nil {
		r.value = cloneBytes(v)
	}
	if v := m.GetMetaJson(); v != nil {
		r.meta = cloneBytes(v)
	}
	for _, b := range m.GetContent() {
		r.content = append(r.content, Block{Type: b.GetType(), Text: b.GetText(), Data: cloneBytes(b.GetDataJson())})
	}
	if e := m.GetError(); e != nil {
		r.errMsg = e.GetMessage()
		if i := e.GetInfo(); i != nil {
			r.errName, r.errCode, r.hasInfo = i.GetName(), Code(i.GetCode()), true
		}
	}
	for _, c := range m.GetAdditionalContexts() {
		r.contexts = append(r.contexts, Message{Role: c.GetRole(), Text: c.GetText()})
	}
	return r
}
