package loadtarget

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/toolscope/toolscope/cluster"
	"github.com/toolscope/toolscope/load"
	"github.com/toolscope/toolscope/runtime"
)

// TestEntry_BuildsTheScenarioToolFromItsConfig: every tool of the
// embedded examples, as Target.Start sends it, builds on a member into the
// simulated tool of its name and mode; bad config (an unknown field,
// trailing data, a bad mode or size, not JSON) is refused naming the entry.
func TestEntry_BuildsTheScenarioToolFromItsConfig(t *testing.T) {
	cat := cluster.NewCatalog()
	if err := AddTo(cat); err != nil {
		t.Fatal(err)
	}
	for _, name := range load.Examples() {
		data, err := load.Example(name)
		if err != nil {
			t.Fatal(err)
		}
		sc, err := load.Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range sc.Tools {
			cfg, err := json.Marshal(tool)
			if err != nil {
				t.Fatal(err)
			}
			def, err := cat.Tool(Entry, cfg)
			if err != nil {
				t.Fatalf("%s: %s: %v", name, tool.Name, err)
			}
			if def.Name != tool.Name || def.AlwaysParallel() != (tool.Mode == load.ModeParallel) {
				t.Errorf("%s: %s (%s) built as %s, always parallel %v", name, tool.Name, tool.Mode, def.Name, def.AlwaysParallel())
			}
		}
	}
	for _, c := range []struct{ cfg, want string }{
		{`{"name":"x","mode":"parallel","latency":{"kind":"constant","value":"0s"},"bogus":1}`, "bogus"},
		{`{"name":"x","mode":"parallel","latency":{"kind":"constant","value":"0s"}} {}`, "not one JSON value"},
		{`{"name":"x","mode":"sometimes","latency":{"kind":"constant","value":"0s"}}`, "mode"},
		{`{"name":"x","mode":"parallel","latency":{"kind":"constant","value":"0s"},"outputBytes":-1}`, "outputBytes"},
		{`{"name":"x","mode":"parallel","timeout":"-1s"}`, "timeout"},
		{`[1]`, "a load scenario tool"},
	} {
		if _, err := cat.Tool(Entry, json.RawMessage(c.cfg)); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), Entry) {
			t.Errorf("%s: error %v, want one naming %s and %q", c.cfg, err, Entry, c.want)
		}
	}
}

// A member adds the entry to its catalog; the tool a tree mounts with a
// scenario tool as config runs as the load tool's simulated tool does.
func ExampleAddTo() {
	cat := cluster.NewCatalog()
	if err := AddTo(cat); err != nil {
		panic(err)
	}
	def, err := cat.Tool(Entry, json.RawMessage(`{"name":"search","mode":"parallel","latency":{"kind":"constant","value":"1ms"},"outputBytes":5}`))
	if err != nil {
		panic(err)
	}
	reg, _ := runtime.New()
	defer reg.Close(context.Background())
	if _, err := reg.Global().Register(def); err != nil {
		panic(err)
	}
	r := reg.Global().Execute(context.Background(), runtime.Call{ID: "c1", Name: "search", Arguments: json.RawMessage(`{"sleep_ns":1000}`)})
	fmt.Println(def.Name, r.Text())
	r = reg.Global().Execute(context.Background(), runtime.Call{ID: "c2", Name: "search", Arguments: json.RawMessage(`{"sleep_ns":0,"fail":true}`)})
	fmt.Println(r.Code())
	// Output:
	// search xxxxx
	// LOAD_INJECTED_FAILURE
}
