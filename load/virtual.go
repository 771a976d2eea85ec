package load

import (
	"context"
	"fmt"
	goruntime "runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/toolscope/toolscope/runtime"
	"github.com/toolscope/toolscope/simclock"
)

// runClock is a run's time: the wall clock, or (Options.Virtual) a
// simclock.Clock that the registry, the generator and the tool bodies
// share.
type runClock struct{ v *simclock.Clock }

func (c runClock) now() time.Time {
	if c.v != nil {
		return c.v.Now()
	}
	return time.Now()
}

// sleep sleeps d or until ctx ends; false when ctx ended. Under a virtual
// clock the caller must be one of its tasks.
func (c runClock) sleep(ctx context.Context, d time.Duration) bool {
	if c.v == nil {
		return sleepCtx(ctx, d)
	}
	if d <= 0 {
		return ctx.Err() == nil
	}
	return c.v.Sleep(ctx, d) == nil
}

func (c runClock) afterFunc(d time.Duration, f func()) (stop func() bool) {
	if c.v != nil {
		return c.v.AfterFunc(d, f)
	}
	return time.AfterFunc(d, f).Stop
}

// vmodel is virtual time's account of the registry's scheduling. The
// registry's own goroutines are not tasks of the clock, so between a task
// handing work to the registry and that work reaching a tool body (which
// sleeps on the clock) the clock must be held on the work's behalf, or it
// could move while the registry is still on its way. The model knows each
// turn's calls and their classification (the generator drew them), and
// follows the contract's scheduling of a turn — groups run one after
// another, a parallel group has at most MaxParallel dispatches in flight
// (docs/contract.md#r92, #r94) — and of a scope's admission (an exclusive
// call runs alone, first come first served, docs/contract.md#n1). For
// every call it says may start now it holds the clock until the call's
// body begins; when a body ends it holds for the calls that may start
// next, and for the agent once its turn's last body ended, before the body
// gives up its own hold. A call the model sees blocked at its scope's
// admission is held until it reaches the admission (past its guards).
type vmodel struct {
	clk         *simclock.Clock
	maxParallel int

	reg  interface{ Queued() int } // the registry: whose admission lines count a queued call
	done <-chan struct{}           // the run's turns are cancelled (the watchdog or Run's ctx)

	mu     sync.Mutex
	calls  map[string]*vcall
	scopes map[string]*vscope
	queued int // calls the model sees waiting at admission
}

type vturn struct {
	scope     *vscope
	calls     []*vcall
	next      int // the first call not yet let go
	inflight  int // let go and not ended
	exclFly   bool
	ended     int
	committed int  // calls committed (Hooks.CallEnd), a prefix in model order (R95)
	resumed   bool // the agent's hold is taken (its last call committed)
	over      bool // ExecuteTurn returned
}

const (
	vWaiting = iota // not yet its turn (R92, R94)
	vQueued         // let go by the turn, waiting at its scope's admission
	vPending        // about to start: the clock is held for it
	vRunning        // its body runs (the body owns the hold)
	vDone
)

type vcall struct {
	t            *vturn
	idx          int
	id           string
	parallel     bool
	state        int
	entered      bool // the registry classified it (Hooks.CallStart)
	classifyHold bool // the clock is held until it does
	dispatched   bool // its dispatch finished (StageDispatched)
	postHold     bool // the clock is held for its way from the body to its dispatch's end or its commit
	queueHold    bool // the clock is held for its way to its scope's admission, where it waits
	guarded      bool // past its guards while the model saw it queued: in the registry's line, or on its way
}

// callEntered: the registry classified call id (Hooks.CallStart).
func (m *vmodel) callEntered(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.calls[id]
	if c == nil {
		return
	}
	c.entered = true
	if c.classifyHold {
		c.classifyHold = false
		m.clk.Release()
	}
}

type vscope struct {
	par, excl int // calls admitted (pending or running)
	queue     []*vcall
}

