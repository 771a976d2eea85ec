package load

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/toolscope/toolscope/runtime"
)

// How a run stopped (Report.Stopped).
const (
	StoppedComplete    = "complete"    // every planned turn ran
	StoppedDuration    = "duration"    // the scenario's duration passed first
	StoppedInterrupted = "interrupted" // the caller's ctx ended (Ctrl-C)
	StoppedStalled     = "stalled"     // virtual time stood still (Report.Stall)
)

// The timeline is sampled every timelineEvery; past maxTimeline samples
// every other one is dropped and the interval doubles, so a run of any
// length keeps at most maxTimeline.
const (
	timelineEvery = 100 * time.Millisecond
	maxTimeline   = 4096
)

// Sample is one point of a run's timeline: the counts so far at Seconds
// after the start, and the turns in flight then (the queue depth).
type Sample struct {
	Seconds       float64 `json:"t"`
	TurnsDone     int64   `json:"turnsDone"`
	Results       int64   `json:"results"`
	Failures      int64   `json:"failures"`
	TurnsInFlight int64   `json:"turnsInFlight"`
	// The interval's latency: the p50 and p99 of the calls and turns that
	// ended since the previous sample (0: none ended). Compare estimates
	// run-to-run noise from them (see CompareWith).
	CallP50Ms float64 `json:"callP50Ms,omitempty"`
	CallP99Ms float64 `json:"callP99Ms,omitempty"`
	TurnP50Ms float64 `json:"turnP50Ms,omitempty"`
	TurnP99Ms float64 `json:"turnP99Ms,omitempty"`
}

// maxToolHistograms bounds the tools that get a latency histogram of their
// own in the per-tool breakdown (the others are counted only).
const maxToolHistograms = 64

// Latency summarises one HDR histogram (3 significant digits, 1 µs to 24 h),
// in milliseconds.
type Latency struct {
	Count  int64   `json:"count"`
	MinMs  float64 `json:"minMs"`
	MeanMs float64 `json:"meanMs"`
	P50Ms  float64 `json:"p50Ms"`
	P90Ms  float64 `json:"p90Ms"`
	P99Ms  float64 `json:"p99Ms"`
	P999Ms float64 `json:"p999Ms"`
	MaxMs  float64 `json:"maxMs"`
	// CDF is the latency at fixed percentiles (cdfPercentiles), for the
	// report's CDF charts.
	CDF []Quantile `json:"cdf,omitempty"`
	// Buckets counts the latencies in power-of-two buckets of microseconds
	// (from the first to the last non-empty one), for histograms.
	Buckets []Bucket `json:"buckets,omitempty"`
}

// ToolReport is one tool's part of a run.
type ToolReport struct {
	Calls    int64            `json:"calls"`
	Failures map[string]int64 `json:"failures,omitempty"`
	// Latency is the calls' time in the registry (absent past the first 64 tools).
	Latency *Latency `json:"latency,omitempty"`
}

