//go:build !race

// These tests start a protoactor cluster in process, so they are left out
// of -race builds (protoactor's own data races: see the cluster package's
// cluster_test.go); withoutrace_test.go runs them from a -race run.

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/toolscope/toolscope/cluster"
	"github.com/toolscope/toolscope/cluster/loadtarget"
	"github.com/toolscope/toolscope/load"
	"github.com/toolscope/toolscope/runtime"
)

// waitLimit bounds every wait here; one that runs out dumps goroutines.
const waitLimit = 2 * time.Minute

func failHung(t *testing.T, what string) {
	t.Helper()
	var b strings.Builder
	if p := pprof.Lookup("goroutine"); p != nil {
		_ = p.WriteTo(&b, 2)
	}
	t.Fatalf("hang: %s\n--- goroutines ---\n%s", what, b.String())
}

func bounded[T any](t *testing.T, what string, f func() T) T {
	t.Helper()
	ch := make(chan T, 1)
	go func() { ch <- f() }()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitLimit):
		failHung(t, what)
		panic("unreachable")
	}
}

func parse(t *testing.T, s string) *load.Scenario {
	t.Helper()
	sc, err := load.Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// TestLoadCluster_SummaryCountsEqualCallsMade: the command against 1 and
// 2 in-process members: every call of the scenario gets a result, the
// summary and report.json count them all, the failures by code (and the
// calls per tool) are those the generator injected — the in-process run of
// the same scenario and seed has the same — and the figures out of the
// client's sight are reported not measured.
func TestLoadCluster_SummaryCountsEqualCallsMade(t *testing.T) {
	in, err := load.Run(context.Background(), parse(t, small), load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const want = 9 * 4 * 3
	if in.Calls != want || len(in.Failures) != 2 {
		t.Fatalf("the in-process run: %d calls, failures %v", in.Calls, in.Failures)
	}
	for _, members := range []int{1, 2} {
		t.Run(fmt.Sprintf("members=%d", members), func(t *testing.T) {
			dir := t.TempDir()
			sc := filepath.Join(dir, "small.json")
			if err := os.WriteFile(sc, []byte(small), 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "report.json")
			var stdout, stderr bytes.Buffer
			code := bounded(t, "the command", func() int {
				return run(context.Background(), []string{"-scenario", sc, "-members", fmt.Sprint(members), "-out", out, "-progress", "0", "-lease", "2s"}, &stdout, &stderr)
			})
			if code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, &stdout, &stderr)
			}
			flat := strings.Join(strings.Fields(stdout.String()), " ")
			for _, s := range []string{"108 made, 108 results, 59 failed", "36 done of 36 planned", fmt.Sprintf("cluster of %d in-process member(s)", members),
				"admission wait not measured", "LOAD_INJECTED_FAILURE 16", "TOOL_TIMEOUT 43"} {
				if !strings.Contains(flat, s) {
					t.Errorf("the summary lacks %q:\n%s", s, &stdout)
				}
			}
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			var r load.Report
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatal(err)
			}
			if r.Stopped != load.StoppedComplete || r.Calls != want || r.Results != want || r.TurnsDone != 36 || r.TurnErrors != 0 || r.Events.Finished != want {
				t.Fatalf("report: stopped %s, calls %d, results %d, turns %d (%d errors), events %d", r.Stopped, r.Calls, r.Results, r.TurnsDone, r.TurnErrors, r.Events.Finished)
			}
			if !maps.Equal(r.Failures, in.Failures) {
				t.Errorf("failures by code: the cluster %v, in process %v", r.Failures, in.Failures)
			}
			for name, tr := range in.Tools {
				if r.Tools[name] == nil || r.Tools[name].Calls != tr.Calls || !maps.Equal(r.Tools[name].Failures, tr.Failures) {
					t.Errorf("tool %s: the cluster %+v, in process %+v", name, r.Tools[name], tr)
				}
			}
			if r.Measured(load.FigureAdmissionWait) || bytes.Contains(b, []byte(`"admissionWait":`)) || !strings.Contains(r.Target, "in-process member") {
				t.Errorf("report.json: notMeasured %v, target %q", r.NotMeasured, r.Target)
			}
			if _, err := os.Stat(filepath.Join(dir, "report.html")); err != nil {
				t.Errorf("report.html: %v", err)
			}
		})
	}
}

