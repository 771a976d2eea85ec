package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"runtime/pprof"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolscope/toolscope/runtime"
)

var update = flag.Bool("update", false, "rewrite testdata/summary.golden")

// TestGoldenSummary runs the demo with a fixed seed and compares the
// timing-free summary with testdata/summary.golden (go test -update
// refreshes it). It also checks the artefacts the run writes.
func TestGoldenSummary(t *testing.T) {
	dir := t.TempDir()
	events := filepath.Join(dir, "events.jsonl")
	var out strings.Builder
	sum, err := run(context.Background(), config{Seed: 1, Agents: 5, Turns: 3, OutDir: dir, JSONFile: events}, &out)
	if err != nil {
		t.Fatal(err)
	}
	got := sum.Golden()
	golden := filepath.Join("testdata", "summary.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/demo -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("summary differs from %s (go test ./cmd/demo -update refreshes it)\n--- got\n%s\n--- want\n%s", golden, got, want)
	}

	// stdout carries the table and nothing else.
	if !strings.HasPrefix(out.String(), "AGENT ") || !strings.Contains(out.String(), "SAVED BY PARALLELISM") {
		t.Errorf("stdout does not start with the summary table:\n%s", out.String())
	}

	// Every feature of the scenario shows up.
	failed := sum.Total.Failed
	for _, code := range []string{"ABORTED", "failed", "TOOL_TIMEOUT", "UNKNOWN_TOOL"} {
		if failed[code] == 0 {
			t.Errorf("no %s failure in the summary", code)
		}
	}
	if sum.Total.Denied == 0 || sum.Total.Parallel == 0 || sum.Total.Exclusive == 0 {
		t.Errorf("want denied, parallel and exclusive calls, got %+v", sum.Total)
	}
	if sum.Cancelled != 1 || sum.Redacted == 0 || sum.Approved == 0 || sum.Rejected == 0 {
		t.Errorf("cancelled=%d redacted=%d approved=%d rejected=%d", sum.Cancelled, sum.Redacted, sum.Approved, sum.Rejected)
	}

	// The raw events: one started and one finished per call.
	f, err := os.Open(events)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	kinds := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e struct {
			Event  string `json:"event"`
			CallID string `json:"call_id"`
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("bad event line %q: %v", sc.Text(), err)
		}
		if e.CallID == "" {
			t.Errorf("event line without a call id: %q", sc.Text())
		}
		kinds[e.Event]++
	}
	// Every call has one pair, the never-started calls of a cancelled turn
	// included (their synthetic pair, R97).
	if want := sum.Total.Calls + sum.NeverStarted; kinds["execution-started"] != want || kinds["execution-finished"] != want {
		t.Errorf("events %v, want %d of each", kinds, want)
	}

	// The timeline: self-contained, a lane per agent, every call once (as
	// data the page draws).
	b, err := os.ReadFile(filepath.Join(dir, "timeline.html"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	d := pageData(t, page)
	if len(d.Calls) != sum.Total.Calls {
		t.Errorf("timeline has %d calls, want %d", len(d.Calls), sum.Total.Calls)
	}
	lanes := map[string]int{}
	for _, l := range d.Lanes {
		lanes[l.Name]++
	}
	for _, a := range sum.Agents {
		if lanes[a.Agent] != 1 {
			t.Errorf("timeline has %d lanes named %s, want 1", lanes[a.Agent], a.Agent)
		}
	}
	for _, bad := range []string{"<script src", "<link", "@import", "https://fonts", "url("} {
		if strings.Contains(page, bad) {
			t.Errorf("timeline is not self-contained: contains %q", bad)
		}
	}
	// The code-mode agent: a run_code call per turn, each with its
	// program's calls pointing at it.
	if sum.Programs == 0 || sum.ProgramCalls == 0 {
		t.Errorf("%d programs made %d calls, want some of each", sum.Programs, sum.ProgramCalls)
	}
	kinds, programs, programCalls := map[string]int{}, map[int]bool{}, 0
	for _, c := range d.Calls {
		kinds[d.Kinds[c.Kind]]++
		if c.Program >= 0 {
			programs[c.Program] = true
			programCalls++
		}
	}
	if kinds["program"] != sum.Programs || len(programs) != sum.Programs || programCalls != sum.ProgramCalls {
		t.Errorf("timeline has %d run_code calls, %d with calls that made %d calls, want %d, %d and %d", kinds["program"], len(programs), programCalls, sum.Programs, sum.Programs, sum.ProgramCalls)
	}
	for _, want := range []string{"denied", "failed", "exclusive", "parallel"} {
		if kinds[want] == 0 {
			t.Errorf("timeline has no %s call: %v", want, kinds)
		}
	}
}

// TestSameSeedSameRun checks determinism: same seed, same plan and same
// summary; another seed, another plan.
func TestSameSeedSameRun(t *testing.T) {
	p1, err := newPlan(7, 7, 2)
	if err != nil {
		t.Fatal(err)
	}
	p2, _ := newPlan(7, 7, 2)
	if !reflect.DeepEqual(p1, p2) {
		t.Fatal("same seed, different plans")
	}
	p3, _ := newPlan(8, 7, 2)
	if reflect.DeepEqual(p1.Args, p3.Args) {
		t.Fatal("different seeds, same plan")
	}
	cfg := config{Seed: 7, Agents: 7, Turns: 2}
	s1, err := run(context.Background(), cfg, new(strings.Builder))
	if err != nil {
		t.Fatal(err)
	}
	s2, err := run(context.Background(), cfg, new(strings.Builder))
	if err != nil {
		t.Fatal(err)
	}
	if s1.Golden() != s2.Golden() {
		t.Errorf("same seed, different summaries:\n%s\n%s", s1.Golden(), s2.Golden())
	}
}

func TestBadFlags(t *testing.T) {
	for _, c := range []config{{Agents: 0, Turns: 1}, {Agents: 51, Turns: 1}, {Agents: 1, Turns: 0}} {
		if _, err := run(context.Background(), c, new(strings.Builder)); err == nil {
			t.Errorf("%+v: want an error", c)
		}
	}
}

// await waits for ch, or fails the test with a goroutine dump.
func await[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	timer := time.NewTimer(30 * time.Second)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		var buf bytes.Buffer
		_ = pprof.Lookup("goroutine").WriteTo(&buf, 2)
		t.Fatalf("timed out waiting for %s; goroutines:\n%s", what, buf.String())
		var zero T
		return zero
	}
}