// Report is what a run measured; report.json is its JSON.
//
// Call latency is a call's time in the registry, from entering it to its
// final result (admission wait included); call service is its dispatch
// (around hooks and body). Turn latency is ExecuteTurn's time, counted in
// the open model from the turn's intended start (its arrival), so it
// includes the time the turn waited for the generator, a slot, or the
// scope's admission. Admission wait is the wait of dispatched calls between
// entering the registry and being admitted (runtime.Event.AdmissionWait).
// These come from the registry's hooks (runtime.Hooks: CallFinished,
// CallAborted, TurnStart), which run synchronously and are never
// dropped; Events says how many calls they saw.
type Report struct {
	Scenario  string    `json:"scenario"`
	Model     string    `json:"model"`
	Seed      int64     `json:"seed"`
	Agents    int       `json:"agents"`
	StartedAt time.Time `json:"startedAt"`
	Elapsed   float64   `json:"elapsedSeconds"`
	Stopped   string    `json:"stopped"`

	TurnsPlanned int64 `json:"turnsPlanned"`
	TurnsStarted int64 `json:"turnsStarted"`
	TurnsDone    int64 `json:"turnsDone"`
	// TurnErrors counts turns whose ExecuteTurn returned an error (R98).
	TurnErrors int64 `json:"turnErrors"`
	// Calls counts the calls of the turns started; Results those that
	// got a result (every call, unless a turn ended with an error).
	Calls   int64 `json:"calls"`
	Results int64 `json:"results"`
	// Failures counts failed results by code (CodeUncoded: no code).
	Failures map[string]int64 `json:"failures"`

	Throughput struct {
		TurnsPerSecond float64 `json:"turnsPerSecond"`
		CallsPerSecond float64 `json:"callsPerSecond"`
	} `json:"throughput"`

	CallLatency   Latency `json:"callLatency"`
	CallService   Latency `json:"callService,omitzero"`
	TurnLatency   Latency `json:"turnLatency"`
	AdmissionWait Latency `json:"admissionWait,omitzero"`

	// QueueDepth: the most turns in flight at once, overall and for one
	// agent scope (in the closed model at most 1 per agent by construction).
	QueueDepth struct {
		MaxTurnsInFlight         int64 `json:"maxTurnsInFlight"`
		MaxTurnsInFlightPerAgent int64 `json:"maxTurnsInFlightPerAgent"`
	} `json:"queueDepth"`

	// Parallelism: SerialSeconds is the sum of the turns' calls' dispatch
	// times (what the turns would take one call after another), TurnSeconds
	// the sum of the turns' running times, from their go-ahead (the
	// registry's TurnStart) to their return; Saved is the
	// difference (negative when the scheduling cost more than overlapping
	// saved).
	Parallelism struct {
		SerialSeconds float64 `json:"serialSeconds"`
		TurnSeconds   float64 `json:"turnSeconds"`
		SavedSeconds  float64 `json:"savedSeconds"`
	} `json:"parallelism,omitzero"`

	// Target says where the calls went when not to the run's own
	// simulated tools in process (set by the command that ran it, e.g.
	// "cluster of 3 in-process members"; empty: in process).
	Target string `json:"target,omitempty"`
	// NotMeasured names the figures the run could not observe
	// (FigureAdmissionWait, FigureCallService, FigureParallelism: a
	// Remote's runs its calls out of the client's sight); those figures
	// are absent from report.json and shown as not measured, never as 0.
	NotMeasured []string `json:"notMeasured,omitempty"`

	Tools map[string]*ToolReport `json:"tools"`

	// Timeline samples the run's progress and queue depth over time (every
	// 100 ms, coarser for long runs: at most 4096 samples), for throughput
	// and queue depth over time.
	Timeline []Sample `json:"timeline"`

	// Events: calls whose end the hooks saw (CallFinished, or CallAborted
	// for a turn's call that never started), and results without one
	// (Missing: none unless a bug). Dropped is always 0 (the hooks are
	// synchronous; it counted the events a subscription lost, and stays
	// for reports that have it).
	Events struct {
		Finished int64 `json:"finished"`
		Dropped  int64 `json:"dropped"`
		Missing  int64 `json:"missing"`
	} `json:"events"`

	// Virtual: the run was on virtual time (Options.Virtual); every time
	// above is the clock's.
	Virtual bool `json:"virtual,omitempty"`
	// Stall says why a virtual run was stopped: its clock was held and
	// stood still for StallAfter of wall time (a bug of the model of the
	// registry's scheduling, or a tool that blocks outside the clock).
	Stall string `json:"stall,omitempty"`
	// Replay compares a replayed run with its log (Options.Replay).
	Replay *ReplayReport `json:"replay,omitempty"`
}

func newHist() *hdr.Histogram { return hdr.New(1, int64(MaxLatency/time.Microsecond), 3) }

func record(h *hdr.Histogram, d time.Duration) {
	us := d.Microseconds()
	if us < 1 {
		us = 1
	}
	if hi := h.HighestTrackableValue(); us > hi {
		us = hi
	}
	_ = h.RecordValue(us)
}

func summarise(h *hdr.Histogram) Latency {
	ms := func(v int64) float64 { return float64(v) / 1000 }
	if h.TotalCount() == 0 {
		return Latency{}
	}
	return Latency{
		Count: h.TotalCount(), MinMs: ms(h.Min()), MeanMs: h.Mean() / 1000,
		P50Ms: ms(h.ValueAtQuantile(50)), P90Ms: ms(h.ValueAtQuantile(90)),
		P99Ms: ms(h.ValueAtQuantile(99)), P999Ms: ms(h.ValueAtQuantile(99.9)), MaxMs: ms(h.Max()),
		CDF: cdf(h), Buckets: buckets(h),
	}
}

