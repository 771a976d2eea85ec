package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolscope/toolscope/load"
)

// runCmd runs the command with a bound, dumping goroutines if it hangs.
func runCmd(t *testing.T, ctx context.Context, stderr *syncBuffer, args ...string) (int, string) {
	t.Helper()
	var stdout bytes.Buffer
	if stderr == nil {
		stderr = &syncBuffer{}
	}
	done := make(chan int, 1)
	go func() { done <- run(ctx, args, &stdout, stderr) }()
	select {
	case code := <-done:
		return code, stdout.String()
	case <-time.After(2 * time.Minute):
		var b strings.Builder
		_ = pprof.Lookup("goroutine").WriteTo(&b, 2)
		t.Fatalf("toolscope-load %v did not return within 2 minutes; stderr:\n%s\ngoroutines:\n%s", args, stderr.String(), b.String())
		return 0, ""
	}
}

// syncBuffer is a bytes.Buffer safe for the progress goroutine and the test,
// which may call onWrite on every write.
type syncBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	onWrite func(s string)
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	n, err := s.b.Write(p)
	all := s.b.String()
	f := s.onWrite
	s.mu.Unlock()
	if f != nil {
		f(all)
	}
	return n, err
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func writeScenario(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "scenario.json")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func readReport(t *testing.T, path string) *load.Report {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r load.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// TestLoadCommand_SummaryCountsEqualCallsMade: 2 agents with 2 sub-agents
// each, 5 turns of exactly 2 calls: 60 calls, every one in the summary
// and report.json, one finished event each; the failing tool's calls are
// all counted under its code.
func TestLoadCommand_SummaryCountsEqualCallsMade(t *testing.T) {
	sc := writeScenario(t, `{"name": "e2e", "agents": {"count": 2, "subAgents": 2, "depth": 1},
	  "tools": [
	    {"name": "fast", "mode": "parallel", "latency": {"kind": "lognormal", "median": "200us", "sigma": 0.3}},
	    {"name": "bad", "mode": "exclusive", "latency": {"kind": "constant", "value": "0s"}, "failureRate": 1}],
	  "turns": {"perAgent": 5, "callsPerTurn": {"min": 2, "max": 2}},
	  "load": {"model": "closed"}}`)
	out := filepath.Join(t.TempDir(), "report.json")
	stderr := &syncBuffer{}
	code, stdout := runCmd(t, context.Background(), stderr, "-scenario", sc, "-out", out, "-progress", "1ms")
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
	}
	r := readReport(t, out)
	const calls = 6 * 5 * 2
	if r.Calls != calls || r.Results != calls || r.Events.Finished != calls || r.CallLatency.Count != calls || r.TurnsDone != 30 {
		t.Fatalf("report: calls %d results %d events %d latencies %d turns %d, want %d calls", r.Calls, r.Results, r.Events.Finished, r.CallLatency.Count, r.TurnsDone, calls)
	}
	if r.Tools["bad"].Calls+r.Tools["fast"].Calls != calls || r.Failures[load.CodeInjectedFailure] != r.Tools["bad"].Calls {
		t.Fatalf("per tool: fast %+v bad %+v failures %v", r.Tools["fast"], r.Tools["bad"], r.Failures)
	}
	want := fmt.Sprintf("%d made, %d results, %d failed", calls, calls, r.Tools["bad"].Calls)
	for _, s := range []string{want, "turns        30 done of 30 planned", "p99.9", "admission wait", "parallelism", "report: " + out} {
		if !strings.Contains(stdout, s) {
			t.Errorf("stdout lacks %q:\n%s", s, stdout)
		}
	}
	if !strings.Contains(stderr.String(), "turns ") {
		t.Errorf("no progress on stderr:\n%s", stderr.String())
	}
}

