package main

// Tests of an outside attack on the command: odd flags and files, each a
// finding that failed before its fix.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const attackScenario = `{"name": "small", "seed": 5, "agents": {"count": 2},
  "tools": [{"name": "t", "mode": "parallel", "latency": {"kind": "constant", "value": "0s"}}],
  "turns": {"perAgent": 3, "callsPerTurn": {"min": 2, "max": 2}},
  "load": {"model": "closed"}}`

// TestAttack_Cmd_RecordToAFullDiskStillWritesTheReport: -record to a
// device that refuses writes (/dev/full: no space) fails the log, exit 1
// naming it, and the run's summary and report.json are still written (the
// report was lost with the log).
func TestAttack_Cmd_RecordToAFullDiskStillWritesTheReport(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	out := filepath.Join(t.TempDir(), "report.json")
	stderr := &syncBuffer{}
	code, stdout := runCmd(t, context.Background(), stderr, "-scenario", writeScenario(t, attackScenario), "-out", out, "-progress", "0", "-record", "/dev/full")
	if code != 1 || !strings.Contains(stderr.String(), "record") || !strings.Contains(stderr.String(), "no space") {
		t.Fatalf("exit %d, want 1 naming the record; stderr:\n%s", code, stderr.String())
	}
	if !strings.Contains(stdout, "12 made, 12 results") {
		t.Fatalf("summary:\n%s", stdout)
	}
	if r := readReport(t, out); r.Calls != 12 || r.Results != 12 {
		t.Fatalf("report: %+v", r)
	}
}

// TestAttack_Cmd_OutputsCheckedBeforeTheRun: an -out, -html or -record the
// command cannot write, or two of them naming one file (-out report.html
// with -html auto; -record over the -replay log), is refused before the
// run (exit 2, naming the flag) — it was found only after the whole run,
// whose report was then lost, or the JSON report silently overwritten by
// the page and the replayed log by the new one.
func TestAttack_Cmd_OutputsCheckedBeforeTheRun(t *testing.T) {
	dir := t.TempDir()
	sc := writeScenario(t, attackScenario)
	missing := filepath.Join(dir, "no", "such", "dir", "report.json")
	log := filepath.Join(dir, "run.jsonl")
	if code, _ := runCmd(t, context.Background(), nil, "-scenario", sc, "-out", "", "-progress", "0", "-record", log); code != 0 {
		t.Fatalf("recording: exit %d", code)
	}
	logBefore, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"out in a missing dir", []string{"-scenario", sc, "-out", missing}, "-out: cannot write"},
		{"html in a missing dir", []string{"-scenario", sc, "-out", "", "-html", missing}, "-html: cannot write"},
		{"record in a missing dir", []string{"-scenario", sc, "-out", "", "-record", missing}, "-record: cannot write"},
		{"out is the page", []string{"-scenario", sc, "-out", filepath.Join(dir, "r.html")}, "the same file as -out"},
		{"record is the replayed log", []string{"-out", "", "-replay", log, "-record", log}, "the same file as -replay"},
	} {
		t.Run(c.name, func(t *testing.T) {
			stderr := &syncBuffer{}
			code, stdout := runCmd(t, context.Background(), stderr, append([]string{"-progress", "0"}, c.args...)...)
			if code != 2 || !strings.Contains(stderr.String(), c.want) || strings.Contains(stderr.String(), "agents,") || stdout != "" {
				t.Fatalf("exit %d, want 2 and %q before the run; stdout:\n%s\nstderr:\n%s", code, c.want, stdout, stderr.String())
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "r.html")); !os.IsNotExist(err) {
		t.Fatalf("the refused run left r.html behind: %v", err)
	}
	if after, _ := os.ReadFile(log); string(after) != string(logBefore) {
		t.Fatal("the replayed log was changed")
	}
	if code, _ := runCmd(t, context.Background(), nil, "-scenario", sc, "-progress", "0", "-out", "/dev/null", "-html", "/dev/null"); code != 0 {
		t.Fatalf("-out and -html /dev/null: exit %d", code)
	}
}

// TestAttack_Cmd_CompareHostileOrMismatchedReports: -compare refuses a file
// that is JSON but not a report (it compared zeros, exit 0), names the
// file of a corrupt one, notes runs of different scenarios or clocks, and
// shows a name holding terminal escapes or a tab quoted (it went to the
// terminal raw, and broke the table).
func TestAttack_Cmd_CompareHostileOrMismatchedReports(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	if code, _ := runCmd(t, context.Background(), nil, "-scenario", writeScenario(t, attackScenario), "-out", good, "-html", "", "-progress", "0"); code != 0 {
		t.Fatalf("exit %d", code)
	}
	goodText, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	file := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct{ name, text, want string }{
		{"empty object", `{}`, "not a report"},
		{"null", `null`, "not a report"},
		{"a scenario", attackScenario, "cannot unmarshal"},
		{"truncated", string(goodText[:len(goodText)/2]), "unexpected end"},
		{"two values", string(goodText) + string(goodText), "invalid character"},
	} {
		t.Run(c.name, func(t *testing.T) {
			bad := file(strings.ReplaceAll(c.name, " ", "_")+".json", c.text)
			stderr := &syncBuffer{}
			code, _ := runCmd(t, context.Background(), stderr, "-compare", good, bad)
			if code != 2 || !strings.Contains(stderr.String(), bad) || !strings.Contains(stderr.String(), c.want) {
				t.Fatalf("exit %d, want 2 naming %s with %q; stderr:\n%s", code, bad, c.want, stderr.String())
			}
		})
	}
	r := readReport(t, good)
	r.Scenario, r.Virtual = "evil\x1b[2J\x1b]0;pwned\a\tname", true
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	evil := file("evil.json", string(b))
	stderr := &syncBuffer{}
	code, stdout := runCmd(t, context.Background(), stderr, "-compare", good, evil)
	if code != 0 || strings.ContainsAny(stdout, "\x1b\a") || !strings.Contains(stdout, `"evil\x1b[2J`) {
		t.Fatalf("exit %d; the name must be shown quoted:\n%q", code, stdout)
	}
	if !strings.Contains(stderr.String(), "different workloads") || !strings.Contains(stderr.String(), "different clocks") || strings.ContainsAny(stderr.String(), "\x1b\a") {
		t.Fatalf("no note of the mismatch, or it is raw:\n%q", stderr.String())
	}
}

