package runtime

import "context"

// Execution events: every call delivers exactly one ExecutionStarted and
// one ExecutionFinished typed event (a turn's synthetic aborted calls
// included) to Hooks.Event and the subscriptions. A dispatched call is
// "started" when its dispatch is admitted; a call that ended before
// dispatch (denied, aborted, failed) is started and finished together, its
// start stamped with its entry time.

func (r *Registry) emitStarted(s *execState) {
	if s.startedSent || (s.typed == nil && !s.times) {
		return
	}
	r.publishStarted(s, r.now().UnixNano())
}

func (r *Registry) publishStarted(s *execState, at int64) {
	s.startedSent = true
	s.startedAt = at
	if s.typed != nil {
		deliverTyped(s.typed, execEvent(ExecutionStarted, s, at), s.ctx())
	}
}

func (r *Registry) emitFinished(s *execState, res *Result) {
	if s.typed == nil {
		return
	}
	if !s.startedSent {
		at := s.enteredAt
		if at == 0 {
			at = r.now().UnixNano()
		}
		r.publishStarted(s, at)
	}
	e := execEvent(ExecutionFinished, s, r.now().UnixNano())
	e.IsError, e.Code, e.Outcome = res.isError, res.errCode, res.Outcome()
	deliverTyped(s.typed, e, s.ctx())
}

// emitSynthetic publishes the event pair of a turn call that never started
// (R97): it bypasses the registry, but the record of calls stays complete.
func (r *Registry) emitSynthetic(ctx context.Context, callID, scope, tool, turnID string, group int32, parent Token) {
	now := r.now().UnixNano()
	if subs := r.typedListeners(); len(subs) > 0 {
		t := unixTime(now)
		e := Event{Kind: ExecutionStarted, At: t, CallID: callID, Tool: tool, Scope: scope, Parent: parent,
			EnteredAt: t, StartedAt: t, TurnID: turnID, Group: group}
		deliverTyped(subs, e, ctx)
		e.Kind, e.IsError, e.Code, e.Outcome = ExecutionFinished, true, CodeAbortedBeforeDispatch, OutcomeCancelled
		deliverTyped(subs, e, ctx)
	}
}

// WithEvents turns the typed events (Hooks.Event, Subscribe) on or off
// (default on).
func WithEvents(on bool) Option {
	return optionFunc(func(c *config) error { c.events = on; return nil })
}
