package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/toolscope/toolscope/runtime"
)

// R7 (issue 25, item 2): disposing a scope disposes its live descendants,
// children before parents, each as its own Dispose would (its removals
// announced once each). The table is a tree, the scope disposed, and the
// keys left live.
func TestDispose_R7_CascadesToSubAgents(t *testing.T) {
	// team ─┬─ a ── a1 ── a2
	//       └─ b
	// other ── o
	tree := map[string]string{"team": "", "a": "team", "a1": "a", "a2": "a1", "b": "team", "other": "", "o": "other"}
	order := []string{"team", "a", "a1", "a2", "b", "other", "o"}
	cases := []struct {
		dispose string
		live    []string
	}{
		{"team", []string{"other", "o"}},
		{"a", []string{"team", "b", "other", "o"}},
		{"a1", []string{"team", "a", "b", "other", "o"}},
		{"a2", []string{"team", "a", "a1", "b", "other", "o"}},
		{"b", []string{"team", "a", "a1", "a2", "other", "o"}},
		{"other", []string{"team", "a", "a1", "a2", "b"}},
	}
	for _, tc := range cases {
		t.Run(tc.dispose, func(t *testing.T) {
			reg := r3Reg(t)
			h := map[string]*runtime.Scope{}
			for _, k := range order {
				var s *runtime.Scope
				var err error
				if p := tree[k]; p == "" {
					s, err = reg.NewScope(k)
				} else {
					s, err = h[p].NewScope(k)
				}
				require.NoError(t, err)
				h[k] = s
				r3M(s.Register(r3Const("own_"+k, k))) // one removal to announce per scope
			}
			var notes atomic.Int32
			r3M(reg.Global().OnChange(func(context.Context) error { notes.Add(1); return nil }))
			h[tc.dispose].Dispose()
			var live []string
			for _, k := range order {
				if s, ok := reg.Scope(k); ok {
					assert.Same(t, h[k], s)
					live = append(live, k)
					continue
				}
				select {
				case <-h[k].Done():
				default:
					t.Errorf("%s: not live, but its Done is open", k)
				}
				_, err := h[k].Register(r3Const("late", 0))
				assert.ErrorIs(t, err, runtime.ErrScopeDisposed, k)
			}
			assert.Equal(t, tc.live, live)
			assert.Equal(t, int32(len(order)-len(tc.live)), notes.Load(), "one announcement per disposed scope's removal")
			for _, k := range tc.live {
				_, err := h[k].NewScope(k + "-new")
				assert.NoError(t, err, "a live scope still takes children")
			}
		})
	}
}

// R7: a deep tree is disposed iteratively (no recursion per level), and
// every level goes.
func TestDispose_R7_DeepTreeCascades(t *testing.T) {
	const depth = 20000
	reg := r3Reg(t)
	root, err := reg.NewScope("d0")
	require.NoError(t, err)
	hs := []*runtime.Scope{root}
	for i := 1; i < depth; i++ {
		s, err := hs[i-1].NewScope(fmt.Sprintf("d%d", i))
		require.NoError(t, err)
		hs = append(hs, s)
	}
	done := make(chan struct{})
	go func() { root.Dispose(); close(done) }()
	awaitClosed(t, done, "Dispose of a deep tree")
	for i, s := range hs {
		select {
		case <-s.Done():
		default:
			t.Fatalf("level %d survived its root's Dispose", i)
		}
	}
}

// R7, R86: calls in flight in a sub-agent when its parent is disposed are
// answered (a running body is not waited for by Dispose; a call waiting for
// the sub-agent's admission keeps its place), and a change subscriber that
// disposes the parent again while it hears the cascade's removals does not
// wait for it.
func TestDispose_R7_CascadeInFlightAndReentrant(t *testing.T) {
	reg := r3Reg(t)
	team := r3Scope(t, reg, "team")
	sub, err := team.NewScope("sub")
	require.NoError(t, err)
	started, release := make(chan struct{}), make(chan struct{})
	r3M(sub.Register(r3Tool("work", func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) {
		close(started)
		<-release
		return "done", nil
	})))
	running := nestGo(sub, context.Background(), runtime.Call{ID: "1", Name: "work", Arguments: json.RawMessage(`{}`)})
	awaitClosed(t, started, "the body to start")
	waiting := nestGo(sub, context.Background(), runtime.Call{ID: "2", Name: "work", Arguments: json.RawMessage(`{}`)})
	var reentered atomic.Int32
	r3M(reg.Global().OnChange(func(context.Context) error {
		team.Dispose() // from the announcement: returns at once (R86)
		sub.Dispose()
		reentered.Add(1)
		return nil
	}))
	disposed := make(chan struct{})
	go func() { team.Dispose(); close(disposed) }()
	awaitClosed(t, disposed, "Dispose while a sub-agent's body runs")
	assert.Equal(t, int32(1), reentered.Load(), "one removal announced (sub's tool)")
	close(release)
	nestOK(t, nestAwait(t, running))
	// The waiting call kept its place; at dispatch its tool is gone (R61).
	res := nestAwait(t, waiting)
	assert.Equal(t, runtime.CodeUnknownTool, res.Code(), res.ErrorMessage())
}

