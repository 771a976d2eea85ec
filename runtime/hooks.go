package runtime

import (
	"context"
	"fmt"
	"time"
)

// Hooks are optional functions the registry calls at points of its calls',
// turns' and own lives, in the shape of net/http/httptrace.ClientTrace:
// every field may be nil, and a registry built without hooks pays nothing
// for them (a call checks one pointer per point). A call pays only for
// the fields set: it builds a CallStage only when CallStage is set, and
// reads the registry's clock only for a time a set hook is given (its
// entry for CallStart's CallInfo.At; entry, admission and dispatch end for
// CallFinished's and CallEnd's CallDone). They are the one seam
// every observer hangs off: the typed events (Event), OpenTelemetry spans
// and metrics (package otelscope), protobuf events (package actors).
//
// Pass them to New with WithHooks; with several WithHooks every field is
// called in the order given (a CallStart or TurnStart gets the ctx the one
// before it returned). Hooks run synchronously where the point is reached,
// so they must be quick and must not wait for the call or turn they
// observe. A panicking hook is contained and reported through the error
// handler and logger; the call goes on (a panicking CallStart or TurnStart
// leaves the ctx as it was).
//
// The points of one call come one at a time, in this order, never two at
// once (a turn's call moves between goroutines, but its points are ordered
// by happens-before): CallStart; CallStage with StageResolved; then, for a
// call that reaches the gate, StageGate, StagePreExecute, StageApproval
// (an Ask only), StageGuards; for a call that dispatches, StageAdmitted,
// StageDispatching, StageDispatched; for a call that reaches post-execute,
// StagePostStart, StagePostExecute; and always CallFinished then CallEnd.
// A stage the call never reached is skipped (a denied call has no
// StageAdmitted). Calls refused before the pipeline (CLOSED, OVERLOADED)
// get CallRefused only; a turn's call that never started (R97) gets
// CallAborted only.
type Hooks struct {
	// Event receives every typed event (see Event and EventKind) at the
	// moment it happens: exactly one ExecutionStarted and one
	// ExecutionFinished per call (a turn's synthetic aborted calls
	// included), TurnStarted/TurnFinished per turn, RegistryChanged per
	// change. Unlike Subscribe it is never dropped and never reordered; it
	// is how other packages (actors publishes protobuf events) observe the
	// registry. It is called on the goroutine where the event happens.
	Event func(Event)

	// Opened is called once by New, after the registry is built and before
	// New returns it, on New's goroutine. An adapter that reads the
	// registry's state later (InFlight, Queued: observable gauges) keeps
	// r. A non-nil error (or a panic) fails New: the registry is closed and
	// New returns the error.
	Opened func(r *Registry) error
	// Closed is called once by Close, after the calls in flight drained and
	// the subscriptions ended, on the goroutine that runs the teardown (also
	// when New fails and closes the registry, whether or not Opened ran).
	// It releases what Opened took (e.g. unregisters gauge callbacks).
	Closed func(r *Registry)

	// CallStart is called when a call enters the pipeline — Execute, a
	// turn's call, a call nested in another's body — before any of its
	// stages, on the caller's goroutine (a turn's call: the goroutine
	// driving the turn when it classifies the call). ctx is the caller's
	// (a turn's call: the turn's, as TurnStart returned it). The ctx it
	// returns is the one the call runs under: its hooks', its body's and
	// its nested calls' ctx derive from it, and Execution.Context returns
	// it (wrapped). Return ctx itself to add nothing. It may keep per-call
	// state in the returned ctx (a span), where CallStage, CallFinished and
	// CallEnd find it through Execution.Context.
	CallStart func(ctx context.Context, c CallInfo) context.Context
	// CallStage is called as the call passes each stage (see Stage), on
	// the goroutine where the stage runs: the gate stages and post-execute
	// on the caller's (or the turn's driver), admission and dispatch on
	// the dispatching goroutine (a turn's worker).
	CallStage func(ex Execution, st CallStage)
	// CallFinished is called once the call's final result is known (after
	// post-execute and the finalizer, right after the ExecutionFinished
	// event) and before the result observers run, on the goroutine that
	// finishes the call.
	CallFinished func(ex Execution, d CallDone)
	// CallEnd is called after the result observers returned, as the last
	// point of the call, on the same goroutine as CallFinished.
	CallEnd func(ex Execution, d CallDone)
	// CallAborted is called for a turn's call that never started (R97:
	// ABORTED_BEFORE_DISPATCH without entering the pipeline), on the
	// goroutine driving the turn; ctx is the turn's.
	CallAborted func(ctx context.Context, c CallInfo)
	// CallRefused is called for a call refused before the pipeline, with
	// its code (CLOSED after Close, OVERLOADED when the scope's admission
	// queue is full), on the caller's goroutine. No other point of the
	// call is reported.
	CallRefused func(code Code)

	// TurnStart is called when ExecuteTurn got its go-ahead, before the
	// TurnStarted event and before any of its calls, on the caller's
	// goroutine. The ctx it returns is the turn's: its calls' CallStart get
	// it.
	TurnStart func(ctx context.Context, t TurnInfo) context.Context
	// TurnEnd is called when the turn is over, after the TurnFinished
	// event, on the caller's goroutine, with the turn's ctx and its
	// internal error, if any (R98).
	TurnEnd func(ctx context.Context, t TurnInfo, err error)
}

