package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/toolscope/toolscope/runtime"
)

func trivialDef(name string) runtime.Definition {
	return runtime.Definition{
		Name:       name,
		Parameters: json.RawMessage(`{"type":"object"}`),
		Output: &runtime.Output{
			Schema: json.RawMessage(`{"type":"string"}`),
			Render: func(_ context.Context, _, v json.RawMessage) ([]runtime.Block, error) {
				return []runtime.Block{runtime.Text(string(v))}, nil
			},
		},
		Execute: func(ctx context.Context, args json.RawMessage, rc *runtime.RunContext) (any, error) {
			return "ok", nil
		},
		IsConcurrencySafe: func(context.Context, json.RawMessage) (bool, error) { return true, nil },
	}
}

func BenchmarkHotPath_ExecuteBare(b *testing.B) {
	reg, _ := runtime.New(runtime.WithEvents(false))
	defer reg.Close(context.Background())
	reg.Global().Register(trivialDef("t"))
	s, _ := reg.NewScope("a")
	ctx := context.Background()
	call := runtime.Call{ID: "1", Name: "t", Arguments: json.RawMessage(`{}`)}
	b.ReportAllocs()
	for b.Loop() {
		if r := s.Execute(ctx, call); r.IsError() {
			b.Fatal(r.ErrorMessage())
		}
	}
}

func BenchmarkHotPath_ExecuteBareEvents(b *testing.B) {
	reg, _ := runtime.New()
	defer reg.Close(context.Background())
	reg.Global().Register(trivialDef("t"))
	s, _ := reg.NewScope("a")
	ctx := context.Background()
	call := runtime.Call{ID: "1", Name: "t", Arguments: json.RawMessage(`{}`)}
	b.ReportAllocs()
	for b.Loop() {
		s.Execute(ctx, call)
	}
}

func BenchmarkHotPath_Turn16(b *testing.B) {
	reg, _ := runtime.New(runtime.WithEvents(false))
	defer reg.Close(context.Background())
	reg.Global().Register(trivialDef("t"))
	s, _ := reg.NewScope("a")
	ctx := context.Background()
	calls := make([]runtime.TurnCall, 16)
	for i := range calls {
		calls[i] = runtime.TurnCall{ID: "c", Name: "t", ArgumentsText: `{}`}
	}
	b.ReportAllocs()
	for b.Loop() {
		s.ExecuteTurn(ctx, calls, runtime.WithMaxParallel(16))
	}
}

func BenchmarkHotPath_Turn16Typed(b *testing.B) {
	reg, _ := runtime.New(runtime.WithEvents(false))
	defer reg.Close(context.Background())
	def, err := runtime.NewTool("t", "trivial tool",
		func(ctx context.Context, in struct {
			X string `json:"x"`
		}, rc *runtime.RunContext) (string, error) {
			return "ok", nil
		}, runtime.WithParallel())
	if err != nil {
		b.Fatal(err)
	}
	reg.Global().Register(def)
	s, _ := reg.NewScope("a")
	ctx := context.Background()
	calls := make([]runtime.TurnCall, 16)
	for i := range calls {
		calls[i] = runtime.TurnCall{ID: "c", Name: "t", ArgumentsText: `{"x":"a"}`}
	}
	b.ReportAllocs()
	for b.Loop() {
		s.ExecuteTurn(ctx, calls, runtime.WithMaxParallel(16))
	}
}

