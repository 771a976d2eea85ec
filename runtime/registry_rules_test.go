package runtime_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolscope/toolscope/runtime"
)

// ---- helpers (prefixed rr to stay clear of other test files) ----

func rrNew(t testing.TB, opts ...runtime.Option) *runtime.Registry {
	t.Helper()
	reg, err := runtime.New(opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = reg.Close(context.Background()) })
	return reg
}

func rrRender(_ context.Context, _, value json.RawMessage) ([]runtime.Block, error) {
	var s string
	if json.Unmarshal(value, &s) == nil {
		return []runtime.Block{runtime.Text(s)}, nil
	}
	return []runtime.Block{runtime.Text(string(value))}, nil
}

// rrDef is a trivial raw tool: its description is tag and it returns tag.
func rrDef(name, tag string) runtime.Definition {
	return runtime.Definition{
		Name:        name,
		Description: tag,
		Parameters:  json.RawMessage(`{"type":"object"}`),
		Output:      &runtime.Output{Schema: map[string]any{}, Render: rrRender},
		Execute: func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) {
			return tag, nil
		},
	}
}

func rrReg(t testing.TB, s *runtime.Scope, name, tag string) func() {
	t.Helper()
	d, err := s.Register(rrDef(name, tag))
	require.NoError(t, err)
	require.NotNil(t, d)
	return d
}

type rrNewScoper interface {
	NewScope(key string) (*runtime.Scope, error)
}

func rrScope(t testing.TB, parent rrNewScoper, key string) *runtime.Scope {
	t.Helper()
	s, err := parent.NewScope(key)
	require.NoError(t, err)
	return s
}

// rrChanges counts change notifications (R87).
func rrChanges(t testing.TB, s *runtime.Scope) *atomic.Int64 {
	t.Helper()
	var n atomic.Int64
	_, err := s.OnChange(func(context.Context) error { n.Add(1); return nil })
	require.NoError(t, err)
	return &n
}

// rrView lists the names of the view of key, via Schemas.
func rrView(t testing.TB, reg *runtime.Registry, key string) []string {
	t.Helper()
	ss, err := reg.View(key).Schemas()
	require.NoError(t, err)
	out := []string{}
	for _, s := range ss {
		out = append(out, s.Name)
	}
	return out
}

// rrViewTags lists name=description of the view of key.
func rrViewTags(t testing.TB, reg *runtime.Registry, key string) []string {
	t.Helper()
	ss, err := reg.View(key).Schemas()
	require.NoError(t, err)
	out := []string{}
	for _, s := range ss {
		out = append(out, s.Name+"="+s.Description)
	}
	return out
}

func rrTag(reg *runtime.Registry, name, key string) string {
	d, ok := reg.View(key).Get(name)
	if !ok {
		return "<absent>"
	}
	return d.Description
}

func rrExec(s *runtime.Scope, name string) *runtime.Result {
	return s.Execute(context.Background(), runtime.Call{ID: "c-" + name, Name: name, Arguments: json.RawMessage(`{}`)})
}

// ---- §1 scopes ----

func TestRegistry_R1_GlobalScopeVisibleEverywhere(t *testing.T) {
	reg := rrNew(t)
	g := reg.Global()
	assert.Equal(t, "", g.Key())
	a := rrScope(t, reg, "a")
	b := rrScope(t, a, "b")
	rrReg(t, g, "read", "G")
	for _, key := range []string{"", "a", "b", "never-created"} {
		assert.Equal(t, "G", rrTag(reg, "read", key), "view %q", key)
	}
	assert.Equal(t, []string{"read"}, b.Tools())
	assert.Same(t, g, reg.Global(), "exactly one global scope")
}

func TestScope_R2_NewScopeMakesNothingVisible(t *testing.T) {
	reg := rrNew(t)
	changes := rrChanges(t, reg.Global())
	rrReg(t, reg.Global(), "g", "G")
	before := changes.Load()
	a := rrScope(t, reg, "a")
	rrScope(t, reg, "b")
	assert.Equal(t, before, changes.Load(), "creating scopes notifies nothing")
	assert.Equal(t, []string{"g"}, rrView(t, reg, "a"))
	rrReg(t, a, "own", "A")
	assert.Equal(t, []string{"g", "own"}, rrView(t, reg, "a"))
	assert.Equal(t, []string{"g"}, rrView(t, reg, ""), "scoped registration stays in its layer")
	assert.Equal(t, []string{"g"}, rrView(t, reg, "b"))
}

func TestScope_R3_ParentLink(t *testing.T) {
	reg := rrNew(t)
	p := rrScope(t, reg, "p")
	q := rrScope(t, reg, "q")
	c := rrScope(t, p, "c")

	_, err := reg.NewScope("p")
	assert.ErrorIs(t, err, runtime.ErrScopeExists, "live key")
	_, err = q.NewScope("c")
	assert.ErrorIs(t, err, runtime.ErrScopeExists, "live key under another parent")
	_, err = p.NewScope("p")
	assert.Error(t, err, "a key as its own parent")

	c.Dispose()
	_, err = q.NewScope("c")
	assert.ErrorIs(t, err, runtime.ErrScopeLink, "disposed key re-created under a different parent")
	_, err = reg.NewScope("c")
	assert.ErrorIs(t, err, runtime.ErrScopeLink, "disposed child re-created top-level")

	// p2 is top-level with child c2; disposing p2 disposes c2 (R7), so c2
	// cannot become p2's parent (which would also be a cycle).
	p2 := rrScope(t, reg, "p2")
	c2 := rrScope(t, p2, "c2")
	p2.Dispose()
	_, err = c2.NewScope("p2")
	assert.ErrorIs(t, err, runtime.ErrScopeDisposed, "c2 went with p2")

	// Re-creating under the same parent is fine; the link is key-level.
	_, err = p.NewScope("c")
	require.NoError(t, err)
	rrReg(t, p, "pt", "P")
	assert.Equal(t, "P", rrTag(reg, "pt", "c"))

	// The parent's layer may be empty; a re-created parent keeps its
	// children's link.
	c2.Dispose()
	c2, err = reg.NewScope("p2")
	require.NoError(t, err)
	rrReg(t, c2, "p2tool", "P2")
	assert.Equal(t, "P2", rrTag(reg, "p2tool", "c2"), "disposed child c2 still reads through its recorded chain")

	_, err = reg.NewScope("")
	assert.Error(t, err, "the empty key is the global view")
}

// TestScope_R3_RelinkDoesNotDependOnBookkeeping: whether a disposed
// top-level key may be re-created under a parent must not depend on whether
// it ever had children. A top-level key has no parent, so binding it under
// one is allowed (R3: only a key that already has a parent is bound) unless
// the link would form a cycle; afterwards the key keeps that parent.
func TestScope_R3_RelinkDoesNotDependOnBookkeeping(t *testing.T) {
	reg := rrNew(t)
	p := rrScope(t, reg, "p")
	rrReg(t, p, "pt", "P")
	a := rrScope(t, reg, "a") // top-level, never had children
	a.Dispose()
	_, errA := p.NewScope("a")
	b := rrScope(t, reg, "b") // top-level, had a child
	bc := rrScope(t, b, "bc")
	b.Dispose()
	b2, errB := p.NewScope("b")
	require.NoError(t, errA)
	require.NoError(t, errB)

	// The new link is live for reads by key and for the old child's chain.
	assert.Equal(t, "P", rrTag(reg, "pt", "a"))
	assert.Equal(t, "P", rrTag(reg, "pt", "b"))
	assert.Equal(t, "P", rrTag(reg, "pt", "bc"), "bc's chain now runs b -> p")
	rrReg(t, b2, "bt", "B")
	assert.Equal(t, "B", rrTag(reg, "bt", "bc"))
	_ = bc

	// Now bound: the key keeps its parent.
	b2.Dispose()
	_, err := reg.NewScope("b")
	assert.ErrorIs(t, err, runtime.ErrScopeLink, "bound key re-created top-level")
	q := rrScope(t, reg, "q")
	_, err = q.NewScope("b")
	assert.ErrorIs(t, err, runtime.ErrScopeLink, "bound key re-created under another parent")
	_, err = p.NewScope("b")
	assert.NoError(t, err, "same parent")
}

// TestScope_R3_RelinkThatWouldFormACycleFails: a disposed top-level key may
// not be bound under itself or one of its recorded descendants, and the
// failed bind leaves its chain unchanged.
func TestScope_R3_RelinkThatWouldFormACycleFails(t *testing.T) {
	reg := rrNew(t)
	r := rrScope(t, reg, "r")
	c := rrScope(t, r, "c")
	gc := rrScope(t, c, "gc")
	r.Dispose()
	// c and gc went with r (R7); re-created, they may still not take r.
	_, err := gc.NewScope("r")
	assert.ErrorIs(t, err, runtime.ErrScopeDisposed)
	_, err = c.NewScope("r")
	assert.ErrorIs(t, err, runtime.ErrScopeDisposed)
	r2, err := reg.NewScope("r")
	require.NoError(t, err, "still top-level")
	rrReg(t, r2, "rt", "R")
	assert.Equal(t, "R", rrTag(reg, "rt", "gc"))
}

// TestScope_R3_RelinkConcurrentReads: binding a top-level key under a parent
// while other goroutines read through its chain is race-free.
func TestScope_R3_RelinkConcurrentReads(t *testing.T) {
	reg := rrNew(t)
	p := rrScope(t, reg, "p")
	rrReg(t, p, "pt", "P")
	k := rrScope(t, reg, "k")
	rrScope(t, k, "kc")
	k.Dispose()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, _ = reg.View("kc").Get("pt")
				_, _ = reg.View("kc").Schemas()
			}
		}()
	}
	_, err := p.NewScope("k")
	require.NoError(t, err)
	close(stop)
	wg.Wait()
	assert.Equal(t, "P", rrTag(reg, "pt", "kc"))
}

func TestScope_R3_ChildOfDisposedParentFails(t *testing.T) {
	reg := rrNew(t)
	p := rrScope(t, reg, "p")
	p.Dispose()
	_, err := p.NewScope("c")
	assert.ErrorIs(t, err, runtime.ErrScopeDisposed)
}

func TestScope_R4_InheritanceIsDownwardOnly(t *testing.T) {
	reg := rrNew(t)
	p := rrScope(t, reg, "p")
	c := rrScope(t, p, "c")
	gc := rrScope(t, c, "gc")
	sib := rrScope(t, p, "sib")
	rrReg(t, p, "pt", "P")
	rrReg(t, c, "ct", "C")
	rrReg(t, sib, "st", "S")
	_ = gc
	cases := []struct {
		key  string
		want []string
	}{
		{"", []string{}},
		{"p", []string{"pt"}},
		{"c", []string{"pt", "ct"}},
		{"gc", []string{"pt", "ct"}},
		{"sib", []string{"pt", "st"}},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, rrView(t, reg, tc.key), "view %q", tc.key)
	}
}

