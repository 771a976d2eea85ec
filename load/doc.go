// Package load describes a workload of agents calling tools (a scenario) and
// runs it against an in-process toolscope registry, reporting throughput,
// latency percentiles, admission wait, queue depth and failures by code.
//
// # Scenarios
//
// A scenario is one JSON document, or one YAML document standing for it
// (scenario.schema.json beside this file documents it; examples/ holds
// two, also embedded: Example). It names:
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
// all problems at once (*ScenarioError). What the schema accepts and what
// Parse accepts agree: everything Parse accepts the schema does (no null,
// no field of another kind of distribution, no open-model field in the
// closed model, a duration without a minus sign), and Parse refuses more
// only for what a schema cannot say (the schema's description lists it).
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
// # Overhead
//
// The call figures (call latency and service, admission wait, per-tool
// latency, the parallelism saved) come from the registry's hooks
// (runtime.Hooks: CallFinished, CallAborted, TurnStart), not from
// an event subscription: the hooks run synchronously where the call ends,
// are never dropped, and build, copy and queue nothing. A call's hook files
// its figures with its turn, found through its agent (the agent's own
// lock), and the turn moves them into the run's histograms when it returns,
// under the one lock a turn takes; so no lock is shared by every call.
//
// A latency is recorded once, in the interval's histogram, which the
// timeline's sample folds into the run's (HDR histograms of one layout add
// bucket counts: the figures are those of recording twice).
//
// With a zero-latency tool (8 agents, turns of 4 parallel calls), load.Run
// reaches about 0.65× the calls/s of bench's bare turn loop (ExecuteTurn
// of calls built once) on the same workload, measured interleaved on a
// shared 2-core machine (TestOverhead_Interleaved, -overhead-rounds N: it
// logs the ratio of calls per CPU-second as well, which other processes
// move less than the wall clock's; medians of both about 0.6–0.7× over
// several runs). BenchmarkOverhead_ZeroLatency runs the sides alone: bare,
// bare+hooks (no-op hooks at the collector's points) and load.Run. Where
// the rest goes, in CPU profiles of the three at one core: the registry's
// own cost of a call hook, most of it clock reads — with one set it stamps
// a call's entry, admission and dispatch end for CallDone (bare+hooks:
// about 0.85× bare) —; the collector's clock reads (a call's final result;
// a turn's start, go-ahead and return). Clock reads are about a third of
// the gap, and each marks a moment a figure counts from or to, so none
// goes without changing a figure. The rest is spread thin: the hooks'
// lookups (the agent, its lock), the histogram records (four a call), the
// generator's drawing and naming of a turn's calls (one allocation for
// their ids), and the garbage collector's share of the allocations.
//
// # Virtual time
//
// Options.Virtual (toolscope-load -virtual) runs the scenario on a
// simclock.Clock shared by the registry (runtime.WithClock: its event
// times and declared timeouts), the generator (think times, the open
// loop's arrivals and its wait for a slot) and the simulated tools (their
// latency and hangs are Sleeps on it). The clock moves only when every task
// is blocked on it, so a run lasts as long as the registry's own work: an
// hour of simulated latency takes well under a second. Every time in the
// report is the clock's (Report.Virtual).
//
// What counts as a task (package simclock has the rule): each agent's
// goroutine (closed loop), the arrival generator and each turn's goroutine
// (open loop), and each tool body from its start to its return. The
// registry's goroutines are not tasks, so the run holds the clock across
// each hand-off to them, following the contract's scheduling of a turn and
// a scope (docs/contract.md#r92, #r94, #r95, #n1): a call its turn lets go
// and its scope admits is held until its body starts; a call blocked at
// admission until it is in the scope's admission line (past its guards,
// and counted by Registry.Queued: were the clock to move while it is on
// its way, a call arriving later could be admitted ahead of it, unlike the
// model); a call after its body until its dispatch
// ends, or until it is committed when it is next to commit; the agent
// after its turn's last commit. So no time passes while the registry works,
// and none is lost while everything sleeps. Tools that block on anything
// but the clock, or scheduling the model does not know (nested calls), are
// outside it: a clock that stands still, held, for StallAfter (10 s of wall
// time) stops the run with Report.Stall instead of hanging. The report
// says what held the clock: its state (simclock.Clock.State: holds, tasks
// asleep, deadlines) and the holds the run took, by call ("a0/2/3
// admitted, body not begun").
//
// # Record and replay
//
// Options.Record (-record run.jsonl) writes the run's log, one JSON object
// a line: a header with the scenario and the kind of clock; a line per
// call when it is committed (LogCall: agent, turn, index, tool, arguments,
// classification, entered/admitted/dispatch-done/finished times since the
// start on the run's clock, its position in its turn's commit order, what
// the body returned, and the result the agent saw with its SHA-256); a
// line per turn after its calls (LogTurn: intended start, the admission
// order and the commit order of its calls).
//
// Options.Replay (-replay run.jsonl, read with ReadLog) runs the log's
// scenario again on the same kind of clock with every body's output served
// from the log (latencies and hangs still come from the arguments), and
// checks that each agent sees the logged results in the logged order, with
// the logged tools and arguments. Report.Replay counts the divergences
// and names the first — the earliest by the log's time, then agent, turn,
// call — with what differed. A changed output shows there, as does a
// changed scenario (other arguments) or registry (other results).
//
// Determinism: the same seed and scenario on virtual time give the same
// log — every line's content, times included (TestRecord_SameSeedSameLog
// checks closed and open loop, with queueing). What may differ is the
// order of lines written at the same virtual instant by different agents
// (their tasks run at once); the admission order is by admission time,
// then index, for that reason. On the wall clock, the times and which
// calls overlap depend on the machine; the calls, arguments and results
// do not.
//
// # Remote agents
//
// Options.Remote runs the agents and their simulated tools elsewhere (a
// Remote): the generator is the same, each agent is made there (with its
// level's restriction) and each turn runs there, timed on the client's
// side. The cluster target (cluster/loadtarget, go run
// ./cluster/cmd/toolscope-load-cluster) makes every top-level agent a
// cluster tree whose members build the tools from their scenario
// description (SimulatedTool). A call's latency is then the time until
// its result reached the client; admission wait, call service and the
// parallelism saved happen out of sight and are reported as not measured
// (Report.NotMeasured: absent from report.json, "not measured" in the
// summary and the page), never as zero. The queue depth is the turns in
// flight the generator counts, as in process. A Remote runs on the wall
// clock only (Virtual, Record, Replay and a Target are refused).
//
// # Not yet
//
// cmd/demo has no
// -virtual (its nested turns and code mode are scheduling the model above
// does not cover); a Target runs on the wall clock only (Virtual, Record
// and Replay with a Target are refused: a remote server neither sleeps on
// the clock nor serves outputs from a log).
package load
