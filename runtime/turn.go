package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"unsafe"

	"github.com/toolscope/toolscope/actors"
	"github.com/toolscope/toolscope/internal/core"
	"github.com/toolscope/toolscope/internal/jsonv"
	"github.com/toolscope/toolscope/internal/sched"
	"github.com/toolscope/toolscope/messages"
)

// TurnCall is one tool call of a model turn, as the model wrote it.
type TurnCall struct {
	ID   string
	Name string
	// Arguments is the raw argument text: empty means {}, invalid JSON is
	// passed to the tool as the raw string (R91).
	Arguments string
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
	Contexts []Message
	// Concluded reports that a committed result concluded the turn (R99).
	Concluded bool
}

// TurnOption configures one ExecuteTurn.
type TurnOption interface{ applyTurn(*turnOptions) error }

type turnOptions struct {
	maxParallel int
	id          string
}

type turnOptionFunc func(*turnOptions) error

func (f turnOptionFunc) applyTurn(o *turnOptions) error { return f(o) }

// MaxParallel bounds the turn's dispatches in flight (R91; default from
// WithMaxParallel). n < 1 is a configuration error.
func MaxParallel(n int) TurnOption {
	return turnOptionFunc(func(o *turnOptions) error {
		if n < 1 {
			return fmt.Errorf("%w: MaxParallel must be an integer >= 1, got %d", ErrInvalidConfig, n)
		}
		o.maxParallel = n
		return nil
	})
}

// TurnID names the turn in execution events.
func TurnID(id string) TurnOption {
	return turnOptionFunc(func(o *turnOptions) error { o.id = id; return nil })
}

// ExecuteTurn runs the calls of one assistant message (SPEC §9): parallel
// calls overlap in a rolling pool of at most MaxParallel dispatches, an
// exclusive call is a barrier, and post-execute, results and contexts
// follow model order. The turn is one message to the scope's supervisor
// and shares the scope's admission with single executions. The error is
// for configuration and internal scheduler failures only (R98); tool
// outcomes are results.
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

// turnVia hands the turn to the scope's supervisor as one message; the
// supervisor starts the runner and the answer comes back once.
func (r *Registry) turnVia(ctx context.Context, node *core.Node, agent string, calls []TurnCall, o turnOptions) (*TurnResult, error) {
	type answer struct {
		res *TurnResult
		err error
	}
	ctx, t, err := r.enterTurn(ctx)
	if err != nil {
		return nil, err
	}
	defer r.exit(t)
	done := make(chan answer, 1)
	run := func() {
		res, err := r.runTurn(ctx, node, agent, calls, o)
		done <- answer{res, err}
	}
	if sup := r.supervisorOf(node); sup == nil || !sup.send(&actors.RunTurn{Run: run}) {
		r.workers.run(run)
	}
	a := <-done
	return a.res, a.err
}

// turnCall is the runner's state for one call.
type turnCall struct {
	s        *execState
	h        hooks
	res      *Result // candidate result once prepared or dispatched
	post     bool    // res still passes through post-execute
	final    bool
	mode     Mode
	group    int32
	dispatch bool

	// For the dispatch task (run on a pool worker, no closure per call).
	reg      *Registry
	i        int
	outcomes chan<- turnOutcome
}

// run is the call's dispatch on a worker: around hooks and body under the
// admission taken at prepare, then the after-around cancel check (R80).
func (tc *turnCall) run() {
	res, final := tc.reg.dispatch(tc.s, tc.h, nil)
	tc.reg.releaseAdmission(tc.s)
	if !final {
		res = tc.reg.recheck(tc.s, res)
	}
	tc.res, tc.final, tc.post = res, final, !final
	tc.outcomes <- turnOutcome{tc.i}
}

type turnOutcome struct{ i int }

// turnArgs is R91's parse of argument text, done once: empty is {}; valid
// JSON is snapshotted straight from the text; ok=false means invalid JSON,
// which the caller passes on as the raw string.
func turnArgs(text string) (args []byte, ok bool) {
	if len(text) == 0 {
		return []byte("{}"), true
	}
	// Read in place: the snapshot copies and never keeps or changes it.
	b, err := jsonv.AppendCanonical(nil, unsafe.Slice(unsafe.StringData(text), len(text)))
	if err != nil {
		return nil, false
	}
	return b, true
}

