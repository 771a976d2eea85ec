package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	goruntime "runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolscope/toolscope/messages"
	"github.com/toolscope/toolscope/runtime"
)

// Deterministic tests of docs/contract.md §9 (R91–R99) through Scope.ExecuteTurn. Tool
// bodies block on gates the test opens; nothing sleeps. waitLimit only turns
// a scheduling bug (a deadlock) into a test failure instead of a hang.

const waitLimit = 10 * time.Second

// lab records what gated tool bodies do.
type lab struct {
	t        *testing.T
	mu       sync.Mutex
	gates    map[string]chan struct{}
	opened   map[string]bool
	args     map[string]string
	log      []string
	problems []string

	started  chan string // a body began (after its overlap checks)
	returned chan string // a body is about to return

	inflight    atomic.Int32
	maxInflight atomic.Int32
	exclusive   atomic.Int32
}

type env struct {
	*lab
	reg *runtime.Registry
	sc  *runtime.Scope
}

func newEnv(t *testing.T, opts ...runtime.Option) *env {
	t.Helper()
	reg, err := runtime.New(opts...)
	require.NoError(t, err)
	sc, err := reg.NewScope("agent")
	require.NoError(t, err)
	l := &lab{
		t:        t,
		gates:    map[string]chan struct{}{},
		opened:   map[string]bool{},
		args:     map[string]string{},
		started:  make(chan string, 256),
		returned: make(chan string, 256),
	}
	t.Cleanup(func() {
		l.releaseAll() // never leave a body blocked behind a failed test
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		_ = reg.Close(ctx)
	})
	return &env{lab: l, reg: reg, sc: sc}
}

func (l *lab) gate(id string) chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	g, ok := l.gates[id]
	if !ok {
		g = make(chan struct{})
		l.gates[id] = g
	}
	return g
}

// release opens the gates of ids (also before their bodies run).
func (l *lab) release(ids ...string) {
	for _, id := range ids {
		g := l.gate(id)
		l.mu.Lock()
		if !l.opened[id] {
			l.opened[id] = true
			close(g)
		}
		l.mu.Unlock()
	}
}

func (l *lab) releaseAll() {
	l.mu.Lock()
	ids := make([]string, 0, len(l.gates))
	for id := range l.gates {
		ids = append(ids, id)
	}
	l.mu.Unlock()
	l.release(ids...)
}

func (l *lab) record(s string) {
	l.mu.Lock()
	l.log = append(l.log, s)
	l.mu.Unlock()
}

func (l *lab) problem(s string) {
	l.mu.Lock()
	l.problems = append(l.problems, s)
	l.mu.Unlock()
}

func (l *lab) entries(prefix string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, e := range l.log {
		if strings.HasPrefix(e, prefix) {
			out = append(out, e)
		}
	}
	return out
}

func (l *lab) argsOf(id string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.args[id]
}

// noProblems asserts no overlap rule was broken by any body.
func (l *lab) noProblems() {
	l.t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	assert.Empty(l.t, l.problems, "overlap violations")
}

// body is a gated tool body. exclusive bodies check that nothing overlaps
// them; parallel bodies check that no exclusive body is running. extra runs
// after the gate opened, before returning.
func (l *lab) body(exclusive bool, extra func(id string, rc *runtime.RunContext) error) func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) {
	return func(_ context.Context, args json.RawMessage, rc *runtime.RunContext) (any, error) {
		id := rc.Execution().CallID()
		l.mu.Lock()
		l.args[id] = string(args)
		l.mu.Unlock()
		n := l.inflight.Add(1)
		for {
			m := l.maxInflight.Load()
			if n <= m || l.maxInflight.CompareAndSwap(m, n) {
				break
			}
		}
		if exclusive {
			if n != 1 {
				l.problem(fmt.Sprintf("exclusive %s started with %d bodies in flight", id, n))
			}
			l.exclusive.Add(1)
		} else if l.exclusive.Load() > 0 {
			l.problem(fmt.Sprintf("parallel %s started while an exclusive body ran", id))
		}
		l.record("body:" + id)
		l.started <- id
		<-l.gate(id)
		var err error
		if extra != nil {
			err = extra(id, rc)
		}
		if exclusive {
			if k := l.inflight.Load(); k != 1 {
				l.problem(fmt.Sprintf("exclusive %s ended with %d bodies in flight", id, k))
			}
			l.exclusive.Add(-1)
		}
		l.inflight.Add(-1)
		l.returned <- id
		if err != nil {
			return nil, err
		}
		return id, nil
	}
}

func recv(t *testing.T, ch <-chan string, what string) string {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitLimit):
		t.Fatalf("timed out waiting for %s", what)
		return ""
	}
}

// recvSet receives n values in any order.
func recvSet(t *testing.T, ch <-chan string, n int, what string) []string {
	t.Helper()
	out := make([]string, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, recv(t, ch, what))
	}
	return out
}

// settle lets every runnable goroutine make progress (no sleeping): a
// scheduling bug that would start something early gets its chance here.
func settle() {
	for i := 0; i < 200; i++ {
		goruntime.Gosched()
	}
}

// quiet asserts that nothing arrives on ch right now.
func quiet(t *testing.T, ch <-chan string, what string) {
	t.Helper()
	settle()
	select {
	case v := <-ch:
		t.Fatalf("%s: unexpected %q", what, v)
	default:
	}
}

func always(context.Context, json.RawMessage) (bool, error) { return true, nil }

func tool(name string, classify func(context.Context, json.RawMessage) (bool, error), body func(context.Context, json.RawMessage, *runtime.RunContext) (any, error)) runtime.Definition {
	return runtime.Definition{
		Name: name,
		Output: &runtime.Output{
			Schema: map[string]any{},
			Render: func(_ context.Context, _, v json.RawMessage) ([]runtime.Block, error) {
				return []runtime.Block{runtime.Text(string(v))}, nil
			},
		},
		Execute:           body,
		IsConcurrencySafe: classify,
	}
}

func (e *env) register(def runtime.Definition) func() {
	e.t.Helper()
	dispose, err := e.sc.Register(def)
	require.NoError(e.t, err)
	return dispose
}

