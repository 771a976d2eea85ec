package main

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"os"
	"sort"
	"strings"

	"github.com/toolscope/toolscope/messages"
	"github.com/toolscope/toolscope/runtime"
)

// The timeline is one self-contained HTML file built with html/template
// from timeline.html.tmpl. The calls are in the page once, as compact JSON
// (tlData, in a <script type="application/json">), and a small inline
// script draws them as one SVG per lane at the width the window gives it:
// it packs bars into rows, puts a label where the measured text fits
// (inside its bar, or beside it up to the next bar, barrier or the end of
// its turn) and nowhere else, and marks every failure with a shape of its
// own that keeps its size at any zoom. The page zooms (drag across the
// chart; a reset), collapses lanes (a parent's sub-agents fold into it)
// and filters to failures only; every call is in a table too, for the
// keyboard and screen readers. Nothing is fetched.
//
// The page exposes window.timeline.state() (read only) so that the browser
// check (.ci/pagecheck) can see what is drawn after it drives the page
// with real mouse input.

//go:embed timeline.html.tmpl
var timelineTemplate string

var timelineTmpl = template.Must(template.New("timeline").Parse(timelineTemplate))

// Kinds of call, as the page draws them; the index is what tlCall.Kind
// holds. From tlFirstFailure on, a kind is a failure: it gets a marker and
// stays under "failures only".
var tlKinds = []string{"parallel", "exclusive", "program", "denied", "failed", "timeout", "aborted"}

const (
	tlParallel = iota
	tlExclusive
	tlProgram
	tlDenied
	tlFailed
	tlTimeout
	tlAborted

	tlFirstFailure = tlDenied
)

// tlColors are the kinds' colours, in tlKinds' order.
var tlColors = []string{"#2563eb", "#7c3aed", "#0d9488", "#f59e0b", "#dc2626", "#be185d", "#475569"}

// callKind classifies a call for the page: its failure first (a denial,
// a timeout, an interruption, any other error), else how it ran.
func callKind(c callRecord) int {
	switch {
	case c.Outcome == runtime.OutcomeDenied.String():
		return tlDenied
	case c.Outcome == runtime.OutcomeTimedOut.String():
		return tlTimeout
	case c.Outcome == runtime.OutcomeCancelled.String():
		return tlAborted
	case c.IsError:
		return tlFailed
	case c.Tool == runtime.RunCodeName:
		return tlProgram
	case c.Mode == messages.ModeParallel:
		return tlParallel
	default:
		return tlExclusive
	}
}

// tlPage is what timeline.html.tmpl renders.
type tlPage struct {
	Title, Sub string
	Kinds      []tlKindStyle
	Rows       []tlRow
	Footer     string
	Data       template.JS // tlData as JSON: html/template keeps it as is in the JSON script
	Calls      int
}

// tlKindStyle is one kind's name and colour, for the CSS and the legend.
type tlKindStyle struct{ Name, Color string }

// tlData is everything the page's script draws. Times are microseconds
// since the first call started.
type tlData struct {
	// End is where the time axis ends: the last call's end, so the last
	// turn's frame is inside the plot (the script keeps a margin on both
	// sides for the frames' strokes and the markers).
	End   int64    `json:"end"`
	Kinds []string `json:"kinds"`
	Tools []string `json:"tools"` // tlCall.Tool indexes it
	Lanes []tlLane `json:"lanes"`
	Turns []tlTurn `json:"turns"`
	Calls []tlCall `json:"calls"` // by lane, then start, then call id
}

// tlLane is one agent scope.
type tlLane struct {
	Name   string `json:"name"` // unique among the lanes
	Depth  int    `json:"depth"`
	Parent int    `json:"parent"` // the parent agent's lane, -1 for a top-level agent
	Code   bool   `json:"code,omitempty"`
}

// tlTurn is one turn of a lane: from its first call's start to its last
// call's end. A run_code program's calls belong to the program's turn.
type tlTurn struct {
	Lane       int
	ID         string
	Start, End int64
}

// MarshalJSON writes a turn as [lane, start, end, id].
func (t tlTurn) MarshalJSON() ([]byte, error) {
	return json.Marshal([]any{t.Lane, t.Start, t.End, t.ID})
}