// collector gathers a run's measurements: turns and results from the
// generator's goroutines, calls from the registry's hooks (hooks).
//
// The hooks are synchronous and run on the registry's goroutines, so they
// do little: a call's hook finds its turn's turnAcc through its agent (the
// call's scope key, then the turn's id, the call id up to its last '/')
// and appends what it measured to it, under the agent's lock; collector.turn
// moves the turn's calls into the run's histograms when the turn returns,
// under the one lock it takes per turn anyway. No event is built, copied or
// queued, no ctx is searched, and no lock is shared by every call.
//
// A call's latency goes into one histogram, callIv (the interval's), which
// sample folds into callLat (the run's) as it starts the next interval, and
// report folds once more; turnIv and turnLat likewise. Folding HDR
// histograms of the same layout adds bucket counts, so the run's figures
// are exactly those of recording every value twice, at half the cost.
type collector struct {
	env          *runEnv // the run's clock, record and replay (virtual.go, record.go)
	start        time.Time
	turnsPlanned int64
	agents       map[string]*agent // by scope key; set before the first turn, then only read

	turnsStarted, turnsDone, inFlight, maxInFlight atomic.Int64
	calls, results, failures, turnErrors           atomic.Int64

	mu        sync.Mutex     // guards the fields below
	turnLat   *hdr.Histogram // the run's turns, but those in turnIv (fold)
	byCode    map[string]int64
	perTool   map[string]*ToolReport
	maxAgent  int64
	timeline  []Sample
	turnIv    *hdr.Histogram // the turns ended since the last sample
	callLat   *hdr.Histogram // the run's calls, but those in callIv (fold)
	service   *hdr.Histogram
	admission *hdr.Histogram
	toolLat   map[string]*hdr.Histogram
	finished  int64 // calls whose end a hook saw (Report.Events.Finished)
	serial    time.Duration
	turnRun   time.Duration
	callIv    *hdr.Histogram // the calls ended since the last sample
	// lastTool and lastHist: the tool recordCall saw last and its
	// histogram (nil past maxToolHistograms), sparing a map lookup per call
	// in a run of calls to one tool.
	lastTool string
	lastHist *hdr.Histogram
	// lastTR and lastTRN: the same for collector.turn's per-tool counts.
	lastTR  *ToolReport
	lastTRN string
}

// turnAcc is one turn's measurements, gathered by the hooks while the turn
// runs and moved into the collector when it returns; its agent's accMu
// guards it while it is the agent's (agent.accs).
type turnAcc struct {
	id      string
	started time.Time // the turn's go-ahead (TurnStart)
	calls   []callObs
}

// turnAccs are an agent's turns in flight: one in the closed model (cur),
// more in the open one (more, by turn id).
type turnAccs struct {
	cur  *turnAcc
	more map[string]*turnAcc
}

func (t *turnAccs) add(acc *turnAcc) {
	if t.cur == nil {
		t.cur = acc
		return
	}
	if t.more == nil {
		t.more = map[string]*turnAcc{}
	}
	t.more[acc.id] = acc
}

func (t *turnAccs) get(id string) *turnAcc {
	if t.cur != nil && t.cur.id == id {
		return t.cur
	}
	return t.more[id] // nil map: nil
}

func (t *turnAccs) remove(acc *turnAcc) {
	if t.cur == acc {
		t.cur = nil
		return
	}
	delete(t.more, acc.id)
}

// callObs is one finished call, as the hooks saw it.
type callObs struct {
	tool       string
	lat        time.Duration // entry to final result (Report.CallLatency)
	admission  time.Duration
	service    time.Duration
	dispatched bool // it was dispatched: admission and service are set
	inTurn     bool // a turn's own call, not one nested in a body (Report.Parallelism)
}

func newCollector(*Scenario) *collector {
	return &collector{
		env:     &runEnv{},
		turnLat: newHist(), turnIv: newHist(), callIv: newHist(), byCode: map[string]int64{}, perTool: map[string]*ToolReport{},
		callLat: newHist(), service: newHist(), admission: newHist(),
		toolLat: map[string]*hdr.Histogram{},
	}
}

