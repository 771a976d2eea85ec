package actors

import (
	"time"

	"github.com/toolscope/toolscope/messages"
	"github.com/toolscope/toolscope/runtime"
)

// publishEvent is the host's runtime.Hooks.Event (WithEvents): it turns a
// call's typed events into the protobuf ExecutionStarted and
// ExecutionFinished and publishes them on the actor system's event stream,
// on the goroutine where the call reached that point (a subscriber runs
// there: it must be quick). A panicking subscriber is contained by the
// registry (Hooks) and reported to its error handler and logger; the
// subscribers after it miss that one event.
func (h *Host) publishEvent(e runtime.Event) {
	switch e.Kind {
	case runtime.ExecutionStarted:
		h.sys.EventStream.Publish(&messages.ExecutionStarted{
			CallId: e.CallID, Scope: e.Scope, Tool: e.Tool, Mode: eventMode(e),
			UnixNanos: unixNanos(e.StartedAt), TurnId: e.TurnID, Group: e.Group,
		})
	case runtime.ExecutionFinished:
		h.sys.EventStream.Publish(&messages.ExecutionFinished{
			CallId: e.CallID, Scope: e.Scope, Tool: e.Tool, Mode: eventMode(e),
			StartedUnixNanos: unixNanos(e.StartedAt), FinishedUnixNanos: unixNanos(e.At),
			OutcomeCode: string(e.Code), Outcome: e.Outcome.Proto(), IsError: e.IsError, TurnId: e.TurnID, Group: e.Group,
			DispatchDoneUnixNanos: unixNanos(e.DispatchDoneAt),
		})
	}
}

// eventMode is the call's classification; unspecified when the call ended
// before it was classified (and for a call outside a turn that was not).
func eventMode(e runtime.Event) messages.ExecutionMode {
	if !e.Classified {
		return messages.ModeUnspecified
	}
	return modeProto(e.Mode)
}

// unixNanos is t in nanoseconds since the Unix epoch, 0 for the zero time.
func unixNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}