// tlCall is one call.
type tlCall struct {
	Lane, Turn int   // indexes of Lanes and Turns
	Start      int64 // µs
	Run        int64 // µs: its own work ended (its dispatch returned)
	End        int64 // µs: its result was committed (a parallel call of a turn waits for the calls before it)
	Kind       int   // index of tlKinds
	Mode       int   // 0 unclassified, 1 parallel, 2 exclusive
	Tool       int   // index of Tools
	Program    int   // the run_code call whose program made it (index of Calls), -1: the model
	Group      int32
	ID, Code   string
	Args, Msg  string
}

// Failed reports whether the page marks the call as a failure.
func (c tlCall) Failed() bool { return c.Kind >= tlFirstFailure }

// MarshalJSON writes a call as one array:
// [lane, turn, start, run, end, kind, mode, tool, program, group, id, code, args, result].
func (c tlCall) MarshalJSON() ([]byte, error) {
	return json.Marshal([]any{c.Lane, c.Turn, c.Start, c.Run, c.End, c.Kind, c.Mode, c.Tool, c.Program, c.Group, c.ID, c.Code, c.Args, c.Msg})
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
	page, err := timelinePage(plan, sum, calls)
	if err != nil {
		return "", err
	}
	var sb strings.Builder
	if err := timelineTmpl.Execute(&sb, page); err != nil {
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

// tlMaxMsg bounds a result's text in the page (the hover card and the
// table show this much; the -json events have it all).
const tlMaxMsg = 160

// timelineData turns the call records into what the page draws: a lane
// per agent of the plan (in its order), each call once, in the lane of
// its agent (calls of an agent the plan does not know get a lane of their
// own at the end, so none is lost), turns with their extents.
func timelineData(plan *Plan, calls []callRecord) *tlData {
	d := &tlData{Kinds: tlKinds}
	var t0 int64
	for i, c := range calls {
		if i == 0 || c.Start < t0 {
			t0 = c.Start
		}
	}
	floorUS := func(ns int64) int64 { return (ns - t0) / 1000 }
	ceilUS := func(ns int64) int64 { return (ns - t0 + 999) / 1000 }

	names := laneNames(plan.Agents)
	laneOf := map[string]int{} // agent key -> its (first) lane
	for i, a := range plan.Agents {
		parent := -1
		if a.Parent != "" {
			for j := i - 1; j >= 0; j-- { // the nearest earlier lane with the parent's key
				if plan.Agents[j].Key == a.Parent {
					parent = j
					break
				}
			}
		}
		d.Lanes = append(d.Lanes, tlLane{Name: names[i], Depth: a.Depth, Parent: parent, Code: a.Code})
		if _, ok := laneOf[a.Key]; !ok {
			laneOf[a.Key] = i
		}
	}
	byLane := make([][]callRecord, len(d.Lanes))
	for _, c := range calls {
		l, ok := laneOf[c.Agent]
		if !ok {
			l = len(d.Lanes)
			laneOf[c.Agent] = l
			d.Lanes = append(d.Lanes, tlLane{Name: c.Agent + " (not in the plan)", Parent: -1})
			byLane = append(byLane, nil)
		}
		byLane[l] = append(byLane[l], c)
	}

	toolIdx := map[string]int{}
	for li, cs := range byLane {
		sort.Slice(cs, func(i, j int) bool {
			if cs[i].Start != cs[j].Start {
				return cs[i].Start < cs[j].Start
			}
			return cs[i].CallID < cs[j].CallID
		})
		base := len(d.Calls)
		index := map[string]int{} // call id -> its index in d.Calls
		for i, c := range cs {
			index[c.CallID] = base + i
		}
		// A program's calls belong to the program's turn (their own nested
		// turn ids are in the hover card).
		turnKey := func(c callRecord) string {
			if p, ok := index[c.Program]; ok && c.Program != "" {
				return cs[p-base].Turn
			}
			return c.Turn
		}
		turnIdx := map[string]int{}
		var laneTurns []tlTurn
		for _, c := range cs {
			k := turnKey(c)
			i, ok := turnIdx[k]
			if !ok {
				i = len(laneTurns)
				turnIdx[k] = i
				laneTurns = append(laneTurns, tlTurn{Lane: li, ID: k, Start: floorUS(c.Start), End: ceilUS(c.End)})
			}
			t := &laneTurns[i]
			t.Start, t.End = min(t.Start, floorUS(c.Start)), max(t.End, ceilUS(c.End))
		}
		// Turns in order of their start; the calls point at them.
		order := make([]int, len(laneTurns))
		for i := range order {
			order[i] = i
		}
		sort.SliceStable(order, func(i, j int) bool { return laneTurns[order[i]].Start < laneTurns[order[j]].Start })
		where := make([]int, len(laneTurns))
		for pos, i := range order {
			where[i] = len(d.Turns) + pos
		}
		for _, i := range order {
			d.Turns = append(d.Turns, laneTurns[i])
		}

		for _, c := range cs {
			ti, ok := toolIdx[c.Tool]
			if !ok {
				ti = len(d.Tools)
				toolIdx[c.Tool] = ti
				d.Tools = append(d.Tools, c.Tool)
			}
			prog := -1
			if p, ok := index[c.Program]; ok && c.Program != "" {
				prog = p
			}
			start, end := floorUS(c.Start), ceilUS(c.End)
			run := min(max(ceilUS(c.end()), start), end)
			msg := c.Message
			if r := []rune(msg); len(r) > tlMaxMsg {
				msg = string(r[:tlMaxMsg]) + "…"
			}
			mode := 0
			switch c.Mode {
			case messages.ModeParallel:
				mode = 1
			case messages.ModeExclusive:
				mode = 2
			}
			d.Calls = append(d.Calls, tlCall{
				Lane: li, Turn: where[turnIdx[turnKey(c)]], Start: start, Run: run, End: end,
				Kind: callKind(c), Mode: mode, Tool: ti, Program: prog, Group: c.Group,
				ID: c.CallID, Code: c.Code, Args: c.Args, Msg: msg,
			})
			d.End = max(d.End, end)
		}
	}
	d.End = max(d.End, 1000) // an axis of at least 1 ms
	return d
}

func timelinePage(plan *Plan, sum *Summary, calls []callRecord) (*tlPage, error) {
	data := timelineData(plan, calls)
	js, err := json.Marshal(data) // escapes <, > and & (no "</script>" can end the JSON early)
	if err != nil {
		return nil, fmt.Errorf("timeline data: %w", err)
	}
	page := &tlPage{
		Title: fmt.Sprintf("toolscope · %d agents, %s, %s", len(plan.Agents), count(sum.Total.Calls, "call"), count(sum.Turns, "turn")),
		Sub: timeNote(sum) + fmt.Sprintf("seed %d · one lane per agent scope (sub-agents under their parent) · one bar per call from the registry's typed execution events · parallel dispatch saved %s of %s tool time · %s · drag across the chart to zoom; hover or click a bar for its details",
			plan.Seed, ms(sum.Total.Saved()), ms(sum.Total.Serial), codeNote(plan)),
		Data:  template.JS(js),
		Calls: len(data.Calls),
	}
	for i, k := range tlKinds {
		page.Kinds = append(page.Kinds, tlKindStyle{Name: k, Color: tlColors[i]})
	}
	names := laneNames(plan.Agents)
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
	page.Footer = fmt.Sprintf("%s (%d cancelled by the user, %d of their calls never dispatched) · %d secrets redacted · approver: %d allowed, %d rejected · %s in %s",
		count(sum.Turns, "turn"), sum.Cancelled, sum.NeverStarted, sum.Redacted, sum.Approved, sum.Rejected, count(sum.Total.Calls, "call"), ms(sum.Elapsed))
	if sum.Virtual {
		page.Title += " · virtual time"
		page.Footer += fmt.Sprintf(" of virtual time (%s on the wall)", ms(sum.WallElapsed))
	}
	return page, nil
}

// timeNote says, on a virtual run's timeline, that its times are the
// virtual clock's.
func timeNote(sum *Summary) string {
	if !sum.Virtual {
		return ""
	}
	return "virtual time (-virtual): every time on this page is the simulated clock's, on which the tools' latencies sleep; the run took " + ms(sum.WallElapsed) + " on the wall · "
}

func summaryRow(name string, a AgentStats) tlRow {
	return tlRow{Name: name, Depth: a.Depth, Calls: a.Calls, Parallel: a.Parallel, Exclusive: a.Exclusive, OK: a.OK, Denied: a.Denied,
		Failed: failedText(a.Failed), Serial: ms(a.Serial), Wall: ms(a.Wall), Saved: savedText(a)}
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