// hooks are the collector's registry hooks: call latency, admission wait
// and service from CallFinished (CallAborted for a turn's call that never
// started, R97: latency 0, as its events have), the turns' go-ahead from
// TurnStart (a turn runs from it to ExecuteTurn's return: collector.turn).
func (c *collector) hooks() runtime.Hooks {
	return runtime.Hooks{
		CallFinished: func(ex runtime.Execution, d runtime.CallDone) {
			o := callObs{tool: ex.Name(), lat: since(d.EnteredAt, d.Now()), inTurn: ex.Parent().IsZero()}
			if !d.DispatchDoneAt.IsZero() {
				o.dispatched = true
				if !d.StartedAt.Before(d.EnteredAt) { // as CallDone.AdmissionWait
					o.admission = since(d.EnteredAt, d.StartedAt)
				}
				o.service = since(d.StartedAt, d.DispatchDoneAt)
			}
			c.observe(ex.Agent(), turnOf(ex.CallID()), o)
		},
		CallAborted: func(_ context.Context, ci runtime.CallInfo) {
			c.observe(ci.Scope, ci.TurnID, callObs{tool: ci.Tool, inTurn: ci.Parent.IsZero()})
		},
		TurnStart: func(ctx context.Context, t runtime.TurnInfo) context.Context {
			if a := c.agents[t.Scope]; a != nil {
				now := t.Now()
				a.accMu.Lock()
				if acc := a.accs.get(t.TurnID); acc != nil {
					acc.started = now
				}
				a.accMu.Unlock()
			}
			return ctx
		},
	}
}

// since is to.Sub(from) for the registry's times, which carry no monotonic
// reading (the registry stamps wall times, or its clock's): the difference
// of their Unix nanoseconds, the same duration without Sub's overflow
// checks, for times within 292 years of each other (a zero time falls
// back to Sub).
func since(from, to time.Time) time.Duration {
	if from.IsZero() || to.IsZero() {
		return to.Sub(from)
	}
	return time.Duration(to.UnixNano() - from.UnixNano())
}

// turnOf is the turn id of a call id the generator made (agent.nextTurn:
// the turn's id, '/', the call's index).
func turnOf(callID string) string {
	if i := strings.LastIndexByte(callID, '/'); i >= 0 {
		return callID[:i]
	}
	return ""
}

// observe files a finished call with its turn (turn of agent scope), or,
// for a call outside the turns in flight (nested in a body, or ended after
// its turn returned), with the collector.
func (c *collector) observe(scope, turn string, o callObs) {
	if a := c.agents[scope]; a != nil {
		a.accMu.Lock()
		if acc := a.accs.get(turn); acc != nil {
			acc.calls = append(acc.calls, o)
			a.accMu.Unlock()
			return
		}
		a.accMu.Unlock()
	}
	c.mu.Lock()
	c.recordCall(o)
	c.mu.Unlock()
}

// recordCall adds a finished call to the run's figures; c.mu is held.
func (c *collector) recordCall(o callObs) {
	c.finished++
	record(c.callIv, o.lat) // and callLat, by fold
	h := c.lastHist
	if o.tool != c.lastTool || h == nil {
		h = c.toolLat[o.tool]
		if h == nil && len(c.toolLat) < maxToolHistograms {
			h = newHist()
			c.toolLat[o.tool] = h
		}
		c.lastTool, c.lastHist = o.tool, h
	}
	if h != nil {
		record(h, o.lat)
	}
	if o.dispatched {
		record(c.admission, o.admission)
		record(c.service, o.service)
		if o.inTurn {
			c.serial += o.service
		}
	}
}

// turn runs one turn of agent a and records it; intended is when it was
// meant to start.
func (c *collector) turn(ctx context.Context, a *agent, id string, calls []runtime.TurnCall, intended time.Time) {
	c.turnsStarted.Add(1)
	c.calls.Add(int64(len(calls)))
	raiseMax(&c.maxInFlight, c.inFlight.Add(1))
	raiseMax(&a.maxIn, a.inFlight.Add(1))
	a.accMu.Lock()
	acc := a.spareAcc // the agent's last turn's, recorded: reused
	if acc == nil {
		acc = &turnAcc{calls: make([]callObs, 0, len(calls))}
	}
	a.spareAcc = nil
	acc.id = id
	a.accs.add(acc)
	a.accMu.Unlock()
	var res *runtime.TurnResult
	var err error
	if a.remote == nil {
		res, err = a.scope.ExecuteTurn(ctx, calls, runtime.WithTurnID(id))
	} else {
		res, err = remoteTurn(ctx, a, acc, id, calls)
	}
	done := c.env.clk.now()
	a.inFlight.Add(-1)
	c.inFlight.Add(-1)
	c.turnsDone.Add(1)
	a.accMu.Lock()
	a.accs.remove(acc) // a call ending later goes to the collector (observe)
	a.accMu.Unlock()

	c.mu.Lock()
	c.recordTurn(a, acc, done, done.Sub(intended), calls, res, err)
	c.mu.Unlock()
	*acc = turnAcc{calls: acc.calls[:0]}
	a.accMu.Lock()
	a.spareAcc = acc
	a.accMu.Unlock()
}

