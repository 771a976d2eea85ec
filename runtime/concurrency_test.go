package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolscope/toolscope/runtime"
)

// ccFilter drops the names of the concurrently churned global tools.
func ccFilter(names []string) []string {
	out := []string{}
	for _, n := range names {
		if !strings.HasPrefix(n, "churn") {
			out = append(out, n)
		}
	}
	return out
}

// ccWorker owns two scopes (key and key+"c") and keeps a model of what they
// should show. Only it mutates them, so after each of its own steps its
// views must match the model exactly, whatever else is going on.
type ccWorker struct {
	t        *testing.T
	reg      *runtime.Registry
	globals  []string
	key      string
	s, child *runtime.Scope
	own      []string
	disposer map[string]func()
	denies   []ccRestriction
	expected int64 // change notifications this worker caused
	guard    *atomic.Int64
}

type ccRestriction struct {
	name string
	lift func()
}

func (w *ccWorker) want() []string {
	out := []string{}
	for _, g := range w.globals {
		if !slices.ContainsFunc(w.denies, func(r ccRestriction) bool { return r.name == g }) {
			out = append(out, g)
		}
	}
	return append(out, w.own...)
}

func (w *ccWorker) check() bool {
	want := w.want()
	return assert.Equal(w.t, want, ccFilter(rrView(w.t, w.reg, w.key)), w.key) &&
		assert.Equal(w.t, want, ccFilter(w.child.Tools()), w.key+"c") &&
		assert.Equal(w.t, want, ccFilter(rrView(w.t, w.reg, w.key+"c")), w.key+"c by key")
}

func (w *ccWorker) run(id, rounds int) {
	t := w.t
	rng := rand.New(rand.NewPCG(uint64(id), 7))
	var err error
	w.s, err = w.reg.NewScope(w.key)
	require.NoError(t, err)
	w.child, err = w.s.NewScope(w.key + "c")
	require.NoError(t, err)
	_, err = w.s.Guard(func(context.Context, runtime.Execution) (string, bool) { w.guard.Add(1); return "", false })
	require.NoError(t, err)
	w.disposer = map[string]func(){}
	for i := 0; i < rounds; i++ {
		switch rng.IntN(9) {
		case 0, 1:
			name := fmt.Sprintf("%s-t%d", w.key, i)
			d := rrDef(name, w.key)
			if rng.IntN(2) == 0 {
				d.IsConcurrencySafe = func(context.Context, json.RawMessage) (bool, error) { return true, nil }
			}
			dd, err := w.s.Register(d)
			require.NoError(t, err)
			w.own = append(w.own, name)
			w.disposer[name] = dd
			w.expected++
		case 2:
			if len(w.own) == 0 {
				continue
			}
			j := rng.IntN(len(w.own))
			name := w.own[j]
			w.disposer[name]()
			w.disposer[name]() // idempotent
			delete(w.disposer, name)
			w.own = slices.Delete(w.own, j, j+1)
			w.expected++
		case 3:
			g := w.globals[rng.IntN(len(w.globals))]
			d, err := w.s.Restrict(runtime.Restriction{Deny: []string{g}})
			require.NoError(t, err)
			w.denies = append(w.denies, ccRestriction{g, d})
			w.expected++
		case 4:
			if len(w.denies) == 0 {
				continue
			}
			j := rng.IntN(len(w.denies))
			w.denies[j].lift()
			w.denies = slices.Delete(w.denies, j, j+1)
			w.expected++
		case 5:
			if !w.check() {
				return
			}
			_, err := w.reg.View(w.key + "c").Schemas()
			require.NoError(t, err)
			for _, n := range w.own {
				_, ok := w.child.Get(n)
				assert.True(t, ok, n)
				_ = w.reg.View(w.key + "c").ExecutionMode(runtime.Call{Name: n})
			}
		case 6:
			name := w.globals[rng.IntN(len(w.globals))]
			if len(w.own) > 0 && rng.IntN(2) == 0 {
				name = w.own[rng.IntN(len(w.own))]
			}
			res := rrExec(w.child, name)
			visible := slices.Contains(w.want(), name)
			assert.Equal(t, visible, !res.IsError(), "%s executes %s: %s", w.key, name, res.ErrorMessage())
		case 7:
			tmp, err := w.child.NewScope(fmt.Sprintf("%s-tmp%d", w.key, i))
			require.NoError(t, err)
			rrReg(t, tmp, "tmp", "T")
			if rng.IntN(2) == 0 {
				_, err = tmp.Restrict(runtime.Restriction{Allow: []string{}})
				require.NoError(t, err)
				w.expected += 2 // add and lift
			}
			tmp.Dispose()
			w.expected += 2
		case 8:
			grp, err := w.s.Group()
			require.NoError(t, err)
			rrReg(t, grp, w.key+"-grp", "G")
			grp.Dispose()
			w.expected += 2
		}
	}
	w.check()
}