// par registers a parallel gated tool, ex an exclusive one.
func (e *env) par(name string, extra func(string, *runtime.RunContext) error) func() {
	return e.register(tool(name, always, e.body(false, extra)))
}

func (e *env) ex(name string, extra func(string, *runtime.RunContext) error) func() {
	return e.register(tool(name, nil, e.body(true, extra)))
}

func calls(name string, ids ...string) []runtime.TurnCall {
	out := make([]runtime.TurnCall, len(ids))
	for i, id := range ids {
		out[i] = runtime.TurnCall{ID: id, Name: name}
	}
	return out
}

func join(parts ...[]runtime.TurnCall) []runtime.TurnCall {
	var out []runtime.TurnCall
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

type turnRun struct {
	done chan struct{}
	res  *runtime.TurnResult
	err  error
}

func (e *env) start(ctx context.Context, cs []runtime.TurnCall, opts ...runtime.TurnOption) *turnRun {
	r := &turnRun{done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.res, r.err = e.sc.ExecuteTurn(ctx, cs, opts...)
	}()
	return r
}

func (r *turnRun) wait(t *testing.T) *runtime.TurnResult {
	t.Helper()
	select {
	case <-r.done:
	case <-time.After(waitLimit):
		t.Fatal("timed out waiting for the turn")
	}
	require.NoError(t, r.err)
	require.NotNil(t, r.res)
	return r.res
}

func eventStrings(res *runtime.TurnResult) []string {
	out := make([]string, len(res.Events))
	for i, e := range res.Events {
		out[i] = e.String()
	}
	return out
}

// pairs is the event record of calls that each start and commit alone.
func pairs(ids ...string) []string {
	var out []string
	for _, id := range ids {
		out = append(out, "call:"+id, "result:"+id)
	}
	return out
}

// streamEvent is an execution event seen by a Hooks.Event; mode is in its
// protobuf form (unspecified for a call never classified).
type streamEvent struct {
	started bool
	callID  string
	turnID  string
	group   int32
	mode    messages.ExecutionMode
}

type streamLog struct {
	mu  sync.Mutex
	evs []streamEvent
}

// hook records the registry's execution events, in place.
func (l *streamLog) hook() runtime.Option {
	return runtime.WithHooks(runtime.Hooks{Event: func(e runtime.Event) {
		if e.Kind != runtime.ExecutionStarted && e.Kind != runtime.ExecutionFinished {
			return
		}
		mode := messages.ModeUnspecified
		if e.Classified {
			mode = e.Mode.Proto()
		}
		l.mu.Lock()
		l.evs = append(l.evs, streamEvent{e.Kind == runtime.ExecutionStarted, e.CallID, e.TurnID, e.Group, mode})
		l.mu.Unlock()
	}})
}

// started returns the ExecutionStarted event of each call id.
func (l *streamLog) startedByID() map[string]streamEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]streamEvent{}
	for _, e := range l.evs {
		if e.started {
			out[e.callID] = e
		}
	}
	return out
}

// ---------------------------------------------------------------- R91

func TestTurnR91_ArgumentsParsedOnce(t *testing.T) {
	e := newEnv(t)
	e.par("echo", nil)
	cs := []runtime.TurnCall{
		{ID: "empty", Name: "echo", ArgumentsText: ""},
		{ID: "invalid", Name: "echo", ArgumentsText: `{"a": 1`},
		{ID: "object", Name: "echo", ArgumentsText: `{"a":1,"b":[true,null]}`},
		{ID: "array", Name: "echo", ArgumentsText: `[1,2]`},
		{ID: "word", Name: "echo", ArgumentsText: `hello`},
	}
	e.release("empty", "invalid", "object", "array", "word")
	res, err := e.sc.ExecuteTurn(context.Background(), cs)
	require.NoError(t, err)
	require.Len(t, res.Results, len(cs))

	assert.JSONEq(t, `{}`, e.argsOf("empty"), "empty text is {}")
	assert.JSONEq(t, `"{\"a\": 1"`, e.argsOf("invalid"), "invalid JSON reaches the body as a JSON string")
	assert.JSONEq(t, `{"a":1,"b":[true,null]}`, e.argsOf("object"))
	assert.JSONEq(t, `[1,2]`, e.argsOf("array"))
	assert.JSONEq(t, `"hello"`, e.argsOf("word"))

	// Every call gets its own execution; results in model order.
	for i, c := range cs {
		r := res.Results[i]
		require.NotNil(t, r, c.ID)
		assert.False(t, r.IsError(), "%s: %s", c.ID, r.ErrorMessage())
		v, ok := r.Value()
		require.True(t, ok)
		assert.JSONEq(t, fmt.Sprintf("%q", c.ID), string(v))
	}
}

func TestTurnR91_MaxParallelBelowOneIsConfigError(t *testing.T) {
	e := newEnv(t)
	e.par("p", nil)
	for _, n := range []int{0, -1} {
		res, err := e.sc.ExecuteTurn(context.Background(), calls("p", "a"), runtime.WithMaxParallel(n))
		require.ErrorIs(t, err, runtime.ErrInvalidConfig, "MaxParallel(%d)", n)
		assert.Nil(t, res)
	}
	quiet(t, e.started, "no body runs for a misconfigured turn")

	_, err := runtime.New(runtime.WithMaxParallel(0))
	require.ErrorIs(t, err, runtime.ErrInvalidConfig)

	var nilCtx context.Context
	_, err = e.sc.ExecuteTurn(nilCtx, calls("p", "a"))
	require.ErrorIs(t, err, runtime.ErrInvalidConfig)
}

func TestTurnR91_MaxParallelOneIsSerial(t *testing.T) {
	e := newEnv(t)
	e.par("p", nil)
	ids := []string{"a", "b", "c", "d"}
	run := e.start(context.Background(), calls("p", ids...), runtime.WithMaxParallel(1))
	for _, id := range ids {
		assert.Equal(t, id, recv(t, e.started, "start of "+id))
		quiet(t, e.started, "MaxParallel(1) with "+id+" in flight")
		e.release(id)
	}
	res := run.wait(t)
	assert.EqualValues(t, 1, e.maxInflight.Load())
	assert.Equal(t, pairs(ids...), eventStrings(res), "fully serial: each call commits before the next starts")
	e.noProblems()
}

// ---------------------------------------------------------------- R92

