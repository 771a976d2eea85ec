package runtime

import (
	"context"
	"encoding/json"
	"fmt"

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

// agentRefusal is the refusal of a call whose agent names a scope other
// than the one whose PID received it ("" when the agent is empty or the
// scope's own key): a scope's PID answers in its own view only, as the
// scope's Execute does (R41), and a call must not run silently in a view
// other than the one it names.
func (h *messageHandler) agentRefusal(c *messages.Call) string {
	agent := c.GetAgent()
	if agent == "" || agent == h.node.Key {
		return ""
	}
	return fmt.Sprintf("call.agent %q is not the key of the scope whose PID received the request (%q): a scope's PID runs calls in its own view only; send the request to that scope's PID, or leave agent empty", agent, h.node.Key)
}

// Handle implements actorsys.Handler. Every message gets a reply: a
// message it does not know, or a request it refuses as a whole, gets an
// ErrorReply (the actor sends a reply only to a sender, i.e. a Request or
// RequestFuture).
func (h *messageHandler) Handle(msg any) any {
	switch m := msg.(type) {
	case *messages.ExecuteRequest:
		c := m.GetCall()
		if why := h.agentRefusal(c); why != "" {
			return &messages.ExecuteReply{CallId: c.GetCallId(), Result: failureFromMessage(why, nil).Proto()}
		}
		call := Call{ID: c.GetCallId(), RootID: c.GetRootCallId(), Name: c.GetName(), Agent: h.node.Key}
		// The argument bytes go to the snapshot as they are (no boxing
		// as a json.RawMessage in Call.Arguments: one allocation less).
		res := h.reg.executeArgs(context.Background(), h.viewNode(), nil, call, c.GetArgumentsJson())
		rb := &executeReplyBlock{}
		rb.reply.CallId, rb.reply.Result = call.ID, res.protoInto(&rb.res, rb.block[:0], rb.ptrs[:0])
		return &rb.reply
	case *messages.ExecutionModeRequest:
		c := m.GetCall()
		if why := h.agentRefusal(c); why != "" {
			return &messages.ErrorReply{Error: why}
		}
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
	return &messages.ErrorReply{Error: fmt.Sprintf("toolscope: the PID of scope %q does not answer a %T; it answers ExecuteRequest, ExecutionModeRequest, GetRequest, SchemasRequest and TurnRequest (package messages)", h.node.Key, msg)}
}

func argsFromProto(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return json.RawMessage(b)
}

func modeProto(m Mode) messages.ExecutionMode {
	if m == Parallel {
		return messages.ModeParallel
	}
	return messages.ModeExclusive
}

// executeReplyBlock is an ExecuteReply with its result and a single
// content block, in one allocation.
type executeReplyBlock struct {
	reply messages.ExecuteReply
	res   messages.Result
	block [1]messages.ContentBlock
	ptrs  [1]*messages.ContentBlock
}

// Proto converts the result to its protobuf form.
func (r *Result) Proto() *messages.Result {
	return r.protoInto(&messages.Result{}, nil, nil)
}

// protoInto fills out, a zero message, with the result; the content blocks
// go in the room blocks and ptrs have (appended to: they come back with
// length 0), and in new ones beyond it.
func (r *Result) protoInto(out *messages.Result, blocks []messages.ContentBlock, ptrs []*messages.ContentBlock) *messages.Result {
	out.IsError, out.ConcludesTurn = r.isError, r.concludes
	if r.value != nil {
		out.ValueJson = cloneBytes(r.value)
	}
	if r.meta != nil {
		out.MetaJson = cloneBytes(r.meta)
	}
	if len(r.content) > 0 {
		if cap(blocks) < len(r.content) {
			blocks = make([]messages.ContentBlock, 0, len(r.content))
		}
		if cap(ptrs) < len(r.content) {
			ptrs = make([]*messages.ContentBlock, 0, len(r.content))
		}
		blocks, ptrs = blocks[:len(r.content)], ptrs[:len(r.content)]
		for i, b := range r.content {
			cb := &blocks[i]
			cb.Type, cb.Text, cb.DataJson = b.Type, b.Text, cloneBytes(b.Data)
			ptrs[i] = cb
		}
		out.Content = ptrs
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