func TestConcurrency_ManyScopesInvariants(t *testing.T) {
	reg := rrNew(t)
	globals := []string{"g0", "g1", "g2", "g3", "g4"}
	for _, g := range globals {
		rrReg(t, reg.Global(), g, "G")
	}
	var changes atomic.Int64
	_, err := reg.Global().OnChange(func(context.Context) error { changes.Add(1); return nil })
	require.NoError(t, err)
	var globalGuard atomic.Int64
	_, err = reg.Global().Guard(func(context.Context, runtime.Execution) (string, bool) { globalGuard.Add(1); return "", false })
	require.NoError(t, err)

	const workers, rounds, churners, churnRounds = 8, 80, 2, 60
	var wg sync.WaitGroup
	var workerGuards atomic.Int64
	ws := make([]*ccWorker, workers)
	for i := range ws {
		ws[i] = &ccWorker{t: t, reg: reg, globals: globals, key: fmt.Sprintf("w%d", i), guard: &workerGuards}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			ws[i].run(i, rounds)
		}(i)
	}
	var churnExpected atomic.Int64
	for c := 0; c < churners; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			grp, err := reg.Global().Group()
			if !assert.NoError(t, err) {
				return
			}
			for i := 0; i < churnRounds; i++ {
				name := fmt.Sprintf("churn-%d-%d", c, i)
				d, err := grp.Register(rrDef(name, "C"))
				if !assert.NoError(t, err) {
					return
				}
				_, ok := reg.View("w0c").Get(name)
				_ = ok // visible unless w0 denies... it only denies g*, but w0 may not exist yet: both are fine
				_, err = reg.View("").Schemas()
				assert.NoError(t, err)
				if i%3 == 0 {
					d()
					churnExpected.Add(2)
				} else {
					churnExpected.Add(1)
				}
			}
			grp.Dispose() // removes the rest
			churnExpected.Add(int64(churnRounds - (churnRounds+2)/3))
		}(c)
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	var expected int64 = churnExpected.Load()
	for _, w := range ws {
		expected += w.expected
	}
	assert.Equal(t, expected, changes.Load(), "exactly one notification per effective change (R87)")
	assert.Equal(t, globals, reg.Global().Tools(), "the churned globals are all gone")

	// Every worker still sees exactly its model.
	for _, w := range ws {
		w.check()
	}

	// Dispose everything concurrently, children and parents racing.
	before := changes.Load()
	var disposeExpected int64
	for _, w := range ws {
		disposeExpected += int64(len(w.own) + len(w.denies))
	}
	for _, w := range ws {
		wg.Add(2)
		go func() { defer wg.Done(); w.child.Dispose() }()
		go func() { defer wg.Done(); w.s.Dispose(); w.s.Dispose() }()
	}
	wg.Wait()
	assert.Equal(t, disposeExpected, changes.Load()-before, "one notification per removal")

	workerGuards.Store(0)
	globalGuard.Store(0)
	for _, w := range ws {
		for _, key := range []string{w.key, w.key + "c"} {
			assert.Equal(t, globals, rrView(t, reg, key), key)
			_, ok := reg.Scope(key)
			assert.False(t, ok, key)
			res := reg.Execute(context.Background(), runtime.Call{ID: key, Name: "g0", Agent: key})
			assert.False(t, res.IsError(), res.ErrorMessage())
		}
	}
	assert.Equal(t, int64(0), workerGuards.Load(), "no leaked guards")
	assert.Equal(t, int64(2*workers), globalGuard.Load())
	assert.Equal(t, globals, reg.Global().Tools())

	// Keys can be re-created (top-level or under their recorded parent).
	for _, w := range ws {
		s, err := reg.NewScope(w.key)
		require.NoError(t, err)
		_, err = s.NewScope(w.key + "c")
		require.NoError(t, err)
	}
}

