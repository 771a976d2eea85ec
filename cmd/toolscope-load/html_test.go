package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadCommand_HTMLNextToReport: by default report.html is written
// beside report.json (same name, .html); -html PATH puts it elsewhere;
// -html "" and -out "" with the default write none.
func TestLoadCommand_HTMLNextToReport(t *testing.T) {
	sc := writeScenario(t, `{"name": "page", "agents": {"count": 2},
	  "tools": [{"name": "t", "mode": "parallel", "latency": {"kind": "constant", "value": "100us"}}],
	  "turns": {"perAgent": 3, "callsPerTurn": {"min": 1, "max": 2}},
	  "load": {"model": "closed"}}`)
	for _, c := range []struct {
		name   string
		args   []string
		page   string // "" : none
		noHTML bool
	}{
		{"default", []string{"-out", "run1.json"}, "run1.html", false},
		{"explicit", []string{"-out", "run2.json", "-html", "pages/p.html"}, "pages/p.html", false},
		{"off", []string{"-out", "run3.json", "-html", ""}, "", true},
		{"no json", []string{"-out", ""}, "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.MkdirAll(filepath.Join(dir, "pages"), 0o755); err != nil {
				t.Fatal(err)
			}
			args := []string{"-scenario", sc, "-progress", "0"}
			for i, a := range c.args {
				if i > 0 && (c.args[i-1] == "-out" || c.args[i-1] == "-html") && a != "" {
					a = filepath.Join(dir, a)
				}
				args = append(args, a)
			}
			code, stdout := runCmd(t, context.Background(), nil, args...)
			if code != 0 {
				t.Fatalf("exit %d\n%s", code, stdout)
			}
			pages, _ := filepath.Glob(filepath.Join(dir, "*.html"))
			more, _ := filepath.Glob(filepath.Join(dir, "pages", "*.html"))
			pages = append(pages, more...)
			if c.noHTML {
				if len(pages) > 0 || strings.Contains(stdout, "page:") {
					t.Fatalf("want no page, got %v\n%s", pages, stdout)
				}
				return
			}
			want := filepath.Join(dir, c.page)
			b, err := os.ReadFile(want)
			if err != nil {
				t.Fatalf("no page at %s (have %v): %v", want, pages, err)
			}
			if !strings.Contains(string(b), "toolscope load report: page") || !strings.Contains(stdout, "page:   "+want) {
				t.Fatalf("page %s or stdout wrong:\n%s", want, stdout)
			}
		})
	}
}
