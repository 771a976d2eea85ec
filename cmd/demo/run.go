package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolscope/toolscope/codemode"
	"github.com/toolscope/toolscope/messages"
	"github.com/toolscope/toolscope/runtime"
)

// config is what the flags set.
type config struct {
	Seed     uint64
	Agents   int
	Turns    int
	OutDir   string    // timeline.html goes here; "" writes no file
	JSONFile string    // raw execution events as JSON lines; "" for none
	Progress io.Writer // live progress line; nil for none

	// MetricsAddr is where /metrics is served while the demo runs ("" for
	// nowhere); MetricsHold keeps serving that long after the run.
	MetricsAddr string
	MetricsHold time.Duration
	// TraceFile receives the run's spans as OTLP JSON ("" for none).
	TraceFile string
	// Virtual runs the demo on virtual time (virtual.go): the timeline
	// and the summary's times are the clock's, not the wall's.
	Virtual bool
	// Scale stretches every virtual duration (-scale; 0 or 1: as is).
	Scale int

	holding chan<- string // tests: told the /metrics URL when the hold begins
	// slept (tests, -virtual): told of every sleep on the clock, with the
	// call it slept for ("" when the ctx names none).
	slept func(call string, d time.Duration)
}

// callRecord is one call as the execution events describe it: the bars of
// the timeline and the rows of the summary come from these, never from
// the demo's own bookkeeping. Args and Message are joined in by call id
// (the events carry neither).
type callRecord struct {
	CallID, Agent, Tool, Turn string
	Mode                      messages.ExecutionMode
	Group                     int32
	Start, End                int64 // unix nanos, from the events
	// Dispatched is when the tool's dispatch returned (0: never
	// dispatched). A turn's ExecutionFinished is stamped when the result is
	// committed in model order, so for a parallel call End includes the
	// wait for earlier calls; Dispatched tells the two apart.
	Dispatched int64
	// Program is the id of the run_code call whose program made this call
	// ("" for a call the model made).
	Program string
	// Outcome is the call's outcome word (runtime.Outcome.String: "ok",
	// "denied", "failed", ...); Code its failure code or, for an uncoded
	// failure, the outcome word (what the table counts).
	Outcome       string
	Code          string
	IsError       bool
	Args, Message string
}

// recorder subscribes to the registry's typed events (Registry.Subscribe).
type recorder struct {
	mu       sync.Mutex
	finished []runtime.Event
	raw      []runtime.Event // every execution event, in delivery order
	arrived  chan struct{}   // a token per finished event

	inFlight, done atomic.Int64
}

func (r *recorder) handle(e runtime.Event) {
	switch e.Kind {
	case runtime.ExecutionStarted:
		r.mu.Lock()
		r.raw = append(r.raw, e)
		r.mu.Unlock()
		r.inFlight.Add(1)
	case runtime.ExecutionFinished:
		r.mu.Lock()
		r.finished = append(r.finished, e)
		r.raw = append(r.raw, e)
		r.mu.Unlock()
		r.inFlight.Add(-1)
		r.done.Add(1)
		select {
		case r.arrived <- struct{}{}:
		default:
		}
	}
}

// waitFinished waits until n finished events arrived (delivery is
// asynchronous), or for at most limit.
func (r *recorder) waitFinished(n int, limit time.Duration) error {
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		got := len(r.finished)
		r.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-r.arrived:
		case <-deadline.C:
			return fmt.Errorf("internal: %d of %d finished events arrived", got, n)
		}
	}
}

// recordMode and recordCode map a typed event onto the record's fields.
func recordMode(e runtime.Event) messages.ExecutionMode {
	switch {
	case !e.Classified:
		return messages.ModeUnspecified
	case e.Mode == runtime.Parallel:
		return messages.ModeParallel
	default:
		return messages.ModeExclusive
	}
}

func recordCode(e runtime.Event) string {
	if e.IsError && e.Code == "" {
		return e.Outcome.String() // "denied" or "failed"
	}
	return string(e.Code)
}

// end is when the call's own work ended: its dispatch if it had one, its
// finished event otherwise.
func (c callRecord) end() int64 {
	if c.Dispatched != 0 && c.Dispatched < c.End {
		return c.Dispatched
	}
	return c.End
}

