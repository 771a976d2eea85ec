package otelscope_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/toolscope/toolscope/runtime"
)

// The helpers of runtime's tests that the tests moved from there use.

const testTimeout = 10 * time.Second

type r3Body = func(context.Context, json.RawMessage, *runtime.RunContext) (any, error)

func r3Reg(t testing.TB, opts ...runtime.Option) *runtime.Registry {
	t.Helper()
	reg, err := runtime.New(opts...)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		_ = reg.Close(ctx)
	})
	return reg
}

func r3Render(_ context.Context, _, value json.RawMessage) ([]runtime.Block, error) {
	return []runtime.Block{runtime.Text(string(value))}, nil
}

func r3Tool(name string, body r3Body) runtime.Definition {
	return runtime.Definition{
		Name:        name,
		Description: "tool " + name,
		Parameters:  map[string]any{"type": "object"},
		Output:      &runtime.Output{Schema: map[string]any{}, Render: r3Render},
		Execute:     body,
	}
}

func r3Const(name string, v any) runtime.Definition {
	return r3Tool(name, func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) { return v, nil })
}

// r3M unwraps a (disposer, error) pair; an error panics, failing the test.
func r3M(d func(), err error) func() {
	if err != nil {
		panic(err)
	}
	return d
}

func r3Scope(t testing.TB, reg *runtime.Registry, key string) *runtime.Scope {
	t.Helper()
	s, err := reg.NewScope(key)
	require.NoError(t, err)
	return s
}

// nestAwait waits for ch or fails the test with a goroutine dump.
func nestAwait[T any](t testing.TB, ch <-chan T) T {
	t.Helper()
	timer := time.NewTimer(testTimeout)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		var buf bytes.Buffer
		_ = pprof.Lookup("goroutine").WriteTo(&buf, 2)
		t.Fatalf("timed out (deadlock?); goroutines:\n%s", buf.String())
		var zero T
		return zero
	}
}

func nestGo(s *runtime.Scope, ctx context.Context, call runtime.Call) <-chan *runtime.Result {
	ch := make(chan *runtime.Result, 1)
	go func() { ch <- s.Execute(ctx, call) }()
	return ch
}

func nestTool(name string, parallel bool, body r3Body) runtime.Definition {
	d := r3Tool(name, body)
	d.IsConcurrencySafe = func(context.Context, json.RawMessage) (bool, error) { return parallel, nil }
	return d
}

// eventually polls cond (bounded); on timeout it fails with a goroutine
// dump.
func eventually(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			var buf bytes.Buffer
			_ = pprof.Lookup("goroutine").WriteTo(&buf, 2)
			t.Fatalf("condition not met in %v; goroutines:\n%s", testTimeout, buf.String())
		}
		time.Sleep(time.Millisecond)
	}
}

// registerEveryKind registers, on s, a parallel tool (par), an exclusive
// one (excl), a failing one (fail), a denied one (denied: a guard refuses
// it) and an exclusive one (outer) that calls par nested, as call "inner".
func registerEveryKind(s *runtime.Scope) {
	r3M(s.Register(nestTool("par", true, func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) { return "p", nil })))
	r3M(s.Register(nestTool("excl", false, func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) { return "x", nil })))
	r3M(s.Register(nestTool("fail", true, func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) {
		return nil, errors.New("boom")
	})))
	r3M(s.Register(nestTool("denied", true, func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) { return "no", nil })))
	r3M(s.Register(nestTool("outer", false, func(ctx context.Context, _ json.RawMessage, rc *runtime.RunContext) (any, error) {
		return s.Execute(ctx, runtime.Call{ID: "inner", Name: "par"}).Text(), nil
	})))
	r3M(s.Guard(func(_ context.Context, e runtime.Execution) (string, bool) {
		return "not allowed", e.Name() == "denied"
	}))
}

func exampleTool(name string) runtime.Definition {
	d, err := runtime.NewTool(name, "the "+name+" tool",
		func(ctx context.Context, in struct{}, rc *runtime.RunContext) (string, error) {
			return name + " ran", nil
		})
	if err != nil {
		log.Fatal(err)
	}
	return d
}
