package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolscope/toolscope/runtime"
)

// TestNested_R86_RandomizedStress drives nested calls at random (issue 11
// §1, R86) and checks, deterministically, three rules:
//
//   - every call is answered exactly once: each Execute returns one result,
//     each turn one result (and one call/result record pair) per call, and
//     no body runs twice for one call;
//   - an exclusive body never overlaps a body of its scope that is not its
//     ancestor (checked whenever a body starts, in both directions);
//   - nothing hangs: every top-level operation (and every Dispose) is
//     watched; one outstanding longer than waitLimit, or drivers that do not
//     finish in time, fail the test with a dump of every goroutine.
//
// What it does is random (seed logged, -nesting-stress-seed to replay the
// decisions; the interleaving is the scheduler's): executions and turns of
// parallel and exclusive tools in three scopes; bodies that call, up to
// three levels deep and sometimes from several goroutines at once, tools
// of their own scope or another one (A → B → A), with the body's ctx and no
// Parent (inferred), with Parent and the body's ctx, or with Parent and a
// detached ctx; turns inside bodies (ExecuteTurn with the body's ctx);
// callers' ctxs with random deadlines and cancellations; and two goroutines
// disposing scopes (and re-creating them under the same key) meanwhile
// (all but one, which stays, so that no Dispose hides a deadlock in it).
//
// Results allowed: successes, ABORTED, ABORTED_BEFORE_DISPATCH,
// WOULD_DEADLOCK (a nesting pattern that cannot run without deadlock,
// answered promptly), and UNKNOWN_TOOL only for a call made through a
// scope handle whose disposal had begun (and, for a turn through such a
// handle, ErrScopeDisposed). Anything else is a failure.
//
// Depends on the admission rewrite of issue 11 §1 (nested exclusive calls,
// WOULD_DEADLOCK): before it, this test reports hangs and overlaps.
func TestNested_R86_RandomizedStress(t *testing.T) {
	dur := *nestingStressFlag
	seed := *nestingStressSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -nesting-stress-seed=%d), duration %v", seed, seed, dur)

	reg, err := runtime.New()
	if err != nil {
		t.Fatal(err)
	}
	h := &nsHarness{
		t:        t,
		reg:      reg,
		parent:   map[runtime.Token]runtime.Token{},
		running:  map[*nsInst]map[runtime.Token]nsRun{},
		bodyRuns: map[string]int{},
		inflight: map[int64]nsOp{},
		codes:    map[string]int64{},
		hung:     make(chan struct{}),
	}
	for i := range h.slots {
		inst, err := h.newInst(fmt.Sprintf("ns%d", i), 0)
		if err != nil {
			t.Fatal(err)
		}
		h.slots[i].Store(inst)
	}

	end := time.Now().Add(dur)
	var wg sync.WaitGroup
	const drivers = 4
	for g := 0; g < drivers; g++ {
		wg.Add(1)
		rng := rand.New(rand.NewPCG(seed, uint64(g)))
		go func() {
			defer wg.Done()
			for time.Now().Before(end) && !h.isHung() {
				h.topLevel(rng)
			}
		}()
	}
	for g := 0; g < 2; g++ {
		wg.Add(1)
		rng := rand.New(rand.NewPCG(seed, uint64(100+g)))
		go func() {
			defer wg.Done()
			for time.Now().Before(end) && !h.isHung() {
				time.Sleep(time.Duration(5000+rng.IntN(35000)) * time.Microsecond)
				h.churn(rng)
			}
		}()
	}
	stopMon := make(chan struct{})
	go h.monitor(stopMon)

	all := make(chan struct{})
	go func() { wg.Wait(); close(all) }()
	select {
	case <-all:
	case <-h.hung:
	case <-time.After(dur + 2*waitLimit):
		h.hang("the drivers did not finish")
	}
	close(stopMon)

	h.mu.Lock()
	t.Logf("ops %d (executes %d, turns %d, nested %d), disposes %d, results by code %v",
		h.ops.Load(), h.executes.Load(), h.turns.Load(), h.nested.Load(), h.disposes.Load(), h.codes)
	problems := append([]string(nil), h.problems...)
	nProblems := h.nProblems
	h.mu.Unlock()
	for _, p := range problems {
		t.Error(p)
	}
	if nProblems > len(problems) {
		t.Errorf("... and %d more problems", nProblems-len(problems))
	}
	if h.isHung() {
		t.Error(h.hangReport)
		return // leave the registry: closing it could hang too
	}
	closed := make(chan struct{})
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		_ = reg.Close(ctx)
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(2 * waitLimit):
		failHung(t, "Close after the stress run")
	}
}