// recordTurn adds a returned turn of agent a to the run's figures: its
// calls (acc) and results (res, err), its latency lat and its running time
// from its go-ahead to done; c.mu is held.
func (c *collector) recordTurn(a *agent, acc *turnAcc, done time.Time, lat time.Duration, calls []runtime.TurnCall, res *runtime.TurnResult, err error) {
	for _, o := range acc.calls {
		c.recordCall(o)
	}
	if !acc.started.IsZero() {
		c.turnRun += done.Sub(acc.started)
	}
	if m := a.maxIn.Load(); m > c.maxAgent {
		c.maxAgent = m
	}
	record(c.turnIv, lat) // and turnLat, by fold
	var results []*runtime.Result
	if res != nil {
		results = res.Results
	}
	if err != nil {
		c.turnErrors.Add(1)
	}
	var failed int64
	for i, call := range calls {
		tr := c.lastTR
		if call.Name != c.lastTRN || tr == nil {
			if tr = c.perTool[call.Name]; tr == nil {
				tr = &ToolReport{}
				c.perTool[call.Name] = tr
			}
			c.lastTR, c.lastTRN = tr, call.Name
		}
		tr.Calls++
		if i >= len(results) {
			continue // no result: the turn ended with an error (counted in TurnErrors)
		}
		r := results[i]
		if !r.IsError() {
			continue
		}
		code := string(r.Code())
		if code == "" {
			code = CodeUncoded
		}
		failed++
		c.byCode[code]++
		if tr.Failures == nil {
			tr.Failures = map[string]int64{}
		}
		tr.Failures[code]++
	}
	c.results.Add(int64(min(len(results), len(calls))))
	if failed > 0 {
		c.failures.Add(failed)
	}
}

// fold moves the interval histograms' counts into the run's (recordCall,
// collector.turn); c.mu is held. interval reads them first.
func (c *collector) fold() {
	c.callLat.Merge(c.callIv)
	c.turnLat.Merge(c.turnIv)
}

// sample appends a point to the timeline; true when it thinned the
// timeline (the caller doubles its interval).
func (c *collector) sample() bool {
	p := Sample{Seconds: c.env.clk.now().Sub(c.start).Seconds(), TurnsDone: c.turnsDone.Load(), Results: c.results.Load(),
		Failures: c.failures.Load(), TurnsInFlight: c.inFlight.Load()}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fold()
	p.CallP50Ms, p.CallP99Ms = interval(c.callIv)
	p.TurnP50Ms, p.TurnP99Ms = interval(c.turnIv)
	c.timeline = append(c.timeline, p)
	if len(c.timeline) < maxTimeline {
		return false
	}
	kept := c.timeline[:0]
	for i, s := range c.timeline {
		if i%2 == 1 || i == len(c.timeline)-1 {
			kept = append(kept, s)
		}
	}
	c.timeline = kept
	return true
}

func (c *collector) progress() Progress {
	return Progress{
		Elapsed: c.env.clk.now().Sub(c.start), TurnsPlanned: c.turnsPlanned, TurnsDone: c.turnsDone.Load(),
		TurnsInFlight: c.inFlight.Load(), Calls: c.calls.Load(), Failures: c.failures.Load(),
	}
}

func (c *collector) report(sc *Scenario, agents int, elapsed time.Duration) *Report {
	r := &Report{
		Scenario: sc.Name, Model: sc.Load.Model, Seed: *sc.Seed, Agents: agents,
		StartedAt: c.start.UTC(), Elapsed: elapsed.Seconds(),
		TurnsPlanned: c.turnsPlanned, TurnsStarted: c.turnsStarted.Load(), TurnsDone: c.turnsDone.Load(),
		TurnErrors: c.turnErrors.Load(), Calls: c.calls.Load(), Results: c.results.Load(),
	}
	if s := elapsed.Seconds(); s > 0 {
		r.Throughput.TurnsPerSecond = float64(r.TurnsDone) / s
		r.Throughput.CallsPerSecond = float64(r.Results) / s
	}
	c.mu.Lock()
	c.fold()
	c.callIv.Reset() // folded: a later sample must not count them again
	c.turnIv.Reset()
	r.Failures = c.byCode
	r.Tools = c.perTool
	r.Timeline = c.timeline
	r.TurnLatency = summarise(c.turnLat)
	r.QueueDepth.MaxTurnsInFlight = c.maxInFlight.Load()
	r.QueueDepth.MaxTurnsInFlightPerAgent = c.maxAgent
	r.CallLatency = summarise(c.callLat)
	r.CallService = summarise(c.service)
	r.AdmissionWait = summarise(c.admission)
	for name, h := range c.toolLat {
		if tr := r.Tools[name]; tr != nil {
			l := summarise(h)
			tr.Latency = &l
		}
	}
	r.Parallelism.SerialSeconds = c.serial.Seconds()
	r.Parallelism.TurnSeconds = c.turnRun.Seconds()
	r.Parallelism.SavedSeconds = (c.serial - c.turnRun).Seconds()
	r.Events.Finished = c.finished
	c.mu.Unlock()
	if m := r.Results - r.Events.Finished; m > 0 {
		r.Events.Missing = m
	}
	return r
}

