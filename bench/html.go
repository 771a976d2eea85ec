package main

import (
	"fmt"
	"html"
	"math"
	"slices"
	"strings"
)

// renderHTML returns a self-contained page (inline SVG, no network): the
// latency percentiles per scenario, throughput against the number of
// scopes, and the ratios against their targets.
func renderHTML(rep *Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, `<!doctype html><html><head><meta charset="utf-8"><title>toolscope bench</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font-family:system-ui,sans-serif;margin:1em;max-width:1100px}table{border-collapse:collapse;font-size:12px}
td,th{border:1px solid #ccc;padding:3px 4px;text-align:right}td:first-child,th:first-child{text-align:left}
svg{background:#fafafa;border:1px solid #ddd;margin:.5em 0}.miss{color:#b00;font-weight:bold}.ok{color:#070}</style></head><body>
<h1>toolscope bench</h1><p>mode %s, %d round(s) &middot; commit <code>%s</code> &middot; %s &middot; %s, %v CPUs &middot; %s</p>`,
		rep.Mode, rep.Rounds, html.EscapeString(rep.Commit), rep.GoVersion,
		html.EscapeString(fmt.Sprint(rep.Machine["cpu"])), rep.Machine["cpus"], rep.Started.Format("2006-01-02 15:04 UTC"))

	b.WriteString("<h2>Ratios</h2>")
	b.WriteString(ratioChart(rep))
	b.WriteString("<table><tr><th>ratio</th><th>value</th><th>range (interleaved rounds)</th><th>target</th><th>goal</th></tr>")
	for _, k := range slices.Sorted(mapKeys(rep.Ratios)) {
		v, t, g := rep.Ratios[k], rep.Targets[k], rep.Goals[k]
		cls := func(lim string) string {
			switch {
			case lim == "":
				return ""
			case verdict(k, v, lim) == "ok":
				return "ok"
			}
			return "miss"
		}
		rng := "timed"
		if in, ok := rep.Interleaved[k]; ok {
			rng = fmt.Sprintf("%s–%s, %d rounds", fmtRatio(in.Min), fmtRatio(in.Max), in.Rounds)
		}
		fmt.Fprintf(&b, `<tr><td>%s</td><td class="%s">%s</td><td>%s</td><td class="%s">%s</td><td class="%s">%s</td></tr>`,
			k, cls(t), fmtRatio(v), rng, cls(t), html.EscapeString(t), cls(g), html.EscapeString(g))
	}
	b.WriteString("</table>")
	b.WriteString("<h2>Latency percentiles per scenario (µs, log scale)</h2>")
	b.WriteString(latencyChart(rep.Scenarios))
	b.WriteString("<h2>Throughput against number of scopes (closed loop, one caller per scope)</h2>")
	b.WriteString(agentsChart(rep.Scenarios))

	b.WriteString("<h2>Scenarios</h2><table><tr><th>scenario</th><th>callers</th><th>calls/s</th><th>ns/call</th><th>p50 µs</th><th>p99 µs</th><th>p99.9 µs</th><th>allocs/call</th><th>B/call</th></tr>")
	for _, r := range rep.Scenarios {
		allocs, bytes := fmt.Sprintf("%.1f", r.AllocsPerCall), fmt.Sprintf("%.0f", r.BytesPerCall)
		if r.Group == "reference" {
			allocs, bytes = "n/a", "n/a" // node: no allocation counts are taken
		}
		fmt.Fprintf(&b, "<tr><td>%s</td><td>%d</td><td>%.0f</td><td>%.0f</td><td>%.1f</td><td>%.1f</td><td>%.1f</td><td>%s</td><td>%s</td></tr>",
			r.Name, r.Callers, r.CallsPerSec, r.NsPerCall, r.P50us, r.P99us, r.P999us, allocs, bytes)
	}
	b.WriteString("</table><h2>Memory and scope lifecycle</h2><table>")
	for _, k := range slices.Sorted(mapKeys(rep.Memory)) {
		fmt.Fprintf(&b, "<tr><td>%s</td><td>%.1f</td></tr>", k, rep.Memory[k])
	}
	b.WriteString("</table>")
	if len(rep.Scale) > 0 {
		b.WriteString("<h2>Scale</h2><table>")
		for _, k := range slices.Sorted(mapKeys(rep.Scale)) {
			fmt.Fprintf(&b, "<tr><td>%s</td><td>%s</td></tr>", k, fmtRatio(rep.Scale[k]))
		}
		b.WriteString("</table>")
	}
	if len(rep.Interleaved) > 0 {
		b.WriteString("<h2>What each interleaved pair compares</h2><table><tr><th>ratio</th><th>A</th><th>B</th><th>A ns/call</th><th>B ns/call</th></tr>")
		for _, k := range slices.Sorted(mapKeys(rep.Interleaved)) {
			in := rep.Interleaved[k]
			fmt.Fprintf(&b, `<tr><td>%s</td><td style="text-align:left">%s</td><td style="text-align:left">%s</td><td>%s</td><td>%s</td></tr>`,
				k, html.EscapeString(in.A), html.EscapeString(in.B), fmtRatio(in.ANsPerCall), fmtRatio(in.BNsPerCall))
		}
		b.WriteString("</table>")
	}
	fmt.Fprintf(&b, "<p>Reference implementation: %s</p></body></html>\n", html.EscapeString(rep.Reference))
	return b.String()
}

