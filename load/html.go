package load

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
)

//go:embed report.html.tmpl
var reportTemplate string

var reportPage = template.Must(template.New("report").Parse(reportTemplate))

// WriteHTML writes the report as one self-contained HTML page (inline CSS
// and SVG, no script, nothing loaded from elsewhere): headline figures,
// the call and turn latency CDFs, throughput and queue depth over time,
// the admission-wait histogram, the latency table, the per-tool breakdown
// and the failures by code. Every number shown is the report's own; the
// elements carry data-k (a table cell's metric) and data-xy (a chart's
// points) for machines.
func (r *Report) WriteHTML(w io.Writer) error {
	return reportPage.Execute(w, r.htmlView())
}

type htmlKPI struct{ Label, Value, Key, Unit string }

type htmlCell struct{ Key, Text string }

type htmlRow struct {
	Name  string
	Cells []htmlCell
}

type htmlChart struct {
	ID, Title, Note string
	Legend          []htmlLegend
	SVG             template.HTML
}

type htmlLegend struct{ Class, Label string }

type htmlView struct {
	R        *Report
	Title    string
	Subtitle string
	KPIs     []htmlKPI
	Charts   []htmlChart
	Latency  []htmlRow
	Tools    []htmlRow
	Failures []htmlRow
	Warning  string
}

