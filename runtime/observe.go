package runtime

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// EventKind tells what an Event reports.
type EventKind int

// The kinds of Event.
const (
	// ExecutionStarted: a call's dispatch was admitted (StartedAt), or the
	// call ended before dispatch (denied, aborted, failed), in which case
	// it is started and finished together.
	ExecutionStarted EventKind = iota + 1
	// ExecutionFinished: a call's final result is known (after post-execute
	// and the finalizer, before the result observers).
	ExecutionFinished
	// TurnStarted: ExecuteTurn got its go-ahead.
	TurnStarted
	// TurnFinished: ExecuteTurn is about to return.
	TurnFinished
	// RegistryChanged: a tool or restriction changed in some scope (R87);
	// like a change notification it carries no payload: re-query.
	RegistryChanged
)

// String names the kind, e.g. "execution-finished".
func (k EventKind) String() string {
	switch k {
	case ExecutionStarted:
		return "execution-started"
	case ExecutionFinished:
		return "execution-finished"
	case TurnStarted:
		return "turn-started"
	case TurnFinished:
		return "turn-finished"
	case RegistryChanged:
		return "registry-changed"
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// Outcome says what happened to a call. It is the one failure vocabulary
// of toolscope: Result.Outcome, Event.Outcome, CallDone.Outcome,
// otelscope's toolscope.outcome attribute, the protobuf Outcome of the
// actor protocol and cmd/demo's table and JSON events all use these values
// and their String words (docs/contract.md#outcomes). A failure's Code, when
// it has one, says more; the outcome of a code is Code.Outcome.
type Outcome int

// The outcomes of a call.
const (
	// OutcomeOK: a success ("ok").
	OutcomeOK Outcome = iota
	// OutcomeDenied: policy refused the call before its body ran — a
	// pre-execute Deny, an approval not granted (or no approver), a guard
	// (R55, R57) ("denied"). A denial is uncoded.
	OutcomeDenied
	// OutcomeFailed: the call failed — the tool's error (coded or not), a
	// hook's error, arguments or output that fail their schema, an unknown
	// tool, a post-execute Block of a result that was not denied
	// ("failed").
	OutcomeFailed
	// OutcomeTimedOut: the tool's declared timeout fired (TOOL_TIMEOUT)
	// ("timed_out").
	OutcomeTimedOut
	// OutcomeCancelled: the caller's ctx ended — before dispatch
	// (ABORTED_BEFORE_DISPATCH) or while the body ran (ABORTED)
	// ("cancelled").
	OutcomeCancelled
	// OutcomeRefused: the registry did not take the call on — its scope's
	// queue was full (OVERLOADED), the registry closed (CLOSED), or a
	// nested call could never be admitted (WOULD_DEADLOCK) ("refused").
	OutcomeRefused
)

// String returns the outcome's word: "ok", "denied", "failed",
// "timed_out", "cancelled" or "refused".
func (o Outcome) String() string {
	switch o {
	case OutcomeOK:
		return "ok"
	case OutcomeDenied:
		return "denied"
	case OutcomeFailed:
		return "failed"
	case OutcomeTimedOut:
		return "timed_out"
	case OutcomeCancelled:
		return "cancelled"
	case OutcomeRefused:
		return "refused"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// Outcome is the outcome of a failure with code c: OutcomeTimedOut for
// TOOL_TIMEOUT, OutcomeCancelled for ABORTED and ABORTED_BEFORE_DISPATCH,
// OutcomeRefused for OVERLOADED, CLOSED and WOULD_DEADLOCK, and
// OutcomeFailed for every other code (a tool's own included) and for "".
func (c Code) Outcome() Outcome {
	switch c {
	case CodeToolTimeout:
		return OutcomeTimedOut
	case CodeAborted, CodeAbortedBeforeDispatch:
		return OutcomeCancelled
	case CodeOverloaded, CodeClosed, CodeWouldDeadlock:
		return OutcomeRefused
	}
	return OutcomeFailed
}

// Event is one typed event of a Registry (Subscribe). Fields that do not
// apply to its Kind are zero.
type Event struct {
	Kind EventKind
	// At is when the event happened.
	At time.Time

	// Executions (ExecutionStarted, ExecutionFinished).
	CallID string
	Tool   string
	Scope  string // the scope key the call ran for ("" for the global view)
	Token  Token  // the execution; Parent is its parent's (zero: top level)
	Parent Token
	// Mode is the call's classification; Classified is false when the call
	// ended before it was classified (e.g. an argument failure or a turn's
	// synthetic aborted call).
	Mode       Mode
	Classified bool
	// EnteredAt is when the call entered the registry, StartedAt when its
	// dispatch was admitted (EnteredAt for a call that never dispatched),
	// DispatchDoneAt when around hooks and body returned (zero: never
	// dispatched). StartedAt-EnteredAt is the wait for admission, plus the
	// gate stages.
	EnteredAt      time.Time
	StartedAt      time.Time
	DispatchDoneAt time.Time
	// ExecutionFinished only: Outcome is the final result's
	// (Result.Outcome), Code its code.
	Outcome Outcome
	Code    Code
	IsError bool

	// Turns: TurnID and Group for a turn's calls too (Group numbers the
	// call's group, R92); Calls for TurnStarted/TurnFinished.
	TurnID    string
	Group     int32
	Calls     int
	Concluded bool  // TurnFinished: a committed result concluded the turn
	Err       error // TurnFinished: the turn's internal error, if any (R98)
}

// AdmissionWait is how long a dispatched call waited between entering the
// registry and its dispatch being admitted (0 for a call never dispatched).
func (e Event) AdmissionWait() time.Duration {
	if e.DispatchDoneAt.IsZero() || e.StartedAt.Before(e.EnteredAt) {
		return 0
	}
	return e.StartedAt.Sub(e.EnteredAt)
}

// SubscribeOption configures one Subscribe.
type SubscribeOption interface{ applySubscribe(*subOptions) }

type subOptions struct{ buffer int }

type subOptionFunc func(*subOptions)

func (f subOptionFunc) applySubscribe(o *subOptions) { f(o) }

// WithBuffer sets how many events may wait for a slow subscriber before
// later ones are dropped (and counted: Subscription.Dropped). Default 4096;
// n < 1 means 1.
func WithBuffer(n int) SubscribeOption {
	return subOptionFunc(func(o *subOptions) { o.buffer = max(n, 1) })
}

// Subscription is one Subscribe: Close ends it, Dropped counts the events
// it lost to a full buffer.
type Subscription struct {
	reg     *Registry
	fn      func(Event)
	ch      chan Event
	done    chan struct{} // closed by Close: stop now
	drain   chan struct{} // closed when the registry closes: deliver what is buffered, then stop
	once    sync.Once
	dropped atomic.Int64
	exited  chan struct{}
	// sync: a Hooks.Event, called in place by deliverTyped; never
	// closed, never dropped.
	sync bool
}

// Subscribe calls fn with every event of the registry from now on: calls
// started and finished (a turn's synthetic aborted calls included, R97),
// turns started and finished, and registry changes. Delivery is
// asynchronous, in order, on a goroutine of the subscription's own, through
// a bounded buffer (WithBuffer): a slow subscriber never stalls a call —
// events that find its buffer full are dropped and counted
// (Subscription.Dropped), the first drop of each subscription reported once
// through the error handler (ErrEventsDropped) and logged as a warning
// through the registry's logger, or slog.Default() without WithLogger —
// and a panicking one is
// contained (reported through the error handler and logger) and keeps
// receiving. A call decides at entry whether anyone subscribes, so a
// subscriber that joins mid-call may miss that call's events, never one of
// a pair. Nothing is built for events while nobody subscribes. Close the
// subscription, or the registry, to end it. WithEvents(false) turns events
// off altogether.
func (r *Registry) Subscribe(fn func(Event), opts ...SubscribeOption) (*Subscription, error) {
	if fn == nil {
		return nil, fmt.Errorf("%w: Subscribe needs a non-nil func", ErrInvalidConfig)
	}
	if r.closed.Load() {
		return nil, ErrClosed
	}
	o := subOptions{buffer: 4096}
	for _, opt := range opts {
		if opt != nil {
			opt.applySubscribe(&o)
		}
	}
	sub := &Subscription{reg: r, fn: fn, ch: make(chan Event, o.buffer), done: make(chan struct{}), drain: make(chan struct{}), exited: make(chan struct{})}
	r.subsMu.Lock()
	// Checked again under the lock Close's teardown takes to end the
	// subscriptions (closeSubscriptions): a Subscribe that passed the
	// check above as Close began is either in the list the teardown ends
	// or sees closed here — never added after the teardown looked.
	if r.closed.Load() {
		r.subsMu.Unlock()
		return nil, ErrClosed
	}
	old := r.typedSubs()
	next := append(append(make([]*Subscription, 0, len(old)+1), old...), sub)
	r.subs.Store(&next)
	r.subsMu.Unlock()
	go sub.loop()
	return sub, nil
}

// Close ends the subscription: no event is delivered after Close returns
// except the one being delivered, if any. It is idempotent. When the
// registry closes, its subscriptions end by themselves once they have
// delivered the events still buffered.
func (s *Subscription) Close() { s.end(s.done) }

func (s *Subscription) end(how chan struct{}) {
	s.once.Do(func() {
		r := s.reg
		r.subsMu.Lock()
		old := r.typedSubs()
		next := make([]*Subscription, 0, len(old))
		for _, x := range old {
			if x != s {
				next = append(next, x)
			}
		}
		if len(next) == 0 {
			r.subs.Store(nil)
		} else {
			r.subs.Store(&next)
		}
		r.subsMu.Unlock()
		close(how)
	})
}

// Dropped reports the events lost because the subscriber's buffer was full.
func (s *Subscription) Dropped() int64 { return s.dropped.Load() }

func (s *Subscription) loop() {
	defer close(s.exited)
	for {
		select {
		case <-s.done:
			return
		case <-s.drain:
			for {
				select {
				case e := <-s.ch:
					s.deliver(e)
				default:
					return
				}
			}
		case e := <-s.ch:
			select {
			case <-s.done:
				return
			default:
			}
			s.deliver(e)
		}
	}
}

func (s *Subscription) deliver(e Event) {
	defer func() {
		if p := recover(); p != nil {
			s.reg.report(fmt.Errorf("event subscriber panicked on %v: %w", e.Kind, panicError(p)))
		}
	}()
	s.fn(e)
}

// typedSubs returns the current subscriptions (nil: none).
func (r *Registry) typedSubs() []*Subscription {
	if p := r.subs.Load(); p != nil {
		return *p
	}
	return nil
}

// deliverTyped hands e to every subscription in subs, never blocking.
func deliverTyped(subs []*Subscription, e Event) {
	for _, s := range subs {
		if s.sync {
			s.deliverSync(e)
			continue
		}
		select {
		case s.ch <- e:
		default:
			if s.dropped.Add(1) == 1 {
				// Once per subscription: the count says the rest.
				s.reg.reportDrop(e.Kind)
			}
		}
	}
}

// closeSubscriptions ends every subscription once it has delivered what it
// buffered (Close of the registry, after the calls drained).
// closed is set long before (Close sets it first), so once the list is read
// under subsMu no Subscribe can add to it (Subscribe checks closed under
// the same lock).
func (r *Registry) closeSubscriptions() {
	r.subsMu.Lock()
	subs := r.typedSubs()
	r.subsMu.Unlock()
	for _, s := range subs {
		if s.sync {
			continue
		}
		s.end(s.drain)
	}
}

// typedListeners returns the subscriptions a call entering now publishes
// to (nil: none, or events off).
func (r *Registry) typedListeners() []*Subscription {
	if !r.cfg.events {
		return nil
	}
	return r.typedSubs()
}

func unixTime(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// execEvent builds the typed event of s.
func execEvent(kind EventKind, s *execState, at int64) Event {
	return Event{
		Kind: kind, At: unixTime(at),
		CallID: s.callID, Tool: s.name, Scope: s.agent, Token: Token{s}, Parent: s.parent,
		Mode: s.mode, Classified: s.classified,
		EnteredAt: unixTime(s.enteredAt), StartedAt: unixTime(s.startedAt), DispatchDoneAt: unixTime(s.dispatchEnd),
		TurnID: s.turnID, Group: s.group,
	}
}

// emitTurn publishes a turn event to the typed subscribers.
func (r *Registry) emitTurn(kind EventKind, tr *turnRun, res *TurnResult, err error) {
	subs := r.typedListeners()
	if len(subs) == 0 {
		return
	}
	e := Event{Kind: kind, At: r.now(), Scope: tr.agent, TurnID: tr.o.id, Calls: len(tr.calls), Parent: tr.o.parent, Err: err}
	if res != nil {
		e.Concluded = res.Concluded
	}
	deliverTyped(subs, e)
}

// emitChanged publishes RegistryChanged to the typed subscribers.
func (r *Registry) emitChanged() {
	if subs := r.typedListeners(); len(subs) > 0 {
		deliverTyped(subs, Event{Kind: RegistryChanged, At: r.now()})
	}
}

// reportDrop reports a subscription's first dropped event where a user
// sees it by default: through the error handler (ErrEventsDropped, the
// registry's channel for what it absorbs) and as a warning through the
// registry's logger — or slog.Default() when WithLogger was not given,
// since the registry's own logger then discards everything. Once per
// subscription, so the noise stays bounded.
func (r *Registry) reportDrop(kind EventKind) {
	l := r.logger
	if r.defaultLog {
		l = slog.Default()
	}
	l.Warn("toolscope: an event subscriber's buffer is full; dropping events (see Subscription.Dropped, WithBuffer)", "kind", kind.String())
	if h := r.cfg.errorHandler; h != nil {
		func() {
			defer func() { _ = recover() }()
			h(fmt.Errorf("%w: the first was %v (Subscription.Dropped counts them)", ErrEventsDropped, kind))
		}()
	}
}
