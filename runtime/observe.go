package runtime

import (
	"context"
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

type subOptions struct {
	buffer   int
	blocking bool
	maxWait  time.Duration
}

type subOptionFunc func(*subOptions)

func (f subOptionFunc) applySubscribe(o *subOptions) { f(o) }

// WithBuffer sets how many events may wait for a slow subscriber before
// later ones are dropped (and counted: Subscription.Dropped). Default 4096;
// n < 1 means 1.
func WithBuffer(n int) SubscribeOption {
	return subOptionFunc(func(o *subOptions) { o.buffer = max(n, 1) })
}

// WithBackPressure makes delivery wait for room in the subscriber's buffer
// instead of dropping the event: for a consumer that must see every event
// (a recorder). The call or turn whose event finds the buffer full waits —
// back-pressure on the calls, not on the registry — until there is room,
// or until the wait must end: the producing call's (or turn's) ctx ends
// (Close's ctx ending cancels the calls in flight), the subscription or the
// registry closes, or maxWait passes (maxWait <= 0: no time bound). An
// event whose wait ends so is dropped and counted, as without the option.
//
// A subscriber that calls back into the registry must not wait for
// itself: give the ctx SubscribeContext passes to every call it makes. The
// events of a call made with a subscriber's ctx (or a ctx derived from it,
// so its nested calls too) never wait for a full buffer — of this
// subscription or another back-pressure one — and are dropped and counted
// instead; and such a call is admitted only if it can be at once (it fails
// with WOULD_DEADLOCK otherwise, as a change subscriber's does, R86), since
// the call it would wait for may itself wait for this subscriber.
// RegistryChanged, which carries nothing but its time, never waits either:
// with the buffer full it is kept aside, one standing for all, and
// delivered next. See docs/contract.md#events.
func WithBackPressure(maxWait time.Duration) SubscribeOption {
	return subOptionFunc(func(o *subOptions) { o.blocking, o.maxWait = true, max(maxWait, 0) })
}

// subKey marks the ctx SubscribeContext gives its subscriber.
type subKey struct{}

// fromSubscriber reports whether ctx is, or derives from, the ctx of an
// event subscriber.
func fromSubscriber(ctx context.Context) bool {
	return ctx != nil && ctx.Value(subKey{}) != nil
}

// Subscription is one Subscribe: Close ends it, Dropped counts the events
// it lost to a full buffer.
type Subscription struct {
	reg    *Registry
	fn     func(context.Context, Event)
	ctx    context.Context // what fn gets: marked, cancelled when the subscription ends
	cancel context.CancelFunc
	ch     chan Event
	// WithBackPressure: wait for room (up to maxWait when > 0); a
	// RegistryChanged that finds ch full waits in changed (one pending).
	blocking bool
	maxWait  time.Duration
	changed  chan Event
	done     chan struct{} // closed by Close: stop now
	drain    chan struct{} // closed when the registry closes: deliver what is buffered, then stop
	once     sync.Once
	dropped  atomic.Int64
	exited   chan struct{}
	// sync: a Hooks.Event (hook), called in place by deliverTyped; never
	// closed, never dropped.
	sync bool
	hook func(Event)
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
// off altogether. A consumer that must see every event subscribes
// WithBackPressure (and, if it calls back into the registry, through
// SubscribeContext).
func (r *Registry) Subscribe(fn func(Event), opts ...SubscribeOption) (*Subscription, error) {
	if fn == nil {
		return nil, fmt.Errorf("%w: Subscribe needs a non-nil func", ErrInvalidConfig)
	}
	return r.subscribe(func(_ context.Context, e Event) { fn(e) }, opts)
}

// SubscribeContext is Subscribe for a subscriber that calls back into the
// registry: fn gets, with each event, a ctx to make those calls with. The
// ctx is the same for every event; it is cancelled when the subscription
// ends (Close, or the registry's Close), and it marks the calls made with
// it as the subscriber's own, so that with WithBackPressure their events
// never wait for a subscriber's buffer and the calls never wait for
// admission (see WithBackPressure).
func (r *Registry) SubscribeContext(fn func(ctx context.Context, e Event), opts ...SubscribeOption) (*Subscription, error) {
	if fn == nil {
		return nil, fmt.Errorf("%w: SubscribeContext needs a non-nil func", ErrInvalidConfig)
	}
	return r.subscribe(fn, opts)
}

func (r *Registry) subscribe(fn func(context.Context, Event), opts []SubscribeOption) (*Subscription, error) {
	if r.closed.Load() {
		return nil, ErrClosed
	}
	o := subOptions{buffer: 4096}
	for _, opt := range opts {
		if opt != nil {
			opt.applySubscribe(&o)
		}
	}
	sub := &Subscription{reg: r, fn: fn, ch: make(chan Event, o.buffer), done: make(chan struct{}), drain: make(chan struct{}), exited: make(chan struct{}),
		blocking: o.blocking, maxWait: o.maxWait}
	base := context.Background()
	if o.blocking {
		// A back-pressure subscriber's calls must not wait for admission
		// behind a call that waits for this subscriber (R86).
		base = callbackCtx
		sub.changed = make(chan Event, 1)
	}
	sub.ctx, sub.cancel = context.WithCancel(context.WithValue(base, subKey{}, sub))
	r.subsMu.Lock()
	// Checked again under the lock Close's teardown takes to end the
	// subscriptions (closeSubscriptions): a Subscribe that passed the
	// check above as Close began is either in the list the teardown ends
	// or sees closed here — never added after the teardown looked.
	if r.closed.Load() {
		r.subsMu.Unlock()
		sub.cancel()
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
		if s.cancel != nil {
			s.cancel()
		}
	})
}

// Done is closed once the subscription has ended and delivers nothing
// more: after Close, when the event being delivered (if any) has returned;
// after the registry's Close, once the events still buffered have been
// delivered. A recorder waits for it to know it has seen everything.
func (s *Subscription) Done() <-chan struct{} { return s.exited }

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
				case e := <-s.changed:
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
		case e := <-s.changed: // nil channel unless WithBackPressure
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
	s.fn(s.ctx, e)
}

