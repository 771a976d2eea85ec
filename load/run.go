package load

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolscope/toolscope/runtime"
	"github.com/toolscope/toolscope/simclock"
)

// CodeInjectedFailure is the code of a failure a tool's failureRate draws.
const CodeInjectedFailure = "LOAD_INJECTED_FAILURE"

// CodeUncoded stands in the failure counts for a failure without a code
// (a denial, a plain error).
const CodeUncoded = "UNCODED"

// Options configures Run.
type Options struct {
	// Progress, if set, is called about every ProgressEvery (default 1 s)
	// while the run goes on, from a goroutine of its own, and once at the end.
	Progress      func(Progress)
	ProgressEvery time.Duration
	// RegistryOptions are added to the options of the registry under test
	// (after the scenario's registry settings; declared timeouts apply by default).
	RegistryOptions []runtime.Option
	// EventWait is not used: the report's call figures come from the
	// registry's hooks, synchronous and never lost, so there is nothing to
	// wait for once the registry has closed.
	//
	// Deprecated: it has no effect.
	EventWait time.Duration
	// Target, if set, provides the tools the calls go to instead of the
	// simulated ones (see Target).
	Target Target
	// Remote, if set, runs the agents and their simulated tools there
	// (a cluster) instead of in an in-process registry (see Remote).
	Remote Remote
	// Virtual runs on virtual time (see the package doc): the registry,
	// the generator and the tool bodies share a simclock.Clock, the
	// report's times are the clock's, and the run takes as long as the
	// registry's own work, not the simulated latencies.
	Virtual bool
	// Record, if set, receives the run's log (see the package doc:
	// record and replay), one JSON object a line.
	Record io.Writer
	// Replay, if set, serves the tool bodies' outputs from this log and
	// checks every call against it (Report.Replay). Run takes the
	// scenario from the log; Run's scenario argument may be nil.
	Replay *Log
}

// Progress is a snapshot of a run in progress.
type Progress struct {
	Elapsed       time.Duration
	TurnsPlanned  int64
	TurnsDone     int64
	TurnsInFlight int64
	Calls         int64
	Failures      int64
}

// callArgs are the arguments the generator gives a simulated tool: every
// random draw is made by the generator, so the bodies are deterministic.
type callArgs struct {
	SleepNs  int64 `json:"sleep_ns"`
	Fail     bool  `json:"fail,omitempty"`
	Hang     bool  `json:"hang,omitempty"`
	Parallel bool  `json:"parallel,omitempty"`
}

// text is the arguments' JSON, as json.Marshal writes it (without its
// reflection: the generator writes one per call).
func (a callArgs) text() string {
	b := make([]byte, 0, 64)
	b = append(b, `{"sleep_ns":`...)
	b = strconv.AppendInt(b, a.SleepNs, 10)
	if a.Fail {
		b = append(b, `,"fail":true`...)
	}
	if a.Hang {
		b = append(b, `,"hang":true`...)
	}
	if a.Parallel {
		b = append(b, `,"parallel":true`...)
	}
	return string(append(b, '}'))
}

type injectedError struct{}

func (injectedError) Error() string { return "injected failure (the scenario's failureRate)" }
func (injectedError) Name() string  { return "InjectedFailure" }
func (injectedError) Code() string  { return CodeInjectedFailure }

// toolDefinition builds the simulated tool t: it sleeps its drawn latency
// on the run's clock (ending early when its ctx ends), fails when told to,
// or runs until its ctx ends (the registry's timeout) when told to hang.
// Replaying, its output comes from the log.
func toolDefinition(t Tool, env *runEnv) (runtime.Definition, error) {
	out := strings.Repeat("x", t.OutputBytes)
	body := func(ctx context.Context, in callArgs, _ *runtime.RunContext) (text string, err error) {
		id := env.bodyStart(ctx)
		defer func() { env.bodyEnd(id, text, err) }()
		if in.Hang {
			env.clk.sleep(ctx, simclock.Forever) // a hang is drawn only for a tool with an enforced timeout
			return "", ctx.Err()
		}
		if in.SleepNs > 0 && !env.clk.sleep(ctx, time.Duration(in.SleepNs)) {
			return "", ctx.Err()
		}
		if env.replay != nil {
			return env.replay.output(id)
		}
		if in.Fail {
			return "", injectedError{}
		}
		return out, nil
	}
	opts := []runtime.ToolOption{}
	switch t.Mode {
	case ModeParallel:
		opts = append(opts, runtime.WithParallel())
	case ModeByArgument:
		opts = append(opts, runtime.WithClassifier(func(_ context.Context, args json.RawMessage) (bool, error) {
			var a struct {
				Parallel bool `json:"parallel"`
			}
			if err := json.Unmarshal(args, &a); err != nil {
				return false, err
			}
			return a.Parallel, nil
		}))
	}
	if t.Timeout > 0 {
		opts = append(opts, runtime.WithTimeout(t.Timeout.D()))
	}
	return runtime.NewTool(t.Name, "simulated tool "+t.Name+" ("+t.Mode+")", body, opts...)
}

