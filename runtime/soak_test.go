package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/toolscope/toolscope/runtime"
)

var soakFlag = flag.Duration("soak", 0, "run TestSoak for this long (default: a short run of about 1.5s)")

// soakArgs are the per-call fault flags. Faults are decided by the caller
// and carried in the arguments, so every stage (and the overlap check)
// knows what happens to its call.
type soakArgs struct {
	BodyPanic  bool `json:"bp,omitempty"`
	ClassPanic bool `json:"cp,omitempty"`
	RendPanic  bool `json:"rp,omitempty"`
	FinPanic   bool `json:"fp,omitempty"`
	PrePanic   bool `json:"hp,omitempty"`
	GuardPanic bool `json:"gp,omitempty"`
	GuardDeny  bool `json:"gd,omitempty"`
	Ask        bool `json:"ask,omitempty"`
	AroundPan  bool `json:"ap,omitempty"`
	PostPanic  bool `json:"pp,omitempty"`
	ObsPanic   bool `json:"op,omitempty"`
	Sleep      int  `json:"sl,omitempty"` // microseconds of body work
}

func parseSoak(raw json.RawMessage) soakArgs {
	var a soakArgs
	_ = json.Unmarshal(raw, &a)
	return a
}

func soakArgsOf(e runtime.Execution) soakArgs {
	raw, _ := e.Arguments()
	return parseSoak(raw)
}

// soakStats counts what the soak injected and saw.
type soakStats struct {
	calls, turns, turnCalls atomic.Int64
	panics, cancels         atomic.Int64
	overloaded, churnOp     atomic.Int64
	overlaps                atomic.Int64
}

// overlap instruments the bodies of one scope.
type overlap struct{ all, excl atomic.Int32 }

func (o *overlap) enter(exclusive bool, st *soakStats) func() {
	n := o.all.Add(1)
	if exclusive {
		if n != 1 {
			st.overlaps.Add(1)
		}
		o.excl.Add(1)
	} else if o.excl.Load() != 0 {
		st.overlaps.Add(1)
	}
	return func() {
		if exclusive {
			if o.all.Load() != 1 {
				st.overlaps.Add(1)
			}
			o.excl.Add(-1)
		}
		o.all.Add(-1)
	}
}