func TestRegistry_R5_OriginVsSubject(t *testing.T) {
	reg := rrNew(t)
	a := rrScope(t, reg, "a")
	rrReg(t, reg.Global(), "g", "G")
	rrReg(t, a, "x", "A")
	_, ok := reg.View("").Get("x")
	assert.False(t, ok, "registering through a scope does not bind reads with the zero key")
	assert.Equal(t, "A", rrTag(reg, "x", "a"))
	assert.Equal(t, []string{"g"}, rrView(t, reg, ""))
	assert.Equal(t, []string{"g", "x"}, rrView(t, reg, "a"))
	gs, err := reg.Global().Schemas()
	require.NoError(t, err)
	assert.Len(t, gs, 1)
	// The key of Execute decides the view, not the handle's origin.
	res := reg.Execute(context.Background(), runtime.Call{ID: "1", Name: "x", Agent: "a"})
	assert.False(t, res.IsError())
	assert.Equal(t, "A", res.Text())
	res = reg.Execute(context.Background(), runtime.Call{ID: "2", Name: "x"})
	assert.Equal(t, runtime.CodeUnknownTool, runtime.Code(res.Code()))
}

func TestRegistry_R6_UnknownAndDisposedKeys(t *testing.T) {
	reg := rrNew(t)
	rrReg(t, reg.Global(), "g", "G")
	p := rrScope(t, reg, "p")
	c := rrScope(t, p, "c")
	rrReg(t, p, "pt", "P")
	rrReg(t, c, "ct", "C")

	// Unknown key: the global view.
	assert.Equal(t, "G", rrTag(reg, "g", "ghost"))
	assert.Equal(t, []string{"g"}, rrView(t, reg, "ghost"))
	assert.Equal(t, runtime.Exclusive, reg.View("ghost").ExecutionMode(runtime.Call{Name: "g"}))

	// Reads never create layers: "ghost" can still be created under any parent.
	_, err := p.NewScope("ghost")
	require.NoError(t, err)

	// A disposed key keeps its live ancestors.
	c.Dispose()
	assert.Equal(t, []string{"g", "pt"}, rrView(t, reg, "c"))
	assert.Equal(t, "P", rrTag(reg, "pt", "c"))
	assert.Equal(t, "<absent>", rrTag(reg, "ct", "c"))
	res := reg.Execute(context.Background(), runtime.Call{ID: "1", Name: "pt", Agent: "c"})
	assert.Equal(t, "P", res.Text())
}

func TestScope_R7_DisposeIsLIFOWithOneNotificationPerRemoval(t *testing.T) {
	reg := rrNew(t)
	rrReg(t, reg.Global(), "g1", "G")
	rrReg(t, reg.Global(), "g2", "G")
	a := rrScope(t, reg, "a")
	var mu sync.Mutex
	var log [][]string
	_, err := reg.Global().OnChange(func(context.Context) error {
		ss, err := reg.View("a").Schemas()
		if err != nil {
			return err
		}
		names := []string{}
		for _, s := range ss {
			names = append(names, s.Name)
		}
		mu.Lock()
		log = append(log, names)
		mu.Unlock()
		return nil
	})
	require.NoError(t, err)
	rrReg(t, a, "t1", "A")
	rrReg(t, a, "t2", "A")
	_, err = a.Guard(func(context.Context, runtime.Execution) (string, bool) { return "", false })
	require.NoError(t, err)
	_, err = a.Restrict(runtime.Restriction{Deny: []string{"g1"}})
	require.NoError(t, err)
	rrReg(t, a, "t3", "A")
	_, err = a.OnPreExecute(func(_ context.Context, e runtime.Execution, next func() (runtime.Decision, error)) (runtime.Decision, error) {
		return next()
	})
	require.NoError(t, err)
	mu.Lock()
	log = nil
	mu.Unlock()

	a.Dispose()
	// One notification per effective removal (t3, the restriction, t2,
	// t1), none for the guard or hook. They are delivered once the
	// teardown is complete (R86: nothing a subscriber does can wait for a
	// teardown in progress), so each sees the final view.
	want := [][]string{{"g1", "g2"}, {"g1", "g2"}, {"g1", "g2"}, {"g1", "g2"}}
	mu.Lock()
	assert.Equal(t, want, log, "one notification per effective removal, none for the guard or hook, after the teardown")
	log = nil
	mu.Unlock()

	a.Dispose()
	mu.Lock()
	assert.Empty(t, log, "idempotent")
	mu.Unlock()
}

func TestScope_R7_ConcurrentDisposeCallersWaitForTeardown(t *testing.T) {
	reg := rrNew(t)
	a := rrScope(t, reg, "a")
	rrReg(t, a, "t1", "A")
	rrReg(t, a, "t2", "A")
	entered := make(chan struct{})
	release := make(chan struct{})
	var armed atomic.Bool
	_, err := reg.Global().OnChange(func(context.Context) error {
		if armed.CompareAndSwap(true, false) {
			close(entered)
			<-release
		}
		return nil
	})
	require.NoError(t, err)
	armed.Store(true)

	const n = 8
	type seen struct{ t1, t2 bool }
	results := make(chan seen, n)
	check := func() {
		a.Dispose()
		_, ok1 := reg.View("a").Get("t1")
		_, ok2 := reg.View("a").Get("t2")
		results <- seen{ok1, ok2}
	}
	go check()
	<-entered // the first teardown is blocked announcing t2's removal; t1 is still there
	for i := 1; i < n; i++ {
		go check()
	}
	close(release)
	for i := 0; i < n; i++ {
		r := <-results
		assert.Equal(t, seen{}, r, "every Dispose caller returns after the whole teardown")
	}
}

func TestScope_R7_DisposedHandleRejectsMutations(t *testing.T) {
	reg := rrNew(t)
	rrReg(t, reg.Global(), "g", "G")
	a := rrScope(t, reg, "a")
	d := rrReg(t, a, "x", "A")
	grp, err := a.Group()
	require.NoError(t, err)
	changes := rrChanges(t, reg.Global())
	a.Dispose()
	require.Equal(t, int64(1), changes.Load())

	pre := func(_ context.Context, e runtime.Execution, next func() (runtime.Decision, error)) (runtime.Decision, error) {
		return next()
	}
	cases := []struct {
		name string
		call func(s *runtime.Scope) error
	}{
		{"Register", func(s *runtime.Scope) error { _, err := s.Register(rrDef("late", "L")); return err }},
		{"Restrict", func(s *runtime.Scope) error {
			_, err := s.Restrict(runtime.Restriction{Deny: []string{"g"}})
			return err
		}},
		{"Guard", func(s *runtime.Scope) error {
			_, err := s.Guard(func(context.Context, runtime.Execution) (string, bool) { return "", false })
			return err
		}},
		{"OnPreExecute", func(s *runtime.Scope) error { _, err := s.OnPreExecute(pre); return err }},
		{"OnExecute", func(s *runtime.Scope) error {
			_, err := s.OnExecute(func(ctx context.Context, e runtime.Execution, next func(context.Context) *runtime.Result) (*runtime.Result, error) {
				return next(nil), nil
			})
			return err
		}},
		{"OnPostExecute", func(s *runtime.Scope) error {
			_, err := s.OnPostExecute(func(_ context.Context, e runtime.Execution, r *runtime.Result, next func() (runtime.PostDecision, error)) (runtime.PostDecision, error) {
				return next()
			})
			return err
		}},
		{"OnResult", func(s *runtime.Scope) error {
			_, err := s.OnResult(func(context.Context, runtime.Execution, *runtime.Result) error { return nil })
			return err
		}},
		{"OnChange", func(s *runtime.Scope) error {
			_, err := s.OnChange(func(context.Context) error { return nil })
			return err
		}},
		{"Group", func(s *runtime.Scope) error { _, err := s.Group(); return err }},
		{"NewScope", func(s *runtime.Scope) error { _, err := s.NewScope("kid"); return err }},
	}
	for _, h := range []struct {
		name string
		s    *runtime.Scope
	}{{"scope", a}, {"group", grp}} {
		for _, tc := range cases {
			t.Run(h.name+"/"+tc.name, func(t *testing.T) {
				err := tc.call(h.s)
				assert.ErrorIs(t, err, runtime.ErrScopeDisposed)
			})
		}
	}
	assert.Equal(t, int64(1), changes.Load(), "nothing registered or notified")
	assert.Equal(t, []string{"g"}, rrView(t, reg, "a"))

	// Argument validation still runs first.
	_, err = a.Restrict(runtime.Restriction{})
	require.Error(t, err)
	assert.NotErrorIs(t, err, runtime.ErrScopeDisposed)
	assert.Contains(t, err.Error(), "no-op", "an empty filter on a disposed handle reports the empty filter")
	_, err = a.Restrict(runtime.Restriction{Deny: []string{"nope"}})
	assert.Contains(t, err.Error(), `unknown global tool "nope"`)
	_, err = a.Register(runtime.Definition{Name: "x"})
	assert.Contains(t, err.Error(), "needs an Output with a Render func")
	_, err = a.Register(rrDef("run_code", ""))
	assert.Contains(t, err.Error(), "is reserved")

	// Previously returned disposers are no-ops; a re-created key keeps its
	// new registrations.
	a2 := rrScope(t, reg, "a")
	rrReg(t, a2, "x", "A2")
	before := changes.Load()
	d()
	assert.Equal(t, before, changes.Load())
	assert.Equal(t, "A2", rrTag(reg, "x", "a"))
}

// R7 (issue 25, item 2): disposing a scope disposes its descendants — a
// disposed team leaves no sub-agent running without the team's
// restrictions and guards. The key of a disposed child reads as R6 says.
func TestScope_R7_ChildrenGoWithTheirParent(t *testing.T) {
	reg := rrNew(t)
	rrReg(t, reg.Global(), "g", "G")
	p := rrScope(t, reg, "p")
	c := rrScope(t, p, "c")
	rrReg(t, p, "pt", "P")
	rrReg(t, c, "ct", "C")
	_, err := p.Restrict(runtime.Restriction{Allow: []string{}})
	require.NoError(t, err)
	assert.Equal(t, []string{"ct"}, rrView(t, reg, "c"), "p's allow-list hides everything p's children inherit")
	p.Dispose()
	_, live := reg.Scope("c")
	assert.False(t, live, "the child went with its parent")
	_, err = c.Register(rrDef("again", ""))
	assert.ErrorIs(t, err, runtime.ErrScopeDisposed)
	_, err = c.NewScope("gc")
	assert.ErrorIs(t, err, runtime.ErrScopeDisposed)
	select {
	case <-c.Done():
	default:
		t.Fatal("the child's Done is not closed")
	}
	assert.Equal(t, []string{"g=G"}, rrViewTags(t, reg, "c"), "R6: a disposed key with no live ancestor reads as the global view")
	// Re-created under its re-created parent, the key starts empty.
	p2, err := reg.NewScope("p")
	require.NoError(t, err)
	c2, err := p2.NewScope("c")
	require.NoError(t, err)
	assert.Equal(t, []string{"g"}, c2.Tools())
}