// CallInfo identifies a call to CallStart and CallAborted.
type CallInfo struct {
	CallID string
	Tool   string // the name called (it may resolve to no tool)
	Scope  string // the scope key the call runs for ("" for the global view)
	Parent Token  // the enclosing execution's token (zero: top level)
	TurnID string // CallAborted: the turn's id
	Group  int32  // CallAborted: the call's group in the turn (R92)
	// At is when the call entered (CallStart: the time Event.EnteredAt
	// and CallDone.EnteredAt carry) or was found never to start
	// (CallAborted).
	At time.Time

	reg *Registry // Now's clock
}

// Now reads the registry's clock, the one every time the registry reports
// is read by: a hook that stamps something (a span's first stage) reads
// it here, so that a registry given another clock stamps consistently.
func (c CallInfo) Now() time.Time { return c.reg.now() }

// TurnInfo identifies a turn to TurnStart and TurnEnd.
type TurnInfo struct {
	Scope  string
	TurnID string
	Calls  int
	Parent Token

	reg *Registry // Now's clock
}

// Now reads the registry's clock: the time the point is reached, for a
// hook that stamps it.
func (t TurnInfo) Now() time.Time { return t.reg.now() }

// Stage names a point of a call's pipeline (Hooks.CallStage). The stages
// that end a span of work (StagePreExecute, StageApproval, StageGuards,
// StageDispatched, StagePostExecute) follow the one that began it:
// StageGate begins the gate stages, StageDispatching the dispatch,
// StagePostStart post-execute.
type Stage int

// The stages of a call, in pipeline order.
const (
	// StageResolved: entry resolved the name in the call's view (R44);
	// CallStage.Description is the tool's description ("" for no tool, or
	// none).
	StageResolved Stage = iota + 1
	// StageGate: the gate stages begin (a turn's call reaches them when it
	// is prepared, maybe well after it started).
	StageGate
	// StagePreExecute: the pre-execute hooks ran (Hooks, Decision, Err).
	StagePreExecute
	// StageApproval: the approver resolved an Ask.
	StageApproval
	// StageGuards: the guards ran (Denied).
	StageGuards
	// StageAdmitted: the call's dispatch was admitted (once per dispatched
	// call; a turn's call at its admission, a single call right before
	// StageDispatching).
	StageAdmitted
	// StageDispatching: the around hooks and the body are about to run.
	StageDispatching
	// StageDispatched: the around hooks and the body returned (Hooks: the
	// around hooks; BodyInvoked). Only after StageDispatching.
	StageDispatched
	// StagePostStart: post-execute begins (a turn's call at commit, in
	// model order).
	StagePostStart
	// StagePostExecute: the post-execute hooks ran (Hooks).
	StagePostExecute
)

// String names the stage, e.g. "pre_execute".
func (s Stage) String() string {
	switch s {
	case StageResolved:
		return "resolved"
	case StageGate:
		return "gate"
	case StagePreExecute:
		return "pre_execute"
	case StageApproval:
		return "approval"
	case StageGuards:
		return "guards"
	case StageAdmitted:
		return "admitted"
	case StageDispatching:
		return "dispatching"
	case StageDispatched:
		return "dispatched"
	case StagePostStart:
		return "post_start"
	case StagePostExecute:
		return "post_execute"
	}
	return fmt.Sprintf("Stage(%d)", int(s))
}

