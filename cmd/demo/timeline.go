package main

import (
	"fmt"
	"html"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/toolscope/toolscope/messages"
)

// The timeline is one self-contained HTML file: inline CSS, one inline SVG
// drawn from the execution events, and a few lines of JS for the hover
// card. Nothing is fetched.

const (
	tlLabelW = 200
	tlPlotW  = 1120
	tlAxisH  = 34
	tlRowH   = 15
	tlPad    = 7
	tlMinW   = 3.0 // px, so instant calls (denials) stay visible
)

const (
	colParallel  = "#2563eb"
	colExclusive = "#7c3aed"
	colDenied    = "#f59e0b"
	colFailed    = "#dc2626"
)

func barClass(c callRecord) (class, color, outcome string) {
	switch {
	case c.Code == messages.OutcomeDenied:
		return "denied", colDenied, "denied"
	case c.IsError:
		return "failed", colFailed, "failed " + c.Code
	case c.Mode == messages.ModeParallel:
		return "parallel", colParallel, "ok"
	default:
		return "exclusive", colExclusive, "ok"
	}
}

func modeName(m messages.ExecutionMode) string {
	switch m {
	case messages.ModeParallel:
		return "parallel"
	case messages.ModeExclusive:
		return "exclusive"
	}
	return "unclassified"
}

func writeTimeline(name string, plan *Plan, sum *Summary, calls []callRecord) error {
	return os.WriteFile(name, []byte(renderTimeline(plan, sum, calls)), 0o644)
}