// The charts are standalone SVG (bench/results/*.svg, shown in the README)
// and inline in the HTML page. Each has a <title> and a visible title, is
// at most chartMaxW px wide so that an 800 px window shows it unscaled, and
// shrinks with its container (viewBox, max-width:100%) when that is
// narrower. Text sizes are estimated with textWidth to keep every label
// inside the chart and clear of bars and lines.

const chartMaxW = 760

const chartStyle = `<style>text{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif}` +
	`.title{font-size:15px;font-weight:600}.note{font-size:11px;fill:#555}.axis{font-size:11px;fill:#444}</style>`

// svgOpen starts a chart of w × h px with its accessible title.
func svgOpen(b *strings.Builder, w, h int, title, desc string) {
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" style="max-width:100%%;height:auto" font-size="12" role="img">`, w, h, w, h)
	fmt.Fprintf(b, `<title>%s</title><desc>%s</desc>%s<rect class="bg" width="%d" height="%d" fill="#fafafa"/>`, html.EscapeString(title), html.EscapeString(desc), chartStyle, w, h)
	fmt.Fprintf(b, `<text class="title" x="8" y="22">%s</text>`, html.EscapeString(title))
}

// textWidth is a generous estimate of s's width in px at size px in a
// proportional sans-serif face (DejaVu Sans, the widest of the usual ones,
// averages about 0.6 em for this kind of text).
func textWidth(s string, px float64) float64 { return float64(len([]rune(s))) * px * 0.62 }

// ratioChartKeys are the ratios the chart shows, when measured.
var ratioChartKeys = []string{"bare_vs_eino", "full_vs_eino", "turn16_vs_eino", "raw_turn16_vs_eino_raw",
	"tools10k_vs_1", "scopes1k_vs_floor"}

// ratioLabel is a chart row's value text: the ratio, its interleaved range
// and its target and goal.
func ratioLabel(rep *Report, k string) string {
	s := fmtRatio(rep.Ratios[k])
	if in, ok := rep.Interleaved[k]; ok {
		s += fmt.Sprintf(" [%s–%s]", fmtRatio(in.Min), fmtRatio(in.Max))
	}
	if t := rep.Targets[k]; t != "" {
		s += " target " + strings.Replace(t, "<= ", "≤", 1)
	}
	if g := rep.Goals[k]; g != "" {
		s += " goal " + strings.Replace(g, "<= ", "≤", 1)
	}
	return strings.Replace(s, ">= ", "≥", -1)
}

// limit parses a target or goal ("<= 0.5"); ok is false for none.
func limit(t string) (float64, bool) {
	var op string
	var lim float64
	n, _ := fmt.Sscanf(t, "%s %g", &op, &lim)
	return lim, n == 2
}

