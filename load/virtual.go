package load

import (
	"context"
	"fmt"
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

// guarded: call id passed its guards (StageGuards): it is at its scope's
// admission, where the model says it waits.
func (m *vmodel) guarded(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c := m.calls[id]; c != nil && c.queueHold {
		c.queueHold = false
		m.clk.Release()
	}
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
					e.vm.guarded(ex.CallID())
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

func (e *runEnv) start() {
	e.startedAt = e.clk.now()
	if e.clk.v != nil {
		e.vm = newVModel(e.clk.v, e.maxPar)
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
			holds, timers := e.clk.v.Pending()
			if holds == 0 || time.Since(since) < StallAfter {
				continue
			}
			e.vm.mu.Lock()
			var pend []string
			for id, c := range e.vm.calls {
				if c.state == vPending && len(pend) < 5 {
					pend = append(pend, id)
				}
			}
			sort.Strings(pend)
			e.stall = fmt.Sprintf("the clock stood still at +%v for %v with %d holds and %d deadlines; the model had %d calls waiting at admission and calls about to start %v",
				e.clk.now().Sub(e.startedAt), StallAfter, holds, timers, e.vm.queued, pend)
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