// BenchmarkHotPath_ExecuteFull: 1 pre-execute hook, 1 guard, 1
// post-execute hook and 1 result observer, each a pass-through.
func BenchmarkHotPath_ExecuteFull(b *testing.B) {
	reg, _ := runtime.New()
	defer reg.Close(context.Background())
	reg.Global().Register(trivialDef("t"))
	s, _ := reg.NewScope("a")
	s.OnPreExecute(func(_ context.Context, e runtime.Execution, next func() (runtime.Decision, error)) (runtime.Decision, error) {
		return next()
	})
	s.Guard(func(_ context.Context, e runtime.Execution) (string, bool) { return "", false })
	s.OnPostExecute(func(_ context.Context, e runtime.Execution, r *runtime.Result, next func() (runtime.PostDecision, error)) (runtime.PostDecision, error) {
		return next()
	})
	s.OnResult(func(_ context.Context, e runtime.Execution, r *runtime.Result) error { return nil })
	ctx := context.Background()
	call := runtime.Call{ID: "1", Name: "t", Arguments: json.RawMessage(`{}`)}
	b.ReportAllocs()
	for b.Loop() {
		if r := s.Execute(ctx, call); r.IsError() {
			b.Fatal(r.ErrorMessage())
		}
	}
}

// BenchmarkHotPath_Nested16 is one call whose body makes 16 nested calls
// (the admission path of a nested call, as a Code Mode program's calls
// take); BenchmarkHotPath_Direct17 is the same 17 calls made directly.
func BenchmarkHotPath_Nested16(b *testing.B) {
	reg, _ := runtime.New(runtime.WithEvents(false))
	defer reg.Close(context.Background())
	reg.Global().Register(trivialDef("t"))
	outer := trivialDef("outer")
	inner := runtime.Call{ID: "n", Name: "t", Agent: "a", Arguments: json.RawMessage(`{}`)}
	outer.Execute = func(ctx context.Context, args json.RawMessage, rc *runtime.RunContext) (any, error) {
		for range 16 {
			if r := reg.Execute(ctx, inner); r.IsError() {
				return nil, errors.New(r.ErrorMessage())
			}
		}
		return "ok", nil
	}
	reg.Global().Register(outer)
	s, _ := reg.NewScope("a")
	ctx := context.Background()
	call := runtime.Call{ID: "1", Name: "outer", Arguments: json.RawMessage(`{}`)}
	b.ReportAllocs()
	for b.Loop() {
		if r := s.Execute(ctx, call); r.IsError() {
			b.Fatal(r.ErrorMessage())
		}
	}
}

func BenchmarkHotPath_Direct17(b *testing.B) {
	reg, _ := runtime.New(runtime.WithEvents(false))
	defer reg.Close(context.Background())
	reg.Global().Register(trivialDef("t"))
	s, _ := reg.NewScope("a")
	ctx := context.Background()
	call := runtime.Call{ID: "1", Name: "t", Arguments: json.RawMessage(`{}`)}
	b.ReportAllocs()
	for b.Loop() {
		for range 17 {
			if r := s.Execute(ctx, call); r.IsError() {
				b.Fatal(r.ErrorMessage())
			}
		}
	}
}

// BenchmarkHotPath_NestedTurn16 is one call whose body runs a 16-call turn
// (a Code Mode parallel list); compare BenchmarkHotPath_Turn16 plus one
// Execute.
func BenchmarkHotPath_NestedTurn16(b *testing.B) {
	reg, _ := runtime.New(runtime.WithEvents(false))
	defer reg.Close(context.Background())
	reg.Global().Register(trivialDef("t"))
	s, _ := reg.NewScope("a")
	calls := make([]runtime.TurnCall, 16)
	for i := range calls {
		calls[i] = runtime.TurnCall{ID: "c", Name: "t", ArgumentsText: `{}`}
	}
	outer := trivialDef("outer")
	outer.Execute = func(ctx context.Context, args json.RawMessage, rc *runtime.RunContext) (any, error) {
		if _, err := s.ExecuteTurn(ctx, calls, runtime.WithMaxParallel(16)); err != nil {
			return nil, err
		}
		return "ok", nil
	}
	reg.Global().Register(outer)
	ctx := context.Background()
	call := runtime.Call{ID: "1", Name: "outer", Arguments: json.RawMessage(`{}`)}
	b.ReportAllocs()
	for b.Loop() {
		if r := s.Execute(ctx, call); r.IsError() {
			b.Fatal(r.ErrorMessage())
		}
	}
}