func TestTurnR92_ExclusiveCallIsBarrier(t *testing.T) {
	log := &streamLog{}
	e := newEnv(t, log.hook())
	e.par("p", nil)
	e.ex("x", nil)
	cs := join(calls("p", "p0", "p1"), calls("x", "x"), calls("p", "p2", "p3"))
	run := e.start(context.Background(), cs, runtime.WithTurnID("t1"))

	assert.ElementsMatch(t, []string{"p0", "p1"}, recvSet(t, e.started, 2, "p0/p1"))
	quiet(t, e.started, "the exclusive call waits for the group to drain")
	e.release("p0", "p1")
	assert.Equal(t, "x", recv(t, e.started, "x"))
	quiet(t, e.started, "nothing starts while the exclusive call runs")
	e.release("x")
	assert.ElementsMatch(t, []string{"p2", "p3"}, recvSet(t, e.started, 2, "p2/p3"))
	e.release("p2", "p3")
	res := run.wait(t)

	assert.Equal(t, []string{
		"call:p0", "call:p1", "result:p0", "result:p1",
		"call:x", "result:x",
		"call:p2", "call:p3", "result:p2", "result:p3",
	}, eventStrings(res))
	e.noProblems()

	st := log.startedByID()
	assert.Equal(t, st["p0"].group, st["p1"].group)
	assert.Less(t, st["p1"].group, st["x"].group)
	assert.Less(t, st["x"].group, st["p2"].group)
	assert.Equal(t, st["p2"].group, st["p3"].group)
	assert.Equal(t, messages.ModeExclusive, st["x"].mode)
	assert.Equal(t, messages.ModeParallel, st["p0"].mode)
}

func TestTurnR92_BarrierRegisteringToolReclassifiesLaterCalls(t *testing.T) {
	log := &streamLog{}
	e := newEnv(t, log.hook())
	var disposeLate func()
	e.ex("setup", func(string, *runtime.RunContext) error {
		d, err := e.sc.Register(tool("late", always, e.body(false, nil)))
		disposeLate = d
		return err
	})
	require.Equal(t, runtime.Exclusive, e.sc.ExecutionMode(runtime.Call{Name: "late"}), "unknown before the turn")

	run := e.start(context.Background(), join(calls("setup", "s"), calls("late", "l1", "l2")))
	assert.Equal(t, "s", recv(t, e.started, "s"))
	e.release("s")
	// Both later calls are in flight at once: they were classified after
	// the barrier committed, against the registry it changed.
	assert.ElementsMatch(t, []string{"l1", "l2"}, recvSet(t, e.started, 2, "l1/l2 overlapping"))
	e.release("l1", "l2")
	res := run.wait(t)
	require.NotNil(t, disposeLate)
	defer disposeLate()

	for i, r := range res.Results {
		assert.False(t, r.IsError(), "result %d: %s", i, r.ErrorMessage())
	}
	st := log.startedByID()
	assert.Equal(t, messages.ModeParallel, st["l1"].mode)
	assert.Equal(t, messages.ModeParallel, st["l2"].mode)
	assert.Equal(t, st["l1"].group, st["l2"].group)
	assert.Less(t, st["s"].group, st["l1"].group)
	e.noProblems()
}

func TestTurnR92_BarrierDisposingClassifierReclassifiesLaterCalls(t *testing.T) {
	log := &streamLog{}
	e := newEnv(t, log.hook())
	disposeParallel := e.par("flex", nil)
	var disposeNew func()
	e.ex("reset", func(string, *runtime.RunContext) error {
		disposeParallel() // the parallel classifier goes away
		d, err := e.sc.Register(tool("flex", nil, e.body(true, nil)))
		disposeNew = d
		return err
	})
	require.Equal(t, runtime.Parallel, e.sc.ExecutionMode(runtime.Call{Name: "flex"}))

	run := e.start(context.Background(), join(calls("reset", "r"), calls("flex", "f1", "f2")))
	assert.Equal(t, "r", recv(t, e.started, "r"))
	e.release("r")
	assert.Equal(t, "f1", recv(t, e.started, "f1"))
	quiet(t, e.started, "f2 is exclusive now and waits for f1")
	e.release("f1")
	assert.Equal(t, "f2", recv(t, e.started, "f2"))
	e.release("f2")
	res := run.wait(t)
	require.NotNil(t, disposeNew)
	defer disposeNew()

	assert.Equal(t, pairs("r", "f1", "f2"), eventStrings(res))
	st := log.startedByID()
	assert.Equal(t, messages.ModeExclusive, st["f1"].mode)
	assert.Equal(t, messages.ModeExclusive, st["f2"].mode)
	assert.Less(t, st["r"].group, st["f1"].group)
	assert.Less(t, st["f1"].group, st["f2"].group)
	assert.EqualValues(t, 1, e.maxInflight.Load())
	e.noProblems()
}

func TestTurnR92_NonParallelLiveReclassificationEndsGroup(t *testing.T) {
	log := &streamLog{}
	e := newEnv(t, log.hook())
	var swParallel atomic.Bool
	swParallel.Store(true)
	e.par("p", nil)
	e.register(tool("sw", func(context.Context, json.RawMessage) (bool, error) { return swParallel.Load(), nil }, e.body(true, nil)))
	// p0's prepare (before sw is classified live) flips sw to exclusive.
	_, err := e.sc.OnPreExecute(func(_ context.Context, ex runtime.Execution, next func() (runtime.Decision, error)) (runtime.Decision, error) {
		if ex.CallID() == "p0" {
			swParallel.Store(false)
		}
		return next()
	})
	require.NoError(t, err)
	require.Equal(t, runtime.Parallel, e.sc.ExecutionMode(runtime.Call{Name: "sw"}), "parallel before the turn")

	run := e.start(context.Background(), join(calls("p", "p0"), calls("sw", "s"), calls("p", "p1")))
	assert.Equal(t, "p0", recv(t, e.started, "p0"))
	quiet(t, e.started, "s was reclassified exclusive: the group ended, s waits for p0")
	e.release("p0")
	assert.Equal(t, "s", recv(t, e.started, "s"))
	quiet(t, e.started, "p1 waits behind s")
	e.release("s")
	assert.Equal(t, "p1", recv(t, e.started, "p1"))
	e.release("p1")
	res := run.wait(t)

	assert.Equal(t, pairs("p0", "s", "p1"), eventStrings(res))
	st := log.startedByID()
	assert.Equal(t, messages.ModeExclusive, st["s"].mode)
	assert.Less(t, st["p0"].group, st["s"].group)
	assert.Less(t, st["s"].group, st["p1"].group)
	e.noProblems()
}