func newVModel(clk *simclock.Clock, maxParallel int) *vmodel {
	return &vmodel{clk: clk, maxParallel: maxParallel, calls: map[string]*vcall{}, scopes: map[string]*vscope{}}
}

// startTurn registers a turn of agent scope key about to be handed to
// ExecuteTurn and holds the clock for the calls that start at once. The
// caller, a task, then gives up its own hold (Release) and calls
// ExecuteTurn; endTurn afterwards.
func (m *vmodel) startTurn(key string, ids []string, parallel []bool) *vturn {
	m.mu.Lock()
	defer m.mu.Unlock()
	sc := m.scopes[key]
	if sc == nil {
		sc = &vscope{}
		m.scopes[key] = sc
	}
	t := &vturn{scope: sc}
	for i, id := range ids {
		c := &vcall{t: t, idx: i, id: id, parallel: parallel[i]}
		t.calls = append(t.calls, c)
		m.calls[id] = c
	}
	if len(ids) == 0 {
		t.resumed = true
		m.clk.Acquire() // the agent's, for its return from an empty turn
	}
	m.letGoLocked(t)
	return t
}

// letGoLocked lets the turn's next calls go while R92/R94 allow.
func (m *vmodel) letGoLocked(t *vturn) {
	for t.next < len(t.calls) {
		c := t.calls[t.next]
		switch {
		case !c.parallel && t.inflight > 0:
			// A barrier. In a parallel group with a slot free the registry
			// classifies it now, live (R92), and stamps its entry: hold
			// the clock until it has (Hooks.CallStart).
			if !t.exclFly && t.inflight < m.maxParallel && !c.entered && !c.classifyHold {
				c.classifyHold = true
				m.clk.Acquire()
			}
			return
		case c.parallel && (t.exclFly || t.inflight >= m.maxParallel):
			return
		}
		t.next++
		t.inflight++
		t.exclFly = !c.parallel
		m.admitLocked(c)
		if !c.parallel {
			return // a barrier: nothing more until it ends
		}
	}
}

// admitLocked: the call reaches its scope's admission.
func (m *vmodel) admitLocked(c *vcall) {
	sc := c.t.scope
	if len(sc.queue) == 0 && fits(sc, c) {
		m.pendingLocked(c)
		return
	}
	c.state = vQueued
	sc.queue = append(sc.queue, c)
	m.queued++
	c.queueHold = true // until it reaches admission (guarded)
	m.clk.Acquire()
}

func fits(sc *vscope, c *vcall) bool {
	if c.parallel {
		return sc.excl == 0
	}
	return sc.excl == 0 && sc.par == 0
}

func (m *vmodel) pendingLocked(c *vcall) {
	c.state = vPending
	if c.parallel {
		c.t.scope.par++
	} else {
		c.t.scope.excl++
	}
	m.clk.Acquire()
}

// testAfterGuards, when set by a test, runs on a call's goroutine right
// after the model heard of its guards (queued: the model sees it wait at
// its admission), before the call goes on to its scope's admission.
var testAfterGuards func(id string, queued bool, clk *simclock.Clock)

// guarded: call id passed its guards (StageGuards): it is at its scope's
// admission, where the model says it waits.
//
// Its guards passed, the call is still on its way: the admission line
// counts it only once its gate's fast path has failed (Registry.Queued),
// and no hook says when. Were its hold given up here, the clock could
// move while its goroutine is between the two — a call arriving later
// would then find the gate free and be admitted ahead of it, unlike the
// model (docs/contract.md#n1: first come, first served), and the model's
// hold for the call it lets start next would never be taken over (a
// stall). So the hold is given up once the registry's line counts every
// call the model sees in it (inLineLocked), watched from a goroutine of
// its own: that wait is on wall time only, with the clock held.
//
// That closes it: Registry.Queued counts a call only once its gate's fast
// path has failed, and that same atomic step gives the call its place in
// the line (docs/contract.md#n1: a caller that fails the fast path later
// never overtakes it, even if it reaches the line first).
func (m *vmodel) guarded(id string) (queued bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.calls[id]
	if c == nil || !c.queueHold {
		return false
	}
	c.guarded = true
	if m.reg == nil { // no registry to ask (a model driven by hand)
		c.queueHold = false
		m.clk.Release()
		return true
	}
	go m.awaitInLine(c)
	return true
}