// R7 randomized checker (issue 25, item 2): goroutines create scopes under
// random live handles, dispose random handles and call tools of a handle's
// own layer or an ancestor's, all at once, under -race. Invariants:
//   - no body of a tool of layer L runs for a call that entered after the
//     Dispose of L or of an ancestor of L had returned (the cascade removed
//     it before returning);
//   - no orphan: once a scope's Dispose has returned, every scope ever
//     created below it (concurrently too) is disposed;
//   - every call is answered exactly once, no wait hangs, nothing leaks.
func TestDispose_R7_CascadeChecker(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	reg, err := runtime.New()
	require.NoError(t, err)

	type node struct {
		h        *runtime.Scope
		key      string
		parent   *node
		disposed atomic.Bool // its Dispose has returned
	}
	var (
		mu    sync.Mutex
		nodes []*node
		ids   atomic.Int64
		calls atomic.Int64
		ans   atomic.Int64
	)
	// gone reports whether n or an ancestor of n has its Dispose returned.
	gone := func(n *node) bool {
		for ; n != nil; n = n.parent {
			if n.disposed.Load() {
				return true
			}
		}
		return false
	}
	var violations sync.Map // description -> struct{}
	// Each scope registers one tool whose body checks the first invariant:
	// the call's entry recorded whether the layer was already gone.
	type lateKey struct{}
	register := func(n *node) {
		_, _ = n.h.Register(r3Tool("own_"+n.key, func(ctx context.Context, _ json.RawMessage, _ *runtime.RunContext) (any, error) {
			if late, _ := ctx.Value(lateKey{}).(bool); late {
				violations.Store(fmt.Sprintf("tool of %s ran for a call entered after its layer's Dispose returned", n.key), struct{}{})
			}
			return n.key, nil
		}))
	}
	pick := func(rng *rand.Rand) *node {
		mu.Lock()
		defer mu.Unlock()
		if len(nodes) == 0 {
			return nil
		}
		return nodes[rng.IntN(len(nodes))]
	}
	add := func(rng *rand.Rand) {
		key := fmt.Sprintf("k%d", ids.Add(1))
		var h *runtime.Scope
		var parent *node
		var err error
		if p := pick(rng); p != nil && rng.IntN(5) > 0 {
			parent = p
			h, err = p.h.NewScope(key)
		} else {
			h, err = reg.NewScope(key)
		}
		if err != nil {
			return // refused under a parent disposing or disposed
		}
		n := &node{h: h, key: key, parent: parent}
		register(n)
		mu.Lock()
		nodes = append(nodes, n)
		mu.Unlock()
	}
	call := func(rng *rand.Rand) {
		n := pick(rng)
		if n == nil {
			return
		}
		// A tool of n's layer or of an ancestor's.
		target := n
		for target.parent != nil && rng.IntN(2) == 0 {
			target = target.parent
		}
		late := gone(target)
		ctx := context.WithValue(context.Background(), lateKey{}, late)
		calls.Add(1)
		res := n.h.Execute(ctx, runtime.Call{ID: "c", Name: "own_" + target.key, Arguments: json.RawMessage(`{}`)})
		if res != nil {
			ans.Add(1)
		}
	}
	dispose := func(rng *rand.Rand) {
		if n := pick(rng); n != nil {
			n.h.Dispose()
			n.disposed.Store(true)
		}
	}

	const workers = 6
	deadline := time.Now().Add(2 * time.Second)
	if testing.Short() {
		deadline = time.Now().Add(300 * time.Millisecond)
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			for time.Now().Before(deadline) {
				switch x := rng.IntN(10); {
				case x < 4:
					add(rng)
				case x < 8:
					call(rng)
				default:
					dispose(rng)
				}
			}
		}()
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	awaitClosed(t, finished, "the checker's workers")

	assert.Equal(t, calls.Load(), ans.Load(), "every call answered once")
	mu.Lock()
	for _, n := range nodes {
		if !gone(n) {
			continue
		}
		select {
		case <-n.h.Done():
		default:
			t.Errorf("orphan: %s survived the Dispose of an ancestor", n.key)
		}
		if s, ok := reg.Scope(n.key); ok && s == n.h {
			t.Errorf("orphan: %s is still the live scope of its key", n.key)
		}
	}
	t.Logf("%d scopes, %d calls", len(nodes), calls.Load())
	mu.Unlock()
	violations.Range(func(k, _ any) bool { t.Error(k); return true })
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	require.NoError(t, reg.Close(ctx))
}