// ---------------------------------------------------------------- R93

func TestTurnR93_PrepareStrictlySequentialInModelOrder(t *testing.T) {
	e := newEnv(t)
	e.par("p", nil)
	ids := []string{"c0", "c1", "c2", "c3"}
	e.release(ids...)
	preStarted := make(chan string, 16)
	holdC0 := make(chan struct{})
	var inPrepare, maxPrepare atomic.Int32
	_, err := e.sc.OnPreExecute(func(_ context.Context, ex runtime.Execution, next func() (runtime.Decision, error)) (runtime.Decision, error) {
		n := inPrepare.Add(1)
		defer inPrepare.Add(-1)
		if n > maxPrepare.Load() {
			maxPrepare.Store(n)
		}
		e.record("pre:" + ex.CallID())
		preStarted <- ex.CallID()
		if ex.CallID() == "c0" {
			<-holdC0
		}
		return next()
	})
	require.NoError(t, err)
	_, err = e.sc.Guard(func(_ context.Context, ex runtime.Execution) (string, bool) {
		e.record("guard:" + ex.CallID())
		return "", false
	})
	require.NoError(t, err)

	run := e.start(context.Background(), calls("p", ids...))
	assert.Equal(t, "c0", recv(t, preStarted, "c0 prepare"))
	quiet(t, preStarted, "c1's prepare waits for c0's")
	quiet(t, e.started, "c0 is not dispatched before its prepare ends")
	close(holdC0)
	res := run.wait(t)

	assert.Equal(t, []string{"pre:c0", "pre:c1", "pre:c2", "pre:c3"}, e.entries("pre:"))
	assert.Equal(t, []string{"guard:c0", "guard:c1", "guard:c2", "guard:c3"}, e.entries("guard:"))
	assert.EqualValues(t, 1, maxPrepare.Load())
	var startsOnly []string
	for _, s := range eventStrings(res) {
		if strings.HasPrefix(s, "call:") {
			startsOnly = append(startsOnly, s)
		}
	}
	assert.Equal(t, []string{"call:c0", "call:c1", "call:c2", "call:c3"}, startsOnly)
}

// ---------------------------------------------------------------- R94

func TestTurnR94_AtMostMaxParallelInFlight(t *testing.T) {
	e := newEnv(t)
	e.par("p", nil)
	ids := []string{"a", "b", "c", "d", "e", "f", "g"}
	run := e.start(context.Background(), calls("p", ids...), runtime.WithMaxParallel(3))

	running := recvSet(t, e.started, 3, "first three")
	assert.ElementsMatch(t, ids[:3], running)
	quiet(t, e.started, "a fourth dispatch while three are in flight")
	for next := 3; next < len(ids); next++ {
		// Free the most recently started slot (out of model order).
		last := running[len(running)-1]
		running = running[:len(running)-1]
		e.release(last)
		got := recv(t, e.started, "next start")
		assert.Equal(t, ids[next], got)
		running = append(running, got)
		assert.LessOrEqual(t, e.inflight.Load(), int32(3))
	}
	e.release(running...)
	res := run.wait(t)
	assert.EqualValues(t, 3, e.maxInflight.Load())
	for i, r := range res.Results {
		assert.False(t, r.IsError(), "result %d", i)
	}
}

func TestTurnR94_DefaultMaxParallelIsTen(t *testing.T) {
	e := newEnv(t)
	e.par("p", nil)
	ids := make([]string, 12)
	for i := range ids {
		ids[i] = fmt.Sprintf("c%02d", i)
	}
	run := e.start(context.Background(), calls("p", ids...))
	recvSet(t, e.started, 10, "ten dispatches")
	quiet(t, e.started, "an eleventh dispatch")
	e.release(ids...)
	run.wait(t)
	assert.EqualValues(t, 10, e.maxInflight.Load())
}

func TestTurnR94_DeniedCallsTakeNoSlot(t *testing.T) {
	e := newEnv(t)
	e.par("p", nil)
	_, err := e.sc.Guard(func(_ context.Context, ex runtime.Execution) (string, bool) {
		if strings.HasPrefix(ex.CallID(), "d") {
			return "denied " + ex.CallID(), true
		}
		return "", false
	})
	require.NoError(t, err)

	run := e.start(context.Background(), calls("p", "p0", "p1", "d2", "d3", "p4"), runtime.WithMaxParallel(2))
	assert.ElementsMatch(t, []string{"p0", "p1"}, recvSet(t, e.started, 2, "p0/p1"))
	quiet(t, e.started, "no third dispatch")
	e.release("p0")
	// p1 is still in flight: p4 gets the one free slot only if the denied
	// d2 and d3 took none.
	assert.Equal(t, "p4", recv(t, e.started, "p4 beside p1"))
	assert.EqualValues(t, 2, e.inflight.Load())
	e.release("p1", "p4")
	res := run.wait(t)

	assert.Equal(t, "denied d2", res.Results[2].ErrorMessage())
	assert.Equal(t, "denied d3", res.Results[3].ErrorMessage())
	assert.Equal(t, []string{
		"call:p0", "call:p1", "result:p0", "call:d2", "call:d3", "call:p4",
		"result:p1", "result:d2", "result:d3", "result:p4",
	}, eventStrings(res))
}

// ---------------------------------------------------------------- R95