func soakDef(name string, parallel, slow bool, ov *overlap, st *soakStats) runtime.Definition {
	return runtime.Definition{
		Name:       name,
		Parameters: json.RawMessage(`{"type":"object"}`),
		Output: &runtime.Output{
			Schema: json.RawMessage(`{}`),
			Render: func(_ context.Context, args, v json.RawMessage) ([]runtime.Block, error) {
				if parseSoak(args).RendPanic {
					panic("soak: renderer")
				}
				return []runtime.Block{runtime.Text(string(v))}, nil
			},
		},
		Execute: func(ctx context.Context, raw json.RawMessage, _ *runtime.RunContext) (any, error) {
			a := parseSoak(raw)
			defer ov.enter(!parallel || a.ClassPanic, st)()
			if a.BodyPanic {
				panic("soak: body")
			}
			if slow {
				<-ctx.Done() // returns only on cancellation
				return "late", nil
			}
			if a.Sleep > 0 {
				select {
				case <-time.After(time.Duration(a.Sleep) * time.Microsecond):
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			return map[string]any{"ok": true}, nil
		},
		FinalizeContent: func(_ context.Context, e runtime.Execution, r *runtime.Result) ([]runtime.Block, error) {
			if soakArgsOf(e).FinPanic {
				panic("soak: finalizer")
			}
			return nil, nil
		},
		IsConcurrencySafe: func(_ context.Context, raw json.RawMessage) (bool, error) {
			if parseSoak(raw).ClassPanic {
				panic("soak: classifier")
			}
			return parallel, nil
		},
	}
}

func TestSoak(t *testing.T) {
	dur := 1500 * time.Millisecond
	if *soakFlag > 0 {
		dur = *soakFlag
	} else if testing.Short() {
		dur = 700 * time.Millisecond
	}
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	goruntime.GC()
	var m0 goruntime.MemStats
	goruntime.ReadMemStats(&m0)

	st := &soakStats{}
	var contained atomic.Int64
	// Events: started/finished must pair up per call id.
	var evMu sync.Mutex
	started, finished := map[string]int{}, map[string]int{}
	reg := mustNew(t, runtime.WithMaxParallel(4), runtime.WithMaxQueued(64),
		runtime.WithErrorHandler(func(error) { contained.Add(1) }),
		runtime.WithHooks(runtime.Hooks{Event: func(e runtime.Event) {
			switch e.Kind {
			case runtime.ExecutionStarted:
				evMu.Lock()
				started[e.CallID]++
				evMu.Unlock()
			case runtime.ExecutionFinished:
				evMu.Lock()
				finished[e.CallID]++
				evMu.Unlock()
			}
		}}))
	// Observers: exactly once per call.
	var obsMu sync.Mutex
	observed := map[string]int{}
	must := func(_ func(), err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	g := reg.Global()
	must(g.OnResult(func(_ context.Context, e runtime.Execution, _ *runtime.Result) error {
		obsMu.Lock()
		observed[e.CallID()]++
		obsMu.Unlock()
		if soakArgsOf(e).ObsPanic {
			panic("soak: observer")
		}
		return nil
	}))
	must(g.OnPreExecute(func(_ context.Context, e runtime.Execution, next func() (runtime.Decision, error)) (runtime.Decision, error) {
		a := soakArgsOf(e)
		if a.PrePanic {
			panic("soak: pre-execute")
		}
		if a.Ask {
			return runtime.Ask("soak asks"), nil // no approver: denied
		}
		return next()
	}))
	must(g.OnExecute(func(ctx context.Context, e runtime.Execution, next func(context.Context) *runtime.Result) (*runtime.Result, error) {
		if soakArgsOf(e).AroundPan {
			panic("soak: around")
		}
		return next(ctx), nil
	}))
	must(g.OnPostExecute(func(_ context.Context, e runtime.Execution, r *runtime.Result, next func() (runtime.PostDecision, error)) (runtime.PostDecision, error) {
		if soakArgsOf(e).PostPanic {
			panic("soak: post-execute")
		}
		return next()
	}))

	// Soak scopes: never disposed while callers run (their overlap check
	// needs a live admission); each has its own tools and a guard.
	const nScopes = 4
	type soakScope struct {
		s  *runtime.Scope
		ov *overlap
	}
	scopes := make([]soakScope, nScopes)
	for i := range scopes {
		s, err := reg.NewScope(fmt.Sprint("soak", i))
		if err != nil {
			t.Fatal(err)
		}
		ov := &overlap{}
		scopes[i] = soakScope{s, ov}
		mustRegister(t, s, soakDef("par", true, false, ov, st))
		mustRegister(t, s, soakDef("excl", false, false, ov, st))
		mustRegister(t, s, soakDef("slow", true, true, ov, st))
		mustRegister(t, s, soakDef("slowx", false, true, ov, st))
		must(s.Guard(func(_ context.Context, e runtime.Execution) (string, bool) {
			a := soakArgsOf(e)
			if a.GuardPanic {
				panic("soak: guard")
			}
			return "soak guard denies", a.GuardDeny
		}))
	}
	names := []string{"par", "par", "par", "excl", "slow", "slowx", "missing"}

	var callSeq atomic.Int64
	newArgs := func() (soakArgs, bool) {
		var a soakArgs
		faults := 0
		flip := func(p float64) bool {
			if rand.Float64() < p {
				faults++
				return true
			}
			return false
		}
		a.BodyPanic, a.ClassPanic, a.RendPanic = flip(0.01), flip(0.01), flip(0.01)
		a.FinPanic, a.PrePanic, a.GuardPanic = flip(0.01), flip(0.01), flip(0.01)
		a.AroundPan, a.PostPanic, a.ObsPanic = flip(0.01), flip(0.01), flip(0.01)
		a.GuardDeny, a.Ask = rand.Float64() < 0.01, rand.Float64() < 0.01
		if rand.IntN(4) == 0 {
			a.Sleep = rand.IntN(300)
		}
		st.panics.Add(int64(faults))
		cancel := rand.Float64() < 0.05
		return a, cancel
	}
	// callCtx returns the ctx of one call: 5% are cancelled at a random
	// point, slow bodies always get a deadline.
	callCtx := func(name string, cancel bool) (context.Context, context.CancelFunc) {
		if name == "slow" || name == "slowx" {
			return context.WithTimeout(context.Background(), time.Duration(200+rand.IntN(2000))*time.Microsecond)
		}
		if cancel {
			st.cancels.Add(1)
			ctx, c := context.WithCancel(context.Background())
			if rand.IntN(4) == 0 {
				c() // pre-cancelled
			} else {
				time.AfterFunc(time.Duration(rand.IntN(500))*time.Microsecond, c)
			}
			return ctx, c
		}
		return context.Background(), func() {}
	}

	type record struct {
		turn     bool
		code     string
		rejected bool // CLOSED/OVERLOADED: never entered the pipeline
	}
	var recMu sync.Mutex
	records := map[string]record{}
	put := func(id string, r record) {
		recMu.Lock()
		if _, dup := records[id]; dup {
			t.Errorf("call %s got more than one result", id)
		}
		records[id] = r
		recMu.Unlock()
	}

	deadline := time.Now().Add(dur)
	var wg sync.WaitGroup
	nCallers := 4 * goruntime.GOMAXPROCS(0)
	for c := range nCallers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				sc := scopes[rand.IntN(nScopes)]
				if rand.IntN(5) == 0 {
					n := 1 + rand.IntN(5)
					calls := make([]runtime.TurnCall, n)
					cancelTurn := false
					for i := range calls {
						a, cancel := newArgs()
						cancelTurn = cancelTurn || cancel
						b, _ := json.Marshal(a)
						name := names[rand.IntN(len(names))]
						if name == "slow" || name == "slowx" {
							cancelTurn = true
						}
						calls[i] = runtime.TurnCall{ID: fmt.Sprintf("t%d", callSeq.Add(1)), Name: name, ArgumentsText: string(b)}
					}
					if rand.IntN(20) == 0 {
						calls[0].ArgumentsText = `{"bad json` // R91: raw string
					}
					name := ""
					if cancelTurn {
						name = "slow"
					}
					ctx, cancel := callCtx(name, cancelTurn)
					tr, err := sc.s.ExecuteTurn(ctx, calls)
					cancel()
					st.turns.Add(1)
					st.turnCalls.Add(int64(n))
					if err != nil {
						t.Errorf("turn failed: %v", err)
						continue
					}
					if len(tr.Results) != n {
						t.Errorf("turn: %d results for %d calls", len(tr.Results), n)
						continue
					}
					for i, r := range tr.Results {
						if r == nil {
							t.Errorf("turn call %s: nil result", calls[i].ID)
							continue
						}
						put(calls[i].ID, record{turn: true, code: string(r.Code())})
					}
					continue
				}
				a, cancel := newArgs()
				b, _ := json.Marshal(a)
				name := names[rand.IntN(len(names))]
				ctx, stop := callCtx(name, cancel)
				id := fmt.Sprintf("c%d", callSeq.Add(1))
				r := sc.s.Execute(ctx, runtime.Call{ID: id, Name: name, Arguments: json.RawMessage(b)})
				stop()
				st.calls.Add(1)
				if r == nil {
					t.Errorf("call %s: nil result", id)
					continue
				}
				code := r.Code()
				if code == runtime.CodeOverloaded {
					st.overloaded.Add(1)
				}
				put(id, record{code: string(code), rejected: code == runtime.CodeOverloaded || code == runtime.CodeClosed})
				_ = c
			}
		}()
	}
	// Churn: register/dispose, restrict, scope create/dispose, groups.
	for c := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			i := 0
			for time.Now().Before(deadline) {
				i++
				st.churnOp.Add(1)
				key := fmt.Sprintf("churn%d-%d", c, i%7)
				s, err := reg.NewScope(key)
				if err != nil {
					if !errors.Is(err, runtime.ErrScopeExists) {
						t.Errorf("NewScope: %v", err)
					}
					continue
				}
				ov := &overlap{} // not checked: the scope is disposed under its calls
				dt, err := reg.Global().Register(soakDef(fmt.Sprintf("g%d-%d", c, i), true, false, ov, &soakStats{}))
				if err != nil {
					t.Errorf("global register: %v", err)
				}
				d2, err := s.Register(soakDef("own", rand.IntN(2) == 0, false, ov, &soakStats{}))
				if err != nil {
					t.Errorf("scoped register: %v", err)
				}
				child, _ := s.NewScope(key + "/child")
				grp, _ := s.Group()
				if grp != nil {
					_, _ = grp.Register(soakDef("grp", true, false, ov, &soakStats{}))
					_, _ = grp.Guard(func(context.Context, runtime.Execution) (string, bool) { return "", false })
				}
				dr, err := s.Restrict(runtime.Restriction{Deny: []string{"missing-or-not"}})
				if err == nil && rand.IntN(2) == 0 {
					dr()
				}
				var cw sync.WaitGroup
				for j := range 3 {
					cw.Add(1)
					go func() {
						defer cw.Done()
						ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
						defer cancel()
						a, _ := newArgs()
						b, _ := json.Marshal(a)
						id := fmt.Sprintf("k%d", callSeq.Add(1))
						target := s
						if j == 2 && child != nil {
							target = child
						}
						r := target.Execute(ctx, runtime.Call{ID: id, Name: []string{"own", "grp", "par"}[j], Arguments: json.RawMessage(b)})
						st.calls.Add(1)
						put(id, record{code: string(r.Code()), rejected: r.Code() == runtime.CodeOverloaded || r.Code() == runtime.CodeClosed})
					}()
				}
				if rand.IntN(2) == 0 && grp != nil {
					grp.Dispose()
				}
				if d2 != nil && rand.IntN(2) == 0 {
					d2()
				}
				s.Dispose() // with calls in flight
				if child != nil {
					child.Dispose()
				}
				if dt != nil {
					dt()
				}
				cw.Wait()
			}
		}()
	}
	watchdog := time.AfterFunc(dur+60*time.Second, func() {
		buf := make([]byte, 1<<22)
		n := goruntime.Stack(buf, true)
		panic(fmt.Sprintf("soak: callers hung\n%s", buf[:n]))
	})
	wg.Wait()
	watchdog.Stop()
	closeNow(t, reg)

	// Exactly one result, one event pair and one observer call per call.
	evMu.Lock()
	obsMu.Lock()
	recMu.Lock()
	var lost, badEvents, badObs int
	for id, r := range records {
		if r.rejected {
			if started[id] != 0 || observed[id] != 0 {
				badEvents++
			}
			continue
		}
		if started[id] != 1 || finished[id] != 1 {
			badEvents++
			if badEvents < 5 {
				t.Errorf("call %s (%+v): %d started, %d finished events", id, r, started[id], finished[id])
			}
		}
		want := 1
		if r.turn && r.code == string(runtime.CodeAbortedBeforeDispatch) {
			want = observed[id] // synthetic turn results bypass observers (R97)
			if want > 1 {
				want = 1
			}
		}
		if observed[id] != want {
			badObs++
			if badObs < 5 {
				t.Errorf("call %s (%+v): observers ran %d times", id, r, observed[id])
			}
		}
	}
	issued := callSeq.Load()
	lost = int(issued) - len(records)
	nRecords := len(records)
	records, started, finished, observed = nil, nil, nil, nil
	recMu.Unlock()
	obsMu.Unlock()
	evMu.Unlock()
	if lost != 0 {
		t.Errorf("%d calls lost their result", lost)
	}
	if badEvents+badObs != 0 {
		t.Errorf("%d calls with unpaired events, %d with wrong observer counts", badEvents, badObs)
	}
	if n := st.overlaps.Load(); n != 0 {
		t.Errorf("%d exclusive overlaps", n)
	}

	reg = nil
	scopes = nil
	goruntime.GC()
	goruntime.GC()
	var m1 goruntime.MemStats
	goruntime.ReadMemStats(&m1)
	growth := int64(m1.HeapAlloc) - int64(m0.HeapAlloc)
	if growth > 16<<20 {
		t.Errorf("heap grew by %d bytes after Close", growth)
	}
	t.Logf("soak %v: %d calls (%d Execute, %d turns with %d calls), %d results, lost %d; faults: %d panics injected, %d cancellations, %d overloaded; %d churn rounds; %d contained observer failures; overlaps %d; heap %+d KiB",
		dur, issued, st.calls.Load(), st.turns.Load(), st.turnCalls.Load(), nRecords, lost,
		st.panics.Load(), st.cancels.Load(), st.overloaded.Load(), st.churnOp.Load(), contained.Load(), st.overlaps.Load(), growth>>10)
}
