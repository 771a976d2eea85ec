package runtime_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/toolscope/toolscope/runtime"
)

// TestDefinition_AlwaysParallel: only NewTool's WithParallel, still in
// place, makes a definition parallel whatever its arguments; a per-call
// classifier does not, even one that always answers true.
func TestDefinition_AlwaysParallel(t *testing.T) {
	type in struct {
		X string `json:"x"`
	}
	body := func(context.Context, in, *runtime.RunContext) (string, error) { return "", nil }
	par, err := runtime.NewTool("p", "p", body, runtime.WithParallel())
	if err != nil {
		t.Fatal(err)
	}
	cls, err := runtime.NewTool("c", "c", body, runtime.WithClassifier(func(context.Context, json.RawMessage) (bool, error) { return true, nil }))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := runtime.NewTool("e", "e", body)
	if err != nil {
		t.Fatal(err)
	}
	replaced := par
	replaced.IsConcurrencySafe = func(context.Context, json.RawMessage) (bool, error) { return true, nil }
	for _, c := range []struct {
		name string
		def  runtime.Definition
		want bool
	}{{"WithParallel", par, true}, {"WithClassifier", cls, false}, {"exclusive", plain, false}, {"replaced classifier", replaced, false}, {"raw", runtime.Definition{IsConcurrencySafe: replaced.IsConcurrencySafe}, false}} {
		if got := c.def.AlwaysParallel(); got != c.want {
			t.Errorf("%s: AlwaysParallel() = %v, want %v", c.name, got, c.want)
		}
	}
	reg, err := runtime.New()
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close(context.Background())
	if _, err := reg.Global().Register(par); err != nil {
		t.Fatal(err)
	}
	if d, ok := reg.Global().Get("p"); !ok || !d.AlwaysParallel() {
		t.Errorf("Get(p).AlwaysParallel() = false after Register")
	}
}