// typedSubs returns the current subscriptions (nil: none).
func (r *Registry) typedSubs() []*Subscription {
	if p := r.subs.Load(); p != nil {
		return *p
	}
	return nil
}

// deliverTyped hands e to every subscription in subs. It never blocks,
// except for a WithBackPressure subscription whose buffer is full
// (waitRoom); ctx is the producing call's or turn's (nil: none).
func deliverTyped(subs []*Subscription, e Event, ctx context.Context) {
	for _, s := range subs {
		if s.sync {
			s.deliverSync(e)
			continue
		}
		select {
		case s.ch <- e:
		default:
			if s.blocking && s.waitRoom(e, ctx) {
				continue
			}
			if s.dropped.Add(1) == 1 {
				// Once per subscription: the count says the rest.
				s.reg.reportDrop(e.Kind)
			}
		}
	}
}

// waitRoom is WithBackPressure's wait for room in s's buffer for e,
// produced under ctx. It reports whether e was delivered (or need not be:
// the subscription ended); false means drop and count it.
func (s *Subscription) waitRoom(e Event, ctx context.Context) bool {
	if e.Kind == RegistryChanged {
		select {
		case s.changed <- e:
		default: // one is pending already: it stands for this one
		}
		return true
	}
	if fromSubscriber(ctx) {
		return false // a subscriber's own call never waits for a subscriber
	}
	var cancelled <-chan struct{}
	if ctx != nil {
		cancelled = ctx.Done()
	}
	var timeout <-chan time.Time
	if s.maxWait > 0 {
		t := time.NewTimer(s.maxWait)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case s.ch <- e:
		return true
	case <-s.done:
		return true
	case <-s.drain:
	case <-cancelled:
	case <-timeout:
	}
	return false
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
	deliverTyped(subs, e, tr.ctx)
}

// emitChanged publishes RegistryChanged to the typed subscribers.
func (r *Registry) emitChanged() {
	if subs := r.typedListeners(); len(subs) > 0 {
		deliverTyped(subs, Event{Kind: RegistryChanged, At: r.now()}, nil)
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
