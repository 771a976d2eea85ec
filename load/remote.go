package load

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/toolscope/toolscope/runtime"
)

// Remote drives a run's agents somewhere else: each agent of the forest is
// made there (NewAgent) and each of its turns runs there (RemoteAgent), the
// simulated tools included — the cluster target
// (go run ./cluster/cmd/toolscope-load-cluster) makes every top-level agent
// a cluster tree whose members build the scenario's tools from config
// (SimulatedTool). The generator is the same as in process: the same seed
// gives every agent the same calls with the same arguments, and the tools'
// latencies, failures and hangs are drawn by it and carried in the
// arguments.
//
// What a run can see of a remote is what its client sees: the turn's
// latency, its results and their codes. A call's latency is the time until
// its result reached the client (for a turn's call, the turn's reply);
// admission wait, call service and the time saved by parallelism happen on
// the remote side and are reported as not measured (Report.NotMeasured),
// not as zero. Queue depth is the turns in flight the generator counts, as
// in process. A Remote runs on the wall clock only.
type Remote interface {
	// Start prepares the scenario's tools (sc has its defaults filled
	// in). It is called once, before any NewAgent.
	Start(ctx context.Context, sc *Scenario) error
	// NewAgent makes agent key: a top-level agent when parent is "",
	// else a sub-agent of parent (made before it). restrict, when not
	// nil, is its level's restriction, in the scenario's tool names.
	// Agents of different top-level trees may be made concurrently.
	NewAgent(ctx context.Context, key, parent string, restrict *runtime.Restriction) (RemoteAgent, error)
	// Close releases what Start and NewAgent made. Run calls it once
	// after a successful Start, after the last turn.
	Close(ctx context.Context) error
}

// RemoteAgent runs one agent's turns.
type RemoteAgent interface {
	// ExecuteTurn runs calls as one turn with id turnID: results in
	// call order, one per call (a call that could not run has a coded
	// failure result); the error is as a local ExecuteTurn's (R98).
	ExecuteTurn(ctx context.Context, turnID string, calls []runtime.TurnCall) (*runtime.TurnResult, error)
}

// The figures a run against a Remote does not measure (Report.NotMeasured):
// they happen on the remote side, out of the client's sight.
const (
	FigureAdmissionWait = "admissionWait"
	FigureCallService   = "callService"
	FigureParallelism   = "parallelism"
)

// SimulatedTool builds the scenario's simulated tool t as Run registers it
// in process, on the wall clock: it sleeps the latency its call's
// arguments carry, fails with CodeInjectedFailure or runs until its ctx
// ends (its declared timeout) when they say so, and otherwise returns
// OutputBytes of output; it is parallel, exclusive, or classified by its
// argument as t.Mode says. The generator draws those arguments, so t's
// Latency, FailureRate, TimeoutRate and ParallelFraction are not used
// here. t is checked (its name, mode, timeout and output size), as it
// may come from a remote's configuration.
func SimulatedTool(t Tool) (runtime.Definition, error) {
	switch {
	case !toolNameRe.MatchString(t.Name):
		return runtime.Definition{}, fmt.Errorf("load: simulated tool: a tool name is 1–64 of [a-zA-Z0-9_-], got %q", t.Name)
	case t.Mode != ModeParallel && t.Mode != ModeExclusive && t.Mode != ModeByArgument:
		return runtime.Definition{}, fmt.Errorf("load: simulated tool %s: mode: want one of parallel, exclusive, by-argument, got %q", t.Name, t.Mode)
	case t.Timeout < 0:
		return runtime.Definition{}, fmt.Errorf("load: simulated tool %s: timeout must not be negative, got %s", t.Name, t.Timeout.D())
	case t.OutputBytes < 0 || t.OutputBytes > MaxOutputBytes:
		return runtime.Definition{}, fmt.Errorf("load: simulated tool %s: outputBytes must be in [0, %d], got %d", t.Name, MaxOutputBytes, t.OutputBytes)
	}
	return toolDefinition(t, &runEnv{})
}

