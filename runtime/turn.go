package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/toolscope/toolscope/internal/core"
	"github.com/toolscope/toolscope/internal/jsonv"
	"github.com/toolscope/toolscope/internal/sched"
)

// TurnCall is one tool call of a model turn, as the model wrote it.
//
// Its arguments are text, exactly as the model sent them, where a single
// Execute's Call.Arguments is a JSON value (a json.RawMessage, a map, …):
// hence the name ArgumentsText. Passing model text to Execute means
// json.RawMessage(text).
type TurnCall struct {
	ID   string
	Name string
	// ArgumentsText is the model's argument text, parsed once: empty means
	// {}, invalid JSON is passed to the tool as the raw string (R91).
	ArgumentsText string
}

// TurnEventKind tells a call-started record from a result record.
type TurnEventKind int

// The records of a turn (R93, R95, R97).
const (
	CallStarted TurnEventKind = iota
	ResultRecorded
)

// TurnEvent is one entry of a turn's ordered record: "call:<id>" or
// "result:<id>".
type TurnEvent struct {
	Kind   TurnEventKind
	CallID string
}

// String renders the event as "call:<id>" or "result:<id>".
func (e TurnEvent) String() string {
	if e.Kind == CallStarted {
		return "call:" + e.CallID
	}
	return "result:" + e.CallID
}

// TurnResult is the outcome of one turn.
type TurnResult struct {
	// Results holds one result per call, in model order.
	Results []*Result
	// Events is the ordered record of call starts and results.
	Events []TurnEvent
	// Contexts are the collected context messages, in model order, to
	// inject after every result (R96).
	Contexts []ContextMessage
	// Concluded reports that a committed result concluded the turn (R99).
	Concluded bool
}

// TurnOption configures one ExecuteTurn.
type TurnOption interface{ applyTurn(*turnOptions) error }

type turnOptions struct {
	maxParallel int
	id          string
	parent      Token      // the execution the turn is nested in, if any
	host        *execState // the execution it runs within (nesting.go)
}

type turnOptionFunc func(*turnOptions) error

func (f turnOptionFunc) applyTurn(o *turnOptions) error { return f(o) }

// WithTurnID names the turn in execution events.
func WithTurnID(id string) TurnOption {
	return turnOptionFunc(func(o *turnOptions) error { o.id = id; return nil })
}

// ExecuteTurn runs the calls of one assistant message (docs/contract.md#turns): parallel
// calls overlap in a rolling pool of at most MaxParallel dispatches, an
// exclusive call is a barrier, and post-execute, results and contexts
// follow model order. The turn is one message to the scope's admission line
// and shares the scope's admission with single executions. The error is
// for configuration and internal scheduler failures only (R98); tool
// outcomes are results.
//
// A configuration error (or ErrClosed) comes with a nil result. An internal
// scheduler failure comes with the partial result of what was committed
// before it (R98: nothing more starts, in-flight dispatches are waited for,
// no synthetic results are invented): Results holds only the committed
// prefix in model order — Results[i] answers calls[i] for i < len(Results),
// every entry non-nil, and calls from len(Results) on have no result (never
// started, or dispatched but not committed, so their post-execute,
// finalizer and observers did not run); Events is the record so far (it
// may name calls started but not committed); Contexts and Concluded are
// those of the committed results.
func (s *Scope) ExecuteTurn(ctx context.Context, calls []TurnCall, opts ...TurnOption) (*TurnResult, error) {
	o := turnOptions{maxParallel: s.reg.cfg.maxParallel}
	for _, opt := range opts {
		if opt != nil {
			if err := opt.applyTurn(&o); err != nil {
				return nil, err
			}
		}
	}
	if ctx == nil {
		return nil, fmt.Errorf("%w: ExecuteTurn requires a non-nil context", ErrInvalidConfig)
	}
	if s.reg.closed.Load() {
		return nil, ErrClosed
	}
	return s.reg.turnVia(ctx, s.viewNode(), s.node.Key, calls, o)
}

