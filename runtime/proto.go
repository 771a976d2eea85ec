package runtime

import (
	"encoding/json"

	"github.com/toolscope/toolscope/messages"
)

// The protobuf forms of the registry's data (package messages), for the
// actor face (package actors) and anyone else who carries calls and results
// as protobuf messages. Only data is converted here: what a message asks
// for is done through the ordinary API (Scope.Execute, Scope.ExecuteTurn).

// Proto returns the protobuf form of the mode.
func (m Mode) Proto() messages.ExecutionMode {
	if m == Parallel {
		return messages.ModeParallel
	}
	return messages.ModeExclusive
}

// CallFromProto returns the call a protobuf Call describes. Its argument
// bytes become Arguments as a json.RawMessage (not copied: the message must
// not change while the call runs); empty bytes are a nil Go argument
// value, JSON null.
func CallFromProto(c *messages.Call) Call {
	call := Call{ID: c.GetCallId(), RootID: c.GetRootCallId(), Name: c.GetName(), Agent: c.GetAgent()}
	if b := c.GetArgumentsJson(); len(b) != 0 {
		call.Arguments = json.RawMessage(b)
	}
	return call
}

// TurnCallFromProto returns the turn call a protobuf TurnCall describes.
func TurnCallFromProto(c *messages.TurnCall) TurnCall {
	return TurnCall{ID: c.GetCallId(), Name: c.GetName(), ArgumentsText: c.GetArgumentsText()}
}

// Proto returns the protobuf form of the schema (Parameters is copied).
func (t ToolSchema) Proto() *messages.ToolSchema {
	return &messages.ToolSchema{Name: t.Name, Description: t.Description, ParametersJson: cloneBytes(t.Parameters)}
}

// Proto returns the protobuf form of the turn's outcome: its results,
// record, contexts and conclusion (the reply's Error is the caller's to
// set).
func (t *TurnResult) Proto() *messages.TurnReply {
	reply := &messages.TurnReply{Concluded: t.Concluded}
	for _, x := range t.Results {
		reply.Results = append(reply.Results, x.Proto())
	}
	for _, e := range t.Events {
		k := messages.TurnEventCallStarted
		if e.Kind == ResultRecorded {
			k = messages.TurnEventResult
		}
		reply.Events = append(reply.Events, &messages.TurnEvent{Kind: k, CallId: e.CallID})
	}
	for _, c := range t.Contexts {
		reply.Contexts = append(reply.Contexts, &messages.ContextMessage{Role: c.Role, Text: c.Text})
	}
	return reply
}

// Proto converts the result to its protobuf form.
func (r *Result) Proto() *messages.Result {
	return r.protoInto(&messages.Result{}, nil, nil)
}

// protoInto is Proto into out, a zero message, for a caller that allocates
// the message together with its reply (ExecuteReply): the content blocks go in the room
// blocks and ptrs have (appended to from length 0), and in new ones beyond
// it. It returns out.
func (r *Result) protoInto(out *messages.Result, blocks []messages.ContentBlock, ptrs []*messages.ContentBlock) *messages.Result {
	out.IsError, out.ConcludesTurn, out.Outcome = r.isError, r.concludes, r.Outcome().Proto()
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
		r.contexts = append(r.contexts, ContextMessage{Role: c.GetRole(), Text: c.GetText()})
	}
	// A denial is the one outcome its code does not tell: an uncoded
	// failure the sender marked denied.
	r.denied = r.isError && !r.hasInfo && m.GetOutcome() == messages.OutcomeDenied
	return r
}

// Proto returns the protobuf value of o (messages.Outcome, whose value is
// o's plus one; OUTCOME_UNSPECIFIED for a value out of range).
func (o Outcome) Proto() messages.Outcome {
	if o < OutcomeOK || o > OutcomeRefused {
		return messages.OutcomeUnspecified
	}
	return messages.Outcome(o + 1)
}

// ExecuteReply converts the result to the reply of a protobuf
// ExecuteRequest for callID: the message Proto builds, with the reply, the
// result and one content block in a single allocation (what a message
// path pays per call besides the copied bytes).
func (r *Result) ExecuteReply(callID string) *messages.ExecuteReply {
	rb := &replyBlock{}
	rb.reply.CallId, rb.reply.Result = callID, r.protoInto(&rb.res, rb.block[:0], rb.ptrs[:0])
	return &rb.reply
}

// replyBlock is an ExecuteReply with its result and a single content
// block, in one allocation.
type replyBlock struct {
	reply messages.ExecuteReply
	res   messages.Result
	block [1]messages.ContentBlock
	ptrs  [1]*messages.ContentBlock
}