// CallStage is one stage of a call (Hooks.CallStage). Fields that do not
// apply to its Stage are zero.
type CallStage struct {
	Stage Stage
	// Hooks is how many hooks the stage ran: pre-execute hooks
	// (StagePreExecute), around hooks (StageDispatched), post-execute hooks
	// (StagePostExecute).
	Hooks int
	// Decision is the pre-execute decision and Err the waterfall's error
	// (StagePreExecute; Decision is meaningless when Err is set).
	Decision DecisionKind
	Err      error
	// Denied: the guards denied the call (StageGuards).
	Denied bool
	// BodyInvoked: the tool's body ran (StageDispatched).
	BodyInvoked bool
	// Description is the resolved tool's description (StageResolved).
	Description string

	reg *Registry // Now's clock
}

// Now reads the registry's clock: the time the stage is reached, for a
// hook that stamps it. The registry does not read the clock for a stage
// itself, so a hook that records nothing (a span not sampled) costs no
// clock read.
func (st CallStage) Now() time.Time { return st.reg.now() }

// CallDone is a finished call (Hooks.CallFinished and CallEnd).
type CallDone struct {
	Result *Result
	// Outcome is Result.Outcome, as Event.Outcome; Denied is
	// Outcome == OutcomeDenied: a denial (pre-execute, approval or a
	// guard) produced it.
	Outcome Outcome
	Denied  bool
	// ToolKnown: the name resolved to a tool in the call's view at entry,
	// or resolves now (it was registered since). A call to a name that
	// never resolved ended UNKNOWN_TOOL.
	ToolKnown bool
	// Mode is the call's classification; Classified is false when the call
	// ended before it was classified.
	Mode       Mode
	Classified bool
	// EnteredAt, StartedAt and DispatchDoneAt are Event's: entry, the
	// admission of its dispatch (EnteredAt for a call never dispatched),
	// and when around hooks and body returned (zero: never dispatched).
	EnteredAt      time.Time
	StartedAt      time.Time
	DispatchDoneAt time.Time
	// Observers is how many result observers run after CallFinished.
	Observers int

	reg *Registry // Now's clock
}

// Now reads the registry's clock: the time the point is reached (the
// result became final, for CallFinished; the observers returned, for
// CallEnd), for a hook that stamps it or measures the call.
func (d CallDone) Now() time.Time { return d.reg.now() }

// AdmissionWait is how long a dispatched call waited between entering the
// registry and its dispatch being admitted (0 for a call never
// dispatched), as Event.AdmissionWait.
func (d CallDone) AdmissionWait() time.Duration {
	if d.DispatchDoneAt.IsZero() || d.StartedAt.Before(d.EnteredAt) {
		return 0
	}
	return d.StartedAt.Sub(d.EnteredAt)
}

// WithHooks adds h to the registry's hooks. A Hooks with no field set is
// ignored.
func WithHooks(h Hooks) Option {
	return optionFunc(func(c *config) error {
		if h.Event != nil || h.Opened != nil || h.Closed != nil || h.CallStart != nil || h.CallStage != nil ||
			h.CallFinished != nil || h.CallEnd != nil || h.CallAborted != nil || h.CallRefused != nil ||
			h.TurnStart != nil || h.TurnEnd != nil {
			c.hooks = append(c.hooks, h)
		}
		return nil
	})
}

// hookSet is the registry's hooks, field by field, in WithHooks order. It
// is built once by New and never changes; a call takes it at entry
// (execState.hooks) only when some field a call reaches is set.
type hookSet struct {
	reg          *Registry
	calls        bool // some field a call reaches is set (forCalls)
	opened       []func(*Registry) error
	closed       []func(*Registry)
	callStart    []func(context.Context, CallInfo) context.Context
	callStage    []func(Execution, CallStage)
	callFinished []func(Execution, CallDone)
	callEnd      []func(Execution, CallDone)
	callAborted  []func(context.Context, CallInfo)
	callRefused  []func(Code)
	turnStart    []func(context.Context, TurnInfo) context.Context
	turnEnd      []func(context.Context, TurnInfo, error)

	// stages: CallStage is set (execState.stages: a call reports its
	// stages). times: CallFinished or CallEnd is set, whose CallDone
	// carries the call's entry, admission and dispatch-end times
	// (execState.times). entry: a call's entry time is seen (CallStart's
	// CallInfo.At, or times). A call reads the clock only for a time some
	// set hook or typed subscriber is given.
	stages, times, entry bool
}