// turnVia hands the turn to the scope's admission line when admissions are
// queued. The admission line takes it in arrival order and gives the go-ahead;
// the turn then runs on the caller's goroutine and the
// dispatch workers (see turnRun), so no goroutine sits idle waiting for the
// answer.
func (r *Registry) turnVia(ctx context.Context, node *core.Node, agent string, calls []TurnCall, o turnOptions) (*TurnResult, error) {
	if err := r.enterTurn(); err != nil {
		return nil, err
	}
	o.parent, o.host = r.inferParent(ctx, o.parent) // a turn inside a body is nested in it
	tr := r.newTurnRun(node, agent, calls, o)
	tr.cctx.init(ctx, &r.life)
	defer r.exit(&tr.cctx)
	// The go-ahead orders the turn after the admissions asked for before
	// it. With none queued or on its way (the gate says so) there is
	// nothing to order against, so the admission line's mutex is not taken;
	// the turn's
	// dispatches still take the gate like any call.
	if sh := r.admission(node); sh == nil || !sh.gate.Load().Queued() {
		return tr.run(&tr.cctx)
	}
	if line := r.lineOf(node); line != nil {
		tr.ready.Add(1)
		if line.postTurn(&tr.ready) {
			// Bounded without the ctx: postTurn has given the go-ahead by the
			// time it returns (no user code runs there); waiting on
			// ctx.Done here would fuse every turn's ctx (allocations).
			tr.ready.Wait()
		}
	}
	return tr.run(&tr.cctx)
}

// turnCall is the turn's state for one call.
type turnCall struct {
	s        *execState // &es
	es       execState
	h        hookLists
	res      *Result // candidate result once prepared or dispatched
	post     bool    // res still passes through post-execute
	dispatch bool
	admitOn  *scopeState // the gate the dispatch is admitted on (nil: none)
	admitted bool        // admitted at prepare already (nothing to wait for)

	// For the dispatch task (run on a pool worker, no closure per call).
	tr   *turnRun
	i    int
	next *turnCall // link in turnRun.done
}

// run is the call's dispatch on a pool worker: it reports the outcome and
// then helps drive the turn.
func (tc *turnCall) run() {
	r := tc.tr.reg
	tc.dispatchAndReport()
	tc.tr.drive()
	if c := r.taskClock(); c != nil {
		c.Release() // the worker's, taken by startWorker (WithTaskClock)
	}
}

// startWorker runs tc's dispatch on a pool worker; under a task clock the
// worker's hold is taken here, by the goroutine handing it over.
func (tr *turnRun) startWorker(tc *turnCall) {
	if c := tr.reg.taskClock(); c != nil {
		c.Acquire()
	}
	tr.reg.workers.start(tc)
}

// dispatchAndReport waits for the call's admission (R49: admission follows
// prepare), runs around hooks and body under it, then the after-around
// cancel check (R80), and pushes the outcome on the turn's done list. The
// wait is here, on the dispatch's goroutine, not in the driver's prepare:
// while this call waits, the turn commits the calls that finished (R94,
// R95). Refused admission (ctx ended while waiting, or WOULD_DEADLOCK) is
// the outcome, and goes on through post-execute as a single Execute's does.
func (tc *turnCall) dispatchAndReport() {
	tr := tc.tr
	r := tr.reg
	var res *Result
	final := false
	if !tc.admitted {
		res = tr.g.admit(tc.s, tc.admitOn)
	}
	if res == nil {
		res, final = r.dispatch(tc.s, tc.h, nil)
		if tc.s.stages {
			tc.s.hookDispatched(len(tc.h.around))
		}
		r.releaseAdmission(tc.s)
		if !final {
			res = r.recheck(tc.s, res)
		}
	}
	tc.res, tc.post = res, !final
	for {
		head := tr.done.Load()
		tc.next = head
		if tr.done.CompareAndSwap(head, tc) {
			return
		}
	}
}

