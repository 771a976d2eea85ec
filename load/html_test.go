package load

import (
	"bytes"
	"context"
	"html"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

var (
	cellRE = regexp.MustCompile(`data-k="([^"]+)">([^<]*)<`)
	xyRE   = regexp.MustCompile(`data-k="([^"]+)" data-xy="([^"]*)"`)
)

// pageNumbers returns the numbers of the page's data-k cells and its
// charts' data-xy points.
func pageNumbers(t *testing.T, page string) (map[string]string, map[string][]xy) {
	t.Helper()
	cells := map[string]string{}
	for _, m := range cellRE.FindAllStringSubmatch(page, -1) {
		k := html.UnescapeString(m[1])
		if _, dup := cells[k]; dup {
			t.Errorf("the page shows %s twice", k)
		}
		cells[k] = m[2]
	}
	series := map[string][]xy{}
	for _, m := range xyRE.FindAllStringSubmatch(page, -1) {
		var pts []xy
		for _, p := range strings.Fields(m[2]) {
			xs, ys, ok := strings.Cut(p, ",")
			x, err1 := strconv.ParseFloat(xs, 64)
			y, err2 := strconv.ParseFloat(ys, 64)
			if !ok || err1 != nil || err2 != nil {
				t.Fatalf("%s: bad point %q", m[1], p)
			}
			pts = append(pts, xy{x, y})
		}
		series[m[1]] = pts
	}
	return cells, series
}

// close enough: the page rounds to about four significant digits.
func near(page string, want float64) bool {
	if page == "–" {
		return false
	}
	got, err := strconv.ParseFloat(page, 64)
	if err != nil {
		return false
	}
	return math.Abs(got-want) <= 5e-4*math.Max(math.Abs(want), 1)*(1+1e-9) // half the last digit shown, rounding half up
}

// TestReportHTML_NumbersAreTheReports: every figure and chart point on
// report.html is the report's own, for a real run with failures of two
// codes, several tools and a timeline.
func TestReportHTML_NumbersAreTheReports(t *testing.T) {
	sc := mustParse(t, countsScenario)
	// Thinking 60 ms before each of 4 turns spreads the run over several
	// timeline samples (100 ms apart).
	sc.Turns.ThinkTime = &Distribution{Kind: "constant", Value: Duration(60 * time.Millisecond)}
	r := runBounded(t, context.Background(), sc, Options{})
	if len(r.Timeline) < 2 {
		t.Fatalf("a timeline of %d samples: %+v", len(r.Timeline), r.Timeline)
	}
	var b bytes.Buffer
	if err := r.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	cells, series := pageNumbers(t, page)

	want := map[string]float64{
		"kpi.throughput.callsPerSecond":   r.Throughput.CallsPerSecond,
		"kpi.throughput.turnsPerSecond":   r.Throughput.TurnsPerSecond,
		"kpi.callLatency.p99Ms":           r.CallLatency.P99Ms,
		"kpi.turnLatency.p99Ms":           r.TurnLatency.P99Ms,
		"kpi.results":                     float64(r.Results),
		"kpi.failures":                    float64(sumCounts(r.Failures)),
		"kpi.queueDepth.maxTurnsInFlight": float64(r.QueueDepth.MaxTurnsInFlight),
		"kpi.parallelism.savedSeconds":    r.Parallelism.SavedSeconds,
	}
	for key, l := range map[string]Latency{"turnLatency": r.TurnLatency, "callLatency": r.CallLatency,
		"callService": r.CallService, "admissionWait": r.AdmissionWait} {
		want[key+".count"] = float64(l.Count)
		want[key+".p50Ms"], want[key+".p90Ms"], want[key+".p99Ms"] = l.P50Ms, l.P90Ms, l.P99Ms
		want[key+".p999Ms"], want[key+".maxMs"], want[key+".meanMs"] = l.P999Ms, l.MaxMs, l.MeanMs
	}
	if len(r.Tools) != 3 || len(r.Failures) != 2 {
		t.Fatalf("the scenario should call 3 tools and fail with 2 codes: %+v %+v", r.Tools, r.Failures)
	}
	for name, tr := range r.Tools {
		k := "tools." + name
		want[k+".calls"], want[k+".failed"] = float64(tr.Calls), float64(sumCounts(tr.Failures))
		if tr.Latency == nil {
			t.Fatalf("tool %s has no latency", name)
		}
		want[k+".p50Ms"], want[k+".p90Ms"], want[k+".p99Ms"], want[k+".maxMs"] = tr.Latency.P50Ms, tr.Latency.P90Ms, tr.Latency.P99Ms, tr.Latency.MaxMs
	}
	for code, n := range r.Failures {
		want["failures."+code] = float64(n)
		want["failureShare."+code] = 100 * float64(n) / float64(r.Results)
	}
	for k, v := range want {
		got, ok := cells[k]
		if !ok {
			t.Errorf("the page shows no %s", k)
			continue
		}
		if !near(got, v) {
			t.Errorf("%s: the page shows %q, the report has %v", k, got, v)
		}
	}
	if len(cells) != len(want) {
		t.Errorf("the page shows %d figures, the test checked %d", len(cells), len(want))
	}

	// The charts.
	wantSeries := map[string][]xy{}
	for key, l := range map[string]Latency{"cdf.call": r.CallLatency, "cdf.turn": r.TurnLatency} {
		for _, q := range l.CDF {
			wantSeries[key] = append(wantSeries[key], xy{q.Ms, q.P})
		}
	}
	// Throughput: the rate over each interval, a last interval under half
	// of the one before merged into it (the run's end is sampled at once).
	type span struct{ from, to Sample }
	var spans []span
	prev := Sample{}
	wantSeries["queue"] = []xy{{0, 0}}
	for i, s := range r.Timeline {
		if dt := s.Seconds - prev.Seconds; dt > 0 {
			if n := len(spans); n > 0 && i == len(r.Timeline)-1 && dt < (spans[n-1].to.Seconds-spans[n-1].from.Seconds)/2 {
				spans[n-1].to = s
			} else {
				spans = append(spans, span{prev, s})
			}
		}
		wantSeries["queue"] = append(wantSeries["queue"], xy{s.Seconds, float64(s.TurnsInFlight)})
		prev = s
	}
	for _, sp := range spans {
		wantSeries["throughput"] = append(wantSeries["throughput"],
			xy{sp.to.Seconds, float64(sp.to.Results-sp.from.Results) / (sp.to.Seconds - sp.from.Seconds)})
	}
	var inBuckets int64
	for _, k := range r.AdmissionWait.Buckets {
		wantSeries["admission"] = append(wantSeries["admission"], xy{k.LeMs, float64(k.Count)})
		inBuckets += k.Count
	}
	if inBuckets != r.AdmissionWait.Count {
		t.Errorf("admission buckets hold %d waits, the histogram %d", inBuckets, r.AdmissionWait.Count)
	}
	for _, key := range []string{"throughput", "queue"} {
		if len(wantSeries[key]) < 2 { // a line needs two points
			delete(wantSeries, key)
			if !strings.Contains(page, `id="`+key+`-svg"`) || !strings.Contains(page, "too short a run for a timeline") {
				t.Errorf("chart %s: no line and no word why", key)
			}
		}
	}
	for key, pts := range wantSeries {
		got := series[key]
		if len(got) != len(pts) {
			t.Errorf("chart %s: %d points on the page, %d in the report", key, len(got), len(pts))
			continue
		}
		for i := range pts {
			if math.Abs(got[i].X-pts[i].X) > 1e-9*math.Max(1, math.Abs(pts[i].X)) || math.Abs(got[i].Y-pts[i].Y) > 1e-9*math.Max(1, math.Abs(pts[i].Y)) {
				t.Errorf("chart %s point %d: page %v, report %v", key, i, got[i], pts[i])
			}
		}
	}
	if len(series) != len(wantSeries) {
		t.Errorf("the page has %d charts with points, want %d", len(series), len(wantSeries))
	}
	for _, ref := range []string{"http:", "https:", "<script", "<link", "@import", "url("} {
		if strings.Contains(page, ref) {
			t.Errorf("the page is not self-contained: it has %q", ref)
		}
	}
}

// TestReportHTML_EmptyRun: a run that made no call still renders, saying so
// in each chart instead of drawing nothing.
func TestReportHTML_EmptyRun(t *testing.T) {
	var b bytes.Buffer
	if err := (&Report{Scenario: "<empty & odd>"}).WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{"no latencies measured", "too short a run for a timeline", "no calls waited for admission",
		"no tool was called", "no call failed", "&lt;empty &amp; odd&gt;"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}

// TestBuckets_CountEveryValueOnce: the power-of-two buckets hold every
// recorded value in the bucket of its upper bound (to the histogram's
// precision: 4104 µs is 4104, 4097 would be 4096).
func TestBuckets_CountEveryValueOnce(t *testing.T) {
	h := newHist()
	vals := []int64{1, 2, 3, 4, 5, 1000, 1024, 1025, 4096, 4104, 1_000_000}
	for _, v := range vals {
		_ = h.RecordValue(v)
	}
	bs := buckets(h)
	got := map[float64]int64{}
	var total int64
	for _, b := range bs {
		got[b.LeMs*1000] += b.Count
		total += b.Count
	}
	if total != int64(len(vals)) {
		t.Fatalf("buckets hold %d values, want %d: %+v", total, len(vals), bs)
	}
	for le, n := range map[float64]int64{1: 1, 2: 1, 4: 2, 8: 1, 1024: 2, 2048: 1, 4096: 1, 8192: 1, 1 << 20: 1} {
		if math.Abs(float64(got[le]-n)) > 0 {
			t.Errorf("bucket ≤%v µs: %d, want %d (%+v)", le, got[le], n, bs)
		}
	}
}

// TestThroughputSeries_MergesAShortLastInterval: the run's end, sampled
// 10 ms after the sample before, is not a rate of its own.
func TestThroughputSeries_MergesAShortLastInterval(t *testing.T) {
	got := throughputSeries([]Sample{{Seconds: 0.1, Results: 10}, {Seconds: 0.2, Results: 30}, {Seconds: 0.21, Results: 40}})
	want := []xy{{0.1, 100}, {0.21, 30 / 0.11}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if math.Abs(got[i].X-want[i].X) > 1e-9 || math.Abs(got[i].Y-want[i].Y) > 1e-9 {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}

// TestThroughputSeries_LongFirstIntervalKeepsTheRest: a sampler held up
// once (the first sample at 0.555 s on a busy machine, a CI run's page
// check) made every regular 0.1 s interval after it "under half the one
// before", so the whole run merged into one point and the page said "too
// short a run for a timeline".
func TestThroughputSeries_LongFirstIntervalKeepsTheRest(t *testing.T) {
	tl := []Sample{{Seconds: 0.555, Results: 219}, {Seconds: 0.6, Results: 250}}
	for k := 1; k <= 14; k++ {
		tl = append(tl, Sample{Seconds: 0.6 + 0.1*float64(k), Results: 250 + 40*int64(k)})
	}
	tl = append(tl, Sample{Seconds: 2.016, Results: 813})
	got := throughputSeries(tl)
	if len(got) != len(tl)-1 { // every interval but the short last one
		t.Fatalf("%d points for %d samples: %v", len(got), len(tl), got)
	}
	if math.Abs(got[2].Y-400) > 1e-6 {
		t.Fatalf("the third interval's rate is %v, want 400/s", got[2].Y)
	}
}

// TestBucketLabel_Readable: bucket bounds read as µs, ms or s with at most
// three digits and no exponent.
func TestBucketLabel_Readable(t *testing.T) {
	for ms, want := range map[float64]string{0.001: "1µs", 0.512: "512µs", 0.064: "64µs", 4.096: "4.1ms", 131.072: "131ms", 2097.152: "2.1s", 262144.0: "262s"} {
		if got := bucketLabel(ms); got != want {
			t.Errorf("bucketLabel(%v) = %q, want %q", ms, got, want)
		}
	}
}

// TestHistogram_TickLabelsStayInTheChart: with a wide range of
// admission waits (19 power-of-two buckets up to 262 ms) the last label
// drawn sat on the chart's last bucket and ran past its right edge (the
// page check caught it in a CI run); every label now ends inside the
// chart and none overlaps the one before, for every bucket count.
func TestHistogram_TickLabelsStayInTheChart(t *testing.T) {
	tick := regexp.MustCompile(`<text class="tick" x="([0-9.]+)" y="[0-9]+"( text-anchor="end")?>(≤[^<]*)</text>`)
	for n := 1; n <= 40; n++ {
		bs := make([]Bucket, n)
		for k := range bs {
			bs[k] = Bucket{LeMs: 0.001 * math.Pow(2, float64(k)), Count: int64(k + 1)}
		}
		svg := string(histogramChart("h", bs))
		prevEnd := -1.0
		labels := tick.FindAllStringSubmatch(svg, -1)
		if len(labels) == 0 {
			t.Fatalf("%d buckets: no label drawn", n)
		}
		for _, m := range labels {
			x, _ := strconv.ParseFloat(m[1], 64)
			w := tickWidth(m[3])
			start, end := x, x+w
			if m[2] != "" {
				start, end = x-w, x
			}
			if start < 0 || end > chartW {
				t.Errorf("%d buckets: label %q spans %.1f–%.1f, outside the chart's 0–%d", n, m[3], start, end, chartW)
			}
			if start < prevEnd {
				t.Errorf("%d buckets: label %q starts at %.1f, inside the one before (ends %.1f)", n, m[3], start, prevEnd)
			}
			prevEnd = end
		}
	}
}
