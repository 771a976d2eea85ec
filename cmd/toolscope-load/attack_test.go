package main

// Tests of an outside attack on the command: odd flags and files, each a
// finding that failed before its fix.

import (
	"context"
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
