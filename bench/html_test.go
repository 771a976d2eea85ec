package main

import (
	"encoding/json"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func savedReport(t *testing.T) *Report {
	t.Helper()
	b, err := os.ReadFile("results/full.json")
	if err != nil {
		t.Fatal(err)
	}
	rep := new(Report)
	if err := json.Unmarshal(b, rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestChartsLabelled checks what the screenshot check (.ci/pagecheck)
// cannot read off pixels: each chart has a title, the axes name their
// quantity and unit, and no chart is wider than chartMaxW.
func TestChartsLabelled(t *testing.T) {
	rep := savedReport(t)
	for name, c := range map[string]struct {
		svg  string
		want []string
	}{
		"ratios":  {ratioChart(rep), []string{"<title>Ratios against their targets</title>", "lower is better"}},
		"latency": {latencyChart(rep.Scenarios), []string{"<title>Latency percentiles per scenario</title>", "latency per op, µs (log scale)"}},
		"agents":  {agentsChart(rep.Scenarios), []string{"<title>Throughput against the number of scopes</title>", "calls per second (thousands)", "scopes, one caller each"}},
	} {
		for _, w := range c.want {
			if !strings.Contains(c.svg, w) {
				t.Errorf("%s chart lacks %q", name, w)
			}
		}
		m := regexp.MustCompile(`^<svg [^>]*width="(\d+)"[^>]*viewBox="0 0 (\d+) `).FindStringSubmatch(c.svg)
		if m == nil || m[1] != m[2] {
			t.Errorf("%s chart: want width and viewBox of the same size, got %.120s", name, c.svg)
		} else if w, _ := strconv.Atoi(m[1]); w > chartMaxW {
			t.Errorf("%s chart is %d px wide, over %d", name, w, chartMaxW)
		}
	}
}

// TestRatioTextClearsTarget checks that each value text starts right of
// both its bar and its dashed target line.
func TestRatioTextClearsTarget(t *testing.T) {
	svg := ratioChart(savedReport(t))
	re := regexp.MustCompile(`<rect x="(\d+)" y="\d+" width="([0-9.]+)"[^>]*>.*?</rect><line x1="([0-9.]+)".*?</line><text x="([0-9.]+)"`)
	ms := re.FindAllStringSubmatch(svg, -1)
	if len(ms) != 5 {
		t.Fatalf("found %d ratio rows, want 5", len(ms))
	}
	for _, m := range ms {
		f := func(i int) float64 { v, _ := strconv.ParseFloat(m[i], 64); return v }
		if text := f(4); text < f(1)+f(2) || text < f(3)+3 {
			t.Errorf("value text at x=%.1f: bar ends at %.1f, target line at %.1f", text, f(1)+f(2), f(3))
		}
	}
}

func TestReferenceRowsSayNA(t *testing.T) {
	page := renderHTML(savedReport(t))
	if !regexp.MustCompile(`<td>ref_execute_bare</td>(<td>[^<]*</td>){6}<td>n/a</td><td>n/a</td>`).MatchString(page) {
		t.Error("the reference's allocs/call and B/call are not n/a")
	}
	if strings.Contains(page, "<td>ts_execute_bare</td>") && regexp.MustCompile(`<td>ts_execute_bare</td>(<td>[^<]*</td>){6}<td>n/a`).MatchString(page) {
		t.Error("a measured row says n/a")
	}
}