// awaitInLine gives up c's hold (queueHold) once c is in its scope's
// admission line, or no longer waits at it (admitted, or its turn over),
// or the run is cancelled.
func (m *vmodel) awaitInLine(c *vcall) {
	for spin := 0; ; spin++ {
		m.mu.Lock()
		if !c.queueHold { // given up by endTurn
			m.mu.Unlock()
			return
		}
		if c.state != vQueued || m.inLineLocked() || m.cancelled() {
			c.queueHold = false
			m.clk.Release()
			m.mu.Unlock()
			return
		}
		m.mu.Unlock()
		if spin < 64 {
			goruntime.Gosched()
		} else {
			time.Sleep(50 * time.Microsecond)
		}
	}
}

func (m *vmodel) cancelled() bool {
	if m.done == nil {
		return false
	}
	select {
	case <-m.done:
		return true
	default:
		return false
	}
}

// inLineLocked reports whether the registry's admission lines count every
// call the model sees in them: those past their guards it sees queued, and
// those it let go from the queue whose bodies have not begun (the registry
// may not have admitted them yet). The registry admits a call out of its
// line before the call's body begins, so the count can fall short for a
// moment (the wait goes on). It could also run over, with a call the model
// let go straight from its turn (never queued) in a line for a moment —
// the registry gives a slot back only after the body that held it
// returned, the model as the body returns — so while any such call has
// not begun its body the answer is no: the count would prove nothing.
// Those calls hold the clock themselves and need nothing of it to begin.
func (m *vmodel) inLineLocked() bool {
	want := 0
	for _, c := range m.calls {
		switch {
		case c.state == vPending && !c.guarded:
			return false // perhaps in a line for a moment: wait until its body begins
		case c.guarded && (c.state == vQueued || c.state == vPending):
			want++
		}
	}
	return m.reg.Queued() >= want
}

// bodyStart: the body of call id begins; it takes over the call's hold.
// A call the model does not know becomes a task of its own (a hold).
func (m *vmodel) bodyStart(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.calls[id]
	if c == nil || c.state != vPending {
		m.clk.Acquire()
		if c != nil && c.state == vQueued { // the registry admitted it before the model did
			m.unqueueLocked(c)
			if c.parallel {
				c.t.scope.par++
			} else {
				c.t.scope.excl++
			}
		}
	}
	if c != nil {
		c.state = vRunning
	}
}

func (m *vmodel) unqueueLocked(c *vcall) {
	q := c.t.scope.queue
	for i, x := range q {
		if x == c {
			c.t.scope.queue = append(q[:i:i], q[i+1:]...)
			m.queued--
			return
		}
	}
}

// bodyEnd: the body of call id returns. The model holds the clock for
// whatever may start next; the body's own hold stays with the call until
// its dispatch has ended (dispatched), or, when the call is next to
// commit, until it is committed (committed).
func (m *vmodel) bodyEnd(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.calls[id]
	if c == nil || c.state != vRunning {
		m.clk.Release()
		return
	}
	{
		c.state = vDone
		t, sc := c.t, c.t.scope
		if c.parallel {
			sc.par--
		} else {
			sc.excl--
		}
		t.inflight--
		if t.inflight == 0 {
			t.exclFly = false
		}
		t.ended++
		for len(sc.queue) > 0 && fits(sc, sc.queue[0]) {
			q := sc.queue[0]
			sc.queue = sc.queue[1:]
			m.queued--
			m.pendingLocked(q)
		}
		if !t.over {
			m.letGoLocked(t)
		}
		c.postHold = true
	}
}

