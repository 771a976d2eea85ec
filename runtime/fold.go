package runtime

// The pure steps of the pipeline: what normalization (R65), a post-execute
// decision (R69–R71) and finishing (R72–R74) make of a result. They read
// no registry, call no hook and change no result they are given; where a
// step needs a new success (R62: the definition resolved now, its renderer
// and projector), it says so and the caller creates it.

// normalized is R65 for a result the around hooks returned; own means this
// execution's own next produced exactly it. Own passes through. A foreign
// failure keeps its message, code, content, metadata and contexts and
// loses any value (and the turn mark, which only successes carry). A
// foreign success — a lossy Success included — is rebuilt from its value
// (rebuild: the caller creates it from out.foreignValue(), and a success
// it gets keeps out's contexts).
func normalized(out *Result, own bool) (res *Result, rebuild bool) {
	if own {
		return out, false
	}
	if out.isError && !out.lossyValue() {
		n := *out
		n.value = nil
		n.concludes = false
		n.stamp = nil
		return &n, false
	}
	return nil, true
}

// withContextsFirst is R65's context merge: msgs (the body's deferred
// contexts, R77) go in front of res's own.
func withContextsFirst(msgs []ContextMessage, res *Result) *Result {
	if len(msgs) == 0 {
		return res
	}
	n := *res
	n.contexts = append(append(make([]ContextMessage, 0, len(msgs)+len(res.contexts)), msgs...), res.contexts...)
	return &n
}

// foldPost is what the post-execute waterfall's outcome (dec, err) makes
// of res (R69–R71). AcceptValue on a success needs a new success (R62):
// foldPost then returns rebuild, and the caller creates the success from
// dec.Value and, if it is one, passes it through acceptedContexts.
func foldPost(res *Result, dec PostDecision, err error) (out *Result, rebuild bool) {
	if err != nil {
		return failureFrom(err), false // R71: no contexts
	}
	if dec.Blocked {
		out := blocked(dec.Feedback)
		out.denied = res.denied                    // a denial stays one, whatever the model is shown
		out.contexts = cloneMessages(dec.Contexts) // R70: the decision's only
		return out, false
	}
	if dec.Content != nil && dec.HasValue {
		return failureFromMessage("post-execute hook: an accept decision cannot replace both value and content", nil), false
	}
	out = res
	switch {
	case dec.HasValue:
		if res.isError {
			return failureFromMessage("post-execute hook cannot replace the value of a failed result", nil), false
		}
		return nil, true
	case dec.Content != nil:
		if !blocksSafe(dec.Content) {
			return failureFromMessage("tool result must be losslessly JSON-serializable", nil), false
		}
		n := *res
		n.content = cloneBlocks(dec.Content)
		out = &n
	}
	return acceptedContexts(res, out, dec.Contexts), false
}

// acceptedContexts is R70 for an accepted decision: out (res, or what the
// decision made of it) with res's contexts followed by msgs, the
// decision's. A new result has no stamp: post-execute's outcome is never
// an execution's own dispatch (finish clears res's own).
func acceptedContexts(res, out *Result, msgs []ContextMessage) *Result {
	if len(msgs) == 0 && out == res {
		return res
	}
	n := *out
	n.stamp = nil
	n.contexts = append(append([]ContextMessage(nil), res.contexts...), msgs...)
	if len(n.contexts) == 0 {
		n.contexts = nil
	}
	return &n
}

// materialized is R72's materialization of a candidate: res, or the
// failure it becomes when its content is not JSON-safe.
func materialized(res *Result) *Result {
	if !blocksSafe(res.content) {
		return failureFromMessage("tool result must be losslessly JSON-serializable", nil)
	}
	return res
}

// finalized is what the finalizer's return (blocks, err) makes of res
// (R72 steps 2–3): its content replaced by blocks when not nil, and
// nothing else (R74); a failure when it failed or returned content that
// is not JSON-safe.
func finalized(res *Result, blocks []Block, err error) *Result {
	switch {
	case err != nil:
		return failureFrom(err)
	case blocks == nil:
		return res
	case !blocksSafe(blocks):
		return failureFromMessage("tool result must be losslessly JSON-serializable", nil)
	}
	n := *res
	n.content = cloneBlocks(blocks)
	return &n
}