// TestConcurrency_R109_ReadersNeverSeeHalfMutations: one writer toggles a
// two-name allow-list on a parent and a shadow that swaps a whole
// definition; readers of the child only ever see complete states.
func TestConcurrency_R109_ReadersNeverSeeHalfMutations(t *testing.T) {
	reg := rrNew(t)
	globals := []string{"g0", "g1", "g2", "g3", "g4"}
	mk := func(name, tag string) runtime.Definition {
		d := rrDef(name, tag)
		d.Parameters = map[string]any{"type": "object", "description": tag}
		d.Output.Schema = map[string]any{"description": tag}
		return d
	}
	for _, g := range globals {
		_, err := reg.Global().Register(mk(g, "G"))
		require.NoError(t, err)
	}
	p := rrScope(t, reg, "p")
	c := rrScope(t, p, "c")

	// The writer runs at least 150 rounds, and on until the readers read
	// 200 times (bounded): a fast writer could otherwise finish before any
	// reader was scheduled.
	const iterations, minReads = 150, 200
	stop := make(chan struct{})
	var reads atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(stop)
		deadline := time.Now().Add(10 * time.Second)
		for i := 0; i < iterations || (reads.Load() < minReads && time.Now().Before(deadline)); i++ {
			d, err := p.Restrict(runtime.Restriction{Allow: []string{"g0", "g1"}, Deny: []string{"g1"}})
			if !assert.NoError(t, err) {
				return
			}
			ds, err := p.Register(mk("g2", "P"))
			if !assert.NoError(t, err) {
				return
			}
			d()
			ds()
		}
	}()
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				reads.Add(1)
				ss, err := reg.View("c").Schemas()
				if !assert.NoError(t, err) {
					return
				}
				var names []string
				for _, s := range ss {
					names = append(names, s.Name+"="+s.Description)
					var params map[string]any
					if !assert.NoError(t, json.Unmarshal(s.Parameters, &params)) {
						return
					}
					assert.Equal(t, s.Description, params["description"], "a whole definition")
				}
				switch strings.Join(names, ",") {
				case "g0=G,g1=G,g2=G,g3=G,g4=G", // nothing
					"g0=G,g1=G,g2=P,g3=G,g4=G", // shadow only, in place
					"g0=G":                     // restricted (both lists at once)
				default:
					assert.Fail(t, "half-applied state", "%v", names)
					return
				}
				if d, ok := c.Get("g2"); ok {
					assert.JSONEq(t, fmt.Sprintf(`{"description":%q}`, d.Description), string(d.Output.Schema.(json.RawMessage)))
				}
			}
		}()
	}
	wg.Wait()
	assert.Positive(t, reads.Load())
	assert.Equal(t, []string{"g0", "g1", "g2", "g3", "g4"}, rrView(t, reg, "c"))
}

