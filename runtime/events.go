package runtime

import (
	"fmt"
	"reflect"
	goruntime "runtime"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/toolscope/toolscope/messages"
)

// Execution events (issue 3): every call publishes exactly one
// ExecutionStarted and one ExecutionFinished on the actor system's event
// stream (a turn's synthetic aborted calls included). A dispatched call is "started" when its dispatch is admitted; a
// call that ended before dispatch (denied, aborted, failed) is started and
// finished together, its start stamped with its entry time.

// listening reports whether a real subscriber — anyone but protoactor's own
// (dead letters, supervision) — listens on the event stream: building and
// publishing events nobody reads costs a call about a fifth of its time. A
// call asks once, at entry (execState.events), and then publishes both of
// its events or neither, so a subscriber joining or leaving mid-call never
// sees half a pair (and the stream's read lock is taken once per call, not
// three times).
//
// The answer is decided from the subscribers themselves, not from a count
// taken at New: a subscriber that joined before New (the natural order with
// WithActorSystem) is a listener, and so is one that joins after an earlier
// one left. Per call it costs the stream's Length (a read lock) and one
// atomic load; the subscribers are classified again only when the length
// differs from the one last classified (listeners.recount).
func (r *Registry) listening() bool {
	if !r.cfg.events {
		return false
	}
	es := r.system.EventStream
	n := es.Length()
	if c := r.listeners.Load(); c != 0 && int32(c>>32)-1 == n {
		return uint32(c) != 0
	}
	return r.recountListeners()
}

// recountListeners classifies the event stream's subscribers and caches
// (length+1)<<32 | real subscribers in r.listeners. A subscriber is
// protoactor's own when its handler's code lives in protoactor-go. The
// stream keeps its subscriptions unexported, so they are read by
// reflection under the stream's read lock; if that ever fails (another
// protoactor version), every subscriber counts as real: events are then
// built whenever anyone subscribes, which costs time but loses nothing.
//
// One change goes unseen: a protoactor subscription leaving while a real
// one joins between two calls keeps the length, so the cached answer
// (nobody real) stands until the next change of length. protoactor's core
// subscriptions (dead letters, supervision) never leave; only extensions
// (remote, cluster) come and go.
func (r *Registry) recountListeners() bool {
	es := r.system.EventStream
	es.RLock()
	n, real := countRealSubscribers(reflect.ValueOf(es).Elem())
	es.RUnlock()
	r.listeners.Store(uint64(n+1)<<32 | uint64(real))
	return real != 0
}

const protoactorPkg = "github.com/asynkron/protoactor-go/"

// countRealSubscribers returns the stream's subscriber count and how many
// of them are not protoactor's own. stream is the eventstream.EventStream
// struct; its lock is held.
func countRealSubscribers(stream reflect.Value) (n int32, real uint32) {
	counter := stream.FieldByName("counter")
	subs := stream.FieldByName("subscriptions")
	if !counter.IsValid() || counter.Kind() != reflect.Int32 || !subs.IsValid() || subs.Kind() != reflect.Slice {
		return 0, 1 // unknown layout: assume someone listens
	}
	n = int32(counter.Int())
	for i := range subs.Len() {
		sub := subs.Index(i)
		if sub.Kind() != reflect.Pointer || sub.IsNil() {
			continue
		}
		h := sub.Elem().FieldByName("handler")
		if !h.IsValid() || h.Kind() != reflect.Func {
			return n, uint32(max(n, 1))
		}
		if h.IsNil() {
			continue
		}
		if f := goruntime.FuncForPC(h.Pointer()); f != nil && strings.HasPrefix(f.Name(), protoactorPkg) {
			continue
		}
		real++
	}
	return n, real
}

// publish hands evt to the event stream's subscribers on the caller's
// goroutine. A panicking subscriber is contained and reported (the error
// handler and logger): it must never take down a caller, or a worker
// running a turn's dispatch, where a panic would end the process. The
// subscribers after it miss that one event (the stream stops delivering).
func (r *Registry) publish(evt any) {
	defer r.recoverSubscriber()
	r.system.EventStream.Publish(evt)
}

// recoverSubscriber is deferred around anything that may run the event
// stream's subscribers synchronously: publishing, and every send, stop or
// poison of an actor (a message to a dead PID becomes a dead letter, which
// is published on the sender's goroutine).
func (r *Registry) recoverSubscriber() {
	if p := recover(); p != nil {
		r.contain(fmt.Errorf("event stream subscriber panicked: %w", panicError(p)))
	}
}