func renderTimeline(plan *Plan, sum *Summary, calls []callRecord) string {
	var t0, t1 int64
	for i, c := range calls {
		if i == 0 || c.Start < t0 {
			t0 = c.Start
		}
		if c.End > t1 {
			t1 = c.End
		}
	}
	span := max(t1-t0, int64(time.Millisecond))
	x := func(ns int64) float64 { return tlLabelW + float64(ns-t0)/float64(span)*tlPlotW }

	byAgent := map[string][]callRecord{}
	for _, c := range calls {
		byAgent[c.Agent] = append(byAgent[c.Agent], c)
	}

	var body strings.Builder
	y := float64(tlAxisH)
	type laneGeom struct {
		y, h float64
	}
	lanes := make([]laneGeom, 0, len(plan.Agents))
	for li, a := range plan.Agents {
		cs := byAgent[a.Key]
		sort.Slice(cs, func(i, j int) bool {
			if cs[i].Start != cs[j].Start {
				return cs[i].Start < cs[j].Start
			}
			return cs[i].CallID < cs[j].CallID
		})
		// Pack overlapping bars into rows (in pixels, so instant bars too).
		var rowEnd []float64
		rows := make([]int, len(cs))
		for i, c := range cs {
			x0, x1 := x(c.Start), max(x(c.End), x(c.Start)+tlMinW)
			r := 0
			for r < len(rowEnd) && rowEnd[r] > x0-1 {
				r++
			}
			if r == len(rowEnd) {
				rowEnd = append(rowEnd, 0)
			}
			rowEnd[r] = x1
			rows[i] = r
		}
		h := float64(max(1, len(rowEnd)))*tlRowH + 2*tlPad
		lanes = append(lanes, laneGeom{y, h})
		shade := "#f8fafc"
		if li%2 == 1 {
			shade = "#f1f5f9"
		}
		fmt.Fprintf(&body, `<rect x="0" y="%.1f" width="%d" height="%.1f" fill="%s"/>`+"\n", y, tlLabelW+tlPlotW+10, h, shade)
		label := a.Key
		cls := "lane"
		if a.Depth > 0 {
			label = strings.Repeat("   ", a.Depth) + "└ " + a.Role
			cls = "lane sub"
		}
		fmt.Fprintf(&body, `<text class="%s" x="10" y="%.1f">%s<tspan class="n"> %d calls</tspan></text>`+"\n",
			cls, y+h/2+4, html.EscapeString(label), len(cs))

		// Turn bands: each turn's extent, labelled.
		type ext struct{ a, b int64 }
		turns := map[string]*ext{}
		var order []string
		for _, c := range cs {
			e := turns[c.Turn]
			if e == nil {
				e = &ext{c.Start, c.End}
				turns[c.Turn] = e
				order = append(order, c.Turn)
			}
			e.a, e.b = min(e.a, c.Start), max(e.b, c.End)
		}
		for _, id := range order {
			e := turns[id]
			short := id[strings.LastIndex(id, "/")+1:]
			fmt.Fprintf(&body, `<rect class="turn" x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>turn %s</title></rect>`+"\n",
				x(e.a), y+2, max(x(e.b)-x(e.a), tlMinW), h-4, html.EscapeString(id))
			fmt.Fprintf(&body, `<text class="tlabel" x="%.1f" y="%.1f">%s</text>`+"\n", x(e.a)+2, y+9, html.EscapeString(short))
		}
		// Barriers: an exclusive call runs alone, so its edges are
		// barriers for the whole lane.
		for _, c := range cs {
			if c.Mode != messages.ModeExclusive || c.Code == messages.OutcomeDenied || c.End-c.Start < int64(time.Millisecond) {
				continue
			}
			for _, bx := range []float64{x(c.Start), x(c.End)} {
				fmt.Fprintf(&body, `<line class="barrier" x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f"/>`+"\n", bx, bx, y+1, y+h-1)
			}
		}
		for i, c := range cs {
			class, color, outcome := barClass(c)
			x0 := x(c.Start)
			w := max(x(c.end())-x0, tlMinW)
			by := y + tlPad + float64(rows[i])*tlRowH
			ran := time.Duration(c.end() - c.Start).Round(100 * time.Microsecond)
			timing := "ran " + ran.String()
			if wait := time.Duration(c.End - c.end()); wait >= 500*time.Microsecond {
				timing += fmt.Sprintf(", then waited %s to commit in model order", wait.Round(100*time.Microsecond))
			}
			msg := c.Message
			if len(msg) > 160 {
				msg = msg[:160] + "…"
			}
			tip := fmt.Sprintf("%s · %s  [%s]\nargs: %s\noutcome: %s\n%s · %s · turn %s, group %d\nresult: %s",
				c.Tool, c.Agent, c.CallID, c.Args, outcome, timing, modeName(c.Mode), c.Turn, c.Group, msg)
			fmt.Fprintf(&body, `<g class="bar %s" data-tip="%s">`, class, html.EscapeString(tip))
			if tail := x(c.End) - (x0 + w); tail > 0.5 {
				fmt.Fprintf(&body, `<rect class="wait" x="%.1f" y="%.1f" width="%.1f" height="%d" fill="%s"/>`,
					x0+w, by+1+(tlRowH-3)/2.0-1.5, tail, 3, color)
			}
			fmt.Fprintf(&body, `<rect x="%.1f" y="%.1f" width="%.1f" height="%d" rx="2" fill="%s"/>`, x0, by+1, w, tlRowH-3, color)
			if w > float64(len(c.Tool))*6+6 {
				fmt.Fprintf(&body, `<text class="bt" x="%.1f" y="%.1f">%s</text>`, x0+3, by+tlRowH-5, html.EscapeString(c.Tool))
			}
			if c.Code == "ABORTED" {
				fmt.Fprintf(&body, `<text class="x" x="%.1f" y="%.1f">✕ Ctrl-C</text>`, x(c.End)+3, by+tlRowH-4)
			}
			fmt.Fprintf(&body, `<title>%s</title></g>`+"\n", html.EscapeString(tip))
		}
		y += h
	}
	height := y + 8

	// Axis with round-millisecond ticks.
	var axis strings.Builder
	step := niceStep(time.Duration(span) / 10)
	for tk := time.Duration(0); tk <= time.Duration(span); tk += step {
		tx := x(t0 + int64(tk))
		fmt.Fprintf(&axis, `<line class="grid" x1="%.1f" x2="%.1f" y1="%d" y2="%.1f"/>`, tx, tx, tlAxisH-6, height-8)
		fmt.Fprintf(&axis, `<text class="tick" x="%.1f" y="%d">%s</text>`+"\n", tx, tlAxisH-10, ms(tk))
	}

	var table strings.Builder
	sum.WriteTable(&table, true)

	var sb strings.Builder
	sb.WriteString(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>toolscope demo timeline</title>
<style>
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px;color:#0f172a;background:#fff}
h1{font-size:20px;margin:0 0 4px}
p.sub{margin:0 0 14px;color:#475569}
.legend span{display:inline-block;margin-right:18px;font-size:13px}
.legend i{display:inline-block;width:22px;height:11px;border-radius:2px;margin-right:6px;vertical-align:-1px}
.legend i.bar{border-left:2px dashed #7c3aed;border-right:2px dashed #7c3aed;width:14px;background:none;border-radius:0}
svg{display:block;margin-top:10px;border:1px solid #e2e8f0;border-radius:6px}
text{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.lane{font-size:13px;font-weight:600;fill:#0f172a}
.lane.sub{font-weight:500;fill:#334155}
.lane .n{font-weight:400;fill:#94a3b8;font-size:11px}
.tick{font-size:11px;fill:#64748b;text-anchor:middle}
.grid{stroke:#e2e8f0;stroke-width:1}
.turn{fill:#ffffff;fill-opacity:.75;stroke:#cbd5e1;stroke-width:1;rx:4}
.tlabel{font-size:8px;fill:#94a3b8}
.barrier{stroke:#7c3aed;stroke-width:1.2;stroke-dasharray:3 2;opacity:.7}
.bt{font-size:9.5px;fill:#fff;pointer-events:none}
.x{font-size:10px;fill:#dc2626;font-weight:700}
.bar{cursor:pointer}
.bar:hover rect{stroke:#0f172a;stroke-width:1.5}
.wait{opacity:.35}
.bar.denied rect{stroke:#b45309;stroke-width:1}
#tip{position:fixed;display:none;max-width:520px;white-space:pre-wrap;background:#0f172a;color:#f8fafc;font:12px/1.45 ui-monospace,Menlo,Consolas,monospace;padding:8px 10px;border-radius:6px;pointer-events:none;box-shadow:0 4px 14px rgba(0,0,0,.25)}
pre{background:#f8fafc;border:1px solid #e2e8f0;border-radius:6px;padding:12px;font-size:12px;overflow:auto}
</style></head><body>
`)
	fmt.Fprintf(&sb, "<h1>toolscope · %d agents, %d calls, %d turns</h1>\n", len(plan.Agents), sum.Total.Calls, sum.Turns)
	fmt.Fprintf(&sb, `<p class="sub">seed %d · one lane per agent scope (sub-agents indented) · one bar per call from the ExecutionStarted/ExecutionFinished events · parallel dispatch saved %s of %s tool time · hover a bar for tool, arguments and outcome</p>`+"\n",
		plan.Seed, ms(sum.Total.Saved()), ms(sum.Total.Serial))
	fmt.Fprintf(&sb, `<div class="legend"><span><i style="background:%s"></i>parallel</span><span><i style="background:%s"></i>exclusive</span><span><i style="background:%s"></i>denied (guard, approver)</span><span><i style="background:%s"></i>failed (by code)</span><span><i class="bar"></i>barrier (exclusive call runs alone)</span><span><i style="background:%s;height:3px;opacity:.5;vertical-align:3px"></i>done, waiting to commit in model order</span></div>`+"\n",
		colParallel, colExclusive, colDenied, colFailed, colParallel)
	fmt.Fprintf(&sb, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%.0f" viewBox="0 0 %d %.0f">`+"\n",
		tlLabelW+tlPlotW+20, height, tlLabelW+tlPlotW+20, height)
	sb.WriteString(body.String())
	sb.WriteString(axis.String())
	for _, l := range lanes {
		fmt.Fprintf(&sb, `<line x1="0" x2="%d" y1="%.1f" y2="%.1f" stroke="#e2e8f0"/>`, tlLabelW+tlPlotW+20, l.y, l.y)
	}
	sb.WriteString("</svg>\n<pre>")
	sb.WriteString(html.EscapeString(table.String()))
	sb.WriteString(`</pre>
<div id="tip"></div>
<script>
(function(){
  var tip=document.getElementById('tip');
  document.querySelectorAll('.bar').forEach(function(g){
    var t=g.querySelector('title'); if(t){g.removeChild(t);}
    g.addEventListener('mousemove',function(e){
      tip.textContent=g.getAttribute('data-tip');tip.style.display='block';
      var x=e.clientX+14,y=e.clientY+14;
      if(x+tip.offsetWidth>innerWidth-8){x=e.clientX-tip.offsetWidth-14;}
      if(y+tip.offsetHeight>innerHeight-8){y=e.clientY-tip.offsetHeight-14;}
      tip.style.left=x+'px';tip.style.top=y+'px';
    });
    g.addEventListener('mouseleave',function(){tip.style.display='none';});
  });
})();
</script>
</body></html>
`)
	return sb.String()
}

func niceStep(d time.Duration) time.Duration {
	for _, s := range []time.Duration{5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 5000} {
		if st := s * time.Millisecond; st >= d {
			return st
		}
	}
	return 10 * time.Second
}
