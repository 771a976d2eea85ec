package runtime_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/toolscope/toolscope/runtime"
)

func trivialDef(name string) runtime.Definition {
	return runtime.Definition{
		Name:       name,
		Parameters: json.RawMessage(`{"type":"object"}`),
		Output: &runtime.Output{
			Schema: json.RawMessage(`{"type":"string"}`),
			Render: func(_, v json.RawMessage) ([]runtime.Block, error) {
				return []runtime.Block{runtime.Text(string(v))}, nil
			},
		},
		Execute: func(ctx context.Context, args json.RawMessage, rc *runtime.RunContext) (any, error) {
			return "ok", nil
		},
		IsConcurrencySafe: func(json.RawMessage) (bool, error) { return true, nil },
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