// run plays the plan of cfg on a fresh registry, writes the artefacts and
// the summary table to stdout, and returns the summary.
func run(ctx context.Context, cfg config, stdout io.Writer) (*Summary, error) {
	plan, err := newPlan(cfg.Seed, cfg.Agents, cfg.Turns)
	if err != nil {
		return nil, err
	}
	if err := checkMetricsHold(cfg); err != nil {
		return nil, err
	}
	if err := checkVirtual(cfg); err != nil {
		return nil, err
	}
	tel, telOpts, err := startTelemetry(cfg)
	if err != nil {
		return nil, err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = tel.shutdown(sctx)
	}()
	ps := &policyStats{}
	clk := newDemoClock(cfg.Virtual, cfg.Scale)
	clk.slept = cfg.slept
	// The simulated user presses Ctrl-C while a marked call runs: armed
	// when its dispatch begins, on the dispatching goroutine (a task of a
	// virtual clock), so the interrupt lands interruptWait after it.
	interrupts := map[string]context.CancelFunc{}
	var imu sync.Mutex
	interrupter := runtime.WithHooks(runtime.Hooks{CallStage: func(ex runtime.Execution, st runtime.CallStage) {
		if st.Stage != runtime.StageDispatching {
			return
		}
		imu.Lock()
		cancel := interrupts[ex.CallID()]
		imu.Unlock()
		if cancel != nil {
			clk.afterFunc(interruptWait, cancel)
		}
	}})
	opts := []runtime.Option{runtime.WithMaxParallel(4), runtime.WithApprover(approver(ps)),
		codemode.Option(codemode.Config{}), interrupter}
	opts = append(opts, clk.options()...)
	reg, err := runtime.New(append(opts, telOpts...)...)
	if err != nil {
		return nil, err
	}
	defer reg.Close(context.Background())
	if err := globalTools(reg, ps); err != nil {
		return nil, err
	}

	rec := &recorder{arrived: make(chan struct{}, 1)}
	sub, err := reg.Subscribe(rec.handle, runtime.WithBuffer(1<<16))
	if err != nil {
		return nil, err
	}
	defer sub.Close()

	var (
		turnsDone  atomic.Int64
		resMu      sync.Mutex
		results    = map[string]*runtime.Result{}
		turnErrs   []error
		neverStart int
		cancelled  int
		innerCalls int // calls run_code programs made
	)
	collect := func(calls []runtime.TurnCall, tr *runtime.TurnResult, err error) {
		turnsDone.Add(1)
		resMu.Lock()
		defer resMu.Unlock()
		if err != nil {
			turnErrs = append(turnErrs, err)
			return
		}
		for i, r := range tr.Results {
			results[calls[i].ID] = r
			if calls[i].Name == runtime.RunCodeName {
				innerCalls += programCalls(r)
			}
		}
	}

	// Scopes: one per agent, sub-agents nested under their parent.
	scopes := map[string]*runtime.Scope{}
	delegate := func(ctx context.Context, subKey string, rc *runtime.RunContext) (string, error) {
		tp, ok := plan.Delegations[rc.Execution().CallID()]
		if !ok {
			return "", fmt.Errorf("no task planned for %s", subKey)
		}
		tr, err := scopes[subKey].ExecuteTurn(ctx, tp.Calls, runtime.WithTurnID(tp.ID))
		collect(tp.Calls, tr, err)
		if err != nil {
			return "", err
		}
		failed := 0
		for _, r := range tr.Results {
			if r.IsError() {
				failed++
			}
		}
		return fmt.Sprintf("%s finished %d calls, %d failed", subKey, len(tr.Results), failed), nil
	}
	for _, a := range plan.Agents {
		var s *runtime.Scope
		if a.Parent == "" {
			s, err = reg.NewScope(a.Key)
		} else {
			s, err = scopes[a.Parent].NewScope(a.Key)
		}
		if err != nil {
			return nil, err
		}
		scopes[a.Key] = s
		if a.Code {
			if err := s.SetPresentation(runtime.PresentationCode); err != nil {
				return nil, err
			}
		}
		if err := scopedTools(s, a, delegate); err != nil {
			return nil, fmt.Errorf("%s: %w", a.Key, err)
		}
	}

	// Live progress on stderr.
	begin, wallBegin := clk.now(), time.Now()
	stopProgress := startProgress(cfg.Progress, clk.now, begin, plan.totalTurns(), &turnsDone, rec)

	// One trace for the run: every agent's turns are children of its span.
	// The run's ctx carries the clock the tools sleep on.
	runCtx, cancelRun := context.WithCancel(clk.context(ctx))
	defer cancelRun()
	var runSpan trace.Span
	if tel.tp != nil {
		runCtx, runSpan = tel.tp.Tracer("github.com/toolscope/toolscope/cmd/demo").Start(runCtx, "demo run",
			trace.WithAttributes(attribute.Int64("demo.seed", int64(cfg.Seed)),
				attribute.Int("demo.agents", cfg.Agents), attribute.Int("demo.turns", cfg.Turns)))
	}

	// Every top-level agent runs its turns one after another; the agents
	// run concurrently.
	var drivers []func()
	for _, a := range plan.Agents {
		if a.Parent != "" {
			continue
		}
		drivers = append(drivers, func() {
			for _, tp := range a.Turns {
				tctx, cancel := context.WithCancel(runCtx)
				if tp.InterruptOn != "" {
					imu.Lock()
					interrupts[tp.InterruptOn] = cancel
					imu.Unlock()
				}
				tr, err := scopes[a.Key].ExecuteTurn(tctx, tp.Calls, runtime.WithTurnID(tp.ID))
				if tctx.Err() != nil && ctx.Err() == nil {
					resMu.Lock()
					cancelled++
					resMu.Unlock()
				}
				cancel()
				collect(tp.Calls, tr, err)
			}
		})
	}
	stalled := clk.drive(cancelRun, drivers)
	if runSpan != nil {
		runSpan.End()
	}
	elapsed, wall := clk.now().Sub(begin), time.Since(wallBegin)
	stopProgress()
	if stalled != nil {
		return nil, stalled
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(turnErrs) > 0 {
		return nil, fmt.Errorf("turn failed: %w", turnErrs[0])
	}

	// Join the events into call records, once every call's has arrived.
	resMu.Lock()
	want := len(results) + innerCalls
	resMu.Unlock()
	if err := rec.waitFinished(want, 10*time.Second); err != nil {
		return nil, err
	}
	rec.mu.Lock()
	// A call a run_code program made names the program's execution as its
	// parent (Event.Parent): the timeline draws it as the program's child.
	programs := map[runtime.Token]string{}
	for _, e := range rec.raw {
		if e.Kind == runtime.ExecutionStarted && e.Tool == runtime.RunCodeName {
			programs[e.Token] = e.CallID
		}
	}
	calls := make([]callRecord, 0, len(rec.finished))
	for _, f := range rec.finished {
		if !f.Classified && f.Code == runtime.CodeAbortedBeforeDispatch && f.DispatchDoneAt.IsZero() && f.TurnID != "" {
			// A synthetic pair (R97): the call never started.
			neverStart++
			continue
		}
		c := callRecord{
			CallID: f.CallID, Agent: f.Scope, Tool: f.Tool, Turn: f.TurnID,
			Mode: recordMode(f), Group: f.Group, Start: f.StartedAt.UnixNano(), End: f.At.UnixNano(),
			Outcome: f.Outcome.String(), Code: recordCode(f), IsError: f.IsError, Args: plan.Args[f.CallID],
		}
		if !f.DispatchDoneAt.IsZero() {
			c.Dispatched = f.DispatchDoneAt.UnixNano()
		}
		if !f.Parent.IsZero() {
			if id, ok := programs[f.Parent]; ok {
				c.Program = id
				c.Message = "(returned to the program of " + id + ")"
			}
		}
		if r := results[c.CallID]; r != nil {
			if r.IsError() {
				c.Message = r.ErrorMessage()
			} else {
				c.Message = r.Text()
			}
		}
		calls = append(calls, c)
	}
	raw := rec.raw
	rec.mu.Unlock()

	sum := summarize(plan, calls)
	sum.calls = calls
	sum.Elapsed = elapsed
	sum.Virtual, sum.WallElapsed = clk.v != nil, wall
	sum.Turns = plan.totalTurns()
	sum.Cancelled = cancelled
	sum.NeverStarted = neverStart
	sum.Redacted = int(ps.redacted.Load())
	sum.Approved = int(ps.approved.Load())
	sum.Rejected = int(ps.rejected.Load())
	for _, a := range plan.Agents {
		if a.Code {
			sum.CodeAgents = append(sum.CodeAgents, a.Key)
		}
	}
	for _, c := range calls {
		switch {
		case c.Tool == runtime.RunCodeName:
			sum.Programs++
		case c.Program != "":
			sum.ProgramCalls++
		}
	}
	if n := len(results) + innerCalls; n != len(calls)+neverStart {
		return nil, fmt.Errorf("internal: %d results (%d of calls run_code programs made) but %d finished events and %d never-started calls", n, innerCalls, len(calls), neverStart)
	}

	if cfg.JSONFile != "" {
		if err := writeEvents(cfg.JSONFile, raw); err != nil {
			return nil, err
		}
		sum.Events = cfg.JSONFile
	}
	if cfg.OutDir != "" {
		if err := os.MkdirAll(cfg.OutDir, 0o755); err != nil {
			return nil, err
		}
		sum.Timeline = filepath.Join(cfg.OutDir, "timeline.html")
		if err := writeTimeline(sum.Timeline, plan, sum, calls); err != nil {
			return nil, err
		}
	}
	sum.WriteTable(stdout, true)
	return sum, tel.report(ctx, cfg, stdout)
}

// checkMetricsHold says which part of -metrics-hold is wrong: the flag it
// needs, or its value.
func checkMetricsHold(cfg config) error {
	switch {
	case cfg.MetricsHold < 0:
		return fmt.Errorf("-metrics-hold must not be negative, got %v", cfg.MetricsHold)
	case cfg.MetricsHold > 0 && cfg.MetricsAddr == "":
		return fmt.Errorf("-metrics-hold %v needs -metrics ADDR, which is missing: it keeps serving /metrics after the run, so give the address to serve on (e.g. -metrics 127.0.0.1:9090 -metrics-hold %v)", cfg.MetricsHold, cfg.MetricsHold)
	}
	return nil
}

// programCalls is how many calls a run_code result's program made (its
// value's "calls"; 0 when the run failed before returning one).
func programCalls(r *runtime.Result) int {
	b, ok := r.Value()
	if !ok {
		return 0
	}
	var v struct {
		Calls int `json:"calls"`
	}
	if json.Unmarshal(b, &v) != nil {
		return 0
	}
	return v.Calls
}

// report says where the traces and metrics went, and serves /metrics for
// cfg.MetricsHold more (or until ctx ends: Ctrl-C ends the hold, not the
// demo's success).
func (t *telemetry) report(ctx context.Context, cfg config, w io.Writer) error {
	if t.tp != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := t.flushTraces(sctx)
		cancel()
		if err != nil {
			return fmt.Errorf("-trace: %w", err)
		}
		fmt.Fprintf(w, "\ntraces: %d spans in %s (OTLP JSON; load it in Jaeger UI: Search page, the JSON File tab; or POST it to an OTLP/HTTP collector's /v1/traces)\n", t.spans(), t.TraceFile)
	}
	if t.MetricsURL == "" {
		return nil
	}
	if cfg.MetricsHold == 0 {
		fmt.Fprintf(w, "metrics: served on %s while the demo ran (-metrics-hold 30s keeps it up after the run)\n", t.MetricsURL)
		return nil
	}
	fmt.Fprintf(w, "metrics: serving %s for %v more (curl it; Ctrl-C stops)\n", t.MetricsURL, cfg.MetricsHold)
	if cfg.holding != nil {
		cfg.holding <- t.MetricsURL
	}
	timer := time.NewTimer(cfg.MetricsHold)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
	}
	return nil
}