// turnRun is one turn in progress. The policy (internal/sched) and
// everything it asks for (classify, prepare, commit) run one step at a time
// in model order, but not on one fixed goroutine: whoever holds driving
// runs them — the caller at first, then whichever dispatch finishes while
// nobody drives. A finished dispatch pushes itself on done and tries to
// take over; if somebody already drives, the driver takes the outcome
// before it lets go (it checks done again after letting go). So no
// goroutine waits for outcomes one by one: on a machine with few cores a
// turn of trivial calls costs one hand-off per dispatch, not three.
type turnRun struct {
	reg    *Registry
	ctx    context.Context
	node   *core.Node
	agent  string
	calls  []TurnCall
	o      turnOptions
	t      *sched.Turn
	out    *TurnResult
	states []turnCall
	g      turnAdmitter

	group      int32
	groupHead  int
	inParallel bool
	over       bool // Done was reached; nothing more to drive
	err        error

	driving  atomic.Bool
	done     atomic.Pointer[turnCall] // finished dispatches not yet reported, newest first
	finished sync.WaitGroup           // done once over is set

	// argBuf holds the calls' argument snapshots and classifier copies
	// (snapshot, spare); only the driver appends to it.
	argBuf []byte

	// Allocated with the turn (one block, see newTurnRun).
	result TurnResult
	cctx   shutdownAwareCtx // the turn's ctx under the registry's lifecycle (ExecuteTurn)
	ready  sync.WaitGroup   // the admission line's go-ahead (turnVia)
}

// newTurnRun allocates a turn's state in a fixed number of blocks, whatever
// the number of calls: the turn with its result and ctx, the per-call states
// (each with its execution), the calls' first results, and the result's
// two slices (the scheduler and the argument buffer add one each).
func (r *Registry) newTurnRun(node *core.Node, agent string, calls []TurnCall, o turnOptions) *turnRun {
	tr := &turnRun{
		reg: r, node: node, agent: agent, calls: calls, o: o,
		states:    make([]turnCall, len(calls)),
		g:         turnAdmitter{reg: r, node: node},
		groupHead: -1,
	}
	tr.out = &tr.result
	tr.out.Results = make([]*Result, len(calls))
	tr.out.Events = make([]TurnEvent, 0, 2*len(calls))
	slots := make([]resultWithBlock, len(calls))
	for i := range tr.states {
		tc := &tr.states[i]
		tc.s, tc.tr, tc.i = &tc.es, tr, i
		tc.es.slot = &slots[i]
	}
	return tr
}

// run runs the turn under ctx and returns its result.
func (tr *turnRun) run(ctx context.Context) (*TurnResult, error) {
	r := tr.reg
	t, err := sched.New(len(tr.calls), tr.o.maxParallel)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	tr.t = t
	ctx, ender := r.hookTurnStart(ctx, tr)
	if ender != nil {
		defer ender.End()
	}
	tr.ctx = ctx
	tr.finished.Add(1)
	r.emitTurn(TurnStarted, tr, nil, nil)
	tr.drive()
	if c := r.taskClock(); c != nil {
		c.Release() // the last commit's goroutine takes one for us (WithTaskClock)
	}
	tr.finished.Wait()
	if tr.err != nil {
		// R98: no synthetic results; what was committed is returned with
		// the failure. Commits follow model order, so they are a prefix.
		n := 0
		for n < len(tr.out.Results) && tr.out.Results[n] != nil {
			n++
		}
		tr.out.Results = tr.out.Results[:n]
		r.emitTurn(TurnFinished, tr, tr.out, tr.err)
		return tr.out, tr.err
	}
	r.emitTurn(TurnFinished, tr, tr.out, nil)
	return tr.out, nil
}

// drive runs the turn while nobody else does. A dispatch it prepared last,
// just before the turn had to wait, it runs itself once it has let go of
// driving (a hand-off saved); every other dispatch starts on a worker. After
// letting go it looks at done once more, before running anything: a
// dispatch that finished since the session's last look left its outcome to
// this driver, so the driver takes the turn again and the held dispatch goes
// to a worker.
func (tr *turnRun) drive() {
	for {
		if !tr.driving.CompareAndSwap(false, true) {
			if ts := tr.reg.cfg.turnSeams; ts != nil && ts.driveBusy != nil {
				ts.driveBusy(tr)
			}
			return // the driver takes our outcome before it lets go
		}
		inline := tr.session()
		if ts := tr.reg.cfg.turnSeams; ts != nil && inline != nil && ts.beforeInline != nil {
			ts.beforeInline(tr, inline)
		}
		tr.driving.Store(false)
		if tr.done.Load() != nil {
			// An outcome arrived after the session's last look, and its
			// dispatch found the turn driven: take it now (R94, R95). The
			// held dispatch must not wait for that — it may itself wait
			// for a call the outcome lets start — so a worker runs it.
			if inline != nil {
				tr.startWorker(inline)
			}
			continue
		}
		if inline == nil {
			return
		}
		// Anything finishing from here on finds the turn undriven and
		// drives it itself.
		inline.dispatchAndReport()
	}
}

