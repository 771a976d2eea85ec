package runtime_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolscope/toolscope/runtime"
)

// R86, R51: the renderer and the presentation-metadata projector receive a
// ctx that carries their execution, so an Execute they make with it in
// their own scope is nested: it runs inside the exclusive admission their
// call holds instead of queuing behind it (which hung: they had no ctx to
// pass, and context.Background() waited for their own call forever).
func TestReentrancy_R86_RendererAndProjectorNestWithTheirCtx(t *testing.T) {
	reg := mustNew(t)
	defer closeNow(t, reg)
	s, err := reg.NewScope("s")
	if err != nil {
		t.Fatal(err)
	}
	mustRegister(t, s, hdef("inner", false, func(context.Context) (any, error) { return "inner ran", nil }))
	d := hdef("outer", false, func(context.Context) (any, error) { return "outer", nil })
	d.Output.Render = func(ctx context.Context, _, v json.RawMessage) ([]runtime.Block, error) {
		r := s.Execute(ctx, runtime.Call{ID: "from-render", Name: "inner"})
		if r.IsError() {
			return nil, &renderErr{r.ErrorMessage()}
		}
		return []runtime.Block{runtime.Text(string(v) + " / " + r.Text())}, nil
	}
	d.Output.PresentationMeta = func(ctx context.Context, _, _ json.RawMessage) (any, error) {
		r := s.Execute(ctx, runtime.Call{ID: "from-meta", Name: "inner"})
		return map[string]any{"inner": r.Text(), "error": r.IsError()}, nil
	}
	mustRegister(t, s, d)
	var r *runtime.Result
	boundedWait(t, waitLimit, "a call whose renderer and projector make nested calls in its scope", func() {
		r = s.Execute(context.Background(), runtime.Call{ID: "1", Name: "outer"})
	})
	if r.IsError() || !strings.Contains(r.Text(), "inner ran") {
		t.Fatalf("outer: %s (error %v), want the renderer's nested result", r.Text(), r.IsError())
	}
	m, _ := r.Meta()
	if meta := string(m); !strings.Contains(meta, `inner ran`) || !strings.Contains(meta, `"error":false`) {
		t.Fatalf("outer's metadata %s, want the projector's nested result", meta)
	}
}

type renderErr struct{ msg string }

func (e *renderErr) Error() string { return e.msg }

// R86, R36: the classifier receives the ctx of the execution it classifies.
// An exclusive body calls a tool whose classifier makes an exclusive call in
// the body's scope with that ctx: the call is nested in the body's
// admission and runs.
func TestReentrancy_R86_ClassifierNestsWithItsCtx(t *testing.T) {
	reg := mustNew(t)
	defer closeNow(t, reg)
	s, err := reg.NewScope("s")
	if err != nil {
		t.Fatal(err)
	}
	mustRegister(t, s, hdef("inner", false, func(context.Context) (any, error) { return "inner ran", nil }))
	classified := make(chan *runtime.Result, 1)
	c := hdef("classified", true, func(context.Context) (any, error) { return "c", nil })
	c.IsConcurrencySafe = func(ctx context.Context, _ json.RawMessage) (bool, error) {
		if _, ok := runtime.ExecutionFromContext(ctx); ok {
			select {
			case classified <- s.Execute(ctx, runtime.Call{ID: "from-classifier", Name: "inner"}):
			default:
			}
		}
		return true, nil
	}
	mustRegister(t, s, c)
	mustRegister(t, s, hdef("body", false, func(ctx context.Context) (any, error) {
		r := s.Execute(ctx, runtime.Call{ID: "c", Name: "classified"})
		return r.Text(), nil
	}))
	var r *runtime.Result
	boundedWait(t, waitLimit, "an exclusive body calling a tool whose classifier nests", func() {
		r = s.Execute(context.Background(), runtime.Call{ID: "1", Name: "body"})
	})
	if r.IsError() {
		t.Fatalf("body: %s", r.Text())
	}
	select {
	case n := <-classified:
		if n.IsError() || n.Text() != `"inner ran"` {
			t.Fatalf("the classifier's nested call: %s (error %v)", n.Text(), n.IsError())
		}
	default:
		t.Fatal("the classifier got a ctx without its execution")
	}
}