func TestScope_R8_OwnerGroups(t *testing.T) {
	for _, global := range []bool{false, true} {
		t.Run(fmt.Sprintf("global=%v", global), func(t *testing.T) {
			reg := rrNew(t)
			s := reg.Global()
			key := ""
			if !global {
				s = rrScope(t, reg, "a")
				key = "a"
			}
			grp, err := s.Group()
			require.NoError(t, err)
			assert.Equal(t, s.Key(), grp.Key())
			rrReg(t, s, "own", "S")
			rrReg(t, grp, "fromGroup", "G")
			assert.Equal(t, []string{"own", "fromGroup"}, rrView(t, reg, key), "same layer")
			_, err = grp.Register(rrDef("own", "dup"))
			assert.ErrorIs(t, err, runtime.ErrDuplicate, "group files into the same layer")

			changes := rrChanges(t, s)
			grp.Dispose()
			assert.Equal(t, int64(1), changes.Load())
			assert.Equal(t, []string{"own"}, rrView(t, reg, key), "group disposal removes only its own")
			_, err = grp.Register(rrDef("again", ""))
			assert.ErrorIs(t, err, runtime.ErrScopeDisposed)
			rrReg(t, s, "more", "S")

			// A scope's disposal takes its live groups with it.
			grp2, err := s.Group()
			require.NoError(t, err)
			rrReg(t, grp2, "g2", "G")
			if !global {
				s.Dispose()
				assert.Equal(t, []string{}, rrView(t, reg, key))
				_, err = grp2.Register(rrDef("late", ""))
				assert.ErrorIs(t, err, runtime.ErrScopeDisposed)
			}
		})
	}
}

// ---- §2 Register ----

func TestRegister_R10_DefinitionFieldsRoundTrip(t *testing.T) {
	reg := rrNew(t)
	timeout := 3 * time.Second
	def := rrDef("full", "a full definition")
	def.Timeout = &timeout
	def.Presenters = "presenter"
	def.IsConcurrencySafe = func(context.Context, json.RawMessage) (bool, error) { return true, nil }
	def.FinalizeContent = func(context.Context, runtime.Execution, *runtime.Result) ([]runtime.Block, error) { return nil, nil }
	def.Output.PresentationMeta = func(_ context.Context, args, value json.RawMessage) (any, error) { return nil, nil }
	_, err := reg.Global().Register(def)
	require.NoError(t, err)
	got, ok := reg.View("").Get("full")
	require.True(t, ok)
	assert.Equal(t, "full", got.Name)
	assert.Equal(t, "a full definition", got.Description)
	require.NotNil(t, got.Timeout)
	assert.Equal(t, timeout, *got.Timeout)
	assert.Equal(t, "presenter", got.Presenters)
	assert.NotNil(t, got.IsConcurrencySafe)
	assert.NotNil(t, got.FinalizeContent)
	require.NotNil(t, got.Output)
	assert.NotNil(t, got.Output.Render)
	assert.NotNil(t, got.Output.PresentationMeta)
	assert.NotNil(t, got.Execute)
}

func TestRegister_R11_ValidationOrder(t *testing.T) {
	zero, neg := time.Duration(0), -time.Second
	noOutput := func(d runtime.Definition) runtime.Definition { d.Output = nil; return d }
	noRender := func(d runtime.Definition) runtime.Definition {
		d.Output = &runtime.Output{Schema: map[string]any{}}
		return d
	}
	badSchema := func(d runtime.Definition) runtime.Definition {
		d.Output = &runtime.Output{Schema: map[string]any{"type": "strin", "foo": 1}, Render: rrRender}
		return d
	}
	timeout := func(p *time.Duration) func(runtime.Definition) runtime.Definition {
		return func(d runtime.Definition) runtime.Definition { d.Timeout = p; return d }
	}
	compose := func(fs ...func(runtime.Definition) runtime.Definition) func(runtime.Definition) runtime.Definition {
		return func(d runtime.Definition) runtime.Definition {
			for _, f := range fs {
				d = f(d)
			}
			return d
		}
	}
	id := func(d runtime.Definition) runtime.Definition { return d }
	const outErr = "needs an Output with a Render func"
	const toErr = "timeout must be positive"
	cases := []struct {
		name     string
		toolName string
		mod      func(runtime.Definition) runtime.Definition
		want     []string
		code     string
		is       error
	}{
		{"output missing", "t", noOutput, []string{outErr}, "", runtime.ErrInvalidDefinition},
		{"render nil", "t", noRender, []string{outErr}, "", runtime.ErrInvalidDefinition},
		{"schema outside subset lists every violation", "t", badSchema,
			[]string{"unsupported JSON schema: ", "schema.foo is not a supported keyword", "schema.type must be one of"}, string(runtime.CodeUnsupportedSchema), nil},
		{"zero timeout", "t", timeout(&zero), []string{toErr}, "", runtime.ErrInvalidDefinition},
		{"negative timeout", "t", timeout(&neg), []string{toErr}, "", runtime.ErrInvalidDefinition},
		{"reserved", "run_code", id, []string{`"run_code" is reserved`}, "", runtime.ErrInvalidDefinition},
		{"reserved without output reports output", "run_code", noOutput, []string{outErr}, "", runtime.ErrInvalidDefinition},
		{"reserved with bad timeout reports timeout", "run_code", timeout(&zero), []string{toErr}, "", runtime.ErrInvalidDefinition},
		{"bad schema before timeout", "t", compose(badSchema, timeout(&zero)), []string{"unsupported JSON schema"}, string(runtime.CodeUnsupportedSchema), nil},
		{"output before schema", "t", compose(badSchema, func(d runtime.Definition) runtime.Definition {
			d.Output.Render = nil
			return d
		}), []string{outErr}, "", runtime.ErrInvalidDefinition},
		{"duplicate after everything", "dup", id, []string{"already registered"}, "", runtime.ErrDuplicate},
		{"duplicate check comes after reserved-name check", "dup", timeout(&neg), []string{toErr}, "", runtime.ErrInvalidDefinition},
		{"nil execute (deviation)", "t", func(d runtime.Definition) runtime.Definition { d.Execute = nil; return d }, []string{"needs an Execute func"}, "", runtime.ErrInvalidDefinition},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reg := rrNew(t)
			rrReg(t, reg.Global(), "dup", "first")
			changes := rrChanges(t, reg.Global())
			d, err := reg.Global().Register(tc.mod(rrDef(tc.toolName, "new")))
			require.Error(t, err)
			assert.Nil(t, d)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
			if tc.code != "" {
				var coded runtime.Coded
				require.True(t, errors.As(err, &coded))
				assert.Equal(t, tc.code, coded.Code())
				assert.Equal(t, runtime.NameJSONSchema, coded.Name())
			}
			if tc.is != nil {
				assert.ErrorIs(t, err, tc.is)
			}
			assert.Equal(t, int64(0), changes.Load(), "nothing notified")
			assert.Equal(t, []string{"dup=first"}, rrViewTags(t, reg, ""), "nothing registered")
		})
	}
}

// Parameters are not validated at Register (R11). The empty name is refused
// (a deviation decided in issue 12: no model can call it, and NewTool
// refuses it at definition time).
func TestRegister_R11_ParametersNotValidatedEmptyNameRefused(t *testing.T) {
	reg := rrNew(t)
	for _, def := range []runtime.Definition{
		func() runtime.Definition { d := rrDef("weird", ""); d.Parameters = "not a schema"; return d }(),
		func() runtime.Definition {
			d := rrDef("lossy", "")
			d.Parameters = map[string]any{"x": math.Inf(1)}
			return d
		}(),
	} {
		_, err := reg.Global().Register(def)
		assert.NoError(t, err, "tool %q", def.Name)
	}
	_, err := reg.Global().Register(rrDef("", "empty name"))
	assert.ErrorIs(t, err, runtime.ErrInvalidDefinition)
	_, ok := reg.View("").Get("")
	assert.False(t, ok)
}

func TestRegister_R12_SameNameInDifferentLayers(t *testing.T) {
	for _, globalFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("globalFirst=%v", globalFirst), func(t *testing.T) {
			reg := rrNew(t)
			a := rrScope(t, reg, "a")
			c := rrScope(t, a, "c")
			if globalFirst {
				rrReg(t, reg.Global(), "x", "G")
				rrReg(t, a, "x", "A")
			} else {
				rrReg(t, a, "x", "A")
				rrReg(t, reg.Global(), "x", "G")
			}
			rrReg(t, c, "x", "C")
			assert.Equal(t, "G", rrTag(reg, "x", ""))
			assert.Equal(t, "A", rrTag(reg, "x", "a"))
			assert.Equal(t, "C", rrTag(reg, "x", "c"))
			assert.Equal(t, "C", rrExec(c, "x").Text())
		})
	}
}

func TestRegister_R13_DuplicateDiagnostics(t *testing.T) {
	reg := rrNew(t)
	a := rrScope(t, reg, "a")
	rrReg(t, reg.Global(), "x", "G")
	rrReg(t, a, "x", "A")

	_, err := reg.Global().Register(rrDef("x", "G2"))
	require.ErrorIs(t, err, runtime.ErrDuplicate)
	assert.Contains(t, err.Error(), "already registered")
	assert.NotContains(t, err.Error(), "already registered in this scope")
	assert.Contains(t, err.Error(), "through that agent's scope", "tells the author to register a per-agent variant")

	_, err = a.Register(rrDef("x", "A2"))
	require.ErrorIs(t, err, runtime.ErrDuplicate)
	assert.Contains(t, err.Error(), "already registered in this scope")

	grp, err := a.Group()
	require.NoError(t, err)
	_, err = grp.Register(rrDef("x", "A3"))
	assert.ErrorContains(t, err, "already registered in this scope")
	assert.Equal(t, "A", rrTag(reg, "x", "a"))
}

func TestRegister_R14_ReadYourWrites(t *testing.T) {
	reg := rrNew(t)
	a := rrScope(t, reg, "a")
	var sawItself atomic.Bool
	_, err := reg.Global().OnChange(func(context.Context) error {
		_, ok := reg.View("a").Get("x")
		sawItself.Store(ok)
		return nil
	})
	require.NoError(t, err)
	rrReg(t, a, "x", "A")
	assert.True(t, sawItself.Load(), "the notification was delivered, after the tool became visible")
	done := make(chan bool)
	go func() {
		_, ok := reg.View("a").Get("x")
		done <- ok
	}()
	assert.True(t, <-done, "visible from another goroutine")
	m := a.ExecutionMode(runtime.Call{Name: "x"})
	assert.Equal(t, runtime.Exclusive, m)
	assert.Equal(t, "A", rrExec(a, "x").Text())
}