// TestLoadCommand_OpenLoopQueuesClosedLoopDoesNot: through the command and
// report.json, against one slow exclusive tool (see the load package's
// test for the bound): the open loop's turns queue and its latency shows
// it; the closed loop never has two turns of an agent in flight.
func TestLoadCommand_OpenLoopQueuesClosedLoopDoesNot(t *testing.T) {
	const text = `{"name": "q", "agents": {"count": 1},
	  "tools": [{"name": "commit", "mode": "exclusive", "latency": {"kind": "constant", "value": "30ms"}}],
	  "turns": {"perAgent": 10, "callsPerTurn": {"min": 1, "max": 1}},
	  "load": {"model": "%s"%s}}`
	var reps []*load.Report
	for _, model := range [][2]string{{"closed", ""}, {"open", `, "rate": 1000`}} {
		out := filepath.Join(t.TempDir(), "report.json")
		if code, _ := runCmd(t, context.Background(), nil, "-scenario", writeScenario(t, fmt.Sprintf(text, model[0], model[1])), "-out", out, "-progress", "0"); code != 0 {
			t.Fatalf("%s: exit %d", model[0], code)
		}
		reps = append(reps, readReport(t, out))
	}
	closed, open := reps[0], reps[1]
	if closed.Results != 10 || open.Results != 10 {
		t.Fatalf("results %d, %d", closed.Results, open.Results)
	}
	if closed.QueueDepth.MaxTurnsInFlightPerAgent != 1 || open.QueueDepth.MaxTurnsInFlightPerAgent < 2 {
		t.Fatalf("queue depth: closed %d, open %d", closed.QueueDepth.MaxTurnsInFlightPerAgent, open.QueueDepth.MaxTurnsInFlightPerAgent)
	}
	if open.TurnLatency.MaxMs < 290 {
		t.Fatalf("open loop: max turn latency %.3f ms hides the queueing", open.TurnLatency.MaxMs)
	}
}

// TestLoadCommand_BadScenarioNamesThePath: exit 2 and every bad field by
// its JSON path.
func TestLoadCommand_BadScenarioNamesThePath(t *testing.T) {
	sc := writeScenario(t, `{"name": "bad", "agents": {"count": 1},
	  "tools": [{"name": "t", "mode": "parallel", "latency": {"kind": "gamma"}, "colour": "red"}],
	  "turns": {"perAgent": 1, "callsPerTurn": {"min": 1, "max": 1}},
	  "load": {"model": "closed"}}`)
	stderr := &syncBuffer{}
	code, _ := runCmd(t, context.Background(), stderr, "-scenario", sc, "-out", "")
	if code != 2 || !strings.Contains(stderr.String(), "$.tools[0].colour: unknown field") {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
	}
	sc = writeScenario(t, `{"name": "bad", "agents": {"count": 1},
	  "tools": [{"name": "t", "mode": "parallel", "latency": {"kind": "gamma"}}],
	  "turns": {"perAgent": 1, "callsPerTurn": {"min": 1, "max": 1}},
	  "load": {"model": "closed"}}`)
	code, _ = runCmd(t, context.Background(), stderr, "-scenario", sc, "-out", "")
	if code != 2 || !strings.Contains(stderr.String(), `$.tools[0].latency.kind: want one of constant`) {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
	}
}

// TestLoadCommand_InterruptWritesReportOfWhatRan: ending the ctx (what
// Ctrl-C does) while turns are in flight stops the run; the summary and
// report.json say interrupted and account for every call started.
func TestLoadCommand_InterruptWritesReportOfWhatRan(t *testing.T) {
	sc := writeScenario(t, `{"name": "stuck", "agents": {"count": 3},
	  "tools": [{"name": "forever", "mode": "parallel", "latency": {"kind": "constant", "value": "1h"}}],
	  "turns": {"perAgent": 100, "callsPerTurn": {"min": 1, "max": 1}},
	  "load": {"model": "closed"}}`)
	out := filepath.Join(t.TempDir(), "report.json")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &syncBuffer{onWrite: func(s string) {
		if strings.Contains(s, "(3 in flight)") {
			cancel()
		}
	}}
	code, stdout := runCmd(t, ctx, stderr, "-scenario", sc, "-out", out, "-progress", "1ms")
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
	}
	r := readReport(t, out)
	if r.Stopped != load.StoppedInterrupted || r.TurnsStarted != 3 || r.Calls != 3 || r.Results != 3 || r.TurnsPlanned != 300 {
		t.Fatalf("report: %+v", r)
	}
	if !strings.Contains(stdout, "interrupted") {
		t.Fatalf("summary:\n%s", stdout)
	}
}

