package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolscope/toolscope/runtime"
)

// R86: every callback may call any registry method without deadlock.

type r3Reentry struct {
	t    *testing.T
	reg  *runtime.Registry
	a, b *runtime.Scope
	seq  atomic.Int64
	hits sync.Map // stage -> *atomic.Int32
}

func (r *r3Reentry) hit(stage string) {
	v, _ := r.hits.LoadOrStore(stage, new(atomic.Int32))
	v.(*atomic.Int32).Add(1)
}

func (r *r3Reentry) count(stage string) int32 {
	v, ok := r.hits.Load(stage)
	if !ok {
		return 0
	}
	return v.(*atomic.Int32).Load()
}

// mutateAndRead does Register / Dispose / Restrict / Guard / Get / Schemas
// on s; it returns an error instead of failing so it may run anywhere.
func (r *r3Reentry) mutateAndRead(s *runtime.Scope) error {
	name := fmt.Sprintf("tmp_%d", r.seq.Add(1))
	d, err := s.Register(r3Const(name, 1))
	if err != nil {
		return fmt.Errorf("register: %w", err)
	}
	if _, ok := s.Get(name); !ok {
		return fmt.Errorf("get %s: not found", name)
	}
	if _, err := s.Schemas(); err != nil {
		return fmt.Errorf("schemas: %w", err)
	}
	d()
	if _, ok := s.Get(name); ok {
		return fmt.Errorf("get %s after dispose: found", name)
	}
	rd, err := s.Restrict(runtime.Restriction{Deny: []string{"g"}})
	if err != nil {
		return fmt.Errorf("restrict: %w", err)
	}
	rd()
	gd, err := s.Guard(func(context.Context, runtime.Execution) (string, bool) { return "", false })
	if err != nil {
		return fmt.Errorf("guard: %w", err)
	}
	gd()
	return nil
}

// reenter runs mutateAndRead and a nested Execute on the same and on the
// other scope.
func (r *r3Reentry) reenter(stage string, ctx context.Context, parent runtime.Token) {
	r.hit(stage)
	for _, s := range []*runtime.Scope{r.a, r.b} {
		assert.NoError(r.t, r.mutateAndRead(s), "%s on %s", stage, s.Key())
		leaf := s.Key() + "_leaf"
		res := s.Execute(ctx, runtime.Call{ID: stage + "-nested", Name: leaf, Parent: parent})
		assert.False(r.t, res.IsError(), "%s nested %s: %s", stage, leaf, res.ErrorMessage())
	}
	// Create and dispose a whole scope too.
	tmp, err := r.reg.NewScope(fmt.Sprintf("tmp_scope_%d", r.seq.Add(1)))
	if assert.NoError(r.t, err) {
		tmp.Dispose()
	}
}