// send sends msg to pid, containing a panicking event-stream subscriber
// hearing its dead letter (recoverSubscriber).
func (r *Registry) send(pid *actor.PID, msg any) {
	defer r.recoverSubscriber()
	r.system.Root.Send(pid, msg)
}

// stopActor stops pid like Root.Stop, containing a panicking subscriber.
func (r *Registry) stopActor(pid *actor.PID) {
	defer r.recoverSubscriber()
	r.system.Root.Stop(pid)
}

// poisonActor poisons pid like Root.Poison, containing a panicking
// subscriber.
func (r *Registry) poisonActor(pid *actor.PID) {
	defer r.recoverSubscriber()
	r.system.Root.Poison(pid)
}

func (r *Registry) emitStarted(s *execState) {
	if s.startedSent || (!s.events && s.typed == nil && r.metrics == nil) {
		return
	}
	r.publishStarted(s, time.Now().UnixNano())
}

func (r *Registry) publishStarted(s *execState, at int64) {
	s.startedSent = true
	s.startedAt = at
	if s.typed != nil {
		deliverTyped(s.typed, execEvent(ExecutionStarted, s, at))
	}
	if !s.events {
		return
	}
	r.publish(&messages.ExecutionStarted{
		CallId: s.callID, Scope: s.agent, Tool: s.name, Mode: eventMode(s),
		UnixNanos: at, TurnId: s.turnID, Group: s.group,
	})
}

func (r *Registry) emitFinished(s *execState, res *Result) {
	if !s.events && s.typed == nil {
		return
	}
	if !s.startedSent {
		at := s.enteredAt
		if at == 0 {
			at = time.Now().UnixNano()
		}
		r.publishStarted(s, at)
	}
	now := time.Now().UnixNano()
	if s.typed != nil {
		e := execEvent(ExecutionFinished, s, now)
		e.IsError, e.Code = res.isError, res.errCode
		switch {
		case !res.isError:
			e.Outcome = OutcomeOK
		case res.hasInfo:
			e.Outcome = OutcomeCoded
		case s.denied:
			e.Outcome = OutcomeDenied
		default:
			e.Outcome = OutcomeFailed
		}
		deliverTyped(s.typed, e)
	}
	if !s.events {
		return
	}
	code := res.errCode
	if res.isError && !res.hasInfo {
		code = messages.OutcomeError
		if s.denied {
			code = messages.OutcomeDenied
		}
	}
	r.publish(&messages.ExecutionFinished{
		CallId: s.callID, Scope: s.agent, Tool: s.name, Mode: eventMode(s),
		StartedUnixNanos: s.startedAt, FinishedUnixNanos: now,
		OutcomeCode: string(code), IsError: res.isError, TurnId: s.turnID, Group: s.group,
		DispatchDoneUnixNanos: s.dispatchEnd,
	})
}

// emitSynthetic publishes the event pair of a turn call that never started
// (R97): it bypasses the registry, but the record of calls stays complete.
func (r *Registry) emitSynthetic(callID, scope, tool, turnID string, group int32, parent Token) {
	if r.metrics != nil {
		r.metrics.recordFailure(CodeAbortedBeforeDispatch)
	}
	now := time.Now().UnixNano()
	if subs := r.typedListeners(); len(subs) > 0 {
		t := unixTime(now)
		e := Event{Kind: ExecutionStarted, At: t, CallID: callID, Tool: tool, Scope: scope, Parent: parent,
			EnteredAt: t, StartedAt: t, TurnID: turnID, Group: group}
		deliverTyped(subs, e)
		e.Kind, e.IsError, e.Code, e.Outcome = ExecutionFinished, true, CodeAbortedBeforeDispatch, OutcomeCoded
		deliverTyped(subs, e)
	}
	if !r.listening() {
		return
	}
	r.publish(&messages.ExecutionStarted{
		CallId: callID, Scope: scope, Tool: tool, UnixNanos: now, TurnId: turnID, Group: group,
	})
	r.publish(&messages.ExecutionFinished{
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

// SubscriberPanicked implements actorsys.PanicReporter: a panic contained
// while the scope actor's worker sent a reply (a dead letter's subscriber).
func (h *messageHandler) SubscriberPanicked(p any) {
	h.reg.contain(fmt.Errorf("event stream subscriber panicked: %w", panicError(p)))
}