// agent is one scope of the forest and its generator.
type agent struct {
	key      string
	depth    int
	scope    *runtime.Scope
	rng      *rand.Rand // used by one goroutine at a time: its loop (closed) or the arrivals (open)
	picks    []int      // the tools it may call
	cum      []float64  // cumulative weights of picks
	inFlight atomic.Int64
	maxIn    atomic.Int64
	accMu    sync.Mutex // guards accs
	accs     turnAccs   // its turns in flight, for the collector's hooks
	spareAcc *turnAcc   // a recorded turn's, to reuse (collector.turn); accMu guards it
	turns    int
	target   []TargetTool // with a Target: how to call each of the scenario's tools
	remote   RemoteAgent  // with a Remote: where its turns run (scope is nil)
	lastArgs callArgs     // the arguments of its last call to a simulated tool
	lastText string       // and their text

	spare []runtime.TurnCall // closed model: the last turn's calls, to fill again (nextTurn)
}

// nextTurn draws the calls of the agent's next turn and names it. With
// reuse (the closed model, whose agent's turn has returned: collector.turn
// is done with its calls, and the registry keeps none of a returned turn's
// calls) it fills the slice of the agent's last turn again.
func (a *agent) nextTurn(sc *Scenario, reuse bool) (string, []runtime.TurnCall) {
	cp := sc.Turns.CallsPerTurn
	n := cp.Min + a.rng.IntN(cp.Max-cp.Min+1)
	var calls []runtime.TurnCall
	if reuse && cap(a.spare) >= n {
		calls = a.spare[:n]
	} else {
		calls = make([]runtime.TurnCall, n)
		if reuse {
			a.spare = calls
		}
	}
	turn := a.turns
	a.turns++
	// The calls' ids ("<turn id>/<index>", the turn id "<agent>/<turn>")
	// are slices of one string, written one after another (the turn id is
	// the first one's prefix): one allocation for them all.
	var num [20]byte
	tn := strconv.AppendInt(num[:0], int64(turn), 10)
	prefix := len(a.key) + 1 + len(tn) + 1
	size := 0
	for i := range n {
		size += prefix + digits(i)
	}
	var ids strings.Builder
	ids.Grow(size)
	for i := range n {
		ids.WriteString(a.key)
		ids.WriteByte('/')
		ids.Write(tn)
		ids.WriteByte('/')
		ids.Write(strconv.AppendInt(num[len(tn):len(tn)], int64(i), 10))
	}
	all, from := ids.String(), 0
	id := all[:prefix-1]
	for i := range calls {
		to := from + prefix + digits(i)
		callID := all[from:to]
		from = to
		x := a.rng.Float64() * a.cum[len(a.cum)-1]
		j := 0
		for j < len(a.cum)-1 && a.cum[j] <= x {
			j++
		}
		t := &sc.Tools[a.picks[j]]
		args := callArgs{SleepNs: int64(t.Latency.Sample(a.rng))}
		u := a.rng.Float64()
		switch {
		case u < t.FailureRate:
			args.Fail = true
		case u < t.FailureRate+t.TimeoutRate:
			args.Hang = true
		}
		if t.Mode == ModeByArgument {
			args.Parallel = a.rng.Float64() < *t.ParallelFraction
		}
		if a.target != nil {
			tt := a.target[a.picks[j]]
			calls[i] = runtime.TurnCall{ID: callID, Name: tt.Name, ArgumentsText: tt.Arguments}
			continue
		}
		if args != a.lastArgs || a.lastText == "" {
			a.lastArgs, a.lastText = args, args.text() // the same arguments again (a constant latency) reuse the text
		}
		calls[i] = runtime.TurnCall{ID: callID, Name: t.Name, ArgumentsText: a.lastText}
	}
	return id, calls
}