func TestTurnR95_SlowEarlierResultHoldsBackFastLater(t *testing.T) {
	e := newEnv(t)
	e.par("p", nil)
	_, err := e.sc.OnPostExecute(func(_ context.Context, ex runtime.Execution, _ *runtime.Result, next func() (runtime.PostDecision, error)) (runtime.PostDecision, error) {
		e.record("post:" + ex.CallID())
		return next()
	})
	require.NoError(t, err)
	_, err = e.sc.OnResult(func(_ context.Context, ex runtime.Execution, _ *runtime.Result) error {
		e.record("obs:" + ex.CallID())
		return nil
	})
	require.NoError(t, err)
	dispatched := make(chan string, 8)
	_, err = e.sc.OnExecute(func(ctx context.Context, ex runtime.Execution, next func(context.Context) *runtime.Result) (*runtime.Result, error) {
		r := next(ctx)
		dispatched <- ex.CallID()
		return r, nil
	})
	require.NoError(t, err)

	e.release("fast")
	run := e.start(context.Background(), calls("p", "slow", "fast"))
	assert.ElementsMatch(t, []string{"slow", "fast"}, recvSet(t, e.started, 2, "both bodies"))
	assert.Equal(t, "fast", recv(t, dispatched, "fast dispatch done"))
	settle()
	assert.Empty(t, e.entries("post:"), "fast must not commit before slow")
	assert.Empty(t, e.entries("obs:"))
	e.release("slow")
	res := run.wait(t)

	assert.Equal(t, []string{"post:slow", "obs:slow", "post:fast", "obs:fast"}, e.hookEntries(), "commits in model order")
	assert.Equal(t, []string{"call:slow", "call:fast", "result:slow", "result:fast"}, eventStrings(res))
	v0, _ := res.Results[0].Value()
	v1, _ := res.Results[1].Value()
	assert.JSONEq(t, `"slow"`, string(v0))
	assert.JSONEq(t, `"fast"`, string(v1))
}

// hookEntries drops the "body:" entries the lab records.
func (l *lab) hookEntries() []string {
	var out []string
	for _, s := range l.entries("") {
		if !strings.HasPrefix(s, "body:") {
			out = append(out, s)
		}
	}
	return out
}

func TestTurnR95_ObserverRegistryChangeAffectsLaterClassification(t *testing.T) {
	e := newEnv(t)
	e.ex("setup", nil)
	var disposeLate func()
	_, err := e.sc.OnResult(func(_ context.Context, ex runtime.Execution, _ *runtime.Result) error {
		if ex.CallID() == "s" {
			d, err := e.sc.Register(tool("late", always, e.body(false, nil)))
			disposeLate = d
			return err
		}
		return nil
	})
	require.NoError(t, err)

	run := e.start(context.Background(), join(calls("setup", "s"), calls("late", "l1", "l2")))
	assert.Equal(t, "s", recv(t, e.started, "s"))
	e.release("s")
	assert.ElementsMatch(t, []string{"l1", "l2"}, recvSet(t, e.started, 2, "l1/l2 overlapping"))
	e.release("l1", "l2")
	res := run.wait(t)
	require.NotNil(t, disposeLate)
	defer disposeLate()
	for i, r := range res.Results {
		assert.False(t, r.IsError(), "result %d: %s", i, r.ErrorMessage())
	}
	e.noProblems()
}

func TestTurnR95_ObserverCommitPrecedesLiveReclassification(t *testing.T) {
	log := &streamLog{}
	e := newEnv(t, log.hook())
	var flexParallel atomic.Bool
	flexParallel.Store(true)
	e.register(tool("flex", func(context.Context, json.RawMessage) (bool, error) { return flexParallel.Load(), nil }, e.body(false, nil)))
	_, err := e.sc.OnResult(func(_ context.Context, ex runtime.Execution, _ *runtime.Result) error {
		if ex.CallID() == "q0" {
			flexParallel.Store(false)
		}
		return nil
	})
	require.NoError(t, err)
	e.release("q0", "q1")
	res, err := e.sc.ExecuteTurn(context.Background(), calls("flex", "q0", "q1"), runtime.WithMaxParallel(1))
	require.NoError(t, err)
	assert.Equal(t, pairs("q0", "q1"), eventStrings(res))

	// With one slot, q1 is classified only after q0 committed, so q0's
	// observer already made it exclusive.
	st := log.startedByID()
	assert.Equal(t, messages.ModeParallel, st["q0"].mode)
	assert.Equal(t, messages.ModeExclusive, st["q1"].mode)
	assert.Less(t, st["q0"].group, st["q1"].group)
}

// ---------------------------------------------------------------- R96

func TestTurnR96_ContextsCollectedInModelOrder(t *testing.T) {
	e := newEnv(t)
	ctxMsg := func(s string) runtime.ContextMessage { return runtime.ContextMessage{Role: "system", Text: s} }
	e.par("p", func(id string, rc *runtime.RunContext) error {
		switch id {
		case "a":
			rc.DeferContext(ctxMsg("a1"))
			rc.DeferContext(ctxMsg("a2"))
		case "b":
			rc.DeferContext(ctxMsg("b1"))
		case "c":
			rc.DeferContext(ctxMsg("c1"))
		}
		return nil
	})
	_, err := e.sc.OnPostExecute(func(_ context.Context, ex runtime.Execution, _ *runtime.Result, next func() (runtime.PostDecision, error)) (runtime.PostDecision, error) {
		if ex.CallID() == "c" {
			return runtime.Accept().WithContexts(ctxMsg("c-post")), nil
		}
		return next()
	})
	require.NoError(t, err)

	e.release("b", "c", "d")
	run := e.start(context.Background(), calls("p", "a", "b", "c", "d"))
	recvSet(t, e.started, 4, "all four")
	// b, c and d finish first; a (first in model order) finishes last.
	assert.ElementsMatch(t, []string{"b", "c", "d"}, recvSet(t, e.returned, 3, "b/c/d"))
	e.release("a")
	res := run.wait(t)

	var texts []string
	for _, m := range res.Contexts {
		texts = append(texts, m.Text)
	}
	assert.Equal(t, []string{"a1", "a2", "b1", "c1", "c-post"}, texts)
	assert.Len(t, res.Results[0].AdditionalContexts(), 2)
	assert.Empty(t, res.Results[3].AdditionalContexts())
}

// ---------------------------------------------------------------- R97