func ratioChart(rep *Report) string {
	var keys []string
	for _, k := range ratioChartKeys {
		if _, ok := rep.Ratios[k]; ok {
			keys = append(keys, k)
		}
	}
	const w, rowH, top, left, fs = chartMaxW, 28, 40, 190, 12
	// The value text follows the bar, its range and its target and goal
	// lines, whichever ends furthest right, so no line crosses it; the
	// widest text must still fit inside the chart.
	textRoom := 0.0
	for _, k := range keys {
		textRoom = math.Max(textRoom, textWidth(ratioLabel(rep, k), fs))
	}
	plotW := float64(w-left-16) - textRoom - 8
	h := top + rowH*len(keys) + 60
	maxV := 2.5
	for _, k := range keys {
		maxV = math.Max(maxV, rep.Ratios[k]*1.1)
		if in, ok := rep.Interleaved[k]; ok {
			maxV = math.Max(maxV, in.Max*1.05)
		}
	}
	x := func(v float64) float64 { return left + v/maxV*plotW }
	var b strings.Builder
	svgOpen(&b, w, h, "Ratios against their targets", "Each bar is a ratio of the bench run (the median of its interleaved rounds, the thin line their range); the dashed line is its target, the dotted line issue 13's goal; green meets the target, red misses it.")
	for i, k := range keys {
		y := top + i*rowH
		v := rep.Ratios[k]
		t, g := rep.Targets[k], rep.Goals[k]
		color := "#2980b9" // no target: neutral
		if t != "" {
			color = "#c0392b"
			if verdict(k, v, t) == "ok" {
				color = "#27ae60"
			}
		}
		right := x(v)
		fmt.Fprintf(&b, `<text x="8" y="%d">%s</text><rect x="%d" y="%d" width="%.1f" height="16" fill="%s"><title>%s = %s</title></rect>`,
			y+12, k, left, y, x(v)-left, color, k, fmtRatio(v))
		if lim, ok := limit(t); ok {
			fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#000" stroke-dasharray="3,2"><title>target %s</title></line>`,
				x(lim), x(lim), y-3, y+19, html.EscapeString(t))
			right = math.Max(right, x(lim))
		}
		if lim, ok := limit(g); ok {
			fmt.Fprintf(&b, `<line class="goal" x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#8e44ad" stroke-width="2" stroke-dasharray="1,2"><title>goal %s</title></line>`,
				x(lim), x(lim), y-3, y+19, html.EscapeString(g))
			right = math.Max(right, x(lim))
		}
		if in, ok := rep.Interleaved[k]; ok {
			fmt.Fprintf(&b, `<line class="range" x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#222" stroke-width="1.5"><title>range %s–%s over %d rounds</title></line>`,
				x(in.Min), x(in.Max), y+8, y+8, fmtRatio(in.Min), fmtRatio(in.Max), in.Rounds)
			right = math.Max(right, x(in.Max))
		}
		fmt.Fprintf(&b, `<text class="value" x="%.1f" y="%d">%s</text>`, right+6, y+12, html.EscapeString(ratioLabel(rep, k)))
	}
	ny := top + rowH*len(keys) + 6
	fmt.Fprintf(&b, `<text class="note" x="8" y="%d">dashed line: target · dotted line: issue 13 goal · thin line: range of the interleaved rounds</text>`, ny+8)
	fmt.Fprintf(&b, `<text class="note" x="8" y="%d">ratio = toolscope time / peer time (lower is better),</text>`, ny+24)
	fmt.Fprintf(&b, `<text class="note" x="8" y="%d">except scopes1k_vs_floor: a throughput ratio (higher is better)</text></svg>`, ny+40)
	return b.String()
}

