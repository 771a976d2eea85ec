package main

import (
	"encoding/json"
	"math"
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
// its bar, its dashed target line, its dotted goal line and its range.
func TestRatioTextClearsTarget(t *testing.T) {
	rep := savedReport(t)
	svg := ratioChart(rep)
	rows := regexp.MustCompile(`<text x="8" y="\d+">[a-z0-9_]+</text>.*?<text class="value"[^>]*>`).FindAllString(svg, -1)
	want := 0
	for _, k := range ratioChartKeys {
		if _, ok := rep.Ratios[k]; ok {
			want++
		}
	}
	if len(rows) != want || want < 5 {
		t.Fatalf("found %d ratio rows, want %d (at least 5)", len(rows), want)
	}
	num := func(s string) float64 { v, _ := strconv.ParseFloat(s, 64); return v }
	for _, row := range rows {
		text := num(regexp.MustCompile(`<text class="value" x="([0-9.]+)"`).FindStringSubmatch(row)[1])
		bar := regexp.MustCompile(`<rect x="(\d+)" y="\d+" width="([0-9.]+)"`).FindStringSubmatch(row)
		if end := num(bar[1]) + num(bar[2]); text < end {
			t.Errorf("value text at x=%.1f, bar ends at %.1f", text, end)
		}
		for _, l := range regexp.MustCompile(`<line[^>]* x1="([0-9.]+)" x2="([0-9.]+)"`).FindAllStringSubmatch(row, -1) {
			if text < math.Max(num(l[1]), num(l[2]))+3 {
				t.Errorf("value text at x=%.1f, a line ends at %s", text, l[2])
			}
		}
	}
}

// TestRatioChart_SkipsUnmeasured: a ratio that was not measured gets no
// row (it used to be drawn as 0).
func TestRatioChart_SkipsUnmeasured(t *testing.T) {
	rep := savedReport(t)
	delete(rep.Ratios, "full_vs_eino")
	if svg := ratioChart(rep); strings.Contains(svg, ">full_vs_eino<") {
		t.Error("the chart has a row for full_vs_eino, which was not measured")
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