func TestRegister_R15_Disposer(t *testing.T) {
	t.Run("SecondCallIsNoOp", func(t *testing.T) {
		reg := rrNew(t)
		changes := rrChanges(t, reg.Global())
		d := rrReg(t, reg.Global(), "x", "G")
		d()
		assert.Equal(t, int64(2), changes.Load())
		d()
		assert.Equal(t, int64(2), changes.Load(), "no second notification")
	})
	t.Run("StaleDisposer", func(t *testing.T) {
		reg := rrNew(t)
		changes := rrChanges(t, reg.Global())
		d1 := rrReg(t, reg.Global(), "x", "first")
		d1()
		rrReg(t, reg.Global(), "x", "second")
		n := changes.Load()
		d1()
		assert.Equal(t, "second", rrTag(reg, "x", ""))
		assert.Equal(t, n, changes.Load())
	})
	t.Run("ShadowRemovalReexposesOuter", func(t *testing.T) {
		reg := rrNew(t)
		p := rrScope(t, reg, "p")
		c := rrScope(t, p, "c")
		rrReg(t, reg.Global(), "x", "G")
		dp := rrReg(t, p, "x", "P")
		dc := rrReg(t, c, "x", "C")
		assert.Equal(t, "C", rrTag(reg, "x", "c"))
		dc()
		assert.Equal(t, "P", rrTag(reg, "x", "c"))
		dp()
		assert.Equal(t, "G", rrTag(reg, "x", "c"))
		assert.Equal(t, "G", rrExec(c, "x").Text())
	})
	t.Run("Synchronous", func(t *testing.T) {
		reg := rrNew(t)
		p := rrScope(t, reg, "p")
		c := rrScope(t, p, "c")
		rrScope(t, c, "gc")
		d := rrReg(t, p, "x", "P")
		dg := rrReg(t, reg.Global(), "y", "G")
		d()
		dg()
		for _, key := range []string{"", "p", "c", "gc"} {
			assert.Equal(t, []string{}, rrView(t, reg, key), key)
		}
		assert.Equal(t, runtime.CodeUnknownTool, rrExec(c, "x").Code())
	})
	t.Run("SameTeardownAsScope", func(t *testing.T) {
		reg := rrNew(t)
		a := rrScope(t, reg, "a")
		d1 := rrReg(t, a, "t1", "A")
		rrReg(t, a, "t2", "A")
		dr, err := a.Restrict(runtime.Restriction{Deny: []string{}})
		require.NoError(t, err)
		changes := rrChanges(t, reg.Global())
		d1()
		dr()
		assert.Equal(t, int64(2), changes.Load())
		a.Dispose()
		assert.Equal(t, int64(3), changes.Load(), "only t2 is removed by the scope")
		d1()
		dr()
		assert.Equal(t, int64(3), changes.Load())
	})
}

func TestRegister_R16_NotificationFailureRollsBack(t *testing.T) {
	boom := errors.New("boom")
	for _, mode := range []string{"error", "panic"} {
		t.Run(mode, func(t *testing.T) {
			var contained []error
			var cmu sync.Mutex
			reg := rrNew(t, runtime.WithErrorHandler(func(err error) {
				cmu.Lock()
				contained = append(contained, err)
				cmu.Unlock()
			}))
			a := rrScope(t, reg, "a")
			var calls atomic.Int64
			var fail atomic.Bool
			var visible []bool
			_, err := reg.Global().OnChange(func(context.Context) error {
				calls.Add(1)
				_, ok := reg.View("a").Get("x")
				visible = append(visible, ok)
				if fail.Load() {
					if mode == "panic" {
						panic(boom)
					}
					return boom
				}
				return nil
			})
			require.NoError(t, err)
			fail.Store(true)
			d, err := a.Register(rrDef("x", "A"))
			require.Error(t, err)
			assert.Nil(t, d)
			assert.ErrorIs(t, err, boom)
			assert.Equal(t, int64(2), calls.Load(), "announce + rollback")
			assert.Equal(t, []bool{true, false}, visible)
			_, ok := reg.View("a").Get("x")
			assert.False(t, ok)

			fail.Store(false)
			_, err = a.Register(rrDef("x", "A2"))
			require.NoError(t, err, "the name is free afterwards")
			assert.Equal(t, "A2", rrTag(reg, "x", "a"))
		})
	}
}

func TestRegister_R17_Order(t *testing.T) {
	reg := rrNew(t)
	a := rrScope(t, reg, "a")
	for _, s := range []*runtime.Scope{reg.Global(), a} {
		prefix := "g"
		if s != reg.Global() {
			prefix = "s"
		}
		da := rrReg(t, s, prefix+"a", "")
		rrReg(t, s, prefix+"b", "")
		rrReg(t, s, prefix+"c", "")
		da()
		rrReg(t, s, prefix+"a", "")
	}
	assert.Equal(t, []string{"gb", "gc", "ga"}, rrView(t, reg, ""))
	assert.Equal(t, []string{"gb", "gc", "ga", "sb", "sc", "sa"}, rrView(t, reg, "a"))
}

func TestRegister_R18_RegistrationSnapshot(t *testing.T) {
	reg := rrNew(t)
	params := map[string]any{"type": "object", "properties": map[string]any{"p": map[string]any{"type": "string"}}}
	outSchema := map[string]any{"type": "string"}
	timeout := time.Second
	out := &runtime.Output{Schema: outSchema, Render: rrRender}
	def := runtime.Definition{
		Name: "snap", Description: "orig", Parameters: params, Output: out, Timeout: &timeout,
		Execute: func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) { return "ok", nil },
	}
	_, err := reg.Global().Register(def)
	require.NoError(t, err)

	params["type"] = "string"
	params["properties"].(map[string]any)["p"].(map[string]any)["type"] = "number"
	outSchema["type"] = "number"
	timeout = time.Hour
	out.Render = func(_ context.Context, _, _ json.RawMessage) ([]runtime.Block, error) {
		return []runtime.Block{runtime.Text("mutated")}, nil
	}
	def.Description = "changed"

	raw := json.RawMessage(`{"type":"object","description":"raw"}`)
	rd := rrDef("rawparams", "R")
	rd.Parameters = raw
	_, err = reg.Global().Register(rd)
	require.NoError(t, err)
	copy(raw[len(raw)-5:], `XXX"}`)

	ss, err := reg.View("").Schemas()
	require.NoError(t, err)
	require.Len(t, ss, 2)
	assert.JSONEq(t, `{"type":"object","description":"raw"}`, string(ss[1].Parameters), "raw parameter bytes are copied")
	assert.Equal(t, "orig", ss[0].Description)
	assert.JSONEq(t, `{"type":"object","properties":{"p":{"type":"string"}}}`, string(ss[0].Parameters))
	got, _ := reg.View("").Get("snap")
	assert.JSONEq(t, `{"type":"string"}`, string(got.Output.Schema.(json.RawMessage)))
	assert.Equal(t, time.Second, *got.Timeout)
	res := rrExec(reg.Global(), "snap")
	assert.False(t, res.IsError(), res.ErrorMessage())
	assert.Equal(t, "ok", res.Text(), "the registered Output is a copy")
}

// R19: a declared timeout never reaches the model; with WithoutTimeouts
// it is metadata only (by default it applies: TestTimeouts_R83_DeclaredTimeoutsApplyByDefault).
func TestRegister_R19_TimeoutIsMetadataOnly(t *testing.T) {
	reg := rrNew(t, runtime.WithoutTimeouts())
	d := rrDef("slowish", "S")
	to := time.Nanosecond
	d.Timeout = &to
	release := make(chan struct{})
	d.Execute = func(ctx context.Context, _ json.RawMessage, _ *runtime.RunContext) (any, error) {
		<-release
		return "done", ctx.Err()
	}
	_, err := reg.Global().Register(d)
	require.NoError(t, err)
	resc := make(chan *runtime.Result, 1)
	go func() { resc <- rrExec(reg.Global(), "slowish") }()
	close(release)
	res := <-resc
	assert.False(t, res.IsError(), "WithoutTimeouts: the timeout is not enforced: %s", res.ErrorMessage())
	ss, err := reg.View("").Schemas()
	require.NoError(t, err)
	b, _ := json.Marshal(ss)
	assert.NotContains(t, strings.ToLower(string(b)), "timeout")
}

// ---- §4 guard registration ----

func TestGuard_R27_EmptyReasonStillDenies(t *testing.T) {
	reg := rrNew(t)
	rrReg(t, reg.Global(), "x", "X")
	_, err := reg.Global().Guard(func(context.Context, runtime.Execution) (string, bool) { return "", true })
	require.NoError(t, err)
	res := rrExec(reg.Global(), "x")
	assert.True(t, res.IsError())
	assert.Equal(t, "Error: ", res.Text())
	_, _, hasInfo := res.ErrorInfo()
	assert.False(t, hasInfo, "denials carry no code")
}

func TestGuard_R28_Registration(t *testing.T) {
	reg := rrNew(t)
	a := rrScope(t, reg, "a")
	rrReg(t, reg.Global(), "x", "X")
	changes := rrChanges(t, reg.Global())
	var calls atomic.Int64
	g := func(context.Context, runtime.Execution) (string, bool) { calls.Add(1); return "", false }
	d1, err := reg.Global().Guard(g)
	require.NoError(t, err, "global guards are allowed")
	_, err = reg.Global().Guard(g)
	require.NoError(t, err)
	_, err = a.Guard(g)
	require.NoError(t, err)
	assert.Equal(t, int64(0), changes.Load(), "no notification")

	rrExec(a, "x")
	assert.Equal(t, int64(3), calls.Load(), "the same function twice is two guards")
	d1()
	d1()
	calls.Store(0)
	rrExec(a, "x")
	assert.Equal(t, int64(2), calls.Load(), "exact, idempotent disposer")
	a.Dispose()
	calls.Store(0)
	rrExec(reg.Global(), "x")
	assert.Equal(t, int64(1), calls.Load(), "disposed with its owner")
	assert.Equal(t, int64(0), changes.Load())
	_, err = a.Guard(nil)
	assert.Error(t, err)
}

// ---- §5 Get and Schemas ----

func TestView_R29_Resolution(t *testing.T) {
	reg := rrNew(t)
	p := rrScope(t, reg, "p")
	c := rrScope(t, p, "c")
	rrReg(t, reg.Global(), "a", "G")
	rrReg(t, reg.Global(), "b", "G")
	rrReg(t, reg.Global(), "c", "G")
	rrReg(t, p, "b", "P")
	rrReg(t, p, "d", "P")
	rrReg(t, c, "e", "C")
	rrReg(t, c, "a", "C")
	assert.Equal(t, []string{"a=C", "b=P", "c=G", "d=P", "e=C"}, rrViewTags(t, reg, "c"))
	assert.Equal(t, []string{"a=G", "b=P", "c=G", "d=P"}, rrViewTags(t, reg, "p"))
	assert.Equal(t, []string{"a=G", "b=G", "c=G"}, rrViewTags(t, reg, ""))
	assert.Equal(t, []string{"a", "b", "c", "d", "e"}, c.Tools())
	_, ok := reg.View("c").Get(runtime.Call{}.Name)
	assert.False(t, ok)
}