// dropSpares lets the agent's reused turn state go once it has no more
// turns.
func (a *agent) dropSpares() {
	a.spare = nil
	a.accMu.Lock()
	a.spareAcc = nil
	a.accMu.Unlock()
}

// digits is the length of strconv.Itoa(i), i ≥ 0.
func digits(i int) int {
	n := 1
	for ; i >= 10; i /= 10 {
		n++
	}
	return n
}

// Run runs the scenario against a new in-process registry and reports what
// ran. It returns when every turn is done, when the scenario's duration has
// passed (no new turn starts; those in flight finish), or when ctx ends
// (those in flight are cancelled and count with the codes they end with);
// the report says which (Report.Stopped). The error is for a scenario
// Parse would refuse (a *ScenarioError: a scenario built in Go is checked
// here, on a copy with the defaults filled in) or a registry that could
// not be built; a run cut short still reports. A log that could not be
// written (Options.Record) is the one error that comes with a report: the
// run went on, only its record is lost.
func Run(ctx context.Context, scenario *Scenario, opts Options) (*Report, error) {
	if opts.Target != nil && (opts.Virtual || opts.Replay != nil || opts.Record != nil) {
		// A remote server neither sleeps on the run's clock nor serves
		// outputs from a log: its calls would break both models.
		return nil, errors.New("load: a Target runs on the wall clock only: Virtual, Record and Replay are for the simulated tools")
	}
	if opts.Remote != nil && (opts.Target != nil || opts.Virtual || opts.Replay != nil || opts.Record != nil) {
		// Its clock and its tools are the remote's own.
		return nil, errors.New("load: a Remote runs on the wall clock with its own simulated tools: Target, Virtual, Record and Replay are for in-process runs")
	}
	if opts.Replay != nil {
		scenario = opts.Replay.Scenario
	}
	if scenario == nil {
		return nil, &ScenarioError{[]FieldError{{"$", "no scenario"}}}
	}
	cp := *scenario
	sc := &cp
	sc.Defaults()
	if probs := sc.check(); len(probs) > 0 {
		return nil, &ScenarioError{probs}
	}
	var regOpts []runtime.Option // declared timeouts apply by default (R83)
	if sc.Registry != nil && sc.Registry.MaxParallel > 0 {
		regOpts = append(regOpts, runtime.WithMaxParallel(sc.Registry.MaxParallel))
	}
	env := newRunEnv(sc, opts)
	col := newCollector(sc)
	col.env = env
	regOpts = append(regOpts, env.registryOptions()...)
	regOpts = append(regOpts, runtime.WithHooks(col.hooks()))
	regOpts = append(regOpts, opts.RegistryOptions...)
	reg, err := runtime.New(regOpts...)
	if err != nil {
		return nil, fmt.Errorf("load: registry: %w", err)
	}
	closeReg := func() {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = reg.Close(cctx)
	}
	var targetTools []TargetTool
	if opts.Target != nil {
		if targetTools, err = attachTarget(ctx, opts.Target, reg, sc); err != nil {
			closeReg()
			return nil, err
		}
		inner := closeReg
		closeReg = func() {
			dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_ = opts.Target.Detach(dctx)
			inner()
		}
	}
	for _, t := range sc.Tools {
		if opts.Target != nil || opts.Remote != nil {
			break
		}
		d, err := toolDefinition(t, env)
		if err != nil {
			closeReg()
			return nil, fmt.Errorf("load: tool %s: %w", t.Name, err)
		}
		if _, err := reg.Global().Register(d); err != nil {
			closeReg()
			return nil, fmt.Errorf("load: tool %s: %w", t.Name, err)
		}
	}
	var agents []*agent
	if opts.Remote != nil {
		agents, err = startRemote(ctx, opts.Remote, sc)
		if err == nil {
			inner := closeReg
			closeReg = func() { closeRemote(opts.Remote); inner() }
		}
	} else {
		agents, err = buildForest(reg, sc, targetTools)
	}
	if err != nil {
		closeReg()
		return nil, err
	}

	col.agents = make(map[string]*agent, len(agents))
	for _, a := range agents {
		col.agents[a.key] = a
	}
	env.start(reg)

	planned := int64(len(agents)) * int64(sc.Turns.PerAgent)
	col.turnsPlanned = planned
	// startCtx ends when no turn may start any more (duration or ctx);
	// turns run on ctx, so only ctx cancels them.
	startCtx, stopStarting := context.WithCancel(ctx)
	defer stopStarting()
	var durationHit atomic.Bool
	if d := sc.Load.Duration.D(); d > 0 {
		stop := env.clk.afterFunc(d, func() { durationHit.Store(true); stopStarting() })
		defer stop()
	}

	start := env.clk.now()
	col.start = start
	progressDone := make(chan struct{})
	var progressWG sync.WaitGroup
	if opts.Progress != nil {
		every := opts.ProgressEvery
		if every <= 0 {
			every = time.Second
		}
		progressWG.Add(1)
		go func() {
			defer progressWG.Done()
			tk := time.NewTicker(every)
			defer tk.Stop()
			for {
				select {
				case <-progressDone:
					return
				case <-tk.C:
					opts.Progress(col.progress())
				}
			}
		}()
	}

	progressWG.Add(1)
	go func() { // the timeline
		defer progressWG.Done()
		every := timelineEvery
		if env.clk.v != nil { // virtual: sampled on the clock (sampleOnClock)
			<-progressDone
			col.sample()
			return
		}
		tk := time.NewTicker(every)
		defer tk.Stop()
		for {
			select {
			case <-progressDone:
				col.sample()
				return
			case <-tk.C:
				if col.sample() {
					every *= 2
					tk.Reset(every)
				}
			}
		}
	}()

	if env.clk.v != nil {
		env.held = env.hold() // until the generator's tasks run (started)
		env.sampleOnClock(col, progressDone)
	}
	turnCtx, endWatch := env.watch(ctx, stopStarting) // virtual: stops a stuck run
	switch sc.Load.Model {
	case ModelOpen:
		runOpen(turnCtx, startCtx, sc, agents, col)
	default:
		runClosed(turnCtx, startCtx, sc, agents, col)
	}
	endWatch()
	elapsed := env.clk.now().Sub(start)
	recErr := env.finish() // returned with the report: a log not written loses no figures
	close(progressDone)
	progressWG.Wait()

	closeReg() // the calls in flight drain: every hook has run

	rep := col.report(sc, len(agents), elapsed)
	if opts.Remote != nil {
		rep.NotMeasured = []string{FigureAdmissionWait, FigureCallService, FigureParallelism}
	}
	env.annotate(rep)
	switch {
	case rep.Stall != "":
		rep.Stopped = StoppedStalled
	case ctx.Err() != nil:
		rep.Stopped = StoppedInterrupted
	case durationHit.Load() && rep.TurnsDone < planned:
		rep.Stopped = StoppedDuration
	default:
		rep.Stopped = StoppedComplete
	}
	if opts.Progress != nil {
		opts.Progress(col.progress())
	}
	return rep, recErr
}