var (
	nestingStressFlag = flag.Duration("nesting-stress", 3*time.Second, "how long TestNested_R86_RandomizedStress runs")
	nestingStressSeed = flag.Uint64("nesting-stress-seed", 0, "seed of TestNested_R86_RandomizedStress (0: from the clock)")
)

const (
	nsScopes    = 3
	nsMaxDepth  = 3 // nesting levels below a top-level call
	nsMaxStored = 20
	// codeWouldDeadlock is the coded error of a nesting pattern that cannot
	// be satisfied without deadlock (issue 11 §1).
	codeWouldDeadlock = "WOULD_DEADLOCK"
)

// nsInst is one incarnation of a scope (a key re-created after Dispose is a
// new instance: its bodies are another scope's).
type nsInst struct {
	key      string
	gen      int
	sc       *runtime.Scope
	disposed atomic.Bool // set before Dispose is called
}

func (i *nsInst) String() string { return fmt.Sprintf("%s#%d", i.key, i.gen) }

// nsRun is a body in progress.
type nsRun struct {
	exclusive bool
	id        string
}

// nsOp is a watched operation in progress.
type nsOp struct {
	what  string
	start time.Time
}

type nsArgs struct {
	Seed  uint64 `json:"seed"`
	Depth int    `json:"depth"`
}

type nsHarness struct {
	t        *testing.T
	reg      *runtime.Registry
	slots    [nsScopes]atomic.Pointer[nsInst]
	churning atomic.Int32 // bit i: slot i is being re-created
	ids      atomic.Int64

	ops, executes, turns, nested, disposes atomic.Int64

	mu       sync.Mutex
	parent   map[runtime.Token]runtime.Token // running bodies → their parent token
	running  map[*nsInst]map[runtime.Token]nsRun
	bodyRuns map[string]int
	codes    map[string]int64
	inflight map[int64]nsOp
	opSeq    int64

	problems  []string
	nProblems int

	hangOnce   sync.Once
	hung       chan struct{}
	hangReport string
}

func (h *nsHarness) isHung() bool {
	select {
	case <-h.hung:
		return true
	default:
		return false
	}
}

// problem records a rule violation; the test goroutine reports them (a
// body may still run after the test ended, so nothing here calls t).
func (h *nsHarness) problem(format string, args ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.nProblems++
	if len(h.problems) < nsMaxStored {
		h.problems = append(h.problems, fmt.Sprintf(format, args...))
	}
}

// hang records a hang once, with the oldest outstanding operations and a
// dump of every goroutine (grouped by stack; the full dump goes to a file).
func (h *nsHarness) hang(why string) {
	h.hangOnce.Do(func() {
		h.mu.Lock()
		ops := make([]nsOp, 0, len(h.inflight))
		for _, op := range h.inflight {
			ops = append(ops, op)
		}
		h.mu.Unlock()
		sort.Slice(ops, func(i, j int) bool { return ops[i].start.Before(ops[j].start) })
		var b strings.Builder
		fmt.Fprintf(&b, "hang: %s; %d operations outstanding", why, len(ops))
		for i, op := range ops {
			if i == 10 {
				fmt.Fprintf(&b, "\n  ...")
				break
			}
			fmt.Fprintf(&b, "\n  %v: %s", time.Since(op.start).Round(time.Millisecond), op.what)
		}
		fmt.Fprintf(&b, "\n  nested admission:\n%s", runtime.NestStateForTest(h.reg))
		if f, err := os.CreateTemp("", "nesting-stress-goroutines-*.txt"); err == nil {
			_, _ = f.WriteString(goroutineDump())
			_ = f.Close()
			fmt.Fprintf(&b, "\nfull goroutine dump: %s", f.Name())
		}
		var g strings.Builder
		if p := pprof.Lookup("goroutine"); p != nil {
			_ = p.WriteTo(&g, 1)
		}
		fmt.Fprintf(&b, "\n--- goroutines (grouped) ---\n%s", g.String())
		h.hangReport = b.String()
		close(h.hung)
	})
}