// num formats a measured value with about four significant digits.
func num(v float64) string {
	a := math.Abs(v)
	switch {
	case v == 0:
		return "0"
	case a >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case a >= 0.1:
		return strconv.FormatFloat(v, 'f', 3, 64)
	default:
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
}

func (r *Report) htmlView() htmlView {
	v := htmlView{R: r}
	v.Title = "toolscope load report: " + r.Scenario
	v.Subtitle = fmt.Sprintf("%s loop · seed %d · %d agents · %s s · %s · started %s",
		r.Model, r.Seed, r.Agents, num(r.Elapsed), r.Stopped, r.StartedAt.Format("2006-01-02 15:04:05 MST"))
	failed := sumCounts(r.Failures)
	v.KPIs = []htmlKPI{
		{"throughput", num(r.Throughput.CallsPerSecond), "kpi.throughput.callsPerSecond", "calls/s"},
		{"turns", num(r.Throughput.TurnsPerSecond), "kpi.throughput.turnsPerSecond", "turns/s"},
		{"call p99", num(r.CallLatency.P99Ms), "kpi.callLatency.p99Ms", "ms"},
		{"turn p99", num(r.TurnLatency.P99Ms), "kpi.turnLatency.p99Ms", "ms"},
		{"calls", strconv.FormatInt(r.Results, 10), "kpi.results", "results"},
		{"failed", strconv.FormatInt(failed, 10), "kpi.failures", "calls"},
		{"queue depth", strconv.FormatInt(r.QueueDepth.MaxTurnsInFlight, 10), "kpi.queueDepth.maxTurnsInFlight", "turns max"},
		{"parallelism saved", num(r.Parallelism.SavedSeconds), "kpi.parallelism.savedSeconds", "s"},
	}
	if !r.Measured(FigureParallelism) {
		v.KPIs[len(v.KPIs)-1].Value, v.KPIs[len(v.KPIs)-1].Unit = "–", "not measured"
	}
	if r.Target != "" {
		v.Subtitle += " · " + r.Target
	}
	latRow := func(name, key string, l Latency) htmlRow {
		row := htmlRow{Name: name}
		if !r.Measured(key) {
			row.Name += " (not measured)"
			for _, k := range []string{"count", "p50Ms", "p90Ms", "p99Ms", "p999Ms", "maxMs", "meanMs"} {
				row.Cells = append(row.Cells, htmlCell{key + "." + k, "–"})
			}
			return row
		}
		row.Cells = append(row.Cells, htmlCell{key + ".count", strconv.FormatInt(l.Count, 10)})
		for _, c := range []struct {
			k string
			v float64
		}{{"p50Ms", l.P50Ms}, {"p90Ms", l.P90Ms}, {"p99Ms", l.P99Ms}, {"p999Ms", l.P999Ms}, {"maxMs", l.MaxMs}, {"meanMs", l.MeanMs}} {
			row.Cells = append(row.Cells, htmlCell{key + "." + c.k, num(c.v)})
		}
		return row
	}
	v.Latency = []htmlRow{
		latRow("turn", "turnLatency", r.TurnLatency),
		latRow("call", "callLatency", r.CallLatency),
		latRow("call service", "callService", r.CallService),
		latRow("admission wait", "admissionWait", r.AdmissionWait),
	}
	for _, name := range sortedToolNames(r.Tools) {
		t := r.Tools[name]
		k := "tools." + name
		f := sumCounts(t.Failures)
		row := htmlRow{Name: name, Cells: []htmlCell{
			{k + ".calls", strconv.FormatInt(t.Calls, 10)},
			{k + ".failed", strconv.FormatInt(f, 10)},
		}}
		l := Latency{}
		if t.Latency != nil {
			l = *t.Latency
		}
		for _, c := range []struct {
			k string
			v float64
		}{{"p50Ms", l.P50Ms}, {"p90Ms", l.P90Ms}, {"p99Ms", l.P99Ms}, {"maxMs", l.MaxMs}} {
			text := num(c.v)
			if t.Latency == nil {
				text = "–"
			}
			row.Cells = append(row.Cells, htmlCell{k + "." + c.k, text})
		}
		v.Tools = append(v.Tools, row)
	}
	codes := make([]string, 0, len(r.Failures))
	for c := range r.Failures {
		codes = append(codes, c)
	}
	sort.Slice(codes, func(i, j int) bool {
		if r.Failures[codes[i]] != r.Failures[codes[j]] {
			return r.Failures[codes[i]] > r.Failures[codes[j]]
		}
		return codes[i] < codes[j]
	})
	for _, c := range codes {
		share := 0.0
		if r.Results > 0 {
			share = 100 * float64(r.Failures[c]) / float64(r.Results)
		}
		v.Failures = append(v.Failures, htmlRow{Name: c, Cells: []htmlCell{
			{"failures." + c, strconv.FormatInt(r.Failures[c], 10)},
			{"failureShare." + c, num(share)},
		}})
	}
	if r.Events.Dropped > 0 || r.Events.Missing > 0 {
		v.Warning = fmt.Sprintf("%d events dropped, %d results without an event: call latencies cover only the calls with events.",
			r.Events.Dropped, r.Events.Missing)
	}

	v.Charts = []htmlChart{
		{ID: "cdf", Title: "Latency CDF", Note: "share of calls and turns done within a latency (ms, log scale)",
			Legend: []htmlLegend{{"s-call", "call"}, {"s-turn", "turn"}},
			SVG:    cdfChart(r)},
		{ID: "throughput", Title: "Throughput over time", Note: "calls answered per second in each interval, against seconds since the start",
			Legend: []htmlLegend{{"s-call", "calls/s"}},
			SVG:    timeChart("throughput", throughputSeries(r.Timeline), "s-call")},
		{ID: "queue", Title: "Queue depth over time", Note: "turns in flight at each sample, against seconds since the start",
			Legend: []htmlLegend{{"s-turn", "turns in flight"}},
			SVG:    timeChart("queue", queueSeries(r.Timeline), "s-turn")},
		{ID: "admission", Title: "Admission wait", Note: "dispatched calls by their wait for admission (power-of-two buckets)",
			Legend: []htmlLegend{{"s-bar", "calls"}},
			SVG:    histogramChart("admission", r.AdmissionWait.Buckets)},
	}
	if !r.Measured(FigureAdmissionWait) {
		var b svgBuf
		v.Charts[len(v.Charts)-1].SVG = b.empty("admission", "not measured: admission happens out of the client's sight")
	}
	return v
}

type xy struct{ X, Y float64 }

// throughputSeries: the calls answered per second in each interval of
// the timeline (the first from the start), at the interval's end.
//
// The last sample is taken when the run ends, often a moment after the
// one before: a rate over so short an interval is mostly chance, so a last
// interval under half the one before it is merged into that one. Only the
// last: a sampler held up once (a long first interval on a busy machine)
// must not swallow the regular intervals after it.
func throughputSeries(tl []Sample) []xy {
	var out []xy
	tl = append([]Sample{{}}, tl...) // the start: nothing done yet
	from, prevDt := 0, 0.0
	for i := 1; i < len(tl); i++ {
		dt := tl[i].Seconds - tl[i-1].Seconds
		if dt <= 0 {
			continue
		}
		if len(out) > 0 && i == len(tl)-1 && dt < prevDt/2 {
			out = out[:len(out)-1] // merge: the rate over both intervals
		} else {
			from, prevDt = i-1, dt
		}
		span := tl[i].Seconds - tl[from].Seconds
		out = append(out, xy{tl[i].Seconds, float64(tl[i].Results-tl[from].Results) / span})
	}
	return out
}

func queueSeries(tl []Sample) []xy {
	out := []xy{{0, 0}} // the start: nothing in flight
	for _, s := range tl {
		out = append(out, xy{s.Seconds, float64(s.TurnsInFlight)})
	}
	return out
}

// The charts' geometry, in viewBox units (the SVG scales with its box).
const (
	chartW, chartH = 560, 260
	plotL, plotR   = 58, 544
	plotT, plotB   = 12, 222
)

type scale struct {
	lo, hi   float64
	log      bool
	from, to float64 // output range
}

func (s scale) at(v float64) float64 {
	a, b, x := s.lo, s.hi, v
	if s.log {
		a, b, x = math.Log10(a), math.Log10(b), math.Log10(math.Max(v, s.lo))
	}
	if b == a {
		return (s.from + s.to) / 2
	}
	return s.from + (x-a)/(b-a)*(s.to-s.from)
}

// niceTicks gives about n round ticks from 0 to at least hi.
func niceTicks(hi float64, n int) []float64 {
	if !(hi > 0) {
		return []float64{0, 1}
	}
	raw := hi / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	if !(step > 0) || hi/step > 100 { // hi so small that hi/n underflows (a step of 0 looped forever), or infinite
		return []float64{0, hi}
	}
	var out []float64
	for v := 0.0; ; v += step {
		out = append(out, v)
		if v >= hi*(1-1e-9) {
			break
		}
	}
	return out
}

// logTicks gives the powers of ten spanning [lo, hi], with 2 and 5 between
// them when the span is under three decades.
func logTicks(lo, hi float64) (float64, float64, []float64) {
	a, b := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	b = math.Min(b, 309) // an infinite latency (a report from elsewhere) looped forever: a float ends at 1.8e308
	if b == a {
		b++
	}
	var out []float64
	for e := a; e <= b; e++ {
		p := math.Pow(10, e)
		out = append(out, p)
		if b-a < 3 && e < b {
			out = append(out, 2*p, 5*p)
		}
	}
	return math.Pow(10, a), math.Pow(10, b), out
}

func tickLabel(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }

type svgBuf struct{ strings.Builder }

func (b *svgBuf) f(format string, args ...any) { fmt.Fprintf(&b.Builder, format, args...) }

func (b *svgBuf) open(id string) {
	b.f(`<svg id="%s-svg" class="chart" viewBox="0 0 %d %d" role="img" aria-label="%s">`, id, chartW, chartH, template.HTMLEscapeString(id))
}

func (b *svgBuf) empty(id, why string) template.HTML {
	b.open(id)
	b.f(`<text class="empty" x="%d" y="%d" text-anchor="middle">%s</text></svg>`, chartW/2, chartH/2, template.HTMLEscapeString(why))
	return template.HTML(b.String())
}

// axes draws the grid lines and tick labels of both axes.
func (b *svgBuf) axes(x, y scale, xt, yt []float64) {
	for _, v := range yt {
		py := y.at(v)
		b.f(`<line class="grid" x1="%d" x2="%d" y1="%.1f" y2="%.1f"/>`, plotL, plotR, py, py)
		b.f(`<text class="tick" x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`, plotL-6, py, tickLabel(v))
	}
	for i, v := range xt {
		px := x.at(v)
		b.f(`<line class="grid" x1="%.1f" x2="%.1f" y1="%d" y2="%d"/>`, px, px, plotT, plotB)
		anchor := "middle"
		if i == 0 && px < plotL+12 {
			anchor = "start"
		} else if i == len(xt)-1 && px > plotR-12 {
			anchor = "end"
		}
		b.f(`<text class="tick" x="%.1f" y="%d" text-anchor="%s">%s</text>`, px, plotB+16, anchor, tickLabel(v))
	}
	b.f(`<line class="grid axis" x1="%d" x2="%d" y1="%d" y2="%d"/>`, plotL, plotR, plotB, plotB)
	b.f(`<line class="grid axis" x1="%d" x2="%d" y1="%d" y2="%d"/>`, plotL, plotL, plotT, plotB)
}

// path draws a series as a line; data-xy holds its points as measured.
func (b *svgBuf) path(key, class string, pts []xy, x, y scale) {
	var d, data strings.Builder
	for i, p := range pts {
		if i == 0 {
			d.WriteString("M")
		} else {
			d.WriteString(" L")
			data.WriteByte(' ')
		}
		fmt.Fprintf(&d, "%.1f %.1f", x.at(p.X), y.at(p.Y))
		data.WriteString(strconv.FormatFloat(p.X, 'g', -1, 64) + "," + strconv.FormatFloat(p.Y, 'g', -1, 64))
	}
	b.f(`<path class="series %s" data-k="%s" data-xy="%s" d="%s"/>`, class, key, data.String(), d.String())
}

func cdfChart(r *Report) template.HTML {
	var b svgBuf
	type line struct {
		key, class string
		pts        []xy
	}
	var lines []line
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, l := range []struct {
		key, class string
		lat        Latency
	}{{"cdf.call", "s-call", r.CallLatency}, {"cdf.turn", "s-turn", r.TurnLatency}} {
		if len(l.lat.CDF) == 0 {
			continue
		}
		var pts []xy
		for _, q := range l.lat.CDF {
			pts = append(pts, xy{q.Ms, q.P})
			lo, hi = math.Min(lo, q.Ms), math.Max(hi, q.Ms)
		}
		lines = append(lines, line{l.key, l.class, pts})
	}
	if len(lines) == 0 {
		return b.empty("cdf", "no latencies measured")
	}
	lo = math.Max(lo, 0.001)
	hi = math.Max(hi, lo)
	a, z, xt := logTicks(lo, hi)
	x := scale{lo: a, hi: z, log: true, from: plotL, to: plotR}
	y := scale{lo: 0, hi: 100, from: plotB, to: plotT}
	b.open("cdf")
	b.axes(x, y, xt, []float64{0, 25, 50, 75, 90, 100})
	for _, l := range lines {
		b.path(l.key, l.class, l.pts, x, y)
	}
	b.f(`</svg>`)
	return template.HTML(b.String())
}

func timeChart(id string, pts []xy, class string) template.HTML {
	var b svgBuf
	if len(pts) < 2 {
		return b.empty(id, "too short a run for a timeline")
	}
	xmax, ymax := 0.0, 0.0
	for _, p := range pts {
		xmax, ymax = math.Max(xmax, p.X), math.Max(ymax, p.Y)
	}
	xt := niceTicks(xmax, 6)
	yt := niceTicks(ymax, 4)
	x := scale{lo: 0, hi: xt[len(xt)-1], from: plotL, to: plotR}
	y := scale{lo: 0, hi: yt[len(yt)-1], from: plotB, to: plotT}
	b.open(id)
	b.axes(x, y, xt, yt)
	b.path(id, class, pts, x, y)
	b.f(`</svg>`)
	return template.HTML(b.String())
}

// bucketLabel names a bucket by its upper bound.
func bucketLabel(ms float64) string {
	g := func(v float64) string {
		if v >= 100 {
			return strconv.FormatFloat(math.Round(v), 'f', 0, 64)
		}
		return strconv.FormatFloat(v, 'g', 2, 64)
	}
	switch {
	case ms < 1:
		return g(ms*1000) + "µs"
	case ms < 1000:
		return g(ms) + "ms"
	default:
		return g(ms/1000) + "s"
	}
}

// tickWidth is a generous estimate of a tick label's width in viewBox
// units (the page's 11-unit tick font: digits about 6.5 units, "m", "≤"
// and "µ" wider).
func tickWidth(label string) float64 { return 8 * float64(len([]rune(label))) }

func histogramChart(id string, bs []Bucket) template.HTML {
	var b svgBuf
	var ymax int64
	for _, k := range bs {
		ymax = max(ymax, k.Count)
	}
	if ymax == 0 {
		return b.empty(id, "no calls waited for admission")
	}
	yt := niceTicks(float64(ymax), 4)
	y := scale{lo: 0, hi: yt[len(yt)-1], from: plotB, to: plotT}
	b.open(id)
	for _, v := range yt {
		py := y.at(v)
		b.f(`<line class="grid" x1="%d" x2="%d" y1="%.1f" y2="%.1f"/>`, plotL, plotR, py, py)
		b.f(`<text class="tick" x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`, plotL-6, py, tickLabel(v))
	}
	w := float64(plotR-plotL) / float64(len(bs))
	longest := 0
	for _, k := range bs {
		longest = max(longest, len([]rune(bucketLabel(k.LeMs)))+1)
	}
	every := int(math.Ceil((float64(longest)*7 + 10) / w)) // 11-unit digits are under 7 units wide
	var data strings.Builder
	labelEnd := 0.0 // where the last tick label drawn ends
	for i, k := range bs {
		x0 := float64(plotL) + float64(i)*w
		top := y.at(float64(k.Count))
		if i > 0 {
			data.WriteByte(' ')
		}
		data.WriteString(strconv.FormatFloat(k.LeMs, 'g', -1, 64) + "," + strconv.FormatInt(k.Count, 10))
		if k.Count > 0 {
			b.f(`<rect class="s-bar" x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>≤ %s: %d</title></rect>`,
				x0+1, top, math.Max(w-2, 1), float64(plotB)-top, bucketLabel(k.LeMs), k.Count)
		}
		if i%every == 0 {
			// A label starts at its bar; one that would run past the
			// chart's right edge ends at its bar's right instead, unless it
			// would then reach into the label before it.
			label := "≤" + bucketLabel(k.LeMs)
			est := tickWidth(label)
			switch {
			case x0+1+est <= chartW:
				b.f(`<text class="tick" x="%.1f" y="%d">%s</text>`, x0+1, plotB+16, label)
				labelEnd = x0 + 1 + est
			case x0+w-1-est > labelEnd+4:
				b.f(`<text class="tick" x="%.1f" y="%d" text-anchor="end">%s</text>`, x0+w-1, plotB+16, label)
				labelEnd = x0 + w - 1
			}
		}
	}
	b.f(`<line class="grid axis" x1="%d" x2="%d" y1="%d" y2="%d"/>`, plotL, plotR, plotB, plotB)
	b.f(`<g class="bars" data-k="%s" data-xy="%s"></g></svg>`, id, data.String())
	return template.HTML(b.String())
}
