package runtime

import "github.com/toolscope/toolscope/messages"

// Done returns a channel that is closed once the handle's Dispose has
// completed its teardown (every registration removed; their change
// notifications may still be under way), whether Dispose was called on it
// or on its scope, or Close disposed it. For a scope that is never
// disposed it is never closed; the global scope is never disposed (Close
// ends it without closing this channel). It lets a package that serves a
// scope by other means — package actors, which gives a scope a protoactor
// PID — learn of its end without polling. The channel is made on the first
// call: a handle nobody asks pays nothing.
func (s *Scope) Done() <-chan struct{} {
	t := &s.td
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done == nil {
		t.done = make(chan struct{})
	}
	return t.done
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