// turnSeams are the turn driver's test seams. Only tests set them, through
// an Option of turn_export_test.go, so a registry's are fixed at New and nil
// in production: each site costs a nil check of a field, no atomic.
type turnSeams struct {
	// beforeInline runs in the driver between the end of a session that
	// held a dispatch back and letting go of driving: the window in which
	// a finishing dispatch finds the turn driven and leaves its outcome to
	// the driver.
	beforeInline func(tr *turnRun, inline *turnCall)
	// driveBusy runs when drive finds the turn driven by somebody else and
	// leaves its outcome to that driver.
	driveBusy func(tr *turnRun)
	// committed runs after each commit of a turn; an error it returns is
	// reported to the scheduler as an internal failure (R98), as a step
	// the scheduler rejected would be.
	committed func(call int) error
}

// session steps the policy until it must wait for a dispatch or the turn
// is over. It returns the dispatch prepared last before the wait, not yet
// started, for the caller to run.
func (tr *turnRun) session() (inline *turnCall) {
	r, t := tr.reg, tr.t
	if tr.over {
		return nil
	}
	for {
		for c := tr.done.Swap(nil); c != nil; {
			next := c.next
			c.next = nil
			if err := t.DispatchDone(c.i); err != nil {
				_ = t.Fail(err)
			}
			c = next
		}
		if tr.ctx.Err() != nil {
			t.Abort()
		}
		a := t.Next()
		if inline != nil && a.Kind != sched.Wait {
			// The next step may run user code (a classifier, hooks, an
			// observer): the held dispatch must not wait for it.
			tr.startWorker(inline)
			inline = nil
		}
		i := a.Call
		switch a.Kind {
		case sched.Classify:
			tr.classify(i)
		case sched.Prepare:
			if tr.prepare(i) {
				inline = &tr.states[i]
			}
		case sched.Commit:
			tr.commit(i)
		case sched.Synthetic:
			id := tr.calls[i].ID
			tr.out.Events = append(tr.out.Events, TurnEvent{CallStarted, id}, TurnEvent{ResultRecorded, id})
			tr.out.Results[i] = abortedBeforeDispatch()
			r.emitSynthetic(tr.ctx, id, tr.agent, tr.calls[i].Name, tr.o.id, tr.group, tr.o.parent)
			r.hookAborted(tr, i)
		case sched.Wait:
			if tr.done.Load() != nil {
				continue
			}
			return inline
		case sched.Done:
			if err := t.Err(); err != nil {
				tr.err = fmt.Errorf("runtime: turn scheduler failed: %w", err)
			}
			if len(tr.out.Contexts) == 0 {
				tr.out.Contexts = nil
			}
			tr.over = true
			if c := r.taskClock(); c != nil {
				c.Acquire() // the caller's, before it wakes (WithTaskClock)
			}
			tr.finished.Done()
			return nil
		}
	}
}