// dispatched: call id's dispatch ended (StageDispatched, after the around
// hooks and the admission's release). Unless it is next to commit, it now
// waits for an earlier call: its hold is given up.
func (m *vmodel) dispatched(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.calls[id]
	if c == nil {
		return
	}
	c.dispatched = true
	if c.postHold && c.t.committed != c.idx {
		c.postHold = false
		m.clk.Release()
	}
}

// committed: call id is committed (Hooks.CallEnd). The next call, if its
// dispatch has ended, commits at once: the clock is held for it; after the
// turn's last call, for the agent, whose ExecuteTurn returns next.
func (m *vmodel) committed(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.calls[id]
	if c == nil {
		return
	}
	delete(m.calls, id)
	t := c.t
	t.committed++
	if t.committed < len(t.calls) {
		if n := t.calls[t.committed]; n.dispatched && !n.postHold {
			n.postHold = true
			m.clk.Acquire()
		}
	} else if !t.resumed && !t.over {
		t.resumed = true
		m.clk.Acquire()
	}
	if c.postHold {
		c.postHold = false
		m.clk.Release()
	}
}

// endTurn: ExecuteTurn returned on the agent's goroutine. The agent takes
// its hold back (the one its last body left it, or a new one) and the
// holds of calls that never started (a cancelled turn) are given up.
func (m *vmodel) endTurn(t *vturn) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t.over = true
	if !t.resumed {
		t.resumed = true
		m.clk.Acquire()
	}
	for _, c := range t.calls {
		if c.classifyHold {
			c.classifyHold = false
			m.clk.Release()
		}
		if c.postHold {
			c.postHold = false
			m.clk.Release()
		}
		if c.queueHold {
			c.queueHold = false
			m.clk.Release()
		}
		switch c.state {
		case vPending:
			if c.parallel {
				t.scope.par--
			} else {
				t.scope.excl--
			}
			c.state = vDone
			delete(m.calls, c.id)
			m.clk.Release()
		case vQueued:
			m.unqueueLocked(c)
			c.state = vDone
			delete(m.calls, c.id)
		default:
			delete(m.calls, c.id)
		}
	}
}

// holdsLocked names the holds the model has taken and not given up, the
// first n of them by call id ("a0/2/3 pending", "a1/4 agent"): what a
// stalled run's report shows.
func (m *vmodel) holdsLocked(n int) string {
	var hs []string
	turns := map[*vturn]bool{}
	for id, c := range m.calls {
		if c.classifyHold {
			hs = append(hs, id+" classify")
		}
		if c.queueHold {
			hs = append(hs, id+" on its way to admission")
		}
		if c.state == vPending {
			hs = append(hs, id+" admitted, body not begun")
		}
		if c.postHold {
			hs = append(hs, id+" body ended, not committed")
		}
		if t := c.t; t.resumed && !t.over && !turns[t] {
			turns[t] = true
			hs = append(hs, turnOf(id)+" agent, turn returning")
		}
	}
	if len(hs) == 0 {
		return "none of its own"
	}
	sort.Strings(hs)
	more := ""
	if len(hs) > n {
		more = fmt.Sprintf(" and %d more", len(hs)-n)
		hs = hs[:n]
	}
	return strings.Join(hs, ", ") + more
}

// runEnv is what a run's generator and tool bodies share beyond the
// scenario: the clock, virtual time's model, the recorder and the replayed
// log. The zero value is a run on the wall clock that records nothing.
type runEnv struct {
	clk       runClock
	vm        *vmodel
	modes     map[string]Tool // by tool name
	maxPar    int
	rec       *recorder
	replay    *replayer
	startedAt time.Time
	stall     string // set by watch before it cancels; read after endWatch
	held      func() // virtual: Run's hold from arming the sampler until the generator runs
}

// started gives up Run's hold (held) once the generator's tasks run.
func (e *runEnv) started() {
	if e.held != nil {
		e.held()
		e.held = nil
	}
}