// WriteSummary writes the report as a table a person reads at a glance.
func (r *Report) WriteSummary(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	p := func(format string, args ...any) { fmt.Fprintf(tw, format, args...) }
	p("scenario\t%s (%s loop, seed %d, %d agents)\n", r.Scenario, r.Model, r.Seed, r.Agents)
	p("run\t%.2f s, %s\n", r.Elapsed, r.Stopped)
	if r.Target != "" {
		p("target\t%s\n", r.Target)
	}
	p("turns\t%d done of %d planned (%d started, %d errors)\n", r.TurnsDone, r.TurnsPlanned, r.TurnsStarted, r.TurnErrors)
	p("calls\t%d made, %d results, %d failed\n", r.Calls, r.Results, sumCounts(r.Failures))
	p("throughput\t%.1f turns/s, %.1f calls/s\n", r.Throughput.TurnsPerSecond, r.Throughput.CallsPerSecond)
	p("queue depth\tmax %d turns in flight, max %d for one agent\n", r.QueueDepth.MaxTurnsInFlight, r.QueueDepth.MaxTurnsInFlightPerAgent)
	if r.Measured(FigureParallelism) {
		p("parallelism\t%.3f s of calls ran in %.3f s of turns: %.3f s saved\n", r.Parallelism.SerialSeconds, r.Parallelism.TurnSeconds, r.Parallelism.SavedSeconds)
	} else {
		p("parallelism\tnot measured (out of the client's sight)\n")
	}
	p("\n")
	p("latency (ms)\tcount\tp50\tp90\tp99\tp99.9\tmax\tmean\n")
	row := func(name string, l Latency) {
		p("%s\t%d\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\n", name, l.Count, l.P50Ms, l.P90Ms, l.P99Ms, l.P999Ms, l.MaxMs, l.MeanMs)
	}
	row("turn", r.TurnLatency)
	row("call", r.CallLatency)
	for _, f := range []struct {
		name, figure string
		l            Latency
	}{{"call service", FigureCallService, r.CallService}, {"admission wait", FigureAdmissionWait, r.AdmissionWait}} {
		if r.Measured(f.figure) {
			row(f.name, f.l)
		} else {
			p("%s\tnot measured (out of the client's sight)\n", f.name)
		}
	}
	for _, name := range sortedToolNames(r.Tools) {
		if l := r.Tools[name].Latency; l != nil {
			row("  "+name, *l)
		}
	}
	if len(r.Failures) > 0 {
		p("\nfailures\tcount\n")
		codes := make([]string, 0, len(r.Failures))
		for c := range r.Failures {
			codes = append(codes, c)
		}
		sort.Strings(codes)
		for _, c := range codes {
			p("%s\t%d\n", c, r.Failures[c])
		}
	}
	if r.Events.Dropped > 0 || r.Events.Missing > 0 {
		p("\nevents\t%d finished, %d dropped, %d results without an event: call latencies cover only the calls with events\n",
			r.Events.Finished, r.Events.Dropped, r.Events.Missing)
	}
	return tw.Flush()
}

// Measured says whether the run measured figure (one of FigureAdmissionWait,
// FigureCallService, FigureParallelism; any other name: true).
func (r *Report) Measured(figure string) bool {
	for _, f := range r.NotMeasured {
		if f == figure {
			return false
		}
	}
	return true
}

// raiseMax sets *m to n if n is larger.
func raiseMax(m *atomic.Int64, n int64) {
	for {
		old := m.Load()
		if n <= old || m.CompareAndSwap(old, n) {
			return
		}
	}
}

func sumCounts(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

func sortedToolNames(m map[string]*ToolReport) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
