package runtime

import (
	"time"

	"github.com/toolscope/toolscope/messages"
)

// Execution events (issue 3): every call publishes exactly one
// ExecutionStarted and one ExecutionFinished on the actor system's event
// stream (a turn's synthetic aborted calls included). A dispatched call is "started" when its dispatch is admitted; a
// call that ended before dispatch (denied, aborted, failed) is started and
// finished together, its start stamped with its entry time.

// listening reports whether anyone beyond the actor system's own
// subscribers listens on the event stream: building and publishing events
// nobody reads costs a call about a fifth of its time. A call asks once, at
// entry (execState.events), and then publishes both of its events or
// neither, so a subscriber joining or leaving mid-call never sees half a
// pair (and the stream's read lock is taken once per call, not three times).
func (r *Registry) listening() bool {
	return r.cfg.events && r.system.EventStream.Length() > r.eventBase
}

func (r *Registry) emitStarted(s *execState) {
	if s.startedSent || !s.events {
		return
	}
	r.publishStarted(s, time.Now().UnixNano())
}

func (r *Registry) publishStarted(s *execState, at int64) {
	s.startedSent = true
	s.startedAt = at
	r.system.EventStream.Publish(&messages.ExecutionStarted{
		CallId: s.callID, Scope: s.agent, Tool: s.name, Mode: eventMode(s),
		UnixNanos: at, TurnId: s.turnID, Group: s.group,
	})
}

func (r *Registry) emitFinished(s *execState, res *Result) {
	if !s.events {
		return
	}
	if !s.startedSent {
		at := s.enteredAt
		if at == 0 {
			at = time.Now().UnixNano()
		}
		r.publishStarted(s, at)
	}
	code := res.errCode
	if res.isError && !res.hasInfo {
		code = messages.OutcomeError
		if s.denied {
			code = messages.OutcomeDenied
		}
	}
	r.system.EventStream.Publish(&messages.ExecutionFinished{
		CallId: s.callID, Scope: s.agent, Tool: s.name, Mode: eventMode(s),
		StartedUnixNanos: s.startedAt, FinishedUnixNanos: time.Now().UnixNano(),
		OutcomeCode: string(code), IsError: res.isError, TurnId: s.turnID, Group: s.group,
		DispatchDoneUnixNanos: s.dispatchEnd,
	})
}

// emitSynthetic publishes the event pair of a turn call that never started
// (R97): it bypasses the registry, but the record of calls stays complete.
func (r *Registry) emitSynthetic(callID, scope, tool, turnID string, group int32) {
	if !r.listening() {
		return
	}
	now := time.Now().UnixNano()
	r.system.EventStream.Publish(&messages.ExecutionStarted{
		CallId: callID, Scope: scope, Tool: tool, UnixNanos: now, TurnId: turnID, Group: group,
	})
	r.system.EventStream.Publish(&messages.ExecutionFinished{
		CallId: callID, Scope: scope, Tool: tool, StartedUnixNanos: now, FinishedUnixNanos: now,
		OutcomeCode: string(CodeAbortedBeforeDispatch), IsError: true, TurnId: turnID, Group: group,
	})
}

func eventMode(s *execState) messages.ExecutionMode {
	if !s.classified {
		return messages.ModeUnspecified
	}
	return modeProto(s.mode)
}

// WithEvents turns the execution events on or off (default on).
func WithEvents(on bool) Option {
	return optionFunc(func(c *config) error { c.events = on; return nil })
}