// installHooks builds r.hooks from the configured hooks (nil when no field
// but Event is set) and turns their Event fields into synchronous
// subscriptions: deliverTyped calls them in place, so every event path
// that serves Subscribe serves them too, at the same points.
func (r *Registry) installHooks() {
	if len(r.cfg.hooks) == 0 {
		return
	}
	var subs []*Subscription
	h := &hookSet{reg: r}
	for _, x := range r.cfg.hooks {
		if x.Event != nil {
			subs = append(subs, &Subscription{reg: r, hook: x.Event, sync: true})
		}
		h.add(x)
	}
	if len(subs) > 0 {
		r.subs.Store(&subs)
	}
	h.calls = len(h.callStart)+len(h.callStage)+len(h.callFinished)+len(h.callEnd) > 0
	h.stages = len(h.callStage) > 0
	h.times = len(h.callFinished)+len(h.callEnd) > 0
	h.entry = h.times || len(h.callStart) > 0
	if len(h.opened)+len(h.closed)+len(h.callStart)+len(h.callStage)+len(h.callFinished)+len(h.callEnd)+
		len(h.callAborted)+len(h.callRefused)+len(h.turnStart)+len(h.turnEnd) > 0 {
		r.hooks = h
	}
}

func (h *hookSet) add(x Hooks) {
	if x.Opened != nil {
		h.opened = append(h.opened, x.Opened)
	}
	if x.Closed != nil {
		h.closed = append(h.closed, x.Closed)
	}
	if x.CallStart != nil {
		h.callStart = append(h.callStart, x.CallStart)
	}
	if x.CallStage != nil {
		h.callStage = append(h.callStage, x.CallStage)
	}
	if x.CallFinished != nil {
		h.callFinished = append(h.callFinished, x.CallFinished)
	}
	if x.CallEnd != nil {
		h.callEnd = append(h.callEnd, x.CallEnd)
	}
	if x.CallAborted != nil {
		h.callAborted = append(h.callAborted, x.CallAborted)
	}
	if x.CallRefused != nil {
		h.callRefused = append(h.callRefused, x.CallRefused)
	}
	if x.TurnStart != nil {
		h.turnStart = append(h.turnStart, x.TurnStart)
	}
	if x.TurnEnd != nil {
		h.turnEnd = append(h.turnEnd, x.TurnEnd)
	}
}

// forCalls is what a call entering now keeps (execState.hooks): the hooks,
// when any point of a call has one.
func (h *hookSet) forCalls() *hookSet {
	if h == nil || !h.calls {
		return nil
	}
	return h
}

// recover is deferred around one hook: it contains a panic.
func (h *hookSet) recover(field string) {
	if p := recover(); p != nil {
		h.reg.report(fmt.Errorf("hooks.%s panicked: %w", field, panicError(p)))
	}
}

// deliverSync calls a hook's Event in place, containing a panic.
func (s *Subscription) deliverSync(e Event) {
	defer func() {
		if p := recover(); p != nil {
			s.reg.report(fmt.Errorf("hooks.Event panicked on %v: %w", e.Kind, panicError(p)))
		}
	}()
	s.hook(e)
}

// now is the registry's clock: every time the runtime stamps (events,
// stages, durations) is read here — WithClock's clock, else the wall
// clock. r may be nil (a CallStage or CallInfo built outside the
// registry).
func (r *Registry) now() time.Time {
	if r != nil && r.cfg.clock != nil {
		return r.cfg.clock.Now()
	}
	return time.Now()
}

// Queued reports the calls waiting for admission across the registry's
// live scopes, and for a host slot (WithMaxInFlight) (a snapshot).
func (r *Registry) Queued() int { return int(r.queuedCalls()) }

