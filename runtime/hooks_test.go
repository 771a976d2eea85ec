package runtime_test

import (
	"context"
	"sync"
	"testing"

	"github.com/toolscope/toolscope/runtime"
)

// TestHooks_EventSeesEveryEventInPlace: a Hooks.Event hears each call's
// started/finished pair on the caller's goroutine before Execute returns,
// never dropped, and a panicking hook is contained and reported.
func TestHooks_EventSeesEveryEventInPlace(t *testing.T) {
	var mu sync.Mutex
	var kinds []runtime.EventKind
	var reported []error
	reg, err := runtime.New(
		runtime.WithHooks(runtime.Hooks{Event: func(e runtime.Event) {
			if e.Kind == runtime.RegistryChanged {
				return
			}
			mu.Lock()
			kinds = append(kinds, e.Kind)
			mu.Unlock()
		}}),
		runtime.WithHooks(runtime.Hooks{Event: func(e runtime.Event) {
			if e.Kind == runtime.ExecutionFinished {
				panic("hook boom")
			}
		}}),
		runtime.WithHooks(runtime.Hooks{}), // ignored
		runtime.WithErrorHandler(func(err error) { mu.Lock(); reported = append(reported, err); mu.Unlock() }),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close(context.Background())
	echo, err := runtime.NewTool("echo", "echo", func(ctx context.Context, in struct{}, rc *runtime.RunContext) (string, error) {
		return "ok", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Global().Register(echo); err != nil {
		t.Fatal(err)
	}
	const n = 50
	for range n {
		if res := reg.Global().Execute(context.Background(), runtime.Call{Name: "echo", Arguments: map[string]any{}}); res.IsError() {
			t.Fatal(res.ErrorMessage())
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(kinds) != 2*n {
		t.Fatalf("hook heard %d events, want %d", len(kinds), 2*n)
	}
	for i, k := range kinds {
		want := runtime.ExecutionStarted
		if i%2 == 1 {
			want = runtime.ExecutionFinished
		}
		if k != want {
			t.Fatalf("event %d is %v, want %v", i, k, want)
		}
	}
	if len(reported) != n {
		t.Fatalf("reported %d hook panics, want %d", len(reported), n)
	}
}