// R86: a change subscriber's ctx carries no execution (Register takes no
// ctx, so the call that made the change is unknown). A call it makes with
// that ctx that cannot be admitted at once fails with WOULD_DEADLOCK instead
// of waiting — here it would wait for the exclusive body that registered,
// which waits for the subscriber: a hang. One that can be admitted at once
// runs.
func TestReentrancy_R86_ChangeSubscriberCallFailsInsteadOfWaiting(t *testing.T) {
	reg := mustNew(t)
	defer closeNow(t, reg)
	s, err := reg.NewScope("s")
	if err != nil {
		t.Fatal(err)
	}
	mustRegister(t, s, hdef("inner", false, func(context.Context) (any, error) { return "inner ran", nil }))
	heard := make(chan *runtime.Result, 4)
	if _, err := reg.Global().OnChange(func(ctx context.Context) error {
		heard <- s.Execute(ctx, runtime.Call{ID: "from-subscriber", Name: "inner"})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	mustRegister(t, s, hdef("registers", false, func(context.Context) (any, error) {
		if _, err := s.Register(hdef("late", true, nil)); err != nil {
			return nil, err
		}
		return "registered", nil
	}))
	<-heard // the registration of "registers" itself, made outside any call
	var r *runtime.Result
	boundedWait(t, waitLimit, "an exclusive body whose registration's subscriber calls into its scope", func() {
		r = s.Execute(context.Background(), runtime.Call{ID: "1", Name: "registers"})
	})
	if r.IsError() {
		t.Fatalf("the registering body: %s", r.Text())
	}
	var n *runtime.Result
	boundedWait(t, waitLimit, "the subscriber's call", func() { n = <-heard })
	if n.Code() != runtime.CodeWouldDeadlock {
		t.Fatalf("the subscriber's call inside the exclusive body: %q %s, want WOULD_DEADLOCK", n.Code(), n.Text())
	}
	// Outside any call the subscriber's call is admitted at once and runs.
	mustRegister(t, s, hdef("later", true, nil))
	boundedWait(t, waitLimit, "the subscriber's call", func() { n = <-heard })
	if n.IsError() || n.Text() != `"inner ran"` {
		t.Fatalf("the subscriber's call outside any call: %s (error %v)", n.Text(), n.IsError())
	}
}

// R86, R36: ExecutionMode classifies for no execution, so the classifier
// it runs gets a callback ctx without one: an exclusive body asking for the
// mode of a tool whose classifier calls into the body's scope gets its
// answer, and that call fails with WOULD_DEADLOCK instead of waiting for
// the body.
func TestReentrancy_R86_ExecutionModeClassifierCallFailsInsteadOfWaiting(t *testing.T) {
	reg := mustNew(t)
	defer closeNow(t, reg)
	s, err := reg.NewScope("s")
	if err != nil {
		t.Fatal(err)
	}
	mustRegister(t, s, hdef("inner", false, func(context.Context) (any, error) { return "inner ran", nil }))
	fromClassifier := make(chan *runtime.Result, 1)
	c := hdef("classified", true, nil)
	c.IsConcurrencySafe = func(ctx context.Context, _ json.RawMessage) (bool, error) {
		fromClassifier <- s.Execute(ctx, runtime.Call{ID: "from-classifier", Name: "inner"})
		return true, nil
	}
	mustRegister(t, s, c)
	mustRegister(t, s, hdef("asks", false, func(context.Context) (any, error) {
		return s.ExecutionMode(runtime.Call{Name: "classified"}).String(), nil
	}))
	var r *runtime.Result
	boundedWait(t, waitLimit, "an exclusive body asking ExecutionMode of a tool whose classifier calls into its scope", func() {
		r = s.Execute(context.Background(), runtime.Call{ID: "1", Name: "asks"})
	})
	if r.IsError() || r.Text() != `"parallel"` {
		t.Fatalf("ExecutionMode from the body: %s (error %v), want parallel", r.Text(), r.IsError())
	}
	var n *runtime.Result
	boundedWait(t, waitLimit, "the classifier's call", func() { n = <-fromClassifier })
	if n.Code() != runtime.CodeWouldDeadlock {
		t.Fatalf("the classifier's call: %q %s, want WOULD_DEADLOCK", n.Code(), n.Text())
	}
}
