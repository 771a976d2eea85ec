package main

import (
	_ "embed"
	"fmt"
	"html/template"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/toolscope/toolscope/messages"
	"github.com/toolscope/toolscope/runtime"
)

// The timeline is one self-contained HTML file built with html/template
// from timeline.html.tmpl: inline CSS, one inline SVG per lane drawn from
// the execution events, and a few lines of JS for the hover card. Nothing
// is fetched.
//
// The page follows the window: lane names sit in a fixed column and every
// position in a lane's SVG is a percentage of the plot's width, so the
// bars stretch while the text keeps its size. Which labels are drawn is
// decided here, for the narrowest plot the page lays out without scrolling
// (tlMinPlotW, an 800 px window): a label that fits there fits at any
// wider width, because gaps grow with the width and text does not.

//go:embed timeline.html.tmpl
var timelineTemplate string

var timelineTmpl = template.Must(template.New("timeline").Funcs(template.FuncMap{
	"pct": func(f float64) string { return strconv.FormatFloat(f*100, 'f', 3, 64) + "%" },
	"num": func(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) },
}).Parse(timelineTemplate))

const (
	tlMinPlotW = 540.0 // px: the plot's min-width in the CSS
	tlHeadH    = 16    // px: the strip of turn labels at the top of a lane
	tlRowH     = 19    // px per row of bars
	tlBarH     = 15    // px: a bar's height
	tlPad      = 4     // px below the last row
	tlMinW     = 3.0   // px, so instant calls (denials) stay visible
	tlGap      = 3.0   // px between a bar and a label beside it

	// Text widths are estimated from the monospace fonts' advance (about
	// 0.6 em; 0.62 leaves a margin) at the sizes in the CSS.
	tlBarFont  = 11.0 // .bt
	tlTurnFont = 10.5 // .tlabel
	tlTickFont = 11.0 // .tick
	tlEm       = 0.62
)

const (
	colParallel  = "#2563eb"
	colExclusive = "#7c3aed"
	colDenied    = "#f59e0b"
	colFailed    = "#dc2626"
	colProgram   = "#0d9488" // a run_code program; its calls are drawn beneath it
)

