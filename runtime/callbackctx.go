package runtime

import "context"

// callbackKey marks callbackCtx.
type callbackKey struct{}

// callbackCtx is the ctx of a callback that runs for no execution the
// registry can name: change subscribers (the mutating methods take no ctx,
// so the execution that made the change, if any, is unknown) and the
// classifier when ExecutionMode (which takes no ctx either) runs it. A
// call made with it, or with a ctx derived from it, cannot be nested in
// the execution it may be running inside, so it must not wait for that
// execution's admission: it is admitted only if it can be at once, and
// fails with WOULD_DEADLOCK otherwise (R86, refusedFromCallback). It is
// never cancelled.
var callbackCtx = context.WithValue(context.Background(), callbackKey{}, true)

// fromCallbackCtx reports whether ctx is, or derives from, callbackCtx.
func fromCallbackCtx(ctx context.Context) bool {
	return ctx != nil && ctx.Value(callbackKey{}) != nil
}

// refusedFromCallback returns the refusal of a call that would wait for
// admission on sh although it was made with callbackCtx and is not nested
// (no ancestor holds an admission), else nil. Only called where the call
// is about to be admitted; it looks at the ctx only when the gate would
// make the call wait, so calls that are admitted at once pay nothing.
func (r *Registry) refusedFromCallback(s *execState, sh *scopeState) *Result {
	if sh == nil || r.admitsNow(s, sh) || r.nestedCall(s) || !fromCallbackCtx(s.ectx.Context) {
		return nil
	}
	key := "the global scope"
	if s.node != nil && s.node.Key != "" {
		key = "scope \"" + s.node.Key + "\""
	}
	return codedFailure(NameDeadlock, CodeWouldDeadlock, "tool call \""+s.name+"\" would wait for admission in "+key+
		", but it was made with the ctx of a change subscriber, of a back-pressure event subscriber or of ExecutionMode's classifier, which carries no execution:"+
		" it cannot be nested in the call it may run inside, so it does not wait (R86)")
}

// IsCallbackContext reports whether ctx is, or derives from, the ctx the
// registry gives a callback that runs for no execution: a change
// subscriber's, a back-pressure event subscriber's (SubscribeContext with
// WithBackPressure), or ExecutionMode's classifier's. Such a callback may run
// inside a mutation or a call it cannot see, so code it calls does what the
// registry does with that ctx (R86): rather than wait for work that may be
// waiting for the callback, it fails at once. mcp's Imported.Sync is such
// code.
func IsCallbackContext(ctx context.Context) bool { return fromCallbackCtx(ctx) }