// watch registers an operation for the hang monitor; the returned func
// ends it.
func (h *nsHarness) watch(what string) func() {
	h.mu.Lock()
	h.opSeq++
	id := h.opSeq
	h.inflight[id] = nsOp{what: what, start: time.Now()}
	h.mu.Unlock()
	return func() {
		h.mu.Lock()
		delete(h.inflight, id)
		h.mu.Unlock()
	}
}

func (h *nsHarness) monitor(stop <-chan struct{}) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		h.mu.Lock()
		var oldest nsOp
		for _, op := range h.inflight {
			if oldest.start.IsZero() || op.start.Before(oldest.start) {
				oldest = op
			}
		}
		h.mu.Unlock()
		if !oldest.start.IsZero() && time.Since(oldest.start) > waitLimit {
			h.hang(fmt.Sprintf("%s outstanding for more than %v", oldest.what, waitLimit))
			return
		}
	}
}

func (h *nsHarness) newInst(key string, gen int) (*nsInst, error) {
	sc, err := h.reg.NewScope(key)
	if err != nil {
		return nil, err
	}
	inst := &nsInst{key: key, gen: gen, sc: sc}
	if _, err := sc.Register(tool("par", always, h.body(inst, false))); err != nil {
		return nil, err
	}
	if _, err := sc.Register(tool("ex", nil, h.body(inst, true))); err != nil {
		return nil, err
	}
	return inst, nil
}

// churn disposes a random scope other than the first and re-creates it
// under the same key. Two churners run at once, on different scopes. The
// first scope is never disposed: a Dispose ends waits on its scope's
// admission, which would hide a deadlock there.
func (h *nsHarness) churn(rng *rand.Rand) {
	i := 1 + rng.IntN(nsScopes-1)
	bit := int32(1) << i
	for {
		old := h.churning.Load()
		if old&bit != 0 {
			return // the other churner has this slot
		}
		if h.churning.CompareAndSwap(old, old|bit) {
			break
		}
	}
	defer func() {
		for {
			old := h.churning.Load()
			if h.churning.CompareAndSwap(old, old&^bit) {
				return
			}
		}
	}()
	old := h.slots[i].Load()
	done := h.watch("Dispose " + old.String())
	old.disposed.Store(true)
	old.sc.Dispose()
	done()
	h.disposes.Add(1)
	inst, err := h.newInst(old.key, old.gen+1)
	if err != nil {
		h.problem("re-creating %s after Dispose: %v", old.key, err)
		return
	}
	h.slots[i].Store(inst)
}

func (h *nsHarness) pick(rng *rand.Rand) *nsInst { return h.slots[rng.IntN(nsScopes)].Load() }

func (h *nsHarness) args(seed uint64, depth int) string {
	b, _ := json.Marshal(nsArgs{Seed: seed, Depth: depth})
	return string(b)
}

func (h *nsHarness) id() string { return fmt.Sprintf("c%d", h.ids.Add(1)) }

// callerCtx returns a random caller ctx: plain, with a deadline a few ms
// away, or cancelled after a random delay.
func callerCtx(parent context.Context, rng *rand.Rand) (context.Context, context.CancelFunc) {
	switch rng.IntN(6) {
	case 0, 1:
		return context.WithTimeout(parent, time.Duration(rng.IntN(5000))*time.Microsecond)
	case 2:
		ctx, cancel := context.WithCancel(parent)
		t := time.AfterFunc(time.Duration(rng.IntN(3000))*time.Microsecond, cancel)
		return ctx, func() { t.Stop(); cancel() }
	default:
		return context.WithCancel(parent)
	}
}

// topLevel runs one model-level operation: an Execute or a turn.
func (h *nsHarness) topLevel(rng *rand.Rand) {
	h.ops.Add(1)
	inst := h.pick(rng)
	ctx, cancel := callerCtx(context.Background(), rng)
	defer cancel()
	if rng.IntN(3) == 0 {
		h.turn(ctx, inst, rng, 0, "top-level")
		return
	}
	name := "par"
	if rng.IntN(2) == 0 {
		name = "ex"
	}
	call := runtime.Call{ID: h.id(), Name: name, Arguments: json.RawMessage(h.args(rng.Uint64(), 0))}
	done := h.watch(fmt.Sprintf("top-level Execute %s %s on %v", call.ID, name, inst))
	res := inst.sc.Execute(ctx, call)
	done()
	h.executes.Add(1)
	h.check(inst, call.ID, res)
}