func latencyChart(rs []Result) string {
	const w, rowH, top, left, right = chartMaxW, 22, 40, 240, 24
	h := top + rowH*len(rs) + 62
	lo, hi := 0.1, 10.0
	for _, r := range rs {
		hi = math.Max(hi, r.P999us)
	}
	hi = math.Pow(10, math.Ceil(math.Log10(hi))) // end on a labelled decade
	x := func(v float64) float64 {
		v = math.Max(v, lo)
		return left + (math.Log10(v)-math.Log10(lo))/(math.Log10(hi)-math.Log10(lo))*float64(w-left-right)
	}
	var b strings.Builder
	svgOpen(&b, w, h, "Latency percentiles per scenario", "For each scenario, bars to its p50, p99 and p99.9 latency per op (one call, or one whole turn) in microseconds, on a log scale.")
	axisY := top + rowH*len(rs) + 2
	for d := lo; d <= hi*1.0001; d *= 10 {
		anchor := "middle"
		if x(d)+textWidth(fmt.Sprint(d), 11)/2 > w-4 {
			anchor = "end"
		}
		fmt.Fprintf(&b, `<line class="grid" x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#ddd"/><text class="axis" x="%.1f" y="%d" text-anchor="%s">%g</text>`,
			x(d), x(d), top-4, axisY, x(d), axisY+14, anchor, d)
	}
	colors := []string{"#2980b9", "#e67e22", "#c0392b"}
	for i, r := range rs {
		y := top + i*rowH
		fmt.Fprintf(&b, `<text x="8" y="%d" font-size="11">%s</text>`, y+11, r.Name)
		for j, v := range []float64{r.P999us, r.P99us, r.P50us} {
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="14" fill="%s"><title>%s %s %.1f µs</title></rect>`,
				left, y, x(v)-left, colors[2-j], r.Name, []string{"p99.9", "p99", "p50"}[j], v)
		}
	}
	fmt.Fprintf(&b, `<text class="axis" x="%d" y="%d" text-anchor="middle">latency per op, µs (log scale)</text>`, left+(w-left-right)/2, axisY+32)
	fmt.Fprintf(&b, `<text x="8" y="%d"><tspan fill="%s">■ p50</tspan> <tspan fill="%s">■ p99</tspan> <tspan fill="%s">■ p99.9</tspan></text></svg>`,
		axisY+32, colors[0], colors[1], colors[2])
	return b.String()
}

func agentsChart(rs []Result) string {
	type pt struct{ n, v float64 }
	series := map[string][]pt{}
	maxV := 1.0
	for _, r := range rs {
		var s string
		switch r.Group {
		case "agents":
			s = "toolscope"
		case "agents-baseline":
			s = "map+RWMutex, body on a goroutine"
		default:
			continue
		}
		series[s] = append(series[s], pt{float64(r.Callers), r.CallsPerSec})
		maxV = math.Max(maxV, r.CallsPerSec*1.1)
	}
	const w, h, left, right, top, bottom = 700, 360, 78, 56, 62, 58
	x := func(n float64) float64 { return left + (math.Log10(n)-2)/2*float64(w-left-right) }
	y := func(v float64) float64 { return float64(h-bottom) - v/maxV*float64(h-bottom-top) }
	var b strings.Builder
	svgOpen(&b, w, h, "Throughput against the number of scopes", "Calls per second of all callers together, closed loop with one caller per scope, for 100, 1000 and 10000 scopes.")
	colors := map[string]string{"toolscope": "#2980b9", "map+RWMutex, body on a goroutine": "#7f8c8d"}
	lx := 8.0
	for _, name := range slices.Sorted(mapKeys(series)) {
		fmt.Fprintf(&b, `<text x="%.0f" y="42" fill="%s">■ %s</text>`, lx, colors[name], html.EscapeString(name))
		lx += textWidth("■ "+name, 12) + 18
	}
	for _, n := range []float64{100, 1000, 10000} {
		fmt.Fprintf(&b, `<line class="grid" x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#ddd"/><text class="axis" x="%.1f" y="%d" text-anchor="middle">%g</text>`,
			x(n), x(n), top, h-bottom, x(n), h-bottom+22, n)
	}
	fmt.Fprintf(&b, `<text class="axis" x="%d" y="%d" text-anchor="middle">scopes, one caller each (log scale)</text>`, left+(w-left-right)/2, h-bottom+40)
	for i := 0; i <= 4; i++ {
		v := maxV * float64(i) / 4
		fmt.Fprintf(&b, `<line class="grid" x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#eee"/><text class="axis" x="%d" y="%.1f" text-anchor="end">%.0fk</text>`,
			left, w-right, y(v), y(v), left-6, y(v)+4, v/1e3)
	}
	fmt.Fprintf(&b, `<text class="axis" transform="translate(16 %d) rotate(-90)" text-anchor="middle">calls per second (thousands)</text>`, top+(h-bottom-top)/2)
	for _, name := range slices.Sorted(mapKeys(series)) {
		pts := series[name]
		var path []string
		for _, p := range pts {
			path = append(path, fmt.Sprintf("%.1f,%.1f", x(p.n), y(p.v)))
		}
		fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`, strings.Join(path, " "), colors[name])
		for _, p := range pts {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"><title>%s, %g scopes: %.0f calls/s</title></circle>`, x(p.n), y(p.v), colors[name], html.EscapeString(name), p.n, p.v)
		}
	}
	b.WriteString("</svg>")
	return b.String()
}