// buildForest creates the agent scopes, depth first, with their levels'
// restrictions, and seeds each agent's generator from the scenario's seed
// and its index. With a target's tools, the restrictions name them.
func buildForest(reg *runtime.Registry, sc *Scenario, target []TargetTool) ([]*agent, error) {
	var agents []*agent
	seed := uint64(*sc.Seed)
	var add func(parent *runtime.Scope, key string, depth int) error
	add = func(parent *runtime.Scope, key string, depth int) error {
		var s *runtime.Scope
		var err error
		if parent == nil {
			s, err = reg.NewScope(key)
		} else {
			s, err = parent.NewScope(key)
		}
		if err != nil {
			return fmt.Errorf("load: scope %s: %w", key, err)
		}
		if depth < len(sc.Agents.Levels) {
			l := sc.Agents.Levels[depth]
			if l.Allow != nil || l.Deny != nil {
				if _, err := s.Restrict(targetRestriction(sc, l, target)); err != nil {
					return fmt.Errorf("load: restrict %s: %w", key, err)
				}
			}
		}
		a := newAgent(sc, key, depth, rand.New(rand.NewPCG(seed, uint64(len(agents)))))
		a.scope, a.target = s, target
		agents = append(agents, a)
		if depth < sc.Agents.Depth {
			for i := range sc.Agents.SubAgents {
				if err := add(s, key+"."+strconv.Itoa(i), depth+1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for i := range sc.Agents.Count {
		if err := add(nil, "a"+strconv.Itoa(i), 0); err != nil {
			return nil, err
		}
	}
	return agents, nil
}

// newAgent is agent key at depth with its generator rng and the tools its
// level may pick.
func newAgent(sc *Scenario, key string, depth int, rng *rand.Rand) *agent {
	a := &agent{key: key, depth: depth, rng: rng}
	a.picks = sc.pickable(depth)
	var c float64
	for _, i := range a.picks {
		c += sc.weight(sc.Tools[i].Name)
		a.cum = append(a.cum, c)
	}
	return a
}

// sleepCtx sleeps d or until ctx ends; false when ctx ended.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// runClosed: each agent runs its turns one after another, thinking before
// each; latency counts from the turn's actual start.
func runClosed(ctx, startCtx context.Context, sc *Scenario, agents []*agent, col *collector) {
	var wg sync.WaitGroup
	env := col.env
	release := env.hold() // virtual: no move before every agent runs
	for _, a := range agents {
		wg.Add(1)
		env.goTask(func() {
			defer wg.Done()
			defer a.dropSpares() // a run of many agents keeps no done agent's
			for range sc.Turns.PerAgent {
				if sc.Turns.ThinkTime != nil && !env.clk.sleep(startCtx, sc.Turns.ThinkTime.Sample(a.rng)) {
					return
				}
				// ctx too: cancelling the run's ctx cancels the turn's
				// ctx and startCtx one after the other, so a turn can
				// return before startCtx says so.
				if startCtx.Err() != nil || ctx.Err() != nil {
					return
				}
				id, calls := a.nextTurn(sc, true) // the agent's last turn has returned
				env.turn(ctx, col, a, id, calls, env.clk.now())
			}
		})
	}
	release()
	env.started()
	wg.Wait()
}

// runOpen: turns arrive at the scenario's rate, each for the next agent in
// turn (round robin), whether or not earlier turns have finished. A turn's
// latency counts from its intended start, so a generator or registry that
// falls behind shows as latency, not as fewer turns (no coordinated
// omission); MaxInFlight bounds the turns in flight, and the wait for a slot
// counts in the latency too.
func runOpen(ctx, startCtx context.Context, sc *Scenario, agents []*agent, col *collector) {
	var wg sync.WaitGroup
	defer wg.Wait() // the turns in flight, after the generator ended
	env := col.env
	if env.clk.v != nil { // the generator is a task of the clock
		done := make(chan struct{})
		env.goTask(func() { defer close(done); runOpenGen(ctx, startCtx, sc, agents, col, &wg) })
		env.started()
		<-done
		return
	}
	runOpenGen(ctx, startCtx, sc, agents, col, &wg)
}

func runOpenGen(ctx, startCtx context.Context, sc *Scenario, agents []*agent, col *collector, wg *sync.WaitGroup) {
	env := col.env
	arrivals := rand.New(rand.NewPCG(uint64(*sc.Seed), math.MaxUint64))
	slots := env.newSlots(sc.Load.MaxInFlight)
	total := len(agents) * sc.Turns.PerAgent
	gap := float64(time.Second) / sc.Load.Rate
	next := env.clk.now()
	for k := range total {
		if k > 0 {
			g := gap
			if sc.Load.Arrival == ArrivalPoisson {
				g = arrivals.ExpFloat64() * gap
			}
			next = next.Add(time.Duration(g))
		}
		if !env.clk.sleep(startCtx, next.Sub(env.clk.now())) {
			return
		}
		a := agents[k%len(agents)]
		id, calls := a.nextTurn(sc, false) // drawn here, in arrival order: one goroutine uses the rngs
		if !slots.acquire(startCtx) {
			return
		}
		if ctx.Err() != nil { // the slot came from a turn that ended with ctx, before startCtx ended (see runClosed)
			slots.release()
			return
		}
		intended := next
		wg.Add(1)
		env.goTask(func() {
			defer wg.Done()
			defer slots.release()
			env.turn(ctx, col, a, id, calls, intended)
		})
	}
}
