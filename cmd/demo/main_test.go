package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
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
	for _, code := range []string{"ABORTED", "ERROR", "TOOL_TIMEOUT", "UNKNOWN_TOOL"} {
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

	// The timeline: self-contained, a lane per agent, a bar per call.
	b, err := os.ReadFile(filepath.Join(dir, "timeline.html"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	if n := strings.Count(page, `<g class="bar `); n != sum.Total.Calls {
		t.Errorf("timeline has %d bars, want %d", n, sum.Total.Calls)
	}
	for _, a := range sum.Agents {
		if n := strings.Count(page, `<span class="k">`+a.Agent+`</span>`); n != 1 {
			t.Errorf("timeline has %d lanes named %s, want 1", n, a.Agent)
		}
	}
	for _, bad := range []string{"<script src", "<link", "@import", "https://fonts", "url("} {
		if strings.Contains(page, bad) {
			t.Errorf("timeline is not self-contained: contains %q", bad)
		}
	}
	for _, want := range []string{`class="barrier"`, `<title>`, `class="bar denied"`, `class="bar failed"`} {
		if !strings.Contains(page, want) {
			t.Errorf("timeline lacks %s", want)
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