// turn runs a turn of 2–4 random calls in inst (depth is the calls' own).
func (h *nsHarness) turn(ctx context.Context, inst *nsInst, rng *rand.Rand, depth int, where string) {
	n := 2 + rng.IntN(3)
	calls := make([]runtime.TurnCall, n)
	names := make([]string, n)
	for i := range calls {
		names[i] = "par"
		if rng.IntN(3) == 0 {
			names[i] = "ex"
		}
		calls[i] = runtime.TurnCall{ID: h.id(), Name: names[i], ArgumentsText: h.args(rng.Uint64(), depth)}
	}
	maxPar := 1 + rng.IntN(3)
	what := fmt.Sprintf("%s turn %v on %v (MaxParallel %d)", where, names, inst, maxPar)
	if depth == 0 {
		defer h.watch(what)()
	}
	res, err := inst.sc.ExecuteTurn(ctx, calls, runtime.WithMaxParallel(maxPar))
	h.turns.Add(1)
	if err != nil {
		if errors.Is(err, runtime.ErrScopeDisposed) && inst.disposed.Load() {
			return // a turn through a handle whose disposal had begun
		}
		h.problem("%s: error %v", what, err)
		return
	}
	if res == nil || len(res.Results) != n {
		h.problem("%s: %d calls, result %+v", what, n, res)
		return
	}
	seen := map[string]int{}
	for _, e := range res.Events {
		seen[e.String()]++
	}
	for i, c := range calls {
		if seen["call:"+c.ID] != 1 || seen["result:"+c.ID] != 1 {
			h.problem("%s: call %s recorded %d starts and %d results, want 1 and 1", what, c.ID, seen["call:"+c.ID], seen["result:"+c.ID])
		}
		h.check(inst, c.ID, res.Results[i])
	}
	if len(res.Events) != 2*n {
		h.problem("%s: %d records for %d calls", what, len(res.Events), n)
	}
}

// check applies the allowed-results rule to one call's result.
func (h *nsHarness) check(inst *nsInst, id string, res *runtime.Result) {
	code := "ok"
	if res == nil {
		h.problem("call %s on %v: nil result", id, inst)
		return
	}
	if res.IsError() {
		code = string(res.Code())
		if code == "" {
			code = "uncoded"
		}
	}
	h.mu.Lock()
	h.codes[code]++
	h.mu.Unlock()
	switch code {
	case "ok", string(runtime.CodeAborted), string(runtime.CodeAbortedBeforeDispatch), codeWouldDeadlock:
	case string(runtime.CodeUnknownTool):
		if !inst.disposed.Load() {
			h.problem("call %s on live scope %v: %s %q", id, inst, code, res.ErrorMessage())
		}
	default:
		h.problem("call %s on %v: unexpected result %s %q", id, inst, code, res.ErrorMessage())
	}
}

// enter records a body starting and checks the overlap rule; the returned
// func records its end.
func (h *nsHarness) enter(inst *nsInst, ex runtime.Execution, exclusive bool) func() {
	tok, par := ex.Token(), ex.Parent()
	id := ex.CallID()
	h.mu.Lock()
	h.bodyRuns[id]++
	if n := h.bodyRuns[id]; n > 1 {
		h.nProblems++
		if len(h.problems) < nsMaxStored {
			h.problems = append(h.problems, fmt.Sprintf("call %s on %v: body ran %d times", id, inst, n))
		}
	}
	h.parent[tok] = par
	isAncestor := func(a runtime.Token) bool {
		for p := par; !p.IsZero(); p = h.parent[p] {
			if p == a {
				return true
			}
		}
		return false
	}
	mode := map[bool]string{true: "exclusive", false: "parallel"}
	runs := h.running[inst]
	if runs == nil {
		runs = map[runtime.Token]nsRun{}
		h.running[inst] = runs
	}
	for other, r := range runs {
		if (exclusive || r.exclusive) && !isAncestor(other) {
			h.nProblems++
			if len(h.problems) < nsMaxStored {
				h.problems = append(h.problems, fmt.Sprintf(
					"overlap in %v: %s body of %s (ancestors %s) started while %s body of %s, not its ancestor, runs",
					inst, mode[exclusive], id, h.chainLocked(par), mode[r.exclusive], r.id))
			}
		}
	}
	runs[tok] = nsRun{exclusive: exclusive, id: id}
	h.mu.Unlock()
	return func() {
		h.mu.Lock()
		delete(runs, tok)
		delete(h.parent, tok)
		h.mu.Unlock()
	}
}

