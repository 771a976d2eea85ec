package load

import (
	"context"
	"fmt"

	"github.com/toolscope/toolscope/runtime"
)

// Target is where a run's calls go. Without one (Options.Target nil) the
// run calls simulated tools: each of the scenario's tools is registered in
// the registry under test and sleeps, fails or hangs as the generator
// drew. A Target provides the tools itself — a remote server's tools
// imported into the registry (the MCP target: go run ./mcp/cmd/toolscope-load-mcp)
// — so the run measures that server under toolscope's scheduler: the
// generator still draws every turn from the scenario (which agent, when,
// how many calls, which tools, with the same seed the same choices), but
// each call's latency, failure and output are the target's, and the
// scenario's latency, failureRate, timeoutRate and outputBytes are not
// used. Classification is the target's to apply (the MCP target applies
// the scenario's parallel and exclusive modes).
type Target interface {
	// Attach provides a tool in reg for each of sc.Tools, visible to
	// the agents (in its global scope), and returns, in the order of
	// sc.Tools, the name each is called by and the arguments of every
	// call to it. It is called once, before the first turn.
	Attach(ctx context.Context, reg *runtime.Registry, sc *Scenario) ([]TargetTool, error)
	// Detach releases what Attach made. Run calls it once after a
	// successful Attach, after the last turn and before the registry
	// closes.
	Detach(ctx context.Context) error
}

// TargetTool is how a Target's tool is called: by Name, with Arguments
// (a JSON object; "" is {}) on every call.
type TargetTool struct {
	Name      string
	Arguments string
}

// attachTarget runs t.Attach and checks what it returns.
func attachTarget(ctx context.Context, t Target, reg *runtime.Registry, sc *Scenario) ([]TargetTool, error) {
	tools, err := t.Attach(ctx, reg, sc)
	if err != nil {
		return nil, fmt.Errorf("load: target: %w", err)
	}
	if len(tools) != len(sc.Tools) {
		_ = t.Detach(ctx)
		return nil, fmt.Errorf("load: target: %d tools for the scenario's %d", len(tools), len(sc.Tools))
	}
	for i := range tools {
		if tools[i].Name == "" {
			_ = t.Detach(ctx)
			return nil, fmt.Errorf("load: target: no tool name for the scenario's tool %q", sc.Tools[i].Name)
		}
		if tools[i].Arguments == "" {
			tools[i].Arguments = "{}"
		}
	}
	return tools, nil
}

// targetRestriction is level l's restriction, its tool names the
// target's (the scenario's without a target).
func targetRestriction(sc *Scenario, l Level, target []TargetTool) runtime.Restriction {
	if target == nil {
		return runtime.Restriction{Allow: l.Allow, Deny: l.Deny}
	}
	rename := func(names []string) []string {
		if names == nil {
			return nil
		}
		out := make([]string, 0, len(names))
		for _, n := range names {
			for i := range sc.Tools {
				if sc.Tools[i].Name == n && !contains(out, target[i].Name) {
					out = append(out, target[i].Name)
				}
			}
		}
		return out
	}
	return runtime.Restriction{Allow: rename(l.Allow), Deny: rename(l.Deny)}
}