// startProgress redraws one status line on w until the returned stop is
// called; with a nil w it does nothing.
func startProgress(w io.Writer, now func() time.Time, begin time.Time, turns int, done *atomic.Int64, rec *recorder) (stop func()) {
	if w == nil {
		return func() {}
	}
	quit := make(chan struct{})
	finished := make(chan struct{})
	draw := func() {
		el := now().Sub(begin)
		rate := float64(rec.done.Load()) / max(el.Seconds(), 1e-3)
		fmt.Fprintf(w, "\r\033[K▶ turns %d/%d · calls in flight %d · %d calls done · %.0f calls/s · %.1fs",
			done.Load(), turns, rec.inFlight.Load(), rec.done.Load(), rate, el.Seconds())
	}
	go func() {
		defer close(finished)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-quit:
				draw()
				fmt.Fprint(w, "\n")
				return
			case <-t.C:
				draw()
			}
		}
	}()
	return func() { close(quit); <-finished }
}

// writeEvents writes every execution event as one JSON line.
func writeEvents(name string, events []runtime.Event) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	for _, e := range events {
		line := struct {
			Event          string `json:"event"`
			CallID         string `json:"call_id"`
			Scope          string `json:"scope"`
			Tool           string `json:"tool"`
			Mode           string `json:"mode,omitempty"`
			TurnID         string `json:"turn_id,omitempty"`
			Group          int32  `json:"group,omitempty"`
			EnteredUnix    int64  `json:"entered_unix_nanos,omitempty"`
			StartedUnix    int64  `json:"started_unix_nanos"`
			DispatchedUnix int64  `json:"dispatch_done_unix_nanos,omitempty"`
			FinishedUnix   int64  `json:"finished_unix_nanos,omitempty"`
			Outcome        string `json:"outcome,omitempty"`
			Code           string `json:"code,omitempty"`
			IsError        bool   `json:"is_error,omitempty"`
			Nested         bool   `json:"nested,omitempty"`
		}{
			Event: e.Kind.String(), CallID: e.CallID, Scope: e.Scope, Tool: e.Tool, TurnID: e.TurnID, Group: e.Group,
			StartedUnix: e.StartedAt.UnixNano(), Nested: !e.Parent.IsZero(),
		}
		if e.Classified {
			line.Mode = e.Mode.String()
		}
		if !e.EnteredAt.IsZero() {
			line.EnteredUnix = e.EnteredAt.UnixNano()
		}
		if e.Kind == runtime.ExecutionFinished {
			line.FinishedUnix, line.Outcome, line.Code, line.IsError = e.At.UnixNano(), e.Outcome.String(), string(e.Code), e.IsError
			if !e.DispatchDoneAt.IsZero() {
				line.DispatchedUnix = e.DispatchDoneAt.UnixNano()
			}
		}
		if err := enc.Encode(line); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}