type otlpFile struct {
	ResourceSpans []struct {
		Resource struct {
			Attributes []otlpKV `json:"attributes"`
		} `json:"resource"`
		ScopeSpans []struct {
			Scope struct {
				Name string `json:"name"`
			} `json:"scope"`
			Spans []struct {
				TraceID      string   `json:"traceId"`
				SpanID       string   `json:"spanId"`
				ParentSpanID string   `json:"parentSpanId"`
				Name         string   `json:"name"`
				Kind         int      `json:"kind"`
				Attributes   []otlpKV `json:"attributes"`
				Events       []struct {
					Name string `json:"name"`
				} `json:"events"`
			} `json:"spans"`
		} `json:"scopeSpans"`
	} `json:"resourceSpans"`
}

type otlpKV struct {
	Key   string `json:"key"`
	Value struct {
		StringValue string `json:"stringValue"`
	} `json:"value"`
}

// TestMetricsAndTrace runs the demo with -metrics (held after the run) and
// -trace: /metrics serves the registry's series after real calls, and the
// trace file is OTLP JSON with one execute_tool span per planned call, each
// a child of its turn's span, and every delegated sub-agent's turn a child
// of its delegate call's span.
func TestMetricsAndTrace(t *testing.T) {
	traceFile := filepath.Join(t.TempDir(), "trace.json")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	holding := make(chan string, 1)
	cfg := config{Seed: 1, Agents: 5, Turns: 3, MetricsAddr: "127.0.0.1:0", MetricsHold: time.Hour, TraceFile: traceFile, holding: holding}
	var out strings.Builder
	type runOut struct {
		sum *Summary
		err error
	}
	done := make(chan runOut, 1)
	go func() {
		sum, err := run(ctx, cfg, &out)
		done <- runOut{sum, err}
	}()

	url := await(t, holding, "the /metrics hold")
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	for _, want := range []string{
		`gen_ai_execute_tool_duration_seconds_bucket{gen_ai_tool_name="read"`,
		`toolscope_outcome="timed_out"`,
		`error_type="TOOL_TIMEOUT"`,
		`toolscope_admission_wait_seconds_count{gen_ai_tool_name="delegate"`,
		`toolscope_calls_in_flight{`,
		`toolscope_calls_queued{`,
		`toolscope_calls_failed_total{`,
		`toolscope_outcome="denied"`,
		`service_name="toolscope-demo"`, // target_info
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics has no %s", want)
		}
	}
	cancel() // Ctrl-C ends the hold
	res := await(t, done, "the run to end")
	if res.err != nil {
		t.Fatal(res.err)
	}
	for _, want := range []string{"traces: ", traceFile, "metrics: serving " + url} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the summary does not mention %q:\n%s", want, out.String())
		}
	}

	raw, err := os.ReadFile(traceFile)
	if err != nil {
		t.Fatal(err)
	}
	var f otlpFile
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatalf("the trace file is not one JSON object: %v", err)
	}
	if n := bytes.Count(raw, []byte("\n")); n != 1 || raw[len(raw)-1] != '\n' {
		t.Errorf("want one line, got %d newlines", n)
	}
	type span struct {
		name, parent, trace string
		attrs               map[string]string
		events              []string
	}
	spans := map[string]span{}
	byCall, turnByID := map[string]string{}, map[string]string{}
	for _, rs := range f.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				sp := span{name: s.Name, parent: s.ParentSpanID, trace: s.TraceID, attrs: map[string]string{}}
				for _, kv := range s.Attributes {
					sp.attrs[kv.Key] = kv.Value.StringValue
				}
				for _, e := range s.Events {
					sp.events = append(sp.events, e.Name)
				}
				if len(s.SpanID) != 16 || len(s.TraceID) != 32 {
					t.Fatalf("span %s: ids are not hex: %q %q", s.Name, s.TraceID, s.SpanID)
				}
				spans[s.SpanID] = sp
				switch {
				case strings.HasPrefix(s.Name, "execute_tool "):
					if s.Kind != 1 {
						t.Errorf("%s: kind %d, want 1 (INTERNAL)", s.Name, s.Kind)
					}
					byCall[sp.attrs["gen_ai.tool.call.id"]] = s.SpanID
				case s.Name == "execute_turn":
					turnByID[sp.attrs["toolscope.turn.id"]] = s.SpanID
				}
			}
		}
	}
	plan, err := newPlan(cfg.Seed, cfg.Agents, cfg.Turns)
	if err != nil {
		t.Fatal(err)
	}
	checkTurn := func(tp turnPlan) {
		turn, ok := turnByID[tp.ID]
		if !ok {
			t.Errorf("no execute_turn span for turn %s", tp.ID)
			return
		}
		for _, c := range tp.Calls {
			id, ok := byCall[c.ID]
			if !ok {
				t.Errorf("no span for call %s", c.ID)
				continue
			}
			sp := spans[id]
			if sp.parent != turn {
				t.Errorf("call %s: parent %s, want its turn %s", c.ID, sp.parent, turn)
			}
			if want := "execute_tool " + c.Name; sp.name != want || sp.attrs["gen_ai.tool.name"] != c.Name {
				t.Errorf("call %s: span %q, want %q", c.ID, sp.name, want)
			}
		}
	}
	// A run_code program's calls are children of its span: directly, or
	// through the nested turn of a parallel() batch.
	programs := 0
	checkProgram := func(c runtime.TurnCall) int {
		programs++
		n := 0
		for ; plan.Args[fmt.Sprintf("%s/%d", c.ID, n+1)] != ""; n++ {
			id := fmt.Sprintf("%s/%d", c.ID, n+1)
			sp, ok := byCall[id]
			if !ok {
				t.Errorf("no span for the program's call %s", id)
				continue
			}
			parent := spans[sp].parent
			if spans[parent].name == "execute_turn" {
				parent = spans[parent].parent
			}
			if parent != byCall[c.ID] {
				t.Errorf("the program's call %s: parent %s (%s), want run_code %s's span", id, parent, spans[parent].name, c.ID)
			}
		}
		if n == 0 {
			t.Errorf("program %s made no call", c.ID)
		}
		return n
	}
	calls := 0
	for _, a := range plan.Agents {
		for _, tp := range a.Turns {
			checkTurn(tp)
			calls += len(tp.Calls)
			for _, c := range tp.Calls {
				if c.Name == runtime.RunCodeName {
					calls += checkProgram(c)
				}
			}
		}
	}
	if programs == 0 {
		t.Fatal("the plan has no run_code program")
	}
	for callID, tp := range plan.Delegations {
		checkTurn(tp)
		calls += len(tp.Calls)
		if turn, ok := turnByID[tp.ID]; ok && spans[turn].parent != byCall[callID] {
			t.Errorf("delegated turn %s: parent %s, want its delegate call %s's span %s", tp.ID, spans[turn].parent, callID, byCall[callID])
		}
	}
	if len(plan.Delegations) == 0 {
		t.Fatal("the plan has no delegation")
	}
	if len(byCall) != calls {
		t.Errorf("%d execute_tool spans for %d planned calls", len(byCall), calls)
	}
	// One trace: the run's span is the root of every turn.
	var root string
	for id, sp := range spans {
		if sp.parent == "" {
			if root != "" {
				t.Fatalf("two root spans: %s and %s", spans[root].name, sp.name)
			}
			root = id
		}
	}
	if spans[root].name != "demo run" {
		t.Errorf("root span %q", spans[root].name)
	}
	for _, sp := range spans {
		if sp.trace != spans[root].trace {
			t.Fatalf("span %s in another trace", sp.name)
		}
	}
	// A dispatched call's stages are span events.
	stages := spans[byCall[plan.Agents[0].Turns[0].Calls[0].ID]].events
	if !slices.Contains(stages, "admitted") || !slices.Contains(stages, "dispatch") {
		t.Errorf("stage events %v", stages)
	}
}