func newRunEnv(sc *Scenario, opts Options) *runEnv {
	e := &runEnv{modes: map[string]Tool{}, maxPar: 10}
	if sc.Registry != nil && sc.Registry.MaxParallel > 0 {
		e.maxPar = sc.Registry.MaxParallel
	}
	for _, t := range sc.Tools {
		e.modes[t.Name] = t
	}
	if opts.Virtual {
		e.clk.v = simclock.New()
	}
	if opts.Record != nil {
		e.rec = newRecorder(opts.Record, sc, opts.Virtual)
	}
	if opts.Replay != nil {
		e.replay = newReplayer(opts.Replay)
	}
	return e
}

// registryOptions: the clock, and the hooks of the recorder and replayer.
func (e *runEnv) registryOptions() []runtime.Option {
	var o []runtime.Option
	if e.clk.v != nil {
		o = append(o, runtime.WithClock(e.clk.v), runtime.WithHooks(runtime.Hooks{
			CallStart: func(ctx context.Context, c runtime.CallInfo) context.Context {
				e.vm.callEntered(c.CallID)
				return ctx
			},
			CallStage: func(ex runtime.Execution, st runtime.CallStage) {
				switch st.Stage {
				case runtime.StageGuards:
					queued := e.vm.guarded(ex.CallID())
					if testAfterGuards != nil {
						testAfterGuards(ex.CallID(), queued, e.clk.v)
					}
				case runtime.StageDispatched:
					e.vm.dispatched(ex.CallID())
				}
			},
			CallEnd: func(ex runtime.Execution, _ runtime.CallDone) { e.vm.committed(ex.CallID()) },
		}))
	}
	if e.rec != nil || e.replay != nil {
		o = append(o, runtime.WithHooks(runtime.Hooks{CallFinished: e.callFinished}))
	}
	return o
}

func (e *runEnv) start(reg *runtime.Registry) {
	e.startedAt = e.clk.now()
	if e.clk.v != nil {
		e.vm = newVModel(e.clk.v, e.maxPar)
		e.vm.reg = reg
	}
}

// hold holds a virtual clock while the caller starts tasks.
func (e *runEnv) hold() (release func()) {
	if e.clk.v != nil {
		return e.clk.v.Hold()
	}
	return func() {}
}

// goTask runs f on a goroutine, a task of a virtual clock.
func (e *runEnv) goTask(f func()) {
	if e.clk.v != nil {
		e.clk.v.Go(f)
		return
	}
	go f()
}

// turn runs one turn (collector.turn); under virtual time the agent's
// hold goes to the calls the model lets start, and comes back when the
// turn returns.
func (e *runEnv) turn(ctx context.Context, col *collector, a *agent, id string, calls []runtime.TurnCall, intended time.Time) {
	if e.rec != nil {
		e.rec.turnStarted(a.key, id, intended.Sub(e.startedAt))
	}
	if e.rec != nil {
		defer e.rec.turnEnded(id, len(calls))
	}
	if e.vm == nil {
		col.turn(ctx, a, id, calls, intended)
		return
	}
	ids := make([]string, len(calls))
	par := make([]bool, len(calls))
	for i, c := range calls {
		ids[i] = c.ID
		switch t := e.modes[c.Name]; t.Mode {
		case ModeParallel:
			par[i] = true
		case ModeByArgument:
			par[i] = strings.Contains(c.ArgumentsText, `"parallel":true`)
		}
	}
	vt := e.vm.startTurn(a.key, ids, par)
	e.clk.v.Release()
	col.turn(ctx, a, id, calls, intended)
	e.vm.endTurn(vt)
}

// bodyStart and bodyEnd bracket a simulated tool's body.
func (e *runEnv) bodyStart(ctx context.Context) string {
	if e.vm == nil && e.rec == nil && e.replay == nil {
		return "" // nothing to tell
	}
	ex, _ := runtime.ExecutionFromContext(ctx)
	id := ex.CallID()
	if e.vm != nil {
		e.vm.bodyStart(id)
	}
	return id
}