func TestReentrancy_R86_EveryCallbackCallsRegistryMethods(t *testing.T) {
	reg := r3Reg(t)
	a := r3Scope(t, reg, "a")
	b := r3Scope(t, reg, "b")
	r := &r3Reentry{t: t, reg: reg, a: a, b: b}
	r3M(reg.Global().Register(r3Const("g", "global")))
	r3M(a.Register(r3Const("a_leaf", "leaf")))
	r3M(b.Register(r3Const("b_leaf", "leaf")))

	top := func(e runtime.Execution) bool { return e.Name() == "a_tool" && e.Parent().IsZero() }

	def := r3Tool("a_tool", func(ctx context.Context, _ json.RawMessage, rc *runtime.RunContext) (any, error) {
		r.reenter("body", ctx, rc.Token())
		return "top", nil
	})
	def.IsConcurrencySafe = func(context.Context, json.RawMessage) (bool, error) {
		r.hit("classifier")
		return false, r.mutateAndRead(b)
	}
	def.Output.Render = func(_ context.Context, _, v json.RawMessage) ([]runtime.Block, error) {
		r.hit("renderer")
		if err := r.mutateAndRead(a); err != nil {
			return nil, err
		}
		return []runtime.Block{runtime.Text(string(v))}, nil
	}
	def.FinalizeContent = func(_ context.Context, e runtime.Execution, _ *runtime.Result) ([]runtime.Block, error) {
		if top(e) {
			r.reenter("finalizer", e.Context(), e.Token())
		}
		return nil, nil
	}
	r3M(a.Register(def))
	r3M(a.Guard(func(_ context.Context, e runtime.Execution) (string, bool) {
		if top(e) {
			r.reenter("guard", e.Context(), e.Token())
		}
		return "", false
	}))
	r3M(a.OnPreExecute(func(_ context.Context, e runtime.Execution, next func() (runtime.Decision, error)) (runtime.Decision, error) {
		if top(e) {
			r.reenter("pre", e.Context(), e.Token())
		}
		return next()
	}))
	r3M(a.OnExecute(func(ctx context.Context, e runtime.Execution, next func(context.Context) *runtime.Result) (*runtime.Result, error) {
		if top(e) {
			r.reenter("around", ctx, e.Token())
		}
		return next(nil), nil
	}))
	r3M(a.OnPostExecute(func(_ context.Context, e runtime.Execution, _ *runtime.Result, next func() (runtime.PostDecision, error)) (runtime.PostDecision, error) {
		if top(e) {
			r.reenter("post", e.Context(), e.Token())
		}
		return next()
	}))
	r3M(a.OnResult(func(_ context.Context, e runtime.Execution, _ *runtime.Result) error {
		if top(e) {
			r.reenter("observer", e.Context(), e.Token())
		}
		return nil
	}))

	const calls = 4
	ctx, cancel := context.WithTimeout(context.Background(), r3Timeout)
	defer cancel()
	done := make(chan *runtime.Result, calls)
	for i := range calls {
		go func() { done <- a.Execute(ctx, runtime.Call{ID: fmt.Sprintf("top-%d", i), Name: "a_tool"}) }()
	}
	for range calls {
		select {
		case res := <-done:
			r3Success(t, res, `"top"`)
		case <-ctx.Done():
			t.Fatal("re-entrant callbacks deadlocked")
		}
	}
	for _, stage := range []string{"guard", "pre", "around", "body", "post", "finalizer", "observer"} {
		assert.Equal(t, int32(calls), r.count(stage), stage)
	}
	assert.GreaterOrEqual(t, r.count("classifier"), int32(calls))
	assert.GreaterOrEqual(t, r.count("renderer"), int32(calls))

	// Everything still works afterwards and nothing leaked.
	require.Equal(t, []string{"g", "a_leaf", "a_tool"}, r3Names(a))
	r3Success(t, r3Exec(t, b, context.Background(), r3Call("b_leaf", nil)), `"leaf"`)
}

func r3Names(s *runtime.Scope) []string {
	list, err := s.Schemas()
	if err != nil {
		return nil
	}
	out := make([]string, len(list))
	for i, x := range list {
		out[i] = x.Name
	}
	return out
}

func TestReentrancy_R86_ObserverAndChangeSubscriberReenterGlobal(t *testing.T) {
	reg := r3Reg(t)
	g := reg.Global()
	r3M(g.Register(r3Const("t", 1)))
	var nested atomic.Int32
	r3M(g.OnResult(func(_ context.Context, e runtime.Execution, _ *runtime.Result) error {
		if !e.Parent().IsZero() {
			return nil
		}
		// A call without agent re-entering the global scope's admission line.
		res := g.Execute(e.Context(), runtime.Call{ID: "n", Name: "t", Parent: e.Token()})
		if !res.IsError() {
			nested.Add(1)
		}
		_, err := reg.View("").Schemas()
		return err
	}))
	r3M(g.OnChange(func(context.Context) error {
		_, _ = reg.View("").Get("t")
		return nil
	}))
	r3Success(t, r3Exec(t, g, context.Background(), r3Call("t", nil)), "1")
	assert.Equal(t, int32(1), nested.Load())
	d := r3M(g.Register(r3Const("u", 2)))
	d()
}