func TestBadTelemetryFlags(t *testing.T) {
	for _, c := range []config{
		{Agents: 1, Turns: 1, MetricsHold: time.Second},                         // hold without -metrics
		{Agents: 1, Turns: 1, MetricsAddr: "127.0.0.1:0", MetricsHold: -1},      // negative hold
		{Agents: 1, Turns: 1, MetricsAddr: "not an address"},                    // bad address
		{Agents: 1, Turns: 1, TraceFile: filepath.Join(t.TempDir(), "no", "f")}, // unwritable file
	} {
		if _, err := run(context.Background(), c, new(strings.Builder)); err == nil {
			t.Errorf("%+v: want an error", c)
		}
	}
}

// The summary says "1 turn", not "1 turns" (issue 25), and names the -json
// file next to the timeline.
func TestSummary_CountsAndFiles(t *testing.T) {
	var b strings.Builder
	(&Summary{Turns: 1, Redacted: 1, Programs: 1, CodeAgents: []string{"r"}, Total: AgentStats{Calls: 1},
		Timeline: "out/timeline.html", Events: "out/events.jsonl"}).WriteTable(&b, true)
	out := b.String()
	for _, want := range []string{"\n1 turn (", "1 secret redacted", "1 run_code program made", "1 call in", "timeline: out/timeline.html", "events (-json): out/events.jsonl"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	b.Reset()
	(&Summary{Turns: 2, Total: AgentStats{Calls: 2}}).WriteTable(&b, true)
	if out := b.String(); !strings.Contains(out, "\n2 turns (") || !strings.Contains(out, "2 calls in") || strings.Contains(out, "events") {
		t.Errorf("summary:\n%s", out)
	}
}

// The run's own summary names the -json file it wrote.
func TestSummary_NamesTheJSONFile(t *testing.T) {
	events := filepath.Join(t.TempDir(), "events.jsonl")
	var out strings.Builder
	if _, err := run(context.Background(), config{Seed: 1, Agents: 1, Turns: 1, JSONFile: events}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "events (-json): "+events) {
		t.Errorf("stdout does not name %s:\n%s", events, out.String())
	}
}

// -metrics-hold says which flag it lacks, or that its value is wrong.
func TestBadFlags_MetricsHoldSaysWhatIsMissing(t *testing.T) {
	for _, c := range []struct {
		cfg       config
		want, not string
	}{
		{config{Agents: 1, Turns: 1, MetricsHold: 30 * time.Second}, "needs -metrics ADDR, which is missing", "negative"},
		{config{Agents: 1, Turns: 1, MetricsAddr: "127.0.0.1:0", MetricsHold: -1}, "must not be negative", "missing"},
	} {
		_, err := run(context.Background(), c.cfg, new(strings.Builder))
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), c.not) {
			t.Errorf("%+v: error %v, want one saying %q", c.cfg, err, c.want)
		}
	}
}

func TestMain_ClusterFlagPointsAtTheClusterDemo(t *testing.T) {
	var b strings.Builder
	if clusterPointer(0, &b) || b.Len() != 0 {
		t.Fatalf("-cluster 0 must run the local demo, wrote %q", b.String())
	}
	if !clusterPointer(3, &b) || !strings.Contains(b.String(), "go run ./cluster/cmd/demo-cluster -members 3") {
		t.Fatalf("-cluster 3: %q", b.String())
	}
}