// hookCounter records every hook, guard and observer call by call id.
func (e *env) recordHooks() {
	e.t.Helper()
	_, err := e.sc.OnPreExecute(func(_ context.Context, ex runtime.Execution, next func() (runtime.Decision, error)) (runtime.Decision, error) {
		e.record("pre:" + ex.CallID())
		return next()
	})
	require.NoError(e.t, err)
	_, err = e.sc.Guard(func(_ context.Context, ex runtime.Execution) (string, bool) {
		e.record("guard:" + ex.CallID())
		return "", false
	})
	require.NoError(e.t, err)
	_, err = e.sc.OnExecute(func(ctx context.Context, ex runtime.Execution, next func(context.Context) *runtime.Result) (*runtime.Result, error) {
		e.record("around:" + ex.CallID())
		return next(ctx), nil
	})
	require.NoError(e.t, err)
	_, err = e.sc.OnPostExecute(func(_ context.Context, ex runtime.Execution, _ *runtime.Result, next func() (runtime.PostDecision, error)) (runtime.PostDecision, error) {
		e.record("post:" + ex.CallID())
		return next()
	})
	require.NoError(e.t, err)
	_, err = e.sc.OnResult(func(_ context.Context, ex runtime.Execution, _ *runtime.Result) error {
		e.record("obs:" + ex.CallID())
		return nil
	})
	require.NoError(e.t, err)
}

func assertAbortedBeforeDispatch(t *testing.T, r *runtime.Result, id string) {
	t.Helper()
	require.NotNil(t, r, id)
	assert.True(t, r.IsError(), id)
	assert.Equal(t, runtime.CodeAbortedBeforeDispatch, r.Code(), id)
	name, code, ok := r.ErrorInfo()
	assert.True(t, ok, id)
	assert.Equal(t, runtime.NameAbort, name, id)
	assert.Equal(t, runtime.CodeAbortedBeforeDispatch, code, id)
}

func TestTurnR97_AbortDuringGroup(t *testing.T) {
	e := newEnv(t)
	e.par("p", func(id string, rc *runtime.RunContext) error {
		rc.DeferContext(runtime.ContextMessage{Role: "system", Text: id + "-ctx"})
		if id == "p1" {
			return errors.New("p1 failed")
		}
		return nil
	})
	e.ex("x", nil)
	e.recordHooks()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cs := join(calls("p", "p0", "p1", "p2"), calls("x", "x"), calls("p", "p3"))
	run := e.start(ctx, cs, runtime.WithMaxParallel(2))
	assert.ElementsMatch(t, []string{"p0", "p1"}, recvSet(t, e.started, 2, "p0/p1"))
	cancel()
	e.release("p0", "p1") // in-flight calls drain
	res := run.wait(t)

	// In-flight calls committed through the registry path.
	assert.Equal(t, runtime.CodeAborted, res.Results[0].Code(), "success after cancellation becomes ABORTED")
	assert.Equal(t, "p1 failed", res.Results[1].ErrorMessage(), "the tool's own failure is kept")
	// Never-started calls, barrier included, are synthetic.
	for i, id := range []string{"p2", "x", "p3"} {
		assertAbortedBeforeDispatch(t, res.Results[2+i], id)
	}
	assert.Equal(t, []string{
		"call:p0", "call:p1", "result:p0", "result:p1",
		"call:p2", "result:p2", "call:x", "result:x", "call:p3", "result:p3",
	}, eventStrings(res))
	// No hook, guard or observer saw the synthetic calls.
	for _, s := range e.hookEntries() {
		assert.True(t, strings.HasSuffix(s, ":p0") || strings.HasSuffix(s, ":p1"), "hook ran for a synthetic call: %s", s)
	}
	assert.Equal(t, []string{"post:p0", "post:p1"}, e.entries("post:"))
	assert.Equal(t, []string{"obs:p0", "obs:p1"}, e.entries("obs:"))
	quiet(t, e.started, "nothing starts after the abort")
	// Contexts of committed results are still handed over.
	var texts []string
	for _, m := range res.Contexts {
		texts = append(texts, m.Text)
	}
	assert.Equal(t, []string{"p0-ctx", "p1-ctx"}, texts)
}

func TestTurnR97_AbortBeforeTurnIsAllSynthetic(t *testing.T) {
	e := newEnv(t)
	var classified atomic.Int32
	e.register(tool("p", func(context.Context, json.RawMessage) (bool, error) { classified.Add(1); return true, nil }, e.body(false, nil)))
	e.ex("x", nil)
	e.recordHooks()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()

	res, err := e.sc.ExecuteTurn(ctx, join(calls("p", "a"), calls("x", "x"), calls("p", "b"), calls("nope", "u")))
	require.NoError(t, err)
	require.Len(t, res.Results, 4)
	for i, id := range []string{"a", "x", "b", "u"} {
		assertAbortedBeforeDispatch(t, res.Results[i], id)
	}
	assert.Equal(t, pairs("a", "x", "b", "u"), eventStrings(res))
	assert.Empty(t, e.entries(""), "no hooks, guards, observers or bodies")
	assert.Zero(t, classified.Load(), "nothing is classified")
	assert.Empty(t, res.Contexts)
	assert.False(t, res.Concluded)
}

// ---------------------------------------------------------------- R98

type codedErr struct{}

func (codedErr) Error() string { return "coded failure" }
func (codedErr) Name() string  { return "MyError" }
func (codedErr) Code() string  { return "MY_CODE" }

func TestTurnR98_ToolFailuresAreResultsNotErrors(t *testing.T) {
	e := newEnv(t)
	body := func(ctx context.Context, args json.RawMessage, rc *runtime.RunContext) (any, error) {
		switch rc.Execution().CallID() {
		case "err":
			return nil, errors.New("boom")
		case "panic":
			panic("kaboom")
		case "coded":
			return nil, codedErr{}
		case "badout":
			return func() {}, nil
		}
		return "ok", nil
	}
	e.register(tool("t", always, body))
	_, err := e.sc.OnPreExecute(func(_ context.Context, ex runtime.Execution, next func() (runtime.Decision, error)) (runtime.Decision, error) {
		if ex.CallID() == "prepanic" {
			panic("pre-execute panicked")
		}
		return next()
	})
	require.NoError(t, err)
	_, err = e.sc.OnResult(func(context.Context, runtime.Execution, *runtime.Result) error { return errors.New("observer failed") })
	require.NoError(t, err)

	cs := join(calls("t", "err", "panic", "coded", "badout", "prepanic"), calls("missing", "unknown"), calls("t", "ok"))
	res, err := e.sc.ExecuteTurn(context.Background(), cs)
	require.NoError(t, err, "tool outcomes are results, never the turn's error")
	require.Len(t, res.Results, len(cs))
	assert.Equal(t, "boom", res.Results[0].ErrorMessage())
	assert.Equal(t, "kaboom", res.Results[1].ErrorMessage())
	assert.Equal(t, runtime.Code("MY_CODE"), res.Results[2].Code())
	assert.Equal(t, runtime.CodeInvalidToolOutput, res.Results[3].Code())
	assert.Equal(t, "pre-execute panicked", res.Results[4].ErrorMessage())
	assert.Equal(t, runtime.CodeUnknownTool, res.Results[5].Code())
	for i := 0; i < 6; i++ {
		assert.True(t, res.Results[i].IsError(), cs[i].ID)
	}
	assert.False(t, res.Results[6].IsError(), res.Results[6].ErrorMessage())
	assert.Len(t, res.Events, 2*len(cs))

	empty, err := e.sc.ExecuteTurn(context.Background(), nil)
	require.NoError(t, err)
	assert.Empty(t, empty.Results)
	assert.Empty(t, empty.Events)
}