func (tr *turnRun) classify(i int) {
	r, tc := tr.reg, &tr.states[i]
	first := !tc.s.classified
	if first {
		c := &tr.calls[i]
		call := Call{ID: c.ID, Name: c.Name, Agent: tr.agent, Parent: tr.o.parent}
		// Text over the registry's bound is refused unread (argsOver).
		over := len(c.ArgumentsText) > r.cfg.argBound()
		var args []byte
		ok := false
		if !over {
			args, ok = tr.snapshot(c.ArgumentsText)
		}
		if !ok && !over {
			if json.Valid([]byte(c.ArgumentsText)) {
				// Valid JSON that is not lossless (e.g. -0): parsed as
				// JSON, so the snapshot fails (R48), as in the reference.
				call.Arguments = json.RawMessage(c.ArgumentsText)
			} else {
				call.Arguments = c.ArgumentsText // R91: invalid JSON is passed as the raw string
			}
		}
		r.initExec(tc.s, tr.ctx, tr.node, call)
		tc.s.host = tr.o.host
		tc.s.fromText = true
		_, tc.s.badText = call.Arguments.(string)
		switch {
		case over:
			tc.s.argsOver = len(c.ArgumentsText)
		case ok:
			tc.s.args = args // R91: parsed once, from the text
			tc.s.argCopy = tr.spare(args)
		default:
			tc.s.snapshotArgs(call.Arguments)
		}
		tc.s.turnID = tr.o.id
	}
	mode := Exclusive
	if tc.s.args != nil {
		// The first classification follows entry at once: the tool entry
		// resolved is as live as a second lookup would be.
		td, ok := tc.s.chainTool, tc.s.chainTool != nil
		if !first {
			td, ok = r.resolveExec(tc.s)
		}
		if ok && !r.codeOnly(&tc.s.chain, tc.s.name, tc.s.parent) { // R107: collapsed calls are exclusive
			mode = td.classifyExec(tc.s)
		}
	}
	if !(mode == Parallel && tr.inParallel) && tr.groupHead != i {
		tr.group++
		tr.groupHead = i
	}
	tr.inParallel = mode == Parallel
	tc.s.group = tr.group
	tc.s.mode, tc.s.classified = mode, true
	if err := tr.t.Classified(i, schedMode(mode)); err != nil {
		_ = tr.t.Fail(err)
	}
}

// prepare runs the call's prepare part; true means its dispatch (which
// begins with its admission) waits to be started.
func (tr *turnRun) prepare(i int) bool {
	r, tc := tr.reg, &tr.states[i]
	tr.out.Events = append(tr.out.Events, TurnEvent{CallStarted, tr.calls[i].ID})
	if c := core.Load(r.global.node, tr.node); !c.Same(&tc.s.chain) { // hooks and guards as of this start
		tc.s.chain = c
		tc.s.chainTool = nil
		tc.s.chainTool, _ = r.lookup(&c, tc.s.name)
	}
	if res := r.collapse(tc.s); res != nil { // R107: before any hook
		tc.res, tc.h = res, hookLists{}
		if err := tr.t.Prepared(i, false); err != nil {
			_ = tr.t.Fail(err)
		}
		return false
	}
	tc.h = r.hookListsFor(tc.s)
	res, post := r.preDispatch(tc.s, tc.h)
	if res == nil {
		// Admission is the dispatch's first step (dispatchAndReport), but
		// a dispatch the gate admits at once is admitted here, so the
		// turn's calls take their slots in model order when nothing waits
		// (a later prepare's hooks see the earlier call admitted). One
		// that would wait does so on its own goroutine.
		tc.admitOn = tr.g.state()
		if r.admitsNow(tc.s, tc.admitOn) && r.hostAdmitsNow(tc.s) {
			res = tr.g.admit(tc.s, tc.admitOn)
			tc.admitted = res == nil
			post = res != nil // refused admission goes on through post-execute
		}
	}
	if res == nil {
		tc.dispatch = true
	} else {
		tc.res, tc.post = res, post
	}
	if err := tr.t.Prepared(i, tc.dispatch); err != nil {
		_ = tr.t.Fail(err)
	}
	return tc.dispatch
}

func (tr *turnRun) commit(i int) {
	r, tc, out := tr.reg, &tr.states[i], tr.out
	res := tc.res
	if tc.post {
		res = r.postAndRecheck(tc.s, tc.h, res)
	}
	res = r.finish(tc.s, res, tc.h)
	out.Results[i] = res
	out.Events = append(out.Events, TurnEvent{ResultRecorded, tr.calls[i].ID})
	out.Contexts = append(out.Contexts, res.contexts...)
	if res.concludes {
		out.Concluded = true
	}
	if err := tr.t.Committed(i); err != nil {
		_ = tr.t.Fail(err)
	}
	if ts := r.cfg.turnSeams; ts != nil && ts.committed != nil {
		if err := ts.committed(i); err != nil {
			_ = tr.t.Fail(err)
		}
	}
}