// probe is the cluster target with a look at the trees before they go:
// its Close runs calls of its own first.
type probe struct {
	*loadtarget.Target
	check func(ctx context.Context)
}

func (p *probe) Close(ctx context.Context) error {
	p.check(ctx)
	return p.Target.Close(ctx)
}

// TestLoadCluster_RestrictionHoldsRemotely: a sub-agent's level denies
// the broken tool; on the member hosting its tree the sub-agent does not
// see it (UNKNOWN_TOOL: hidden, not run) while its parent, unrestricted,
// runs it (the injected failure). After the run the trees are disposed.
func TestLoadCluster_RestrictionHoldsRemotely(t *testing.T) {
	c := bounded(t, "starting a member", func() *conn {
		c, err := startLocal(context.Background(), 1, 2*time.Second)
		if err != nil {
			t.Error(err)
		}
		return c
	})
	if c == nil {
		t.FailNow()
	}
	defer c.close()
	cl := cluster.NewClient(c.client, cluster.WithDefaultTimeout(30*time.Second))
	target := loadtarget.New(cl)
	var denied, ran, fine *runtime.Result
	p := &probe{Target: target, check: func(ctx context.Context) {
		fail := json.RawMessage(`{"sleep_ns":0,"fail":true}`)
		denied = target.Scope("a2.1").Execute(ctx, runtime.Call{ID: "probe-denied", Name: "broken", Arguments: fail})
		ran = target.Scope("a2").Execute(ctx, runtime.Call{ID: "probe-ran", Name: "broken", Arguments: fail})
		fine = target.Scope("a2.1").Execute(ctx, runtime.Call{ID: "probe-fine", Name: "ok", Arguments: json.RawMessage(`{"sleep_ns":0}`)})
	}}
	r := bounded(t, "the run", func() *load.Report {
		r, err := load.Run(context.Background(), parse(t, small), load.Options{Remote: p})
		if err != nil {
			t.Error(err)
		}
		return r
	})
	if r == nil {
		t.FailNow()
	}
	if r.Results != 108 || r.Tools["broken"].Calls == 0 {
		t.Fatalf("results %d, broken called %+v", r.Results, r.Tools["broken"])
	}
	if denied == nil || !denied.IsError() || denied.Code() != runtime.CodeUnknownTool {
		t.Errorf("the restricted sub-agent's call of broken: %+v, want %s", denied, runtime.CodeUnknownTool)
	}
	if ran == nil || !ran.IsError() || ran.Code() != load.CodeInjectedFailure {
		t.Errorf("the agent's call of broken: %+v, want %s", ran, load.CodeInjectedFailure)
	}
	if fine == nil || fine.IsError() || len(fine.Text()) != 100 {
		t.Errorf("the sub-agent's call of ok: %+v, want 100 bytes", fine)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	after := cl.Tree(target.Run()+".a2").Scope("a2.1").Execute(ctx, runtime.Call{ID: "probe-after", Name: "ok", Arguments: json.RawMessage(`{}`)})
	if !after.IsError() || after.Code() != cluster.CodeNoSuchScope {
		t.Errorf("a call after the run: %+v, want %s (the tree disposed)", after, cluster.CodeNoSuchScope)
	}
}

// TestLoadCluster_JoinsRunningMembers: with -peers and -name the command
// joins a running cluster (two members started here) as a client and runs
// the scenario on it.
func TestLoadCluster_JoinsRunningMembers(t *testing.T) {
	c := bounded(t, "starting members", func() *conn {
		c, err := startLocal(context.Background(), 2, 2*time.Second)
		if err != nil {
			t.Error(err)
		}
		return c
	})
	if c == nil {
		t.FailNow()
	}
	defer c.close()
	dir := t.TempDir()
	sc := filepath.Join(dir, "small.json")
	if err := os.WriteFile(sc, []byte(small), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := bounded(t, "the command", func() int {
		return run(context.Background(), []string{"-scenario", sc, "-peers", strings.Join(c.hosts, ","), "-name", c.name, "-out", "", "-progress", "0"}, &stdout, &stderr)
	})
	flat := strings.Join(strings.Fields(stdout.String()), " ")
	if code != 0 || !strings.Contains(flat, "108 made, 108 results, 59 failed") || !strings.Contains(flat, fmt.Sprintf("cluster %q (2 members)", c.name)) {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, &stdout, &stderr)
	}
}
