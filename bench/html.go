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
<style>body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px}table{border-collapse:collapse;font-size:13px}
td,th{border:1px solid #ccc;padding:3px 6px;text-align:right}td:first-child,th:first-child{text-align:left}
svg{background:#fafafa;border:1px solid #ddd;margin:.5em 0}.miss{color:#b00;font-weight:bold}.ok{color:#070}</style></head><body>
<h1>toolscope bench</h1><p>mode %s, %d round(s) &middot; commit <code>%s</code> &middot; %s &middot; %s, %v CPUs &middot; %s</p>`,
		rep.Mode, rep.Rounds, html.EscapeString(rep.Commit), rep.GoVersion,
		html.EscapeString(fmt.Sprint(rep.Machine["cpu"])), rep.Machine["cpus"], rep.Started.Format("2006-01-02 15:04 UTC"))

	b.WriteString("<h2>Ratios</h2>")
	b.WriteString(ratioChart(rep))
	b.WriteString("<table><tr><th>ratio</th><th>value</th><th>target</th></tr>")
	for _, k := range slices.Sorted(mapKeys(rep.Ratios)) {
		v, t := rep.Ratios[k], rep.Targets[k]
		cls := ""
		if t != "" {
			cls = "ok"
			if verdict(k, v, t) != "ok" {
				cls = "miss"
			}
		}
		fmt.Fprintf(&b, `<tr><td>%s</td><td class="%s">%.3f</td><td>%s</td></tr>`, k, cls, v, html.EscapeString(t))
	}
	b.WriteString("</table>")
	b.WriteString("<h2>Latency percentiles per scenario (µs, log scale)</h2>")
	b.WriteString(latencyChart(rep.Scenarios))
	b.WriteString("<h2>Throughput against number of scopes (closed loop, one caller per scope)</h2>")
	b.WriteString(agentsChart(rep.Scenarios))

	b.WriteString("<h2>Scenarios</h2><table><tr><th>scenario</th><th>callers</th><th>calls/s</th><th>ns/call</th><th>p50 µs</th><th>p99 µs</th><th>p99.9 µs</th><th>allocs/call</th><th>B/call</th></tr>")
	for _, r := range rep.Scenarios {
		fmt.Fprintf(&b, "<tr><td>%s</td><td>%d</td><td>%.0f</td><td>%.0f</td><td>%.1f</td><td>%.1f</td><td>%.1f</td><td>%.1f</td><td>%.0f</td></tr>",
			r.Name, r.Callers, r.CallsPerSec, r.NsPerCall, r.P50us, r.P99us, r.P999us, r.AllocsPerCall, r.BytesPerCall)
	}
	b.WriteString("</table><h2>Memory and scope lifecycle</h2><table>")
	for _, k := range slices.Sorted(mapKeys(rep.Memory)) {
		fmt.Fprintf(&b, "<tr><td>%s</td><td>%.1f</td></tr>", k, rep.Memory[k])
	}
	fmt.Fprintf(&b, "</table><p>Reference implementation: %s</p></body></html>\n", html.EscapeString(rep.Reference))
	return b.String()
}

func ratioChart(rep *Report) string {
	keys := []string{"bare_vs_eino", "full_vs_eino", "turn16_vs_eino", "tools10k_vs_1", "scopes1k_vs_floor"}
	const w, rowH, left = 900, 28, 170
	h := rowH*len(keys) + 40
	maxV := 2.5
	for _, k := range keys {
		maxV = math.Max(maxV, rep.Ratios[k]*1.1)
	}
	x := func(v float64) float64 { return left + v/maxV*float64(w-left-120) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg width="%d" height="%d" xmlns="http://www.w3.org/2000/svg" font-size="12">`, w, h)
	for i, k := range keys {
		y := 20 + i*rowH
		v := rep.Ratios[k]
		t := rep.Targets[k]
		ok := verdict(k, v, t) == "ok"
		color := "#c0392b"
		if ok {
			color = "#27ae60"
		}
		var lim float64
		var op string
		fmt.Sscanf(t, "%s %g", &op, &lim)
		fmt.Fprintf(&b, `<text x="4" y="%d">%s</text><rect x="%d" y="%d" width="%.1f" height="16" fill="%s"/>`,
			y+12, k, left, y, x(v)-left, color)
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#000" stroke-dasharray="3,2"/>`, x(lim), x(lim), y-3, y+19)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d">%.3f (target %s)</text>`, x(v)+6, y+12, v, html.EscapeString(t))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#555">dashed line: target; ratio = toolscope time / peer time, except scopes1k (throughput, higher is better)</text></svg>`, 4, h-6)
	return b.String()
}

func latencyChart(rs []Result) string {
	const w, rowH, left = 1000, 22, 250
	h := rowH*len(rs) + 50
	lo, hi := 0.1, 10.0
	for _, r := range rs {
		hi = math.Max(hi, r.P999us)
	}
	x := func(v float64) float64 {
		v = math.Max(v, lo)
		return left + (math.Log10(v)-math.Log10(lo))/(math.Log10(hi)-math.Log10(lo))*float64(w-left-20)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg width="%d" height="%d" xmlns="http://www.w3.org/2000/svg" font-size="11">`, w, h)
	for d := lo; d <= hi*1.0001; d *= 10 {
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="10" y2="%d" stroke="#ddd"/><text x="%.1f" y="%d">%g</text>`, x(d), x(d), h-30, x(d)-8, h-16, d)
	}
	colors := []string{"#2980b9", "#e67e22", "#c0392b"}
	for i, r := range rs {
		y := 14 + i*rowH
		fmt.Fprintf(&b, `<text x="4" y="%d">%s</text>`, y+10, r.Name)
		for j, v := range []float64{r.P999us, r.P99us, r.P50us} {
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="14" fill="%s"><title>%s %.1f µs</title></rect>`,
				left, y, x(v)-left, colors[2-j], []string{"p99.9", "p99", "p50"}[j], v)
		}
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d"><tspan fill="%s">■ p50</tspan> <tspan fill="%s">■ p99</tspan> <tspan fill="%s">■ p99.9</tspan></text></svg>`,
		left, h-2, colors[0], colors[1], colors[2])
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
	const w, h, left, bottom = 700, 320, 70, 40
	x := func(n float64) float64 { return left + (math.Log10(n)-2)/2*float64(w-left-40) }
	y := func(v float64) float64 { return float64(h-bottom) - v/maxV*float64(h-bottom-20) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg width="%d" height="%d" xmlns="http://www.w3.org/2000/svg" font-size="11">`, w, h)
	for _, n := range []float64{100, 1000, 10000} {
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="20" y2="%d" stroke="#ddd"/><text x="%.1f" y="%d">%g scopes</text>`, x(n), x(n), h-bottom, x(n)-20, h-bottom+15, n)
	}
	for i := 0; i <= 4; i++ {
		v := maxV * float64(i) / 4
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#eee"/><text x="4" y="%.1f">%.0fk/s</text>`, left, w-20, y(v), y(v), y(v)+4, v/1e3)
	}
	colors := map[string]string{"toolscope": "#2980b9", "map+RWMutex, body on a goroutine": "#7f8c8d"}
	ly := 30
	for _, name := range slices.Sorted(mapKeys(series)) {
		pts := series[name]
		var path []string
		for _, p := range pts {
			path = append(path, fmt.Sprintf("%.1f,%.1f", x(p.n), y(p.v)))
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"><title>%.0f calls/s</title></circle>`, x(p.n), y(p.v), colors[name], p.v)
		}
		fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`, strings.Join(path, " "), colors[name])
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="%s">■ %s</text>`, w-260, ly, colors[name], name)
		ly += 16
	}
	b.WriteString("</svg>")
	return b.String()
}