// TestAttack_Cmd_YAMLScenario: -scenario takes a YAML file (the issue's
// "one JSON or YAML file"; it was refused as "not a JSON document").
func TestAttack_Cmd_YAMLScenario(t *testing.T) {
	p := filepath.Join(t.TempDir(), "s.yaml")
	yml := "name: small\nseed: 5\nagents: {count: 2}\ntools:\n  - {name: t, mode: parallel, latency: {kind: constant, value: 0s}}\nturns:\n  perAgent: 3\n  callsPerTurn: {min: 2, max: 2}\nload:\n  model: closed\n"
	if err := os.WriteFile(p, []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	stderr := &syncBuffer{}
	code, stdout := runCmd(t, context.Background(), stderr, "-scenario", p, "-out", "", "-progress", "0")
	if code != 0 || !strings.Contains(stdout, "12 made, 12 results") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr.String())
	}
}

// TestAttack_Cmd_ReplayRefusesFlagsItWouldIgnore: -replay runs the log's
// scenario on the log's clock; a -scenario or a contrary -virtual given
// with it was silently ignored (the user believed another scenario was
// replayed); now refused, exit 2, naming both flags.
func TestAttack_Cmd_ReplayRefusesFlagsItWouldIgnore(t *testing.T) {
	log := filepath.Join(t.TempDir(), "run.jsonl")
	sc := writeScenario(t, attackScenario)
	if code, _ := runCmd(t, context.Background(), nil, "-scenario", sc, "-virtual", "-out", "", "-progress", "0", "-record", log); code != 0 {
		t.Fatalf("recording: exit %d", code)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-scenario", sc}, "-scenario with -replay"},
		{[]string{"-scenario", "example:open"}, "-scenario with -replay"},
		{[]string{"-virtual=false"}, "-virtual=false with -replay of a log recorded with -virtual=true"},
	} {
		stderr := &syncBuffer{}
		code, stdout := runCmd(t, context.Background(), stderr, append([]string{"-replay", log, "-out", "", "-progress", "0"}, c.args...)...)
		if code != 2 || !strings.Contains(stderr.String(), c.want) || stdout != "" {
			t.Fatalf("%v: exit %d, want 2 and %q before the run\nstdout:\n%s\nstderr:\n%s", c.args, code, c.want, stdout, stderr.String())
		}
	}
	stderr := &syncBuffer{}
	if code, stdout := runCmd(t, context.Background(), stderr, "-replay", log, "-virtual", "-out", "", "-progress", "0"); code != 0 || !strings.Contains(stdout, "every agent saw the logged results") {
		t.Fatalf("a replay with a -virtual that agrees: exit %d\n%s\n%s", code, stdout, stderr.String())
	}
}