func TestGet_R30_AbsentAndCopy(t *testing.T) {
	reg := rrNew(t)
	a := rrScope(t, reg, "a")
	b := rrScope(t, reg, "b")
	rrReg(t, b, "onlyB", "B")
	rrReg(t, reg.Global(), "hidden", "G")
	_, err := a.Restrict(runtime.Restriction{Deny: []string{"hidden"}})
	require.NoError(t, err)
	for _, name := range []string{"unknown", "hidden", "onlyB"} {
		_, ok := a.Get(name)
		assert.False(t, ok, name)
	}

	rrReg(t, reg.Global(), "x", "G")
	d1, ok := reg.View("").Get("x")
	require.True(t, ok)
	pb := d1.Parameters.(json.RawMessage)
	for i := range pb {
		pb[i] = ' '
	}
	ob := d1.Output.Schema.(json.RawMessage)
	for i := range ob {
		ob[i] = ' '
	}
	d1.Description = "mutated"
	d1.Output.Render = nil
	d2, _ := reg.View("").Get("x")
	assert.Equal(t, "G", d2.Description)
	assert.JSONEq(t, `{"type":"object"}`, string(d2.Parameters.(json.RawMessage)))
	assert.JSONEq(t, `{}`, string(d2.Output.Schema.(json.RawMessage)))
	assert.NotNil(t, d2.Output.Render)
	ss, err := reg.View("").Schemas()
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"object"}`, string(ss[1].Parameters))
	assert.Equal(t, "G", rrExec(reg.Global(), "x").Text())
}

func TestSchemas_R31_ExactlyThreeFieldsDeepCopied(t *testing.T) {
	typ := reflect.TypeOf(runtime.ToolSchema{})
	var fields []string
	for i := 0; i < typ.NumField(); i++ {
		fields = append(fields, typ.Field(i).Name)
	}
	assert.Equal(t, []string{"Name", "Description", "Parameters"}, fields)

	reg := rrNew(t)
	d := rrDef("x", "desc")
	d.Parameters = map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}}
	_, err := reg.Global().Register(d)
	require.NoError(t, err)
	s1, err := reg.View("").Schemas()
	require.NoError(t, err)
	require.Len(t, s1, 1)
	want := `{"type":"object","properties":{"q":{"type":"string"}}}`
	assert.JSONEq(t, want, string(s1[0].Parameters))
	for i := range s1[0].Parameters {
		s1[0].Parameters[i] = 'z'
	}
	s1[0].Name = "renamed"
	s2, err := reg.View("").Schemas()
	require.NoError(t, err)
	assert.Equal(t, "x", s2[0].Name)
	assert.JSONEq(t, want, string(s2[0].Parameters))
}

func TestSchemas_R32_HostOnlyMetadataHidden(t *testing.T) {
	reg := rrNew(t)
	d := rrDef("x", "desc")
	to := time.Minute
	d.Timeout = &to
	d.Output.Schema = map[string]any{"description": "OUTPUT-MARKER"}
	d.Presenters = "PRESENTER-MARKER"
	d.IsConcurrencySafe = func(context.Context, json.RawMessage) (bool, error) { return true, nil }
	_, err := reg.Global().Register(d)
	require.NoError(t, err)
	ss, err := reg.View("").Schemas()
	require.NoError(t, err)
	b, err := json.Marshal(ss)
	require.NoError(t, err)
	assert.JSONEq(t, `[{"name":"x","description":"desc","parameters":{"type":"object"}}]`, string(b))
}

func TestSchemas_R33_LossyParameters(t *testing.T) {
	reg := rrNew(t)
	rrReg(t, reg.Global(), "fine", "F")
	lossy := rrDef("lossy", "L")
	lossy.Parameters = map[string]any{"type": "object", "default": math.NaN()}
	_, err := reg.Global().Register(lossy)
	require.NoError(t, err, "parameters are not validated at Register")

	_, err = reg.View("").Schemas()
	require.Error(t, err)
	assert.EqualError(t, err, `tool "lossy" parameters must be lossless JSON before schema projection`)
	_, ok := reg.View("").Get("lossy")
	assert.True(t, ok, "Get still works")

	hides := rrScope(t, reg, "hides")
	_, err = hides.Restrict(runtime.Restriction{Deny: []string{"lossy"}})
	require.NoError(t, err)
	ss, err := hides.Schemas()
	require.NoError(t, err, "only visible definitions count")
	assert.Len(t, ss, 1)

	shadows := rrScope(t, reg, "shadows")
	rrReg(t, shadows, "lossy", "S")
	ss, err = reg.View("shadows").Schemas()
	require.NoError(t, err, "a lossless shadow replaces the lossy definition")
	assert.Equal(t, []string{"fine=F", "lossy=S"}, rrViewTags(t, reg, "shadows"))
	_ = ss
}

func TestSchemas_R34_DeepParameterSchema(t *testing.T) {
	// jsonv bounds JSON nesting at 50,000 containers (internal/jsonv doc,
	// MaxDepth). An items chain costs one container per schema level, a
	// properties chain two.
	cases := []struct {
		name         string
		depth        int
		open, closer string
	}{
		{"items chain 5000 schema levels", 5000, `{"type":"array","items":`, `}`},
		{"properties chain 4000 schema levels", 4000, `{"type":"object","properties":{"n":`, `}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			deep := strings.Repeat(tc.open, tc.depth) + `{"type":"string"}` + strings.Repeat(tc.closer, tc.depth)
			reg := rrNew(t)
			d := rrDef("deep", "D")
			d.Parameters = json.RawMessage(deep)
			_, err := reg.Global().Register(d)
			require.NoError(t, err)
			ss, err := reg.View("").Schemas()
			require.NoError(t, err)
			require.Len(t, ss, 1)
			assert.Equal(t, deep, string(ss[0].Parameters), "copied intact")
			got, ok := reg.View("").Get("deep")
			require.True(t, ok)
			assert.Equal(t, deep, string(got.Parameters.(json.RawMessage)))
			// Also as nested Go maps.
			var v any = map[string]any{"type": "string"}
			for i := 0; i < tc.depth; i++ {
				if tc.closer == `}` {
					v = map[string]any{"type": "array", "items": v}
				} else {
					v = map[string]any{"type": "object", "properties": map[string]any{"n": v}}
				}
			}
			d2 := rrDef("deep2", "D")
			d2.Parameters = v
			_, err = reg.Global().Register(d2)
			require.NoError(t, err)
			ss, err = reg.View("").Schemas()
			require.NoError(t, err)
			require.Len(t, ss, 2)
			var back any
			dec := json.NewDecoder(strings.NewReader(string(ss[1].Parameters)))
			require.NoError(t, dec.Decode(&back))
			assert.True(t, reflect.DeepEqual(v, back), "map form copied intact")
		})
	}
}

// TestSchemas_R34_FiveThousandLevelPropertiesSchema: a properties chain
// costs two JSON containers per schema level, so 5,000 levels are 10,001
// JSON levels; they round-trip through Registry.Schemas intact, as raw text
// and as nested Go maps (compared as canonical text: encoding/json itself
// stops at 10,000 levels).
func TestSchemas_R34_FiveThousandLevelPropertiesSchema(t *testing.T) {
	const depth = 5000
	raw := strings.Repeat(`{"type":"object","properties":{"n":`, depth) + `{"type":"string"}` + strings.Repeat(`}}`, depth)
	reg := rrNew(t)
	d := rrDef("deep", "D")
	d.Parameters = json.RawMessage(raw)
	_, err := reg.Global().Register(d)
	require.NoError(t, err)

	var v any = map[string]any{"type": "string"}
	for range depth {
		v = map[string]any{"type": "object", "properties": map[string]any{"n": v}}
	}
	d2 := rrDef("deep2", "D")
	d2.Parameters = v
	_, err = reg.Global().Register(d2)
	require.NoError(t, err)

	ss, err := reg.View("").Schemas()
	require.NoError(t, err)
	require.Len(t, ss, 2)
	assert.Equal(t, raw, string(ss[0].Parameters), "raw text copied intact")
	// Canonical map form: keys sorted.
	want := strings.Repeat(`{"properties":{"n":`, depth) + `{"type":"string"}` + strings.Repeat(`},"type":"object"}`, depth)
	assert.Equal(t, want, string(ss[1].Parameters), "map form copied intact")
}

// ---- §6 ExecutionMode ----