// chainLocked renders the running ancestors of a parent token (h.mu held).
func (h *nsHarness) chainLocked(par runtime.Token) string {
	var ids []string
	for p := par; !p.IsZero(); p = h.parent[p] {
		found := ""
		for _, runs := range h.running {
			if r, ok := runs[p]; ok {
				found = r.id
			}
		}
		if found == "" {
			found = "?"
		}
		ids = append(ids, found)
		if len(ids) > 8 {
			break
		}
	}
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, " < ")
}

// body is the tool body of inst's "par" or "ex": it checks the overlap
// rule, may work a little, and may make nested calls (waiting for all of
// them before it returns). It always succeeds: cancellation turns that
// into ABORTED (R80).
func (h *nsHarness) body(inst *nsInst, exclusive bool) func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) {
	return func(ctx context.Context, raw json.RawMessage, rc *runtime.RunContext) (any, error) {
		var a nsArgs
		_ = json.Unmarshal(raw, &a)
		ex := rc.Execution()
		defer h.enter(inst, ex, exclusive)()
		rng := rand.New(rand.NewPCG(a.Seed, uint64(a.Depth)))
		if rng.IntN(4) == 0 {
			time.Sleep(time.Duration(rng.IntN(200)) * time.Microsecond)
		}
		if a.Depth >= nsMaxDepth || ctx.Err() != nil {
			return "ok", nil
		}
		k := 0
		switch r := rng.IntN(10); {
		case r >= 8:
			k = 2
		case r >= 4:
			k = 1
		}
		seeds := make([]uint64, k)
		for i := range seeds {
			seeds[i] = rng.Uint64()
		}
		if rng.IntN(2) == 0 {
			for _, s := range seeds {
				h.nestedCall(ctx, ex, inst, a.Depth+1, s)
			}
		} else {
			var wg sync.WaitGroup
			for _, s := range seeds {
				wg.Add(1)
				go func() {
					defer wg.Done()
					h.nestedCall(ctx, ex, inst, a.Depth+1, s)
				}()
			}
			wg.Wait()
		}
		return "ok", nil
	}
}

// nestedCall makes one call from inside the body of ex (running in from):
// an Execute or a turn, in from's scope or another one, nested by ctx or by
// Parent, under the body's ctx, a ctx derived from it, or a detached one.
func (h *nsHarness) nestedCall(ctx context.Context, ex runtime.Execution, from *nsInst, depth int, seed uint64) {
	h.nested.Add(1)
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	target := from
	if rng.IntN(2) == 0 {
		target = h.pick(rng)
	}
	how := rng.IntN(3) // 0: ctx only, 1: Parent and ctx, 2: Parent and a detached ctx
	c := ctx
	if how == 2 {
		c = context.Background()
	}
	if how == 2 || rng.IntN(3) == 0 {
		var cancel context.CancelFunc
		c, cancel = callerCtx(c, rng)
		defer cancel()
	}
	if how == 0 && rng.IntN(3) == 0 {
		// A turn inside a body: nested through the body's ctx (a turn has
		// no Parent option).
		h.turn(c, target, rng, depth, fmt.Sprintf("nested (in %s)", ex.CallID()))
		return
	}
	call := runtime.Call{ID: h.id(), Name: "par", Arguments: json.RawMessage(h.args(rng.Uint64(), depth))}
	if rng.IntN(2) == 0 {
		call.Name = "ex"
	}
	if how != 0 {
		call.Parent = ex.Token()
	}
	h.check(target, call.ID, target.sc.Execute(c, call))
}