// runTurn drives the pure policy of internal/sched (SPEC §9). Classify,
// prepare and commit run here, one at a time in model order; dispatches
// run on goroutines and report back on a channel.
func (r *Registry) runTurn(ctx context.Context, node *core.Node, agent string, calls []TurnCall, o turnOptions) (*TurnResult, error) {
	t, err := sched.New(len(calls), o.maxParallel)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	out := &TurnResult{Results: make([]*Result, len(calls)), Events: make([]TurnEvent, 0, 2*len(calls))}
	states := make([]turnCall, len(calls))
	execs := make([]execState, len(calls))
	outcomes := make(chan turnOutcome, len(calls))
	g := &turnGate{reg: r, node: node}
	var group int32
	groupHead := -1
	inParallel := false
	for {
		if ctx.Err() != nil {
			t.Abort()
		}
		a := t.Next()
		i := a.Call
		switch a.Kind {
		case sched.Classify:
			tc := &states[i]
			if tc.s == nil {
				call := Call{ID: calls[i].ID, Name: calls[i].Name, Agent: agent}
				args, ok := turnArgs(calls[i].Arguments)
				if !ok {
					if text := calls[i].Arguments; json.Valid([]byte(text)) {
						// Valid JSON that is not lossless (e.g. -0): parsed as
						// JSON, so the snapshot fails (R48), as in the reference.
						call.Arguments = json.RawMessage(text)
					} else {
						call.Arguments = text // R91: invalid JSON is passed as the raw string
					}
				}
				tc.s = &execs[i]
				r.initExec(tc.s, ctx, node, call)
				if ok {
					tc.s.args = args
				}
				tc.s.turnID = o.id
			}
			mode := Exclusive
			if tc.s.args != nil {
				if td, ok := r.resolve(node, tc.s.name); ok {
					mode = td.classifyExec(tc.s)
				}
			}
			tc.mode = mode
			if !(mode == Parallel && inParallel) && groupHead != i {
				group++
				groupHead = i
			}
			inParallel = mode == Parallel
			tc.group = group
			tc.s.group = group
			tc.s.mode, tc.s.classified = mode, true
			if err := t.Classified(i, schedMode(mode)); err != nil {
				_ = t.Fail(err)
			}
		case sched.Prepare:
			tc := &states[i]
			out.Events = append(out.Events, TurnEvent{CallStarted, calls[i].ID})
			tc.s.chain = core.Load(r.global.node, node) // hooks and guards as of this start
			tc.h = r.hooksFor(tc.s)
			res, post := r.gate(tc.s, tc.h)
			if res == nil {
				g.acquire(tc.s)
				tc.dispatch = true
				tc.reg, tc.i, tc.outcomes = r, i, outcomes
				r.workers.start(tc)
			} else {
				tc.res, tc.post = res, post
			}
			if err := t.Prepared(i, tc.dispatch); err != nil {
				_ = t.Fail(err)
			}
		case sched.Commit:
			tc := &states[i]
			res := tc.res
			if tc.post {
				res = r.postAndRecheck(tc.s, tc.h, res)
			}
			res = r.finish(tc.s, res, tc.h)
			out.Results[i] = res
			out.Events = append(out.Events, TurnEvent{ResultRecorded, calls[i].ID})
			out.Contexts = append(out.Contexts, res.contexts...)
			if res.concludes {
				out.Concluded = true
			}
			if err := t.Committed(i); err != nil {
				_ = t.Fail(err)
			}
		case sched.Synthetic:
			out.Events = append(out.Events, TurnEvent{CallStarted, calls[i].ID}, TurnEvent{ResultRecorded, calls[i].ID})
			out.Results[i] = abortedBeforeDispatch()
			r.emitSynthetic(calls[i].ID, agent, calls[i].Name, o.id, group)
		case sched.Wait:
			oc := <-outcomes
			if err := t.DispatchDone(oc.i); err != nil {
				_ = t.Fail(err)
			}
		case sched.Done:
			if err := t.Err(); err != nil {
				return nil, fmt.Errorf("runtime: turn scheduler failed: %w", err)
			}
			if len(out.Contexts) == 0 {
				out.Contexts = nil
			}
			return out, nil
		}
	}
}

func schedMode(m Mode) sched.Mode {
	if m == Parallel {
		return sched.Parallel
	}
	return sched.Exclusive
}

// turnGate admits a turn's dispatches on the scope's gate, one admission
// per dispatch, released by the dispatch itself when it ends (like a single
// Execute). The turn never holds an admission while its runner runs
// prepare or commit: a hook or observer there may run a nested exclusive
// Execute in the same scope (R86), which must not wait for the turn. Used
// by the runner goroutine only.
type turnGate struct {
	reg    *Registry
	node   *core.Node
	sh     *shell
	loaded bool
}

func (g *turnGate) shell() *shell {
	if !g.loaded {
		g.sh = g.reg.admission(g.node)
		g.loaded = true
	}
	return g.sh
}

func (g *turnGate) acquire(s *execState) {
	sh := g.shell()
	s.running.Store(true)
	if sh != nil && g.reg.admit(sh, s.mode == Parallel) {
		s.admittedOn = sh
	}
}

// turnFromProto answers a protobuf TurnRequest sent to a scope's PID.
func (r *Registry) turnFromProto(h *messageHandler, m *messages.TurnRequest) *messages.TurnReply {
	o := turnOptions{maxParallel: r.cfg.maxParallel, id: m.GetTurnId()}
	if n := m.GetMaxParallel(); n != 0 {
		if n < 0 {
			return &messages.TurnReply{Error: fmt.Sprintf("%v: MaxParallel must be an integer >= 1, got %d", ErrInvalidConfig, n)}
		}
		o.maxParallel = int(n)
	}
	calls := make([]TurnCall, len(m.GetCalls()))
	for i, c := range m.GetCalls() {
		calls[i] = TurnCall{ID: c.GetCallId(), Name: c.GetName(), Arguments: c.GetArgumentsText()}
	}
	res, err := r.runTurn(context.Background(), h.viewNode(), h.node.Key, calls, o)
	if err != nil {
		return &messages.TurnReply{Error: err.Error()}
	}
	reply := &messages.TurnReply{Concluded: res.Concluded}
	for _, x := range res.Results {
		reply.Results = append(reply.Results, x.Proto())
	}
	for _, e := range res.Events {
		k := messages.TurnEventCallStarted
		if e.Kind == ResultRecorded {
			k = messages.TurnEventResult
		}
		reply.Events = append(reply.Events, &messages.TurnEvent{Kind: k, CallId: e.CallID})
	}
	for _, c := range res.Contexts {
		reply.Contexts = append(reply.Contexts, &messages.ContextMessage{Role: c.Role, Text: c.Text})
	}
	return reply
}
