package main

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/toolscope/toolscope/examples/demotools"
	"github.com/toolscope/toolscope/runtime"
)

// interruptWait is how long "make e2e" runs before the user hits Ctrl-C.
const interruptWait = 80 * time.Millisecond

// policyStats counts what the demo's policies did (hooks and approver).
type policyStats struct {
	redacted, approved, rejected atomic.Int64
}

func (ps *policyStats) stats() demotools.Stats {
	return demotools.Stats{Redacted: &ps.redacted, Approved: &ps.approved, Rejected: &ps.rejected}
}

// globalTools registers the shared toolset and the registry-wide policies
// (package examples/demotools).
func globalTools(reg *runtime.Registry, ps *policyStats) error {
	return demotools.RegisterGlobal(reg, ps.stats())
}

// approver is the human in the loop: the coordinator may push, nobody may
// delete.
func approver(ps *policyStats) runtime.Approver {
	return demotools.Approver(ps.stats(), roleCoordinator)
}

// scopedTools gives an agent's scope its own tools and restrictions.
// delegate runs a sub-agent's turn.
func scopedTools(s *runtime.Scope, a *agentPlan, delegate func(ctx context.Context, sub string, rc *runtime.RunContext) (string, error)) error {
	switch a.Role {
	case roleCoder:
		// A code index that shadows the global web search.
		if err := register(s, demotools.CodeSearch); err != nil {
			return err
		}
		return registerDelegate(s, a.Key+"."+roleTester, delegate)
	case roleResearcher:
		return registerDelegate(s, a.Key+"."+roleScout, delegate)
	case roleReviewer:
		// A reviewer reads and comments; it cannot write.
		_, err := s.Restrict(runtime.Restriction{Deny: []string{"write"}})
		return err
	case roleTester:
		// A sandboxed shell that shadows the global one.
		return register(s, demotools.SandboxShell)
	}
	return nil
}

func register(s *runtime.Scope, tool func() (runtime.Definition, error)) error {
	d, err := tool()
	if err != nil {
		return err
	}
	_, err = s.Register(d)
	return err
}

func registerDelegate(s *runtime.Scope, sub string, delegate func(ctx context.Context, sub string, rc *runtime.RunContext) (string, error)) error {
	return register(s, func() (runtime.Definition, error) { return demotools.Delegate(sub, delegate) })
}