func TestExecutionMode_R36_Classification(t *testing.T) {
	boom := errors.New("boom")
	type clf = func(context.Context, json.RawMessage) (bool, error)
	cases := []struct {
		name string
		clf  clf // nil: no classifier
		call runtime.Call
		want runtime.Mode
	}{
		{"true", func(context.Context, json.RawMessage) (bool, error) { return true, nil }, runtime.Call{Name: "t"}, runtime.Parallel},
		{"false", func(context.Context, json.RawMessage) (bool, error) { return false, nil }, runtime.Call{Name: "t"}, runtime.Exclusive},
		{"panic", func(context.Context, json.RawMessage) (bool, error) { panic("no") }, runtime.Call{Name: "t"}, runtime.Exclusive},
		{"error", func(context.Context, json.RawMessage) (bool, error) { return false, boom }, runtime.Call{Name: "t"}, runtime.Exclusive},
		{"true with error", func(context.Context, json.RawMessage) (bool, error) { return true, boom }, runtime.Call{Name: "t"}, runtime.Exclusive},
		{"absent", nil, runtime.Call{Name: "t"}, runtime.Exclusive},
		{"unknown tool", func(context.Context, json.RawMessage) (bool, error) { return true, nil }, runtime.Call{Name: "nope"}, runtime.Exclusive},
		{"restricted away", func(context.Context, json.RawMessage) (bool, error) { return true, nil }, runtime.Call{Name: "t", Agent: "denies"}, runtime.Exclusive},
		{"other scope's tool", func(context.Context, json.RawMessage) (bool, error) { return true, nil }, runtime.Call{Name: "own", Agent: "denies"}, runtime.Exclusive},
		{"scope's own tool", func(context.Context, json.RawMessage) (bool, error) { return true, nil }, runtime.Call{Name: "own", Agent: "owner"}, runtime.Parallel},
		{"lossy arguments", func(context.Context, json.RawMessage) (bool, error) { return true, nil }, runtime.Call{Name: "t", Arguments: map[string]any{"x": math.NaN()}}, runtime.Exclusive},
		{"arguments as given", func(_ context.Context, a json.RawMessage) (bool, error) { return string(a) == `{"k":1}`, nil }, runtime.Call{Name: "t", Arguments: json.RawMessage(`{"k":1}`)}, runtime.Parallel},
		{"run_code", func(context.Context, json.RawMessage) (bool, error) { return true, nil }, runtime.Call{Name: "run_code"}, runtime.Exclusive},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reg := rrNew(t)
			changes := rrChanges(t, reg.Global())
			var hooks atomic.Int64
			_, err := reg.Global().OnPreExecute(func(_ context.Context, e runtime.Execution, next func() (runtime.Decision, error)) (runtime.Decision, error) {
				hooks.Add(1)
				return next()
			})
			require.NoError(t, err)
			d := rrDef("t", "T")
			d.IsConcurrencySafe = tc.clf
			_, err = reg.Global().Register(d)
			require.NoError(t, err)
			owner := rrScope(t, reg, "owner")
			od := rrDef("own", "O")
			od.IsConcurrencySafe = tc.clf
			_, err = owner.Register(od)
			require.NoError(t, err)
			denies := rrScope(t, reg, "denies")
			_, err = denies.Restrict(runtime.Restriction{Deny: []string{"t"}})
			require.NoError(t, err)
			n := changes.Load()

			assert.Equal(t, tc.want, reg.View(tc.call.Agent).ExecutionMode(tc.call))
			if tc.call.Agent != "" {
				s, ok := reg.Scope(tc.call.Agent)
				require.True(t, ok)
				c := tc.call
				c.Agent = "ignored"
				assert.Equal(t, tc.want, s.ExecutionMode(c), "the handle's view")
			}
			assert.Equal(t, n, changes.Load(), "notifies nothing")
			assert.Equal(t, int64(0), hooks.Load(), "runs no hooks")
		})
	}
	assert.Equal(t, "parallel", runtime.Parallel.String())
	assert.Equal(t, "exclusive", runtime.Exclusive.String())
}

// ---- §7.10 hook registration and audience ----

type rrHookKind struct {
	name string
	add  func(s *runtime.Scope, label string, log func(string), opts ...runtime.HookOption) (func(), error)
}

func rrHookKinds() []rrHookKind {
	return []rrHookKind{
		{"pre", func(s *runtime.Scope, label string, log func(string), opts ...runtime.HookOption) (func(), error) {
			return s.OnPreExecute(func(_ context.Context, e runtime.Execution, next func() (runtime.Decision, error)) (runtime.Decision, error) {
				log(label)
				return next()
			}, opts...)
		}},
		{"around", func(s *runtime.Scope, label string, log func(string), opts ...runtime.HookOption) (func(), error) {
			return s.OnExecute(func(ctx context.Context, e runtime.Execution, next func(context.Context) *runtime.Result) (*runtime.Result, error) {
				log(label)
				return next(nil), nil
			}, opts...)
		}},
		{"post", func(s *runtime.Scope, label string, log func(string), opts ...runtime.HookOption) (func(), error) {
			return s.OnPostExecute(func(_ context.Context, e runtime.Execution, r *runtime.Result, next func() (runtime.PostDecision, error)) (runtime.PostDecision, error) {
				log(label)
				return next()
			}, opts...)
		}},
		{"result", func(s *runtime.Scope, label string, log func(string), opts ...runtime.HookOption) (func(), error) {
			return s.OnResult(func(context.Context, runtime.Execution, *runtime.Result) error {
				log(label)
				return nil
			}, opts...)
		}},
	}
}

type rrLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *rrLog) add(s string) { l.mu.Lock(); l.lines = append(l.lines, s); l.mu.Unlock() }
func (l *rrLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.lines
	l.lines = nil
	if out == nil {
		out = []string{}
	}
	return out
}

func TestHooks_R84_DisposersExactIdempotentNoNotification(t *testing.T) {
	for _, k := range rrHookKinds() {
		t.Run(k.name, func(t *testing.T) {
			reg := rrNew(t)
			rrReg(t, reg.Global(), "t", "T")
			a := rrScope(t, reg, "a")
			changes := rrChanges(t, reg.Global())
			var log rrLog
			d1, err := k.add(reg.Global(), "h", log.add)
			require.NoError(t, err)
			_, err = k.add(reg.Global(), "h", log.add)
			require.NoError(t, err)
			_, err = k.add(a, "scoped", log.add)
			require.NoError(t, err)
			rrExec(a, "t")
			assert.Equal(t, []string{"h", "h", "scoped"}, log.take())
			d1()
			d1()
			rrExec(a, "t")
			assert.Equal(t, []string{"h", "scoped"}, log.take(), "exactly one removed")
			a.Dispose()
			rrExec(reg.Global(), "t")
			assert.Equal(t, []string{"h"}, log.take(), "dies with its owner")
			assert.Equal(t, int64(0), changes.Load(), "registering or disposing hooks notifies nothing")
		})
	}
}

func TestHooks_R85_AudienceAndOrder(t *testing.T) {
	for _, k := range rrHookKinds() {
		t.Run(k.name, func(t *testing.T) {
			reg := rrNew(t)
			rrReg(t, reg.Global(), "t", "T")
			p := rrScope(t, reg, "p")
			c := rrScope(t, p, "c")
			gc := rrScope(t, c, "gc")
			sib := rrScope(t, reg, "sib")
			var log rrLog
			add := func(s *runtime.Scope, label string, opts ...runtime.HookOption) {
				_, err := k.add(s, label, log.add, opts...)
				require.NoError(t, err)
			}
			add(c, "C1")
			add(reg.Global(), "G1")
			add(p, "P1")
			add(sib, "S1")
			add(gc, "GC1")
			add(reg.Global(), "G2")
			add(p, "P0", runtime.WithPrepend())

			cases := []struct {
				name string
				run  func() *runtime.Result
				want []string
			}{
				{"child", func() *runtime.Result { return rrExec(c, "t") }, []string{"P0", "C1", "G1", "P1", "G2"}},
				{"grandchild", func() *runtime.Result { return rrExec(gc, "t") }, []string{"P0", "C1", "G1", "P1", "GC1", "G2"}},
				{"parent", func() *runtime.Result { return rrExec(p, "t") }, []string{"P0", "G1", "P1", "G2"}},
				{"sibling", func() *runtime.Result { return rrExec(sib, "t") }, []string{"G1", "S1", "G2"}},
				{"agentless", func() *runtime.Result {
					return reg.Execute(context.Background(), runtime.Call{ID: "x", Name: "t"})
				}, []string{"G1", "G2"}},
				{"global handle", func() *runtime.Result { return rrExec(reg.Global(), "t") }, []string{"G1", "G2"}},
				{"by key", func() *runtime.Result {
					return reg.Execute(context.Background(), runtime.Call{ID: "x", Name: "t", Agent: "c"})
				}, []string{"P0", "C1", "G1", "P1", "G2"}},
				{"unknown key", func() *runtime.Result {
					return reg.Execute(context.Background(), runtime.Call{ID: "x", Name: "t", Agent: "ghost"})
				}, []string{"G1", "G2"}},
			}
			for _, tc := range cases {
				res := tc.run()
				assert.False(t, res.IsError(), "%s: %s", tc.name, res.ErrorMessage())
				assert.Equal(t, tc.want, log.take(), tc.name)
			}
		})
	}
}

func TestHooks_R86_ReentrantCallbacks(t *testing.T) {
	reg := rrNew(t)
	a := rrScope(t, reg, "a")
	rrReg(t, reg.Global(), "inner", "I")
	rrReg(t, reg.Global(), "g", "G")
	touch := func() error {
		d, err := a.Register(rrDef("tmp", "tmp"))
		if err != nil {
			return err
		}
		dr, err := a.Restrict(runtime.Restriction{Deny: []string{"g"}})
		if err != nil {
			return err
		}
		if _, err := reg.View("a").Schemas(); err != nil {
			return err
		}
		_, _ = reg.View("a").Get("tmp")
		_ = reg.View("a").ExecutionMode(runtime.Call{Name: "inner"})
		dg, err := a.Guard(func(context.Context, runtime.Execution) (string, bool) { return "", false })
		if err != nil {
			return err
		}
		dg()
		dr()
		d()
		return nil
	}
	var inSub atomic.Bool
	_, err := reg.Global().OnChange(func(context.Context) error {
		if !inSub.CompareAndSwap(false, true) {
			return nil
		}
		defer inSub.Store(false)
		_, err := reg.View("a").Schemas()
		return err
	})
	require.NoError(t, err)
	_, err = a.Guard(func(context.Context, runtime.Execution) (string, bool) {
		if err := touch(); err != nil {
			return err.Error(), true
		}
		return "", false
	})
	require.NoError(t, err)
	_, err = a.OnPreExecute(func(_ context.Context, e runtime.Execution, next func() (runtime.Decision, error)) (runtime.Decision, error) {
		if e.Name() == "outer" {
			if err := touch(); err != nil {
				return runtime.Deny(err.Error()), nil
			}
		}
		return next()
	})
	require.NoError(t, err)
	outer := rrDef("outer", "O")
	outer.IsConcurrencySafe = func(context.Context, json.RawMessage) (bool, error) {
		_, err := reg.View("a").Schemas()
		return err == nil, nil
	}
	outer.Execute = func(ctx context.Context, _ json.RawMessage, rc *runtime.RunContext) (any, error) {
		if err := touch(); err != nil {
			return nil, err
		}
		res := a.Execute(ctx, runtime.Call{ID: "nested", Name: "inner", Parent: rc.Token()})
		return "outer+" + res.Text(), nil
	}
	_, err = a.Register(outer)
	require.NoError(t, err)

	done := make(chan *runtime.Result, 1)
	go func() { done <- rrExec(a, "outer") }()
	select {
	case res := <-done:
		assert.False(t, res.IsError(), res.ErrorMessage())
		assert.Equal(t, "outer+I", res.Text())
	case <-time.After(20 * time.Second):
		t.Fatal("deadlock: re-entrant callbacks did not complete")
	}
	assert.Equal(t, runtime.Parallel, a.ExecutionMode(runtime.Call{Name: "outer"}))
	assert.Equal(t, []string{"inner", "g", "outer"}, a.Tools())
}

// ---- §8 change notifications ----