// startRemote starts rm and makes the forest on it; on a failure it
// closes rm.
func startRemote(ctx context.Context, rm Remote, sc *Scenario) ([]*agent, error) {
	if err := rm.Start(ctx, sc); err != nil {
		return nil, fmt.Errorf("load: remote: %w", err)
	}
	agents, err := buildRemoteForest(ctx, rm, sc)
	if err != nil {
		closeRemote(rm)
		return nil, err
	}
	return agents, nil
}

// closeRemote closes rm, bounded.
func closeRemote(rm Remote) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_ = rm.Close(ctx)
}

// remoteParallel bounds the top-level trees a run makes at once.
const remoteParallel = 16

// buildRemoteForest makes the agents of sc on rm, as buildForest makes
// them in process: the same keys, levels and generator seeds. Top-level
// trees are made concurrently (remoteParallel at once), each depth first.
func buildRemoteForest(ctx context.Context, rm Remote, sc *Scenario) ([]*agent, error) {
	seed := uint64(*sc.Seed)
	per := 0 // agents per top-level tree
	for d, n := 0, 1; d <= sc.Agents.Depth; d++ {
		per += n
		n *= sc.Agents.SubAgents
	}
	agents := make([]*agent, sc.Agents.Count*per)
	var add func(tree, idx *int, parent, key string, depth int) error
	add = func(tree, idx *int, parent, key string, depth int) error {
		var r *runtime.Restriction
		if depth < len(sc.Agents.Levels) {
			if l := sc.Agents.Levels[depth]; l.Allow != nil || l.Deny != nil {
				r = &runtime.Restriction{Allow: l.Allow, Deny: l.Deny}
			}
		}
		ra, err := rm.NewAgent(ctx, key, parent, r)
		if err != nil {
			return fmt.Errorf("load: remote agent %s: %w", key, err)
		}
		i := *tree*per + *idx // buildForest's index: depth first, tree after tree
		*idx++
		a := newAgent(sc, key, depth, rand.New(rand.NewPCG(seed, uint64(i))))
		a.remote = ra
		agents[i] = a
		if depth < sc.Agents.Depth {
			for c := range sc.Agents.SubAgents {
				if err := add(tree, idx, key, key+"."+strconv.Itoa(c), depth+1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		sem   = make(chan struct{}, remoteParallel)
	)
	for t := range sc.Agents.Count {
		mu.Lock()
		failed := first != nil
		mu.Unlock()
		if failed || ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			tree, idx := t, 0
			if err := add(&tree, &idx, "", "a"+strconv.Itoa(t), 0); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		first = fmt.Errorf("load: remote agents: %w", ctx.Err())
	}
	return agents, first
}

// remoteTurn runs a turn of a remote agent and files each result as a
// call the client saw end when the turn's reply came.
// No hook touches acc (nothing of the run is in process).
//
// A reply that breaks RemoteAgent's contract — no error, but not one
// non-nil result per call — is the turn's error (a remote of another
// version, a confused member): its results are kept up to the first
// missing or nil one, so each call is answered once, by a result or by the
// turn's error, and nothing the remote sent can crash the run.
func remoteTurn(ctx context.Context, a *agent, acc *turnAcc, id string, calls []runtime.TurnCall) (*runtime.TurnResult, error) {
	t0 := time.Now() // a Remote runs on the wall clock
	res, err := a.remote.ExecuteTurn(ctx, id, calls)
	lat := time.Since(t0)
	if res != nil {
		for i, r := range res.Results {
			if r == nil {
				res.Results = res.Results[:i]
				if err == nil {
					err = fmt.Errorf("load: remote turn %s: no result for call %d of %d (nil)", id, i, len(calls))
				}
				break
			}
		}
	}
	if err == nil && (res == nil || len(res.Results) != len(calls)) {
		var n int
		if res != nil {
			n = len(res.Results)
		}
		err = fmt.Errorf("load: remote turn %s: %d results for %d calls", id, n, len(calls))
	}
	if res != nil {
		for i := range min(len(res.Results), len(calls)) {
			acc.calls = append(acc.calls, callObs{tool: calls[i].Name, lat: lat, inTurn: true})
		}
	}
	return res, err
}
