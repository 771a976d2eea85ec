// Package load describes a workload of agents calling tools (a scenario) and
// runs it against an in-process toolscope registry, reporting throughput,
// latency percentiles, admission wait, queue depth and failures by code.
//
// # Scenarios
//
// A scenario is one JSON document (scenario.schema.json beside this file
// documents it; examples/ holds two, also embedded: Example). It names:
//
//   - agents: a forest of Count top-level agent scopes, each with SubAgents
//     children per scope down to Depth levels below it, and optional
//     restrictions per level (Levels[i] applies to every scope at depth i).
//     Every scope of the forest is an agent that runs turns;
//   - tools: name, classification (parallel, exclusive, or by-argument with
//     the fraction of calls whose argument makes them parallel), latency
//     distribution (constant, uniform, normal, lognormal, or percentiles from
//     a trace), failure and timeout rates and output size;
//   - turns: turns per agent, calls per turn, the mix of tools (weights) and
//     the think time between an agent's turns (closed loop);
//   - the load model: closed (each agent waits for its turn, thinks, and
//     starts the next) or open (turns arrive at a fixed rate, uniformly
//     spaced or Poisson, whether or not earlier ones have finished). In the
//     open loop a turn's latency is measured from its intended start, so a
//     run that falls behind shows the queueing instead of hiding it
//     (no coordinated omission).
//
// Parse decodes strictly: an unknown field, a value of the wrong type and
// every semantic error is refused with the JSON path of the field and why,
// all problems at once (*ScenarioError).
//
// # Determinism
//
// Every random draw (tool choice, latency, failure, timeout, think time,
// arrival gaps) is made by the generator from the scenario's seed, one
// stream per agent (and one for arrivals), and carried to the tool in its
// arguments; the tool bodies draw nothing. The same seed and scenario so
// give every agent the same calls with the same arguments; which calls
// overlap, and the measured times, depend on the machine.
//
// # Reports
//
// A Report is what a run measured (report.json is its JSON): counts,
// throughput, HDR-histogram latencies (with CDF points and power-of-two
// buckets), queue depth, failures by code, a per-tool breakdown, and a
// timeline sampled every 100 ms (coarser for long runs) with each
// interval's counts, turns in flight and call and turn p50/p99. The
// interval histograms are filled under locks the collector already holds
// and read by the sampling goroutine, off the calls' path. WriteSummary
// writes the table, WriteHTML the self-contained report.html (inline CSS
// and SVG, no script, nothing loaded from elsewhere), and Compare puts two
// reports side by side, marking what exceeds run-to-run noise: for
// throughput and the call and turn p50/p99 a Mann–Whitney U test on the two
// runs' interval values (a run's own spread sets the bar; see Compare for
// why this test), for the rest a fixed relative threshold.
//
// # Targets
//
// By default the calls go to simulated tools. A Target (Options.Target)
// provides the tools instead — mcp/cmd/toolscope-load-mcp imports an MCP
// server's tools through mcp.Import, over stdio or streamable HTTP — and
// the run measures that server under toolscope's scheduler. This package
// imports no MCP code: the seam is the Target interface.
//
// # Not yet
//
// Virtual time and record/replay (issue 24, parts 3 and 4) wait for the
// registry's clock option; a cluster target waits for the cluster.
package load
