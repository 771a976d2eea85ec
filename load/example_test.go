package load_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/toolscope/toolscope/load"
	"github.com/toolscope/toolscope/runtime"
)

// echoTarget provides one tool, "remote_echo", for every tool of the
// scenario (here one): a stand-in for a remote server's imported tools.
type echoTarget struct{}

func (echoTarget) Attach(_ context.Context, reg *runtime.Registry, sc *load.Scenario) ([]load.TargetTool, error) {
	d, err := runtime.NewTool("remote_echo", "echoes its text", func(_ context.Context, in struct {
		Text string `json:"text"`
	}, _ *runtime.RunContext) (string, error) {
		return in.Text, nil
	}, runtime.WithParallel())
	if err != nil {
		return nil, err
	}
	if _, err := reg.Global().Register(d); err != nil {
		return nil, err
	}
	return []load.TargetTool{{Name: "remote_echo", Arguments: `{"text":"hi"}`}}, nil
}

func (echoTarget) Detach(context.Context) error { return nil }

// A run against a Target: the scenario draws the turns, the target's
// tools answer them; report.html is one self-contained page.
func ExampleTarget() {
	sc, err := load.Parse([]byte(`{"name": "echo", "agents": {"count": 2},
	  "tools": [{"name": "echo", "mode": "parallel", "latency": {"kind": "constant", "value": "0s"}}],
	  "turns": {"perAgent": 3, "callsPerTurn": {"min": 2, "max": 2}},
	  "load": {"model": "closed"}}`))
	if err != nil {
		log.Fatal(err)
	}
	r, err := load.Run(context.Background(), sc, load.Options{Target: echoTarget{}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(r.Stopped, r.Calls, r.Results, r.Tools["remote_echo"].Calls, len(r.Failures))
	var page strings.Builder
	if err := r.WriteHTML(&page); err != nil {
		log.Fatal(err)
	}
	fmt.Println(strings.Contains(page.String(), `<svg id="cdf-svg"`), strings.Contains(page.String(), "http"))
	// Output:
	// complete 12 12 12 0
	// true false
}