// exclusiveDef is trivialDef classified exclusive: its calls run one at a
// time in a scope.
func exclusiveDef(name string) runtime.Definition {
	d := trivialDef(name)
	d.IsConcurrencySafe = func(context.Context, json.RawMessage) (bool, error) { return false, nil }
	return d
}

// BenchmarkHotPath_ContendedExclusive: exclusive calls from 8 goroutines
// per core on one scope, so most of them wait for admission in the scope's
// FIFO line (the admission line's path, not the CAS fast path).
func BenchmarkHotPath_ContendedExclusive(b *testing.B) {
	reg, _ := runtime.New(runtime.WithEvents(false))
	defer reg.Close(context.Background())
	reg.Global().Register(exclusiveDef("x"))
	s, _ := reg.NewScope("a")
	ctx := context.Background()
	call := runtime.Call{ID: "1", Name: "x", Arguments: json.RawMessage(`{}`)}
	b.ReportAllocs()
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if r := s.Execute(ctx, call); r.IsError() {
				b.Error(r.ErrorMessage())
				return
			}
		}
	})
}

// BenchmarkHotPath_ContendedMixed: as ContendedExclusive, every fourth
// call exclusive and the others parallel, so parallel calls queue behind
// exclusive ones and are admitted together.
func BenchmarkHotPath_ContendedMixed(b *testing.B) {
	reg, _ := runtime.New(runtime.WithEvents(false))
	defer reg.Close(context.Background())
	reg.Global().Register(exclusiveDef("x"))
	reg.Global().Register(trivialDef("p"))
	s, _ := reg.NewScope("a")
	ctx := context.Background()
	calls := [4]runtime.Call{
		{ID: "1", Name: "x", Arguments: json.RawMessage(`{}`)},
		{ID: "2", Name: "p", Arguments: json.RawMessage(`{}`)},
		{ID: "3", Name: "p", Arguments: json.RawMessage(`{}`)},
		{ID: "4", Name: "p", Arguments: json.RawMessage(`{}`)},
	}
	b.ReportAllocs()
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if r := s.Execute(ctx, calls[i&3]); r.IsError() {
				b.Error(r.ErrorMessage())
				return
			}
			i++
		}
	})
}

// noopCollectorHooks are no-op functions at the points the load tool's
// collector hangs off (CallFinished, CallAborted, TurnStart): what merely
// setting them costs a call.
func noopCollectorHooks() runtime.Option {
	return runtime.WithHooks(runtime.Hooks{
		CallFinished: func(runtime.Execution, runtime.CallDone) {},
		CallAborted:  func(context.Context, runtime.CallInfo) {},
		TurnStart:    func(ctx context.Context, _ runtime.TurnInfo) context.Context { return ctx },
	})
}

func benchTurnHooks(b *testing.B, n int, opts ...runtime.Option) {
	reg, _ := runtime.New(append([]runtime.Option{runtime.WithEvents(false)}, opts...)...)
	defer reg.Close(context.Background())
	reg.Global().Register(trivialDef("t"))
	s, _ := reg.NewScope("a")
	ctx := context.Background()
	calls := make([]runtime.TurnCall, n)
	for i := range calls {
		calls[i] = runtime.TurnCall{ID: "c", Name: "t", ArgumentsText: `{}`}
	}
	b.ReportAllocs()
	for b.Loop() {
		s.ExecuteTurn(ctx, calls, runtime.WithMaxParallel(n))
	}
}

// BenchmarkHotPath_Turn16Hooks is Turn16 with no-op hooks at the load
// collector's points (CallFinished, CallAborted, TurnStart); Turn4Hooks
// and Turn4 the same with 4-call turns.
func BenchmarkHotPath_Turn16Hooks(b *testing.B) { benchTurnHooks(b, 16, noopCollectorHooks()) }

func BenchmarkHotPath_Turn4Hooks(b *testing.B) { benchTurnHooks(b, 4, noopCollectorHooks()) }

func BenchmarkHotPath_Turn4(b *testing.B) { benchTurnHooks(b, 4) }