// queuedCalls sums the calls waiting for admission in every live scope.
func (r *Registry) queuedCalls() int64 {
	n := r.global.state.gate.Waiting()
	if c := r.hostCap; c != nil {
		n += c.waiting.Load()
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, record := range r.scopes {
		if record.live != nil {
			n += record.live.state.gate.Waiting()
		}
	}
	return n
}

// opened runs the Opened hooks (New); the first error fails New.
func (h *hookSet) open() (err error) {
	for _, f := range h.opened {
		if err = h.openOne(f); err != nil {
			return err
		}
	}
	return nil
}

func (h *hookSet) openOne(f func(*Registry) error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("hooks.Opened panicked: %w", panicError(p))
		}
	}()
	return f(h.reg)
}

// close runs the Closed hooks (Close's teardown).
func (h *hookSet) close() {
	for _, f := range h.closed {
		func() {
			defer h.recover("Closed")
			f(h.reg)
		}()
	}
}

// refused reports a call refused before the pipeline (enterCall).
func (h *hookSet) refused(code Code) {
	for _, f := range h.callRefused {
		func() {
			defer h.recover("CallRefused")
			f(code)
		}()
	}
}

// hookStart runs the CallStart hooks for s (initExec, once its identity
// and entry time are set) and returns the ctx the call runs under.
func (h *hookSet) hookStart(ctx context.Context, s *execState) context.Context {
	c := CallInfo{CallID: s.callID, Tool: s.name, Scope: s.agent, Parent: s.parent, At: unixTime(s.enteredAt), reg: s.reg}
	for _, f := range h.callStart {
		ctx = h.startOne(f, ctx, c)
	}
	return ctx
}

func (h *hookSet) startOne(f func(context.Context, CallInfo) context.Context, ctx context.Context, c CallInfo) (out context.Context) {
	out = ctx // kept when f panics or returns nil
	defer h.recover("CallStart")
	if x := f(ctx, c); x != nil {
		out = x
	}
	return out
}

// stage runs the CallStage hooks with st.
func (s *execState) stage(st CallStage) {
	h := s.hooks
	if len(h.callStage) == 0 {
		return
	}
	st.reg = s.reg
	for _, f := range h.callStage {
		h.stageOne(f, Execution{s}, st)
	}
}

func (h *hookSet) stageOne(f func(Execution, CallStage), ex Execution, st CallStage) {
	defer h.recover("CallStage")
	f(ex, st)
}

// The stage points of execute.go and turn.go: each is called behind one
// check of s.stages (the call has CallStage hooks, taken at entry): a call
// whose hooks have no CallStage builds no CallStage.

// hookResolved reports what entry resolved (the tool's description).
func (s *execState) hookResolved() {
	st := CallStage{Stage: StageResolved}
	if s.chainTool != nil {
		st.Description = s.chainTool.def.Description
	}
	s.stage(st)
}

// hookPreDispatch reports the start of preDispatch's stages (StageGate).
func (s *execState) hookPreDispatch() { s.stage(CallStage{Stage: StageGate}) }

// hookPre reports the pre-execute stage: n hooks, their decision.
func (s *execState) hookPre(n int, dec Decision, err error) {
	s.stage(CallStage{Stage: StagePreExecute, Hooks: n, Decision: dec.Kind, Err: err})
}

// hookApproval reports the approver's resolution of an Ask.
func (s *execState) hookApproval() { s.stage(CallStage{Stage: StageApproval}) }

// hookGuards reports the guards stage.
func (s *execState) hookGuards(denied bool) { s.stage(CallStage{Stage: StageGuards, Denied: denied}) }

// hookAdmitted reports the admission of s's dispatch (a turn admits at
// prepare or on its worker, turnAdmitter; a single call in hookDispatching).
func (s *execState) hookAdmitted() {
	s.admittedReported = true
	s.stage(CallStage{Stage: StageAdmitted})
}

// hookDispatching reports the start of the dispatch, and the admission
// first unless it was reported already.
func (s *execState) hookDispatching() {
	if !s.admittedReported {
		s.hookAdmitted()
	}
	s.dispatchingReported = true
	s.stage(CallStage{Stage: StageDispatching})
}

// hookDispatched reports the dispatch stage: around hooks and body. It is
// called after dispatch returns, whether or not it dispatched (a refused
// admission did not: nothing is reported).
func (s *execState) hookDispatched(around int) {
	if !s.dispatchingReported {
		return
	}
	s.dispatchingReported = false
	s.stage(CallStage{Stage: StageDispatched, Hooks: around, BodyInvoked: s.bodyInvoked.Load()})
}