// ---------------------------------------------------------------- R99

func TestTurnR99_ConcludeTurn(t *testing.T) {
	e := newEnv(t)
	e.par("p", func(id string, rc *runtime.RunContext) error {
		switch id {
		case "ends":
			rc.ConcludeTurn()
		case "ends-but-fails":
			rc.ConcludeTurn()
			return errors.New("failed after concluding")
		}
		return nil
	})
	e.release("a", "ends", "b", "ends-but-fails", "c")

	res, err := e.sc.ExecuteTurn(context.Background(), calls("p", "a", "ends", "b"))
	require.NoError(t, err)
	assert.True(t, res.Concluded)
	assert.True(t, res.Results[1].ConcludesTurn())
	assert.False(t, res.Results[0].ConcludesTurn())
	assert.Len(t, res.Results, 3, "the turn still runs every call")

	res, err = e.sc.ExecuteTurn(context.Background(), calls("p", "ends-but-fails", "c"))
	require.NoError(t, err)
	assert.False(t, res.Concluded, "a failure never concludes")
	assert.False(t, res.Results[0].ConcludesTurn())
}

// ---------------------------------------------------------------- admission

func TestTurnAdmission_ParallelCallWaitsForSingleExclusiveExecute(t *testing.T) {
	e := newEnv(t)
	e.ex("x", nil)
	e.par("p", nil)
	gated := make(chan string, 8)
	_, err := e.sc.Guard(func(_ context.Context, ex runtime.Execution) (string, bool) {
		if strings.HasPrefix(ex.CallID(), "p") {
			gated <- ex.CallID()
		}
		return "", false
	})
	require.NoError(t, err)

	soloDone := make(chan *runtime.Result, 1)
	go func() { soloDone <- e.sc.Execute(context.Background(), runtime.Call{ID: "solo", Name: "x"}) }()
	assert.Equal(t, "solo", recv(t, e.started, "solo exclusive"))

	run := e.start(context.Background(), calls("p", "p0", "p1"))
	assert.Equal(t, "p0", recv(t, gated, "p0 prepared"))
	quiet(t, e.started, "the turn's parallel call overlaps another caller's exclusive call")
	e.release("solo")
	assert.ElementsMatch(t, []string{"p0", "p1"}, recvSet(t, e.started, 2, "p0/p1 after solo"))
	e.release("p0", "p1")
	res := run.wait(t)
	for i, r := range res.Results {
		assert.False(t, r.IsError(), "result %d: %s", i, r.ErrorMessage())
	}
	select {
	case r := <-soloDone:
		assert.False(t, r.IsError(), r.ErrorMessage())
	case <-time.After(waitLimit):
		t.Fatal("solo Execute did not return")
	}
	e.noProblems()
}

func TestTurnAdmission_ExclusiveCallWaitsForSingleParallelExecute(t *testing.T) {
	e := newEnv(t)
	e.ex("x", nil)
	e.par("p", nil)
	gated := make(chan string, 8)
	_, err := e.sc.Guard(func(_ context.Context, ex runtime.Execution) (string, bool) {
		if ex.CallID() == "x" {
			gated <- ex.CallID()
		}
		return "", false
	})
	require.NoError(t, err)

	soloDone := make(chan *runtime.Result, 1)
	go func() { soloDone <- e.sc.Execute(context.Background(), runtime.Call{ID: "solo", Name: "p"}) }()
	assert.Equal(t, "solo", recv(t, e.started, "solo parallel"))

	run := e.start(context.Background(), calls("x", "x"))
	assert.Equal(t, "x", recv(t, gated, "x prepared"))
	quiet(t, e.started, "the turn's exclusive call overlaps another caller's parallel call")
	e.release("solo")
	assert.Equal(t, "x", recv(t, e.started, "x after solo"))
	e.release("x")
	res := run.wait(t)
	assert.False(t, res.Results[0].IsError(), res.Results[0].ErrorMessage())
	select {
	case r := <-soloDone:
		assert.False(t, r.IsError(), r.ErrorMessage())
	case <-time.After(waitLimit):
		t.Fatal("solo Execute did not return")
	}
	e.noProblems()
}

// ---------------------------------------------------------------- events

