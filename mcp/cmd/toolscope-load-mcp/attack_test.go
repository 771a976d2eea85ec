package main

// Tests of an outside attack on the command: odd flags and hostile
// servers, each a finding that failed before its fix.

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestAttack_LoadMCP_OutputsCheckedBeforeTheRun: a report or page the
// command cannot write, or -out naming the page -html auto makes, is
// refused before the server is reached (exit 2, naming the flag) — it was
// found only after the whole run, whose report was then lost or
// overwritten by the page.
func TestAttack_LoadMCP_OutputsCheckedBeforeTheRun(t *testing.T) {
	sc := writeFile(t, "s.json", smallScenario)
	dir := t.TempDir()
	missing := filepath.Join(dir, "no", "such", "dir", "report.json")
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"out in a missing dir", []string{"-out", missing}, "-out: cannot write"},
		{"html in a missing dir", []string{"-out", "", "-html", missing}, "-html: cannot write"},
		{"out is the page", []string{"-out", filepath.Join(dir, "r.html")}, "the same file as -out"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"-scenario", sc, "-progress", "0", "-url", "http://127.0.0.1:9/mcp"}, mapping...)
			code, _, stderr := runCmd(t, append(args, c.args...)...)
			if code != 2 || !strings.Contains(stderr, c.want) || strings.Contains(stderr, "connecting to") {
				t.Fatalf("exit %d, want 2 and %q before connecting; stderr:\n%s", code, c.want, stderr)
			}
		})
	}
}
