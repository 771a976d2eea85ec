package load

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/toolscope/toolscope/runtime"
)

// countingTarget registers one echo tool per scenario tool, named
// "remote_"+name, and counts the calls it answers and Detach's calls.
type countingTarget struct {
	mu       sync.Mutex
	calls    map[string]int64 // by registered name
	args     map[string]string
	detached atomic.Int32
	fail     error
	short    bool
}

func (c *countingTarget) Attach(_ context.Context, reg *runtime.Registry, sc *Scenario) ([]TargetTool, error) {
	if c.fail != nil {
		return nil, c.fail
	}
	c.calls, c.args = map[string]int64{}, map[string]string{}
	var out []TargetTool
	for _, t := range sc.Tools {
		name := "remote_" + t.Name
		d, err := runtime.NewTool(name, "echo", func(_ context.Context, in json.RawMessage, _ *runtime.RunContext) (string, error) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.calls[name]++
			c.args[name] = string(in)
			return "ok", nil
		}, runtime.WithParallel())
		if err != nil {
			return nil, err
		}
		if _, err := reg.Global().Register(d); err != nil {
			return nil, err
		}
		out = append(out, TargetTool{Name: name, Arguments: map[bool]string{true: "", false: `{"q":"` + t.Name + `"}`}[t.Name == "ok"]})
	}
	if c.short {
		out = out[:1]
	}
	return out, nil
}

func (c *countingTarget) Detach(context.Context) error { c.detached.Add(1); return nil }

// TestTarget_CallsGoToTheTargetsTools: with a Target, every call of the
// scenario goes to the target's tool for it, with the target's arguments
// ("" as {}); the report counts exactly the calls the target answered;
// Detach runs once. The same seed draws the same tool choices as the
// simulated run.
func TestTarget_CallsGoToTheTargetsTools(t *testing.T) {
	sim := runBounded(t, context.Background(), mustParse(t, countsScenario), Options{})
	tg := &countingTarget{}
	r := runBounded(t, context.Background(), mustParse(t, countsScenario), Options{Target: tg})
	var answered int64
	for name, n := range tg.calls {
		answered += n
		tr := r.Tools[name]
		if tr == nil || tr.Calls != n {
			t.Errorf("%s: the target answered %d calls, the report says %+v", name, n, tr)
		}
		simName := strings.TrimPrefix(name, "remote_")
		if sim.Tools[simName] == nil || sim.Tools[simName].Calls != n {
			t.Errorf("%s: %d calls, the simulated run made %+v", name, n, sim.Tools[simName])
		}
	}
	if answered != r.Calls || r.Results != r.Calls || r.Events.Finished != r.Calls || r.Calls != 9*4*3 {
		t.Fatalf("answered %d, report calls %d results %d events %d", answered, r.Calls, r.Results, r.Events.Finished)
	}
	if len(r.Failures) != 0 {
		t.Errorf("the target's tools never fail, the report has %v", r.Failures)
	}
	if tg.args["remote_ok"] != "{}" || tg.args["remote_slow"] != `{"q":"slow"}` {
		t.Errorf("arguments: %v", tg.args)
	}
	if n := tg.detached.Load(); n != 1 {
		t.Errorf("Detach ran %d times", n)
	}
}

// TestTarget_BadAttachIsAnError: Attach's error, or a tool list of the
// wrong length, fails Run with an error naming the target; a short list is
// detached.
func TestTarget_BadAttachIsAnError(t *testing.T) {
	boom := errors.New("no server")
	if _, err := Run(context.Background(), mustParse(t, countsScenario), Options{Target: &countingTarget{fail: boom}}); !errors.Is(err, boom) || !strings.Contains(err.Error(), "load: target") {
		t.Fatalf("Attach's error: %v", err)
	}
	tg := &countingTarget{short: true}
	if _, err := Run(context.Background(), mustParse(t, countsScenario), Options{Target: tg}); err == nil || !strings.Contains(err.Error(), "1 tools for the scenario's 3") {
		t.Fatalf("short list: %v", err)
	}
	if tg.detached.Load() != 1 {
		t.Fatalf("a short list was not detached")
	}
}

func TestTarget_WallClockOnly(t *testing.T) {
	data, err := Example("open")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, opts := range []Options{
		{Target: &countingTarget{}, Virtual: true},
		{Target: &countingTarget{}, Record: io.Discard},
	} {
		if _, err := Run(context.Background(), sc, opts); err == nil || !strings.Contains(err.Error(), "wall clock only") {
			t.Errorf("Run with a Target and %+v: error %v, want one saying a Target runs on the wall clock only", opts, err)
		}
	}
}
