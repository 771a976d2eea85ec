package runtime

import (
	"context"
	"testing"
	"time"
)

type valueTestKey struct{}

// A call's ctx (its shutdownAwareCtx, the turn's for a turn's call) builds
// its cancel link on first need: Done, or the context package's own Value
// lookup (how a ctx derived from it finds its parent cancel ctx). A hook or
// body reading any other value — the caller's, the execution — gets what
// the caller's ctx holds without the link; a ctx derived from the call's
// still builds it and is cancelled when the call ends.
func TestCallCtx_R80_ValueBuildsNoCancelLink(t *testing.T) {
	type seen struct {
		value     any
		linkAfter bool // after the Value lookups
		linkDeriv bool // after context.WithCancel
		derived   context.Context
	}
	run := map[string]func(t *testing.T, reg *Registry, ctx context.Context){
		"Execute": func(t *testing.T, reg *Registry, ctx context.Context) {
			if res := reg.Global().Execute(ctx, Call{Name: "v", Arguments: map[string]any{}}); res.IsError() {
				t.Fatal(res.ErrorMessage())
			}
		},
		"ExecuteTurn": func(t *testing.T, reg *Registry, ctx context.Context) {
			tr, err := reg.Global().ExecuteTurn(ctx, []TurnCall{{ID: "c0", Name: "v"}})
			if err != nil || tr.Results[0].IsError() {
				t.Fatalf("%v %+v", err, tr)
			}
		},
	}
	for name, f := range run {
		t.Run(name, func(t *testing.T) {
			got := make(chan seen, 1)
			reg, err := New()
			if err != nil {
				t.Fatal(err)
			}
			defer reg.Close(context.Background())
			tool, err := NewTool("v", "v", func(ctx context.Context, _ struct{}, _ *RunContext) (string, error) {
				var s seen
				s.value = ctx.Value(valueTestKey{})
				ex, _ := ExecutionFromContext(ctx)
				sa, ok := ex.s.ectx.Context.(*shutdownAwareCtx)
				if !ok {
					t.Errorf("the execution's ctx is a %T", ex.s.ectx.Context)
					got <- s
					return "", nil
				}
				s.linkAfter = sa.link.Load() != nil
				d, cancel := context.WithCancel(ctx)
				_ = cancel // ended by the call's end, which the test checks
				s.linkDeriv, s.derived = sa.link.Load() != nil, d
				got <- s
				return "ok", nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := reg.Global().Register(tool); err != nil {
				t.Fatal(err)
			}
			f(t, reg, context.WithValue(context.Background(), valueTestKey{}, "the caller's"))
			s := <-got
			if s.value != "the caller's" {
				t.Fatalf("Value = %v, want the caller's value", s.value)
			}
			if s.linkAfter {
				t.Fatal("a Value lookup of another key built the cancel link")
			}
			if !s.linkDeriv {
				t.Fatal("context.WithCancel under the call's ctx did not build the link")
			}
			select {
			case <-s.derived.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("a ctx derived from the call's stayed live after the call ended")
			}
		})
	}
}