// snapshot is R91's parse of argument text, done once: empty is {}; valid
// JSON is snapshotted straight from the text; ok=false means invalid JSON,
// which the caller passes on as the raw string. The snapshots of a turn
// share the turn's argument buffer (spare).
func (tr *turnRun) snapshot(text string) (args []byte, ok bool) {
	if len(text) == 0 {
		return tr.spare([]byte("{}")), true
	}
	if tr.argBuf == nil {
		tr.argBuf = make([]byte, 0, tr.argBufSize())
	}
	// Read in place: the snapshot copies and never keeps or changes it.
	start := len(tr.argBuf)
	b, err := jsonv.AppendCanonical(tr.argBuf, unsafe.Slice(unsafe.StringData(text), len(text)))
	if err != nil {
		return nil, false
	}
	tr.argBuf = b
	return b[start:len(b):len(b)], true
}

// spare returns a copy of b carved from the turn's argument buffer: its
// capacity ends at its length, so no append through it reaches another
// copy, and nothing else ever writes it. The buffer is sized for a snapshot
// and a classifier copy of every call's text; a longer canonical form (or
// reclassification) just spills into a new buffer.
func (tr *turnRun) spare(b []byte) []byte {
	if tr.argBuf == nil {
		tr.argBuf = make([]byte, 0, tr.argBufSize())
	}
	start := len(tr.argBuf)
	tr.argBuf = append(tr.argBuf, b...)
	return tr.argBuf[start:len(tr.argBuf):len(tr.argBuf)]
}

func (tr *turnRun) argBufSize() int {
	n, bound := 0, tr.reg.cfg.argBound()
	for i := range tr.calls {
		if l := len(tr.calls[i].ArgumentsText); l <= bound { // text over the bound is never copied
			n += 2 * max(l, 2)
		}
	}
	return n
}

func schedMode(m Mode) sched.Mode {
	if m == Parallel {
		return sched.Parallel
	}
	return sched.Exclusive
}

// turnAdmitter finds the scope's gate a turn's dispatches are admitted on, one
// admission per dispatch, waited for and released by the dispatch itself
// (like a single Execute). The turn's driver never holds an admission, nor
// waits for one: a hook or observer in prepare or commit may run a nested
// exclusive Execute in the same scope (R86), which must not wait for the
// turn, and the calls that finished are committed while a later one waits
// (R94, R95). (A dispatch held for the driver to run itself is started on a
// worker before any further user code runs.) Used only by whoever drives
// the turn.
type turnAdmitter struct {
	reg    *Registry
	node   *core.Node
	sh     *scopeState
	loaded bool
}

func (g *turnAdmitter) state() *scopeState {
	if !g.loaded {
		g.sh = g.reg.admission(g.node)
		g.loaded = true
	}
	return g.sh
}

// admit admits s's dispatch on sh; a non-nil result is a refusal (ctx
// ended while waiting, WOULD_DEADLOCK), which goes on through post-execute
// as a single Execute's does.
func (g *turnAdmitter) admit(s *execState, sh *scopeState) *Result {
	var res *Result
	if g.reg.hostCap != nil {
		res = g.reg.admitUnderHostCap(s, sh)
	} else if res = g.reg.refusedFromCallback(s, sh); res != nil {
		return res
	} else {
		res = g.reg.acquire(s, sh, s.mode == Parallel)
	}
	if res == nil && s.stages {
		s.hookAdmitted()
	}
	return res
}

// admitsNow reports whether s's dispatch would be admitted on sh at once
// (a snapshot: a call racing for the slot may still make it wait). A
// nested dispatch is decided by nested admission, which may wait: never at
// once.
func (r *Registry) admitsNow(s *execState, sh *scopeState) bool {
	if sh == nil {
		return true
	}
	if s.host != nil && r.nestedCall(s) {
		return false
	}
	return sh.gate.Load().Admits(s.mode == Parallel)
}