// TestLoadCommand_CompareFlagsPlanted2xRegressionNotNoise: from a real run
// of 2.5 s (25 timeline intervals), B with every latency doubled
// and throughput halved — in the summary and in every interval — is a
// marked regression (exit 3), decided by the interval test; the same
// report twice, and B with each interval's values moved by up to ±10 %
// at random, are noise (exit 0, nothing marked).
func TestLoadCommand_CompareFlagsPlanted2xRegressionNotNoise(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.json")
	if code, _ := runCmd(t, context.Background(), nil, "-scenario", writeScenario(t, `{"name": "cmp", "agents": {"count": 8},
	  "tools": [{"name": "t", "mode": "parallel", "latency": {"kind": "uniform", "min": "10ms", "max": "20ms"}}],
	  "turns": {"perAgent": 1000, "callsPerTurn": {"min": 1, "max": 3}},
	  "load": {"model": "closed", "duration": "2500ms"}}`), "-out", a, "-progress", "0"); code != 0 {
		t.Fatalf("exit %d", code)
	}
	base := readReport(t, a)
	if len(base.Timeline) < load.MinIntervals+1 {
		t.Fatalf("the run has %d intervals", len(base.Timeline))
	}
	rng := rand.New(rand.NewPCG(5, 5))
	scaled := func(name string, f float64, jitter float64) string {
		r := *base
		for _, l := range []*load.Latency{&r.TurnLatency, &r.CallLatency, &r.CallService, &r.AdmissionWait} {
			l.P50Ms *= f
			l.P90Ms *= f
			l.P99Ms *= f
			l.P999Ms *= f
			l.MaxMs *= f
			l.MeanMs *= f
		}
		r.Throughput.TurnsPerSecond /= f
		r.Throughput.CallsPerSecond /= f
		r.Timeline = nil
		for _, s := range base.Timeline {
			j := func() float64 { return f * (1 + jitter*(2*rng.Float64()-1)) }
			s.Seconds *= f // the same counts in f times the time
			s.CallP50Ms *= j()
			s.CallP99Ms *= j()
			s.TurnP50Ms *= j()
			s.TurnP99Ms *= j()
			r.Timeline = append(r.Timeline, s)
		}
		b, _ := json.Marshal(&r)
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	code, stdout := runCmd(t, context.Background(), nil, "-compare", a, scaled("slow.json", 2, 0))
	if code != 3 || !strings.Contains(stdout, "turn p99 ms") || !strings.Contains(stdout, "! worse") {
		t.Fatalf("2× regression: exit %d\n%s", code, stdout)
	}
	for _, line := range strings.Split(stdout, "\n") {
		if (strings.HasPrefix(line, "turn p50") || strings.HasPrefix(line, "call p50")) &&
			(!strings.Contains(line, "! worse") || !strings.Contains(line, "intervals")) {
			t.Errorf("not marked by the interval test: %s\n%s", line, stdout)
		}
		// Throughput halves exactly, but whether the interval test calls
		// that beyond noise depends on how much the base run's own
		// per-interval throughput spread (on a loaded machine, 2× and more:
		// p 0.02–0.06 was seen), so it must only never read as better.
		if strings.HasPrefix(line, "throughput") && (!strings.Contains(line, "0.50×") || strings.Contains(line, "+ better")) {
			t.Errorf("throughput not halved, or marked better: %s\n%s", line, stdout)
		}
	}
	for _, b := range []string{a, scaled("noise.json", 1, 0.1)} {
		code, stdout = runCmd(t, context.Background(), nil, "-compare", a, b)
		if code != 0 || strings.Contains(stdout, "!") || strings.Contains(stdout, "+ better") {
			t.Fatalf("noise marked (%s): exit %d\n%s", b, code, stdout)
		}
	}
}