// hookPostStart and hookPost bracket the post-execute stage (a turn's
// call runs it at commit, in model order).
func (s *execState) hookPostStart() { s.stage(CallStage{Stage: StagePostStart}) }

func (s *execState) hookPost(n int) { s.stage(CallStage{Stage: StagePostExecute, Hooks: n}) }

// done describes s, finished with res.
func (s *execState) done(res *Result, observers int) CallDone {
	d := CallDone{
		reg: s.reg, Result: res, Outcome: res.Outcome(), Denied: res.denied, Mode: s.mode, Classified: s.classified,
		EnteredAt: unixTime(s.enteredAt), StartedAt: unixTime(s.startedAt), DispatchDoneAt: unixTime(s.dispatchEnd),
		Observers: observers,
	}
	if d.StartedAt.IsZero() {
		d.StartedAt = d.EnteredAt
	}
	d.ToolKnown = s.chainTool != nil
	if !d.ToolKnown {
		_, d.ToolKnown = s.reg.resolveExec(s)
	}
	return d
}

// hookFinished reports the call finished (CallFinished), right
// before its n result observers run; hookEnd reports them done (CallEnd).
func (s *execState) hookFinished(res *Result, n int) {
	h := s.hooks
	if len(h.callFinished) == 0 {
		return
	}
	d := s.done(res, n)
	for _, f := range h.callFinished {
		h.doneOne("CallFinished", f, Execution{s}, d)
	}
}

// hookEnd reports the end of the call (CallEnd), after its observers.
func (s *execState) hookEnd(res *Result, n int) {
	h := s.hooks
	if len(h.callEnd) == 0 {
		return
	}
	d := s.done(res, n)
	for _, f := range h.callEnd {
		h.doneOne("CallEnd", f, Execution{s}, d)
	}
}

func (h *hookSet) doneOne(field string, f func(Execution, CallDone), ex Execution, d CallDone) {
	defer h.recover(field)
	f(ex, d)
}

// hookTurnStart runs the TurnStart hooks for tr and returns the turn's ctx
// and, when some TurnEnd is set, what ends it (nil otherwise).
func (r *Registry) hookTurnStart(ctx context.Context, tr *turnRun) (context.Context, *turnEnder) {
	h := r.hooks
	if h == nil || len(h.turnStart)+len(h.turnEnd) == 0 {
		return ctx, nil
	}
	t := tr.info()
	for _, f := range h.turnStart {
		ctx = h.turnStartOne(f, ctx, t)
	}
	if len(h.turnEnd) == 0 {
		return ctx, nil
	}
	return ctx, (*turnEnder)(tr)
}

func (h *hookSet) turnStartOne(f func(context.Context, TurnInfo) context.Context, ctx context.Context, t TurnInfo) (out context.Context) {
	out = ctx // kept when f panics or returns nil
	defer h.recover("TurnStart")
	if x := f(ctx, t); x != nil {
		out = x
	}
	return out
}

func (tr *turnRun) info() TurnInfo {
	return TurnInfo{Scope: tr.agent, TurnID: tr.o.id, Calls: len(tr.calls), Parent: tr.o.parent, reg: tr.reg}
}

// turnEnder is a turn as its TurnEnd hooks see it: End reports it over.
type turnEnder turnRun

// End runs the TurnEnd hooks with the turn's ctx and error.
func (ts *turnEnder) End() {
	tr := (*turnRun)(ts)
	h := tr.reg.hooks
	t := tr.info()
	for _, f := range h.turnEnd {
		func() {
			defer h.recover("TurnEnd")
			f(tr.ctx, t, tr.err)
		}()
	}
}

// hookAborted reports a turn's call that never started (R97).
func (r *Registry) hookAborted(tr *turnRun, i int) {
	h := r.hooks
	if h == nil || len(h.callAborted) == 0 {
		return
	}
	c := CallInfo{CallID: tr.calls[i].ID, Tool: tr.calls[i].Name, Scope: tr.agent, Parent: tr.o.parent,
		TurnID: tr.o.id, Group: tr.group, At: r.now(), reg: r}
	for _, f := range h.callAborted {
		func() {
			defer h.recover("CallAborted")
			f(tr.ctx, c)
		}()
	}
}