func TestTurnEvents_CarryTurnIDAndIncreasingGroups(t *testing.T) {
	log := &streamLog{}
	e := newEnv(t, log.hook())
	e.par("p", nil)
	e.ex("x", nil)
	ids := []string{"p0", "p1", "x1", "p2", "p3", "x2", "x3"}
	e.release(append(ids, "solo")...)
	cs := join(calls("p", "p0", "p1"), calls("x", "x1"), calls("p", "p2", "p3"), calls("x", "x2", "x3"))
	res, err := e.sc.ExecuteTurn(context.Background(), cs, runtime.WithTurnID("t1"))
	require.NoError(t, err)
	require.Len(t, res.Results, len(cs))
	require.False(t, e.sc.Execute(context.Background(), runtime.Call{ID: "solo", Name: "p"}).IsError())

	log.mu.Lock()
	evs := append([]streamEvent(nil), log.evs...)
	log.mu.Unlock()
	startedN, finishedN := map[string]int{}, map[string]int{}
	for _, ev := range evs {
		want := "t1"
		if ev.callID == "solo" {
			want = ""
		}
		assert.Equal(t, want, ev.turnID, "%s turn id", ev.callID)
		if ev.started {
			startedN[ev.callID]++
		} else {
			finishedN[ev.callID]++
		}
	}
	for _, id := range ids {
		assert.Equal(t, 1, startedN[id], "%s started once", id)
		assert.Equal(t, 1, finishedN[id], "%s finished once", id)
	}
	st := log.startedByID()
	g := func(id string) int32 { return st[id].group }
	assert.Positive(t, g("p0"))
	assert.Equal(t, g("p0"), g("p1"))
	assert.Less(t, g("p1"), g("x1"))
	assert.Less(t, g("x1"), g("p2"))
	assert.Equal(t, g("p2"), g("p3"))
	assert.Less(t, g("p3"), g("x2"))
	assert.Less(t, g("x2"), g("x3"), "consecutive barriers are separate groups")
	// Finished events carry the same group as their start.
	for _, ev := range evs {
		if !ev.started && ev.callID != "solo" {
			assert.Equal(t, g(ev.callID), ev.group, "%s finished group", ev.callID)
		}
	}
	for _, id := range []string{"p0", "p1", "p2", "p3"} {
		assert.Equal(t, messages.ModeParallel, st[id].mode, id)
	}
	for _, id := range []string{"x1", "x2", "x3"} {
		assert.Equal(t, messages.ModeExclusive, st[id].mode, id)
	}
}

// ---------------------------------------------------------------- R86 × §9

// An observer committing a turn's parallel result may run a nested
// exclusive Execute in the same scope (R86: no deadlock). The turn must not
// keep holding the scope's admission while its runner waits in the observer.
func TestTurnR95_ObserverNestedExclusiveExecuteDoesNotDeadlock(t *testing.T) {
	e := newEnv(t)
	e.par("p", nil)
	e.ex("x", nil)
	nested := make(chan *runtime.Result, 1)
	_, err := e.sc.OnResult(func(_ context.Context, ex runtime.Execution, _ *runtime.Result) error {
		if ex.CallID() == "p0" {
			nested <- e.sc.Execute(ex.Context(), runtime.Call{ID: "nested", Name: "x", Parent: ex.Token()})
		}
		return nil
	})
	require.NoError(t, err)
	e.release("p0", "nested")
	res := e.start(context.Background(), calls("p", "p0")).wait(t)
	require.False(t, res.Results[0].IsError(), res.Results[0].ErrorMessage())
	r := <-nested
	assert.False(t, r.IsError(), r.ErrorMessage())
	e.noProblems()
}

// A pre-execute hook (prepare, on the runner) may run a nested exclusive
// Execute in the same scope while an earlier call of the turn is in flight:
// the nested call waits for that dispatch only, then the turn carries on.
func TestTurnR93_PrepareHookNestedExclusiveExecuteWaitsForInFlightCall(t *testing.T) {
	e := newEnv(t)
	e.par("p", nil)
	e.ex("x", nil)
	nested := make(chan *runtime.Result, 1)
	_, err := e.sc.OnPreExecute(func(_ context.Context, ex runtime.Execution, next func() (runtime.Decision, error)) (runtime.Decision, error) {
		if ex.CallID() == "p1" {
			nested <- e.sc.Execute(ex.Context(), runtime.Call{ID: "nested", Name: "x"})
		}
		return next()
	})
	require.NoError(t, err)
	run := e.start(context.Background(), calls("p", "p0", "p1"))
	assert.Equal(t, "p0", recv(t, e.started, "p0"))
	quiet(t, e.started, "the nested exclusive call waits for p0")
	e.release("p0")
	assert.Equal(t, "nested", recv(t, e.started, "nested"))
	e.release("nested")
	assert.Equal(t, "p1", recv(t, e.started, "p1"))
	e.release("p1")
	res := run.wait(t)
	for i, r := range res.Results {
		assert.False(t, r.IsError(), "result %d: %s", i, r.ErrorMessage())
	}
	r := <-nested
	assert.False(t, r.IsError(), r.ErrorMessage())
	e.noProblems()
}

// The step ctx cancelled during a prepare: that started call is committed
// through the registry (ABORTED_BEFORE_DISPATCH as a post result, R56), the
// in-flight call drains, later calls are synthetic.
func TestTurnR97_AbortDuringPrepare(t *testing.T) {
	e := newEnv(t)
	e.par("p", nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cancelled := make(chan string, 1)
	p0Running := make(chan struct{})
	_, err := e.sc.OnPreExecute(func(_ context.Context, ex runtime.Execution, next func() (runtime.Decision, error)) (runtime.Decision, error) {
		e.record("pre:" + ex.CallID())
		if ex.CallID() == "p1" {
			<-p0Running // p0's body is running: cancel lands mid-dispatch for p0
			cancel()
			cancelled <- "p1"
		}
		return next()
	})
	require.NoError(t, err)
	_, err = e.sc.OnPostExecute(func(_ context.Context, ex runtime.Execution, _ *runtime.Result, next func() (runtime.PostDecision, error)) (runtime.PostDecision, error) {
		e.record("post:" + ex.CallID())
		return next()
	})
	require.NoError(t, err)

	run := e.start(ctx, calls("p", "p0", "p1", "p2"))
	assert.Equal(t, "p0", recv(t, e.started, "p0"))
	close(p0Running)
	recv(t, cancelled, "cancel in p1's prepare")
	e.release("p0")
	res := run.wait(t)

	assert.Equal(t, runtime.CodeAborted, res.Results[0].Code())
	assertAbortedBeforeDispatch(t, res.Results[1], "p1")
	assertAbortedBeforeDispatch(t, res.Results[2], "p2")
	assert.Equal(t, []string{"call:p0", "call:p1", "result:p0", "result:p1", "call:p2", "result:p2"}, eventStrings(res))
	assert.Equal(t, []string{"pre:p0", "pre:p1"}, e.entries("pre:"))
	assert.Equal(t, []string{"post:p0", "post:p1"}, e.entries("post:"), "p1 was started: its abort is a post result")
	quiet(t, e.started, "p1 and p2 never dispatch")
}