// TestConcurrency_R7_MutationsRacingDisposeLeakNothing: registrations made
// through a handle while it is being disposed either fail with
// ErrScopeDisposed or are torn down with it; nothing outlives the scope.
func TestConcurrency_R7_MutationsRacingDisposeLeakNothing(t *testing.T) {
	reg := rrNew(t)
	rrReg(t, reg.Global(), "g", "G")
	var changes atomic.Int64
	_, err := reg.Global().OnChange(func(context.Context) error { changes.Add(1); return nil })
	require.NoError(t, err)
	var hookCalls atomic.Int64
	const rounds, writers, perWriter = 20, 4, 10
	for round := 0; round < rounds; round++ {
		key := fmt.Sprintf("r%d", round)
		s := rrScope(t, reg, key)
		start := make(chan struct{})
		var wg sync.WaitGroup
		var okTools, okRestrictions atomic.Int64
		warm := make(chan struct{}, writers)
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				<-start
				for i := 0; i < perWriter; i++ {
					target := s
					if i%3 == 2 {
						grp, err := s.Group()
						if err != nil {
							assert.ErrorIs(t, err, runtime.ErrScopeDisposed)
							continue
						}
						target = grp
					}
					_, err := target.Register(rrDef(fmt.Sprintf("t%d-%d", w, i), "T"))
					if err == nil {
						okTools.Add(1)
					} else {
						assert.ErrorIs(t, err, runtime.ErrScopeDisposed)
					}
					_, err = target.Restrict(runtime.Restriction{Deny: []string{}})
					if err == nil {
						okRestrictions.Add(1)
					} else {
						assert.ErrorIs(t, err, runtime.ErrScopeDisposed)
					}
					_, err = target.OnPreExecute(func(_ context.Context, e runtime.Execution, next func() (runtime.Decision, error)) (runtime.Decision, error) {
						hookCalls.Add(1)
						return next()
					})
					if err != nil {
						assert.ErrorIs(t, err, runtime.ErrScopeDisposed)
					}
					_, err = target.NewScope(fmt.Sprintf("%s-k%d-%d", key, w, i))
					if err != nil {
						assert.ErrorIs(t, err, runtime.ErrScopeDisposed)
					}
					if i == 0 {
						warm <- struct{}{}
					}
				}
			}(w)
		}
		before := changes.Load()
		close(start)
		for w := 0; w < writers; w++ {
			<-warm // every writer is under way; the rest of its loop races Dispose
		}
		s.Dispose()
		wg.Wait()
		assert.GreaterOrEqual(t, okTools.Load(), int64(writers))
		// Every successful add was announced once and removed once.
		assert.Equal(t, 2*(okTools.Load()+okRestrictions.Load()), changes.Load()-before, key)
		assert.Equal(t, []string{"g"}, rrView(t, reg, key), key)
		res := reg.Execute(context.Background(), runtime.Call{ID: key, Name: "g", Agent: key})
		assert.False(t, res.IsError(), res.ErrorMessage())
		assert.Equal(t, int64(0), hookCalls.Load(), "no hook outlives its scope (%s)", key)
		_, err := s.Register(rrDef("late", "L"))
		assert.ErrorIs(t, err, runtime.ErrScopeDisposed)
	}
	assert.Equal(t, []string{"g"}, reg.Global().Tools())
}

// TestConcurrency_R3_NewScopeRace: of many concurrent creators of one key,
// exactly one wins.
func TestConcurrency_R3_NewScopeRace(t *testing.T) {
	reg := rrNew(t)
	parent := rrScope(t, reg, "parent")
	const n = 16
	var wg sync.WaitGroup
	var wins atomic.Int64
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			var err error
			if i%2 == 0 {
				_, err = parent.NewScope("contested")
			} else {
				_, err = reg.NewScope("contested")
			}
			if err == nil {
				wins.Add(1)
				return
			}
			if !errors.Is(err, runtime.ErrScopeExists) && !errors.Is(err, runtime.ErrScopeLink) {
				t.Errorf("unexpected error: %v", err)
			}
		}(i)
	}
	close(start)
	wg.Wait()
	assert.Equal(t, int64(1), wins.Load())
}

// TestConcurrency_R15_DisposersRacingScopeDispose: a disposer (or a group's
// Dispose) racing its scope's Dispose must still remove its entry: children
// keep their link to the disposed key and must not see a leftover (R7, R15).
func TestConcurrency_R15_DisposersRacingScopeDispose(t *testing.T) {
	reg := rrNew(t)
	var changes atomic.Int64
	_, err := reg.Global().OnChange(func(context.Context) error { changes.Add(1); return nil })
	require.NoError(t, err)
	for round := 0; round < 100; round++ {
		pk, ck := fmt.Sprintf("p%d", round), fmt.Sprintf("c%d", round)
		p := rrScope(t, reg, pk)
		rrScope(t, p, ck)
		var ds []func()
		for i := 0; i < 6; i++ {
			ds = append(ds, rrReg(t, p, fmt.Sprintf("t%d", i), "P"))
		}
		grp, err := p.Group()
		require.NoError(t, err)
		rrReg(t, grp, "gt", "G")
		before := changes.Load()
		var wg sync.WaitGroup
		start := make(chan struct{})
		for _, d := range ds {
			wg.Add(1)
			go func() { defer wg.Done(); <-start; d() }()
		}
		wg.Add(2)
		go func() { defer wg.Done(); <-start; grp.Dispose() }()
		go func() { defer wg.Done(); <-start; p.Dispose() }()
		close(start)
		wg.Wait()
		if !assert.Equal(t, []string{}, rrView(t, reg, ck), "round %d: leftover in the disposed parent layer", round) {
			return
		}
		assert.Equal(t, int64(7), changes.Load()-before, "one notification per removal")
		p2 := rrScope(t, reg, pk)
		assert.Equal(t, []string{}, p2.Tools(), "a re-created key starts empty")
	}
}