func TestChange_R87_WhatNotifies(t *testing.T) {
	reg := rrNew(t)
	rrReg(t, reg.Global(), "g", "G")
	a := rrScope(t, reg, "a")
	changes := rrChanges(t, reg.Global())
	var dTool, dRestrict func()
	steps := []struct {
		name string
		do   func()
		want int64
	}{
		{"register tool", func() { dTool = rrReg(t, a, "x", "A") }, 1},
		{"failed register", func() { _, err := a.Register(rrDef("x", "dup")); require.Error(t, err) }, 0},
		{"restrict", func() {
			var err error
			dRestrict, err = a.Restrict(runtime.Restriction{Deny: []string{"g"}})
			require.NoError(t, err)
		}, 1},
		{"failed restrict", func() { _, err := a.Restrict(runtime.Restriction{Deny: []string{"nope"}}); require.Error(t, err) }, 0},
		{"guard add and dispose", func() {
			d, err := a.Guard(func(context.Context, runtime.Execution) (string, bool) { return "", false })
			require.NoError(t, err)
			d()
		}, 0},
		{"hooks add and dispose", func() {
			for _, k := range rrHookKinds() {
				d, err := k.add(a, k.name, func(string) {})
				require.NoError(t, err)
				d()
			}
			d, err := a.OnChange(func(context.Context) error { return nil })
			require.NoError(t, err)
			d()
		}, 0},
		{"reads and execute", func() {
			_, _ = reg.View("a").Schemas()
			_, _ = reg.View("a").Get("x")
			_ = reg.View("a").ExecutionMode(runtime.Call{Name: "x"})
			rrExec(a, "x")
			rrExec(a, "missing")
		}, 0},
		{"new scope and empty group", func() {
			s := rrScope(t, a, "kid")
			grp, err := s.Group()
			require.NoError(t, err)
			grp.Dispose()
			s.Dispose()
		}, 0},
		{"lift restriction", func() { dRestrict() }, 1},
		{"lift again", func() { dRestrict() }, 0},
		{"remove tool", func() { dTool() }, 1},
		{"remove again", func() { dTool() }, 0},
	}
	for _, st := range steps {
		before := changes.Load()
		st.do()
		assert.Equal(t, st.want, changes.Load()-before, st.name)
	}
}

func TestChange_R88_SynchronousDelivery(t *testing.T) {
	reg := rrNew(t)
	a := rrScope(t, reg, "a")
	rrReg(t, reg.Global(), "g", "G")
	var log rrLog
	_, err := a.OnChange(func(context.Context) error {
		log.add(strings.Join(rrView(t, reg, "a"), ","))
		return nil
	})
	require.NoError(t, err)
	d := rrReg(t, a, "x", "A")
	assert.Equal(t, []string{"g,x"}, log.take(), "delivered before Register returns, after the change")
	dr, err := a.Restrict(runtime.Restriction{Deny: []string{"g"}})
	require.NoError(t, err)
	assert.Equal(t, []string{"x"}, log.take())
	dr()
	assert.Equal(t, []string{"g,x"}, log.take())
	d()
	assert.Equal(t, []string{"g"}, log.take(), "delivered before the disposer returns")
}

func TestChange_R89_SubscribersAreUnfiltered(t *testing.T) {
	reg := rrNew(t)
	a := rrScope(t, reg, "a")
	b := rrScope(t, reg, "b")
	bc := rrScope(t, b, "bc")
	seenA := rrChanges(t, a)
	seenBC := rrChanges(t, bc)
	seenG := rrChanges(t, reg.Global())
	rrReg(t, reg.Global(), "g", "G")
	rrReg(t, b, "x", "B")
	_, err := b.Restrict(runtime.Restriction{Deny: []string{"g"}})
	require.NoError(t, err)
	rrReg(t, a, "y", "A")
	for _, n := range []*atomic.Int64{seenA, seenBC, seenG} {
		assert.Equal(t, int64(4), n.Load())
	}
	a.Dispose() // removes y and a's own subscriber, then announces y's removal to the subscribers left
	assert.Equal(t, int64(4), seenA.Load(), "a's subscriber is torn down with a before a's removals are announced")
	rrReg(t, b, "z", "B")
	assert.Equal(t, int64(4), seenA.Load(), "a subscriber dies with its owner")
	assert.Equal(t, int64(6), seenBC.Load())
	assert.Equal(t, int64(6), seenG.Load())

	grp, err := b.Group()
	require.NoError(t, err)
	seenGrp := rrChanges(t, grp)
	rrReg(t, bc, "w", "BC")
	assert.Equal(t, int64(1), seenGrp.Load())
	grp.Dispose()
	rrReg(t, bc, "v", "BC")
	assert.Equal(t, int64(1), seenGrp.Load(), "a group's subscriber dies with the group")
	assert.Equal(t, int64(8), seenG.Load())
}

func TestChange_R90_RemovalFailureIsContained(t *testing.T) {
	boom := errors.New("boom")
	var mu sync.Mutex
	var contained []error
	var logBuf bytes.Buffer
	reg := rrNew(t, runtime.WithErrorHandler(func(err error) {
		mu.Lock()
		contained = append(contained, err)
		mu.Unlock()
	}), runtime.WithLogger(slog.New(slog.NewTextHandler(&logBuf, nil))))
	a := rrScope(t, reg, "a")
	d := rrReg(t, a, "x", "A")
	rrReg(t, a, "y", "A")
	_, err := a.Restrict(runtime.Restriction{Allow: []string{}})
	require.NoError(t, err)
	var fail atomic.Bool
	var calls atomic.Int64
	_, err = reg.Global().OnChange(func(context.Context) error {
		calls.Add(1)
		if fail.Load() {
			return boom
		}
		return nil
	})
	require.NoError(t, err)
	fail.Store(true)

	assert.NotPanics(t, d)
	_, ok := reg.View("a").Get("x")
	assert.False(t, ok, "the removal is not undone")
	assert.Equal(t, int64(1), calls.Load())
	mu.Lock()
	require.Len(t, contained, 1, "reported once")
	assert.ErrorIs(t, contained[0], boom)
	mu.Unlock()
	assert.Equal(t, 1, strings.Count(logBuf.String(), "boom"), "logged once")

	assert.NotPanics(t, a.Dispose)
	assert.Equal(t, []string{}, rrView(t, reg, "a"))
	mu.Lock()
	assert.Len(t, contained, 3, "one per failed removal announcement: y and the restriction")
	mu.Unlock()

	// A failure while announcing an add is returned, not contained.
	b := rrScope(t, reg, "b")
	_, err = b.Register(rrDef("z", "B"))
	assert.ErrorIs(t, err, boom)
	_, ok = reg.View("b").Get("z")
	assert.False(t, ok)
}

// ---- §10 typed helper ----

type rrReadIn struct {
	Path  string   `json:"path" description:"file path"`
	Limit int      `json:"limit,omitempty"`
	Tags  []string `json:"tags,omitempty"`
	Opts  struct {
		Deep bool `json:"deep"`
	} `json:"opts"`
}

type rrReadOut struct {
	Text string `json:"text"`
}

func rrReadTool(t testing.TB, calls *atomic.Int64, opts ...runtime.ToolOption) runtime.Definition {
	t.Helper()
	d, err := runtime.NewTool("read", "Read a file",
		func(ctx context.Context, in rrReadIn, rc *runtime.RunContext) (rrReadOut, error) {
			if calls != nil {
				calls.Add(1)
			}
			return rrReadOut{Text: "contents of " + in.Path}, nil
		}, opts...)
	require.NoError(t, err)
	return d
}

const rrSubset = " (subset: type/oneOf/properties/required/additionalProperties/items/enum/const + annotations)"

func TestNewTool_R100_UnsupportedSchemaListsEveryViolation(t *testing.T) {
	fn := func(ctx context.Context, in rrReadIn, rc *runtime.RunContext) (string, error) { return "", nil }
	cases := []struct {
		name string
		opt  runtime.ToolOption
		want []string
	}{
		{"output", runtime.WithOutputSchema(map[string]any{"type": "strin", "foo": 1}), []string{
			"schema.foo is not a supported keyword" + rrSubset,
			"schema.type must be one of object/array/string/number/integer/boolean/null",
		}},
		{"parameters", runtime.WithParametersSchema(json.RawMessage(
			`{"type":"object","properties":{"a":{"type":["string"]},"b":{"oneOf":[{"type":"string"}]}},"required":["z"],"bogus":true}`)), []string{
			"schema.bogus is not a supported keyword" + rrSubset,
			"schema.properties.a.type must be a single type string (type arrays are not supported)",
			"schema.properties.b.oneOf must be an array of at least two schemas",
			`schema.required names "z" which is not in properties`,
		}},
		{"type with oneOf", runtime.WithOutputSchema(map[string]any{"type": "string", "oneOf": []any{map[string]any{}, map[string]any{}}}), []string{
			"schema cannot declare both type and oneOf",
		}},
		{"placement and enum", runtime.WithOutputSchema(json.RawMessage(`{"type":"string","items":{},"enum":[1]}`)), []string{
			`schema.items is not supported on type "string"`,
			"schema.enum must be a non-empty array of string values",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runtime.NewTool("bad", "d", fn, tc.opt)
			require.Error(t, err)
			var coded runtime.Coded
			require.True(t, errors.As(err, &coded))
			assert.Equal(t, runtime.CodeUnsupportedSchema, runtime.Code(coded.Code()))
			assert.Equal(t, runtime.NameJSONSchema, coded.Name())
			assert.Equal(t, "unsupported JSON schema: "+strings.Join(tc.want, "; "), err.Error())
		})
	}
	_, err := runtime.NewTool("bad", "d", fn, runtime.WithTimeout(0))
	assert.ErrorContains(t, err, "timeout must be positive", "R11's timeout rule applies to the helper")
}

func TestNewTool_R103_DerivedSchemas(t *testing.T) {
	reg := rrNew(t)
	_, err := reg.Global().Register(rrReadTool(t, nil))
	require.NoError(t, err)
	ss, err := reg.View("").Schemas()
	require.NoError(t, err)
	require.Len(t, ss, 1)
	assert.Equal(t, "read", ss[0].Name)
	assert.Equal(t, "Read a file", ss[0].Description)
	assert.Equal(t,
		`{"type":"object","properties":{"path":{"type":"string","description":"file path"},"limit":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}},"opts":{"type":"object","properties":{"deep":{"type":"boolean"}},"required":["deep"],"additionalProperties":false}},"required":["path","opts"]}`,
		string(ss[0].Parameters), "declaration order kept; omitempty is optional; no additionalProperties at the root")
	def, _ := reg.View("").Get("read")
	assert.JSONEq(t,
		`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}`,
		string(def.Output.Schema.(json.RawMessage)))
}

