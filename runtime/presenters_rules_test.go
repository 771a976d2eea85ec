package runtime_test

import (
	"context"
	"encoding/json"
	"os"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolscope/toolscope/runtime"
)

// withinOrDump runs f on its own goroutine and fails the test with a dump of
// every goroutine if f has not returned after d.
func withinOrDump(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		_ = pprof.Lookup("goroutine").WriteTo(os.Stderr, 2)
		t.Fatalf("%s did not return within %v", what, d)
	}
}

func presenterDef(p any) runtime.Definition {
	return runtime.Definition{
		Name:       "p",
		Output:     &runtime.Output{Schema: map[string]any{}, Render: func(_ context.Context, _, v json.RawMessage) ([]runtime.Block, error) { return nil, nil }},
		Execute:    func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) { return nil, nil },
		Presenters: p,
	}
}

// TestRegister_R18_R30_PresentersAreCopied: Definition.Presenters is
// deep-copied at Register and on every Get: changing the caller's maps and
// slices afterwards, or the ones a Get returned, changes nothing later Gets
// return.
func TestRegister_R18_R30_PresentersAreCopied(t *testing.T) {
	reg, err := runtime.New()
	require.NoError(t, err)
	t.Cleanup(func() { _ = reg.Close(context.Background()) })

	card := map[string]any{"title": "Read"}
	tags := []any{"a", map[string]any{"k": "v"}}
	labels := map[string]string{"en": "read"}
	p := map[string]any{"card": card, "tags": tags, "labels": labels, "raw": json.RawMessage(`{"x":1}`)}
	want := map[string]any{
		"card":   map[string]any{"title": "Read"},
		"tags":   []any{"a", map[string]any{"k": "v"}},
		"labels": map[string]string{"en": "read"},
		"raw":    json.RawMessage(`{"x":1}`),
	}
	_, err = reg.Global().Register(presenterDef(p))
	require.NoError(t, err)

	// The caller's value, changed after Register.
	card["title"] = "changed"
	tags[1].(map[string]any)["k"] = "changed"
	labels["en"] = "changed"
	p["raw"].(json.RawMessage)[5] = '2'
	p["new"] = true
	got, ok := reg.View("").Get("p")
	require.True(t, ok)
	assert.Equal(t, want, got.Presenters)

	// What a Get returned, changed.
	gp := got.Presenters.(map[string]any)
	gp["card"].(map[string]any)["title"] = "changed"
	gp["tags"].([]any)[0] = "changed"
	gp["labels"].(map[string]string)["en"] = "changed"
	gp["raw"].(json.RawMessage)[5] = '3'
	delete(gp, "card")
	again, ok := reg.View("").Get("p")
	require.True(t, ok)
	assert.Equal(t, want, again.Presenters)
}

// TestRegister_R18_PresentersSharingAndCycles: the copy keeps sharing and
// cycles instead of expanding them: a map that holds itself is copied to a
// map that holds itself, and a DAG of 81 maps each used twice by the next
// copies in linear time.
func TestRegister_R18_PresentersSharingAndCycles(t *testing.T) {
	reg, err := runtime.New()
	require.NoError(t, err)
	t.Cleanup(func() { _ = reg.Close(context.Background()) })

	self := map[string]any{"name": "loop"}
	self["self"] = self
	var dag any = map[string]any{"leaf": true}
	for range 81 {
		dag = map[string]any{"a": dag, "b": dag}
	}
	withinOrDump(t, 20*time.Second, "Register and Get with shared presenters", func() {
		// assert, not require: this runs off the test goroutine. Nothing
		// here hands the DAG itself to testify, whose failure message
		// would print it expanded.
		_, err := reg.Global().Register(presenterDef(map[string]any{"self": self, "dag": dag}))
		if !assert.NoError(t, err) {
			return
		}
		got, ok := reg.View("").Get("p")
		if !assert.True(t, ok) {
			return
		}
		gp := got.Presenters.(map[string]any)
		gs := gp["self"].(map[string]any)
		assert.Equal(t, "loop", gs["name"])
		gs["name"] = "changed"
		assert.Equal(t, "changed", gs["self"].(map[string]any)["name"], "the copy is a map holding itself")
		assert.Equal(t, "loop", self["name"])
		d := gp["dag"].(map[string]any)
		d["a"].(map[string]any)["marker"] = 1
		assert.Equal(t, 1, d["b"].(map[string]any)["marker"], "sharing is kept")
		_, leaked := dag.(map[string]any)["a"].(map[string]any)["marker"]
		assert.False(t, leaked, "the caller's DAG is not the copy")
	})
}