func (e *runEnv) bodyEnd(id, text string, err error) {
	if e.rec != nil {
		e.rec.bodyOutput(id, text, err)
	}
	if e.vm != nil {
		e.vm.bodyEnd(id)
	}
}

// StallAfter is how long a virtual run's clock may stand still, held, on
// the wall before the run is stopped as stalled.
var StallAfter = 10 * time.Second

// watch, under virtual time, stops the run (cancels the turns' ctx and
// stops starting turns) when the clock stands still, held, for
// StallAfter; the report says so (Report.Stall).
func (e *runEnv) watch(ctx context.Context, stopStarting func()) (context.Context, func()) {
	if e.clk.v == nil {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	e.vm.done = ctx.Done()
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		last, since := e.clk.v.Activity(), time.Now()
		tk := time.NewTicker(StallAfter / 20)
		defer tk.Stop()
		for {
			select {
			case <-done:
				return
			case <-tk.C:
			}
			a := e.clk.v.Activity()
			if a != last {
				last, since = a, time.Now()
				continue
			}
			holds, _ := e.clk.v.Pending()
			if holds == 0 || time.Since(since) < StallAfter {
				continue
			}
			st := e.clk.v.State()
			e.vm.mu.Lock()
			e.stall = fmt.Sprintf("the clock stood still at +%v for %v: %v; the model had %d calls waiting at admission and held the clock for %s",
				st.Now.Sub(e.startedAt), StallAfter, st, e.vm.queued, e.vm.holdsLocked(8))
			e.vm.mu.Unlock()
			stopStarting()
			cancel()
			return
		}
	}()
	return ctx, func() { close(done); <-finished; cancel() }
}

// sampleOnClock samples the timeline every timelineEvery of clock time
// (doubling as the timeline thins), from weak clock timers: they fire as
// the simulation passes them and never move the clock past its end, so a
// virtual run's timeline covers exactly its simulated time.
func (e *runEnv) sampleOnClock(col *collector, done <-chan struct{}) {
	every := timelineEvery
	var tick func()
	tick = func() {
		select {
		case <-done:
			return
		default:
		}
		if col.sample() {
			every *= 2
		}
		e.clk.v.AfterFuncWeak(every, tick)
	}
	e.clk.v.AfterFuncWeak(every, tick)
}

// finish ends the recording.
func (e *runEnv) finish() error {
	if e.rec != nil {
		return e.rec.close()
	}
	return nil
}

// annotate adds to the report what the environment knows.
func (e *runEnv) annotate(r *Report) {
	r.Virtual = e.clk.v != nil
	r.Stall = e.stall
	if e.replay != nil {
		r.Replay = e.replay.result()
	}
}

// slots bounds the open loop's turns in flight. Under virtual time the
// generator waiting for a slot gives up its hold, and the turn that frees
// the slot hands it one.
type slots struct {
	clk     *simclock.Clock
	mu      sync.Mutex
	free    int
	waiter  chan struct{}
	granted bool
}

func (e *runEnv) newSlots(n int) *slots { return &slots{clk: e.clk.v, free: n} }

// acquire takes a slot; false when ctx ended first.
func (s *slots) acquire(ctx context.Context) bool {
	s.mu.Lock()
	if s.free > 0 {
		s.free--
		s.mu.Unlock()
		return true
	}
	ch := make(chan struct{})
	s.waiter, s.granted = ch, false
	s.mu.Unlock()
	if s.clk != nil {
		s.clk.Release()
	}
	select {
	case <-ch:
		return true // the slot and a hold were handed over
	case <-ctx.Done():
		s.mu.Lock()
		granted := s.granted
		s.waiter = nil
		s.mu.Unlock()
		if granted {
			s.release()
			return false // the handed hold is ours
		}
		if s.clk != nil {
			s.clk.Acquire()
		}
		return false
	}
}

func (s *slots) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.waiter != nil && !s.granted {
		s.granted = true
		if s.clk != nil {
			s.clk.Acquire() // the generator's, before it wakes
		}
		close(s.waiter)
		return
	}
	s.free++
}