func TestNewTool_R105_InvalidArgsMessageWithPaths(t *testing.T) {
	reg := rrNew(t)
	var calls atomic.Int64
	_, err := reg.Global().Register(rrReadTool(t, &calls))
	require.NoError(t, err)
	var post rrLog
	_, err = reg.Global().OnPostExecute(func(_ context.Context, e runtime.Execution, r *runtime.Result, next func() (runtime.PostDecision, error)) (runtime.PostDecision, error) {
		post.add(string(r.Code()))
		return next()
	})
	require.NoError(t, err)
	cases := []struct {
		name string
		args string
		msg  string
	}{
		{"types with paths", `{"path":3,"limit":1.5,"tags":[1],"opts":{"deep":"no"}}`,
			`invalid arguments: "path" must be a string; "limit" must be an integer; "tags[0]" must be a string; "opts.deep" must be a boolean`},
		{"missing required", `{}`, `invalid arguments: missing required property "path"; missing required property "opts"`},
		{"root", `[]`, `invalid arguments: "arguments" must be an object`},
		{"null is present", `{"path":null,"opts":{"deep":true}}`, `invalid arguments: "path" must be a string`},
		{"closed nested object", `{"path":"a","opts":{"deep":true,"x":1}}`,
			`invalid arguments: "opts.x" is not a declared property (additionalProperties: false)`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := reg.Execute(context.Background(), runtime.Call{ID: "1", Name: "read", Arguments: json.RawMessage(tc.args)})
			require.True(t, res.IsError())
			name, code, ok := res.ErrorInfo()
			require.True(t, ok)
			assert.Equal(t, runtime.NameToolArgs, name)
			assert.Equal(t, runtime.CodeInvalidArgs, code)
			assert.Equal(t, tc.msg, res.ErrorMessage())
			assert.Equal(t, "Error: "+tc.msg, res.Text())
			assert.Equal(t, []string{string(runtime.CodeInvalidArgs)}, post.take(), "flows through post-execute")
		})
	}
	assert.Equal(t, int64(0), calls.Load(), "the author's body never ran")

	res := reg.Execute(context.Background(), runtime.Call{ID: "2", Name: "read",
		Arguments: json.RawMessage(`{"path":"a.txt","opts":{"deep":true},"undeclared":1}`)})
	require.False(t, res.IsError(), res.ErrorMessage())
	v, ok := res.Value()
	require.True(t, ok)
	assert.JSONEq(t, `{"text":"contents of a.txt"}`, string(v))
	assert.Equal(t, int64(1), calls.Load(), "the root is open: undeclared keys pass (R101, R103)")
}

func TestNewTool_R105_ExplicitSchemaNoDefaults(t *testing.T) {
	reg := rrNew(t)
	params := `{"type":"object","properties":{"z":{"type":"integer","default":5},"a":{"type":"string"}},"required":["a"]}`
	var got []int
	d, err := runtime.NewTool("explicit", "E",
		func(ctx context.Context, in struct {
			Z int    `json:"z"`
			A string `json:"a"`
		}, rc *runtime.RunContext) (int, error) {
			got = append(got, in.Z)
			return in.Z, nil
		}, runtime.WithParametersSchema(json.RawMessage(params)))
	require.NoError(t, err)
	_, err = reg.Global().Register(d)
	require.NoError(t, err)
	ss, err := reg.View("").Schemas()
	require.NoError(t, err)
	assert.Equal(t, params, string(ss[0].Parameters), "explicit schema kept verbatim, in key order")
	res := reg.Execute(context.Background(), runtime.Call{ID: "1", Name: "explicit", Arguments: json.RawMessage(`{"a":"x"}`)})
	require.False(t, res.IsError(), res.ErrorMessage())
	assert.Equal(t, []int{0}, got, "defaults are never applied")
	res = reg.Execute(context.Background(), runtime.Call{ID: "2", Name: "explicit", Arguments: json.RawMessage(`{"a":"x","z":1.5}`)})
	assert.Equal(t, `invalid arguments: "z" must be an integer`, res.ErrorMessage())
}

func TestNewTool_R106_ClassifierExclusiveOnInvalidArgs(t *testing.T) {
	reg := rrNew(t)
	var clfCalls atomic.Int64
	d := rrReadTool(t, nil, runtime.WithClassifier(func(context.Context, json.RawMessage) (bool, error) {
		clfCalls.Add(1)
		return true, nil
	}))
	_, err := reg.Global().Register(d)
	require.NoError(t, err)
	bad := reg.View("").ExecutionMode(runtime.Call{Name: "read", Arguments: json.RawMessage(`{"path":1}`)})
	assert.Equal(t, runtime.Exclusive, bad)
	assert.Equal(t, int64(0), clfCalls.Load(), "the author's classifier is not called for invalid arguments")
	good := reg.View("").ExecutionMode(runtime.Call{Name: "read", Arguments: json.RawMessage(`{"path":"a","opts":{"deep":false}}`)})
	assert.Equal(t, runtime.Parallel, good)
	assert.Equal(t, int64(1), clfCalls.Load())

	par := rrReadTool(t, nil, runtime.WithParallel())
	par.Name = "readp"
	_, err = reg.Global().Register(par)
	require.NoError(t, err)
	assert.Equal(t, runtime.Exclusive, reg.View("").ExecutionMode(runtime.Call{Name: "readp", Arguments: json.RawMessage(`{}`)}))
	assert.Equal(t, runtime.Parallel, reg.View("").ExecutionMode(runtime.Call{Name: "readp", Arguments: map[string]any{"path": "p", "opts": map[string]any{"deep": true}}}))
}

// ---- §11 run_code ----

func TestRunCode_R107_Reserved(t *testing.T) {
	reg := rrNew(t)
	rrReg(t, reg.Global(), "g", "G")
	a := rrScope(t, reg, "a")
	grp, err := a.Group()
	require.NoError(t, err)
	changes := rrChanges(t, reg.Global())
	for _, s := range []*runtime.Scope{reg.Global(), a, grp} {
		_, err := s.Register(rrDef("run_code", "R"))
		assert.ErrorContains(t, err, "is reserved")
	}
	for _, r := range []runtime.Restriction{
		{Allow: []string{"run_code"}},
		{Deny: []string{"run_code"}},
		{Allow: []string{"g"}, Deny: []string{"nope", "run_code"}},
	} {
		_, err := a.Restrict(r)
		assert.ErrorContains(t, err, `cannot name reserved`)
	}
	assert.Equal(t, int64(0), changes.Load())
	for _, s := range []*runtime.Scope{reg.Global(), a} {
		res := rrExec(s, "run_code")
		require.True(t, res.IsError())
		name, code, ok := res.ErrorInfo()
		assert.True(t, ok)
		assert.Equal(t, runtime.NameToolNotFound, name)
		assert.Equal(t, runtime.CodeUnknownTool, code)
		assert.Equal(t, `unknown tool "run_code"`, res.ErrorMessage())
		_, ok = s.Get("run_code")
		assert.False(t, ok)
		assert.Equal(t, runtime.Exclusive, s.ExecutionMode(runtime.Call{Name: "run_code"}))
	}
	assert.Equal(t, []string{"g"}, rrView(t, reg, "a"))
}

func TestHooks_R86_SubscriberDisposingTheScopeBeingDisposed(t *testing.T) {
	reg := rrNew(t)
	a := rrScope(t, reg, "a")
	rrReg(t, a, "x", "A")
	rrReg(t, a, "y", "A")
	var calls atomic.Int64
	_, err := reg.Global().OnChange(func(context.Context) error { calls.Add(1); a.Dispose(); return nil })
	require.NoError(t, err)
	done := make(chan struct{})
	go func() { a.Dispose(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("deadlock")
	}
	assert.Equal(t, int64(2), calls.Load(), "every removal still announced")
	assert.Empty(t, rrView(t, reg, "a"), "teardown completed")
	_, err = a.Register(rrDef("z", "A"))
	assert.ErrorIs(t, err, runtime.ErrScopeDisposed)
	rrWithin(t, func() { require.NoError(t, reg.Close(context.Background())) })
}

// rrWithin fails the test if f does not return within 10s.
func rrWithin(t *testing.T, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("deadlock")
	}
}

// TestHooks_R86_SubscriberDisposingDuringGroupAndParentTeardown: the
// re-entrant cases around owner groups — a subscriber that disposes the
// parent scope while a group is being disposed, or the group while the
// parent's teardown disposes it, returns; both teardowns complete.
func TestHooks_R86_SubscriberDisposingDuringGroupAndParentTeardown(t *testing.T) {
	t.Run("parent from group teardown", func(t *testing.T) {
		reg := rrNew(t)
		a := rrScope(t, reg, "a")
		g, err := a.Group()
		require.NoError(t, err)
		rrReg(t, a, "own", "A")
		rrReg(t, g, "g1", "G")
		rrReg(t, g, "g2", "G")
		_, err = reg.Global().OnChange(func(context.Context) error { a.Dispose(); return nil })
		require.NoError(t, err)
		rrWithin(t, g.Dispose)
		assert.Empty(t, rrView(t, reg, "a"))
		_, err = a.Register(rrDef("z", "A"))
		assert.ErrorIs(t, err, runtime.ErrScopeDisposed)
		_, err = g.Register(rrDef("z", "A"))
		assert.ErrorIs(t, err, runtime.ErrScopeDisposed)
	})
	t.Run("group from parent teardown", func(t *testing.T) {
		reg := rrNew(t)
		a := rrScope(t, reg, "a")
		g, err := a.Group()
		require.NoError(t, err)
		rrReg(t, g, "g1", "G")
		rrReg(t, g, "g2", "G")
		rrReg(t, a, "own", "A")
		_, err = reg.Global().OnChange(func(context.Context) error { g.Dispose(); a.Dispose(); return nil })
		require.NoError(t, err)
		rrWithin(t, a.Dispose)
		assert.Empty(t, rrView(t, reg, "a"))
	})
}

// TestScope_R7_ConcurrentDisposeReturnsOnceTeardownComplete: a Dispose
// from another goroutine while a teardown is running returns once the
// teardown is complete — every removal made — even while the first Dispose
// is still announcing them (here: blocked in a subscriber); the first
// returns after its announcements.
func TestScope_R7_ConcurrentDisposeReturnsOnceTeardownComplete(t *testing.T) {
	reg := rrNew(t)
	a := rrScope(t, reg, "a")
	rrReg(t, a, "x", "A")
	rrReg(t, a, "y", "A")
	entered := make(chan struct{}, 2)
	release := make(chan struct{})
	_, err := reg.Global().OnChange(func(context.Context) error {
		entered <- struct{}{}
		<-release
		return nil
	})
	require.NoError(t, err)
	first := make(chan struct{})
	go func() { a.Dispose(); close(first) }()
	<-entered // the teardown is complete and its first announcement under way
	second := make(chan struct{})
	go func() { a.Dispose(); close(second) }()
	select {
	case <-second:
	case <-time.After(10 * time.Second):
		t.Fatal("a concurrent Dispose did not return once the teardown was complete")
	}
	assert.Empty(t, rrView(t, reg, "a"), "the teardown is complete when a concurrent Dispose returns")
	select {
	case <-first:
		t.Fatal("the first Dispose returned before announcing its removals")
	default:
	}
	close(release)
	select {
	case <-first:
	case <-time.After(10 * time.Second):
		t.Fatal("the first Dispose never returned")
	}
}