func barClass(c callRecord) (class, color, outcome string) {
	switch {
	case c.Outcome == runtime.OutcomeDenied.String():
		return "denied", colDenied, "denied"
	case c.IsError:
		return "failed", colFailed, "failed " + c.Code
	case c.Tool == runtime.RunCodeName:
		return "program", colProgram, "ok"
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

// textW estimates the width in px of s at font size px.
func textW(s string, px float64) float64 {
	return float64(len([]rune(s))) * px * tlEm
}

// tlPage is what timeline.html.tmpl renders.
type tlPage struct {
	Title, Sub string
	Colors     map[string]string
	MinPlotW   int
	Ticks      []tlTick
	Lanes      []tlLane
	Rows       []tlRow
	Footer     string
}

// tlTick is one axis tick; X is a fraction of the plot's width.
type tlTick struct {
	X      float64
	Label  string // "" draws the grid line only
	Anchor string
}

// tlLane is one agent scope.
type tlLane struct {
	Name     string // unique among the lanes
	Depth    int
	Calls    int
	Code     bool // the agent works in code mode (run_code programs)
	H        int  // px
	BandH    int  // px: a turn band's height
	Head     int  // px: where bars (and barriers) begin
	Alt      bool
	Turns    []tlTurn
	Barriers []float64
	Programs []tlProgram
	Bars     []tlBar
	Ticks    []tlTick
}

// tlProgram is the box under a run_code bar that holds its program's calls:
// X and W as the bar's, Y and H in px from the bar's row to its calls'
// last row.
type tlProgram struct {
	X, W float64
	Y, H int
}

// tlTurn is one turn's band; X and W are fractions of the plot's width.
type tlTurn struct {
	X, W  float64
	ID    string
	Label string // "" when it does not fit
}

// tlBar is one call.
type tlBar struct {
	Class, Color string
	X, W         float64 // the run, as fractions of the plot's width
	WaitX, WaitW float64 // the wait to commit in model order (WaitW 0: none)
	Narrow       bool    // the run is under tlMinW px: draw a tlMinW px bar too
	Y, WaitY     int
	Tip, Aria    string
	Texts        []tlText
}

// tlText is a label at X (a fraction of the plot) plus DX px.
type tlText struct {
	Class string
	X, DX float64
	Y     float64
	S     string
}

// tlRow is one row of the summary table.
type tlRow struct {
	Name                                   string
	Depth                                  int
	Total                                  bool
	Calls, Parallel, Exclusive, OK, Denied int
	Failed, Serial, Wall, Saved            string
}

func writeTimeline(name string, plan *Plan, sum *Summary, calls []callRecord) error {
	s, err := renderTimeline(plan, sum, calls)
	if err != nil {
		return err
	}
	return os.WriteFile(name, []byte(s), 0o644)
}

func renderTimeline(plan *Plan, sum *Summary, calls []callRecord) (string, error) {
	var sb strings.Builder
	if err := timelineTmpl.Execute(&sb, timelinePage(plan, sum, calls)); err != nil {
		return "", err
	}
	return sb.String(), nil
}

// laneNames returns a unique name per agent: its key, suffixed with #i
// (its index in the plan) when an earlier lane has the same key.
func laneNames(agents []*agentPlan) []string {
	seen := map[string]bool{}
	names := make([]string, len(agents))
	for i, a := range agents {
		n := a.Key
		if seen[n] {
			n = fmt.Sprintf("%s #%d", a.Key, i+1)
		}
		seen[n] = true
		names[i] = n
	}
	return names
}

func timelinePage(plan *Plan, sum *Summary, calls []callRecord) *tlPage {
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
	frac := func(ns int64) float64 { return float64(ns-t0) / float64(span) }
	px := func(ns int64) float64 { return frac(ns) * tlMinPlotW }

	page := &tlPage{
		Title: fmt.Sprintf("toolscope · %d agents, %d calls, %d turns", len(plan.Agents), sum.Total.Calls, sum.Turns),
		Sub: fmt.Sprintf("seed %d · one lane per agent scope (sub-agents indented) · one bar per call from the registry's typed execution events · parallel dispatch saved %s of %s tool time · %s · hover a bar for tool, arguments and outcome",
			plan.Seed, ms(sum.Total.Saved()), ms(sum.Total.Serial), codeNote(plan)),
		Colors:   map[string]string{"parallel": colParallel, "exclusive": colExclusive, "denied": colDenied, "failed": colFailed, "program": colProgram},
		MinPlotW: int(tlMinPlotW),
	}

	// Axis with round-millisecond ticks; a label is dropped where it would
	// touch its neighbour or leave the plot at the narrowest width.
	step := niceStep(time.Duration(span) / 10)
	prevR := -1e9
	var grid []tlTick
	for tk := time.Duration(0); tk <= time.Duration(span); tk += step {
		f := frac(t0 + int64(tk))
		lab, anchor := ms(tk), "middle"
		w := textW(lab, tlTickFont)
		l, r := f*tlMinPlotW-w/2, f*tlMinPlotW+w/2
		switch {
		case l < 0:
			anchor, l, r = "start", f*tlMinPlotW, f*tlMinPlotW+w
		case r > tlMinPlotW:
			anchor, l, r = "end", f*tlMinPlotW-w, f*tlMinPlotW
		}
		if l < prevR+6 {
			lab = ""
		} else {
			prevR = r
		}
		page.Ticks = append(page.Ticks, tlTick{X: f, Label: lab, Anchor: anchor})
		grid = append(grid, tlTick{X: f})
	}

	byAgent := map[string][]callRecord{}
	for _, c := range calls {
		byAgent[c.Agent] = append(byAgent[c.Agent], c)
	}
	names := laneNames(plan.Agents)
	for li, a := range plan.Agents {
		cs := byAgent[a.Key]
		sort.Slice(cs, func(i, j int) bool {
			if cs[i].Start != cs[j].Start {
				return cs[i].Start < cs[j].Start
			}
			return cs[i].CallID < cs[j].CallID
		})
		lane := tlLane{Name: names[li], Depth: a.Depth, Calls: len(cs), Code: a.Code, Alt: li%2 == 1, Ticks: grid}
		index := map[string]int{} // call id -> its index in cs
		for i, c := range cs {
			index[c.CallID] = i
		}
		// program is the index of the run_code call that made cs[i], or -1.
		program := func(i int) int {
			if p, ok := index[cs[i].Program]; ok && cs[i].Program != "" {
				return p
			}
			return -1
		}
		// turnOf is the turn a call belongs to: a program's calls, to the
		// program's (their own nested turn ids are in the hover card).
		turnOf := func(i int) string {
			if p := program(i); p >= 0 {
				return cs[p].Turn
			}
			return cs[i].Turn
		}

		// Pack overlapping bars into rows (in px at the narrowest width, so
		// instant bars too); a program's calls go in the rows beneath it.
		var rowEnd []float64
		rows := make([]int, len(cs))
		for i, c := range cs {
			x0, x1 := px(c.Start), max(px(c.End), px(c.Start)+tlMinW)
			r := 0
			if p := program(i); p >= 0 && p < i {
				r = rows[p] + 1
			}
			slack := 1.0
			if c.Tool == runtime.RunCodeName {
				slack = 0 // a program's turn follows the last one's: keep the top row
			}
			for r < len(rowEnd) && rowEnd[r] > x0-slack {
				r++
			}
			for r >= len(rowEnd) {
				rowEnd = append(rowEnd, 0)
			}
			rowEnd[r] = x1
			rows[i] = r
		}
		lane.H = tlHeadH + max(1, len(rowEnd))*tlRowH + tlPad
		lane.BandH, lane.Head = lane.H-2, tlHeadH
		// nextInRow[i] is where the next bar of i's row starts (px).
		nextInRow := make([]float64, len(cs))
		last := map[int]int{}
		for i := range cs {
			nextInRow[i] = tlMinPlotW
			if j, ok := last[rows[i]]; ok {
				nextInRow[j] = px(cs[i].Start)
			}
			last[rows[i]] = i
		}

		// Turn bands: each turn's extent, labelled in the strip on top
		// where the label fits inside the band.
		type ext struct{ a, b int64 }
		turns := map[string]*ext{}
		var order []string
		for i, c := range cs {
			e := turns[turnOf(i)]
			if e == nil {
				e = &ext{c.Start, c.End}
				turns[turnOf(i)] = e
				order = append(order, turnOf(i))
			}
			e.a, e.b = min(e.a, c.Start), max(e.b, c.End)
		}
		sort.SliceStable(order, func(i, j int) bool { return turns[order[i]].a < turns[order[j]].a })
		for i, id := range order {
			e := turns[id]
			t := tlTurn{X: frac(e.a), W: frac(e.b) - frac(e.a), ID: id}
			short := id[strings.LastIndex(id, "/")+1:]
			limit := px(e.b)
			if i+1 < len(order) {
				limit = min(limit, px(turns[order[i+1]].a))
			}
			if px(e.a)+3+textW(short, tlTurnFont)+2 <= limit {
				t.Label = short
			}
			lane.Turns = append(lane.Turns, t)
		}

		// Barriers: an exclusive call runs alone, so its edges are
		// barriers for the whole lane.
		for _, c := range cs {
			if c.Mode != messages.ModeExclusive || c.Outcome == runtime.OutcomeDenied.String() || c.End-c.Start < int64(time.Millisecond) {
				continue
			}
			lane.Barriers = append(lane.Barriers, frac(c.Start), frac(c.End))
		}
		// barrierIn reports whether a barrier lies in the open span (a, b) px.
		barrierIn := func(a, b float64) bool {
			for _, f := range lane.Barriers {
				if x := f * tlMinPlotW; x > a-1 && x < b+1 {
					return true
				}
			}
			return false
		}

		// Program boxes: from a run_code bar down to its calls' last row.
		lastRow := map[int]int{}
		for i := range cs {
			if p := program(i); p >= 0 {
				lastRow[p] = max(lastRow[p], rows[i])
			}
		}
		for p, last := range lastRow {
			c := cs[p]
			y := tlHeadH + rows[p]*tlRowH + 1
			lane.Programs = append(lane.Programs, tlProgram{X: frac(c.Start), W: frac(c.end()) - frac(c.Start), Y: y, H: (last-rows[p]+1)*tlRowH - 1})
		}
		sort.Slice(lane.Programs, func(i, j int) bool { return lane.Programs[i].X < lane.Programs[j].X })

		for i, c := range cs {
			class, color, outcome := barClass(c)
			ran := time.Duration(c.end() - c.Start).Round(100 * time.Microsecond)
			timing := "ran " + ran.String()
			if wait := time.Duration(c.End - c.end()); wait >= 500*time.Microsecond {
				timing += fmt.Sprintf(", then waited %s to commit in model order", wait.Round(100*time.Microsecond))
			}
			msg := c.Message
			if len(msg) > 160 {
				msg = msg[:160] + "…"
			}
			where := fmt.Sprintf("turn %s, group %d", c.Turn, c.Group)
			if c.Program != "" {
				where = "called by the program of " + c.Program
				if c.Turn != "" {
					where += fmt.Sprintf(" (its parallel batch %s, group %d)", c.Turn, c.Group)
				}
			}
			argsText := c.Args
			if c.Tool == runtime.RunCodeName {
				argsText = "the program\n" + c.Args
			}
			b := tlBar{
				Class: class, Color: color,
				X: frac(c.Start), W: frac(c.end()) - frac(c.Start),
				Narrow: px(c.end())-px(c.Start) < tlMinW,
				Y:      tlHeadH + rows[i]*tlRowH + 2,
				Tip: fmt.Sprintf("%s · %s  [%s]\nargs: %s\noutcome: %s\n%s · %s · %s\nresult: %s",
					c.Tool, c.Agent, c.CallID, argsText, outcome, timing, modeName(c.Mode), where, msg),
				Aria: fmt.Sprintf("%s, %s, %s, %s, call %s", c.Tool, outcome, modeName(c.Mode), timing, c.CallID),
			}
			if tail := px(c.End) - px(c.end()); tail > 0.5 {
				b.WaitX, b.WaitW = frac(c.end()), frac(c.End)-frac(c.end())
			}
			b.WaitY = b.Y + (tlBarH-3)/2
			baseline := float64(b.Y) + 11.5
			// The tool's name goes inside the bar where it fits, else
			// beside it where the row is free up to the next bar, barrier
			// or the end of the turn; an interrupted call also says so.
			x0, runEnd := px(c.Start), max(px(c.end()), px(c.Start)+tlMinW)
			inside := c.Code != "ABORTED" && x0+tlGap+textW(c.Tool, tlBarFont)+tlGap <= runEnd && !barrierIn(x0+tlGap, x0+tlGap+textW(c.Tool, tlBarFont))
			if inside {
				b.Texts = append(b.Texts, tlText{Class: "bt in", X: b.X, DX: tlGap, Y: baseline, S: c.Tool})
			}
			beside, cls := c.Tool, "bt out"
			if c.Code == "ABORTED" {
				beside, cls = c.Tool+" ✕ Ctrl-C", "bt x"
			}
			if !inside || c.Code == "ABORTED" {
				dx := tlGap
				if px(c.End)-x0 < tlMinW {
					dx += tlMinW
				}
				start := px(c.End) + dx
				limit := min(nextInRow[i], px(turns[turnOf(i)].b)+0.01) - 2
				if c.Code == "ABORTED" {
					limit = nextInRow[i] - 2 // the turn ends with the interrupted call
				}
				if start+textW(beside, tlBarFont) <= limit && !barrierIn(start, start+textW(beside, tlBarFont)) {
					b.Texts = append(b.Texts, tlText{Class: cls, X: frac(c.End), DX: dx, Y: baseline, S: beside})
				}
			}
			lane.Bars = append(lane.Bars, b)
		}
		page.Lanes = append(page.Lanes, lane)
	}

	for i, a := range sum.Agents {
		name := a.Agent
		if i < len(names) && plan.Agents[i].Key == a.Agent {
			name = names[i]
		}
		page.Rows = append(page.Rows, summaryRow(name, a))
	}
	tot := summaryRow("total", sum.Total)
	tot.Total = true
	page.Rows = append(page.Rows, tot)
	page.Footer = fmt.Sprintf("%d turns (%d cancelled by the user, %d of their calls never dispatched) · %d secrets redacted · approver: %d allowed, %d rejected · %d calls in %s",
		sum.Turns, sum.Cancelled, sum.NeverStarted, sum.Redacted, sum.Approved, sum.Rejected, sum.Total.Calls, ms(sum.Elapsed))
	return page
}

func summaryRow(name string, a AgentStats) tlRow {
	return tlRow{Name: name, Depth: a.Depth, Calls: a.Calls, Parallel: a.Parallel, Exclusive: a.Exclusive, OK: a.OK, Denied: a.Denied,
		Failed: failedText(a.Failed), Serial: ms(a.Serial), Wall: ms(a.Wall), Saved: savedText(a)}
}

func niceStep(d time.Duration) time.Duration {
	for _, s := range []time.Duration{5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 5000} {
		if st := s * time.Millisecond; st >= d {
			return st
		}
	}
	return 10 * time.Second
}

// codeNote says which agents work in code mode.
func codeNote(plan *Plan) string {
	var keys []string
	for _, a := range plan.Agents {
		if a.Code {
			keys = append(keys, a.Key)
		}
	}
	if len(keys) == 0 {
		return "no agent in code mode (-agents 3 or more brings " + codeAgent + ")"
	}
	return strings.Join(keys, ", ") + " works in code mode: a run_code bar per turn, its program's calls beneath it"
}
