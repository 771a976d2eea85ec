package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/toolscope/toolscope/messages"
	"github.com/toolscope/toolscope/runtime"
)

// AgentStats is one row of the summary, computed from execution events.
type AgentStats struct {
	Agent     string
	Depth     int
	Calls     int
	Parallel  int
	Exclusive int
	OK        int
	Denied    int
	Failed    map[string]int // by outcome code
	// Serial is the sum of the call durations (event start to the end of
	// dispatch): the time a one-at-a-time runner would have needed; a
	// run_code call counts only the time none of its program's calls ran
	// (they count themselves). Wall is the time at least one call of the
	// agent was running.
	Serial, Wall time.Duration
}

// Saved is the time parallel dispatch saved against a serial run.
func (a AgentStats) Saved() time.Duration { return a.Serial - a.Wall }

// Summary is the outcome of one demo run.
type Summary struct {
	Seed         uint64
	Agents       []AgentStats
	Total        AgentStats
	Turns        int
	Cancelled    int // turns the simulated user interrupted
	NeverStarted int // calls of cancelled turns that never dispatched
	Redacted     int // secrets the post-execute hook removed
	Approved     int // approver answers
	Rejected     int
	// CodeAgents work in code mode; their Programs (run_code calls) made
	// ProgramCalls of the calls.
	CodeAgents             []string
	Programs, ProgramCalls int
	Elapsed                time.Duration
	Timeline               string // path of timeline.html, if written
	Events                 string // path of the -json events file, if written

	// Virtual: the run was on virtual time (-virtual); Elapsed is the
	// clock's, and WallElapsed what the run took on the wall.
	Virtual     bool
	WallElapsed time.Duration

	calls []callRecord // what the summary and the timeline were drawn from
}

// summarize folds the call records into per-agent rows, in plan order.
func summarize(plan *Plan, calls []callRecord) *Summary {
	byAgent := map[string][]callRecord{}
	for _, c := range calls {
		byAgent[c.Agent] = append(byAgent[c.Agent], c)
	}
	s := &Summary{Seed: plan.Seed}
	var all []callRecord
	for _, a := range plan.Agents {
		row := stats(a.Key, byAgent[a.Key])
		row.Depth = a.Depth
		s.Agents = append(s.Agents, row)
		all = append(all, byAgent[a.Key]...)
	}
	s.Total = stats("total", all)
	// Across agents, "serial" is the sum of each agent's own serial time and
	// "wall" the sum of their busy time: the saving is what parallel
	// dispatch within turns bought, not agents running side by side.
	s.Total.Serial, s.Total.Wall = 0, 0
	for _, r := range s.Agents {
		s.Total.Serial += r.Serial
		s.Total.Wall += r.Wall
	}
	return s
}

type interval struct{ a, b int64 }

// union is the time covered by at least one of ivs.
func union(ivs []interval) time.Duration {
	ivs = slices.Clone(ivs)
	sort.Slice(ivs, func(i, j int) bool { return ivs[i].a < ivs[j].a })
	var d time.Duration
	var curA, curB int64
	for i, x := range ivs {
		if i == 0 || x.a > curB {
			if i > 0 {
				d += time.Duration(curB - curA)
			}
			curA, curB = x.a, x.b
		} else if x.b > curB {
			curB = x.b
		}
	}
	if len(ivs) > 0 {
		d += time.Duration(curB - curA)
	}
	return d
}

func stats(agent string, calls []callRecord) AgentStats {
	row := AgentStats{Agent: agent, Failed: map[string]int{}}
	var ivs []interval
	inner := map[string][]interval{} // by program: its calls
	for _, c := range calls {
		if c.Program != "" {
			inner[c.Program] = append(inner[c.Program], interval{c.Start, c.end()})
		}
	}
	for _, c := range calls {
		row.Calls++
		switch c.Mode {
		case messages.ModeParallel:
			row.Parallel++
		default:
			row.Exclusive++
		}
		switch {
		case !c.IsError:
			row.OK++
		case c.Outcome == runtime.OutcomeDenied.String():
			row.Denied++
		default:
			row.Failed[c.Code]++
		}
		own := time.Duration(c.end() - c.Start)
		if kids := inner[c.CallID]; len(kids) > 0 {
			own = max(0, own-union(kids))
		}
		row.Serial += own
		ivs = append(ivs, interval{c.Start, c.end()})
	}
	row.Wall = union(ivs)
	return row
}

func failedText(m map[string]int) string {
	if len(m) == 0 {
		return "-"
	}
	var parts []string
	for _, code := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s×%d", code, m[code]))
	}
	return strings.Join(parts, " ")
}

func ms(d time.Duration) string { return fmt.Sprintf("%dms", d.Round(time.Millisecond).Milliseconds()) }

func savedText(a AgentStats) string {
	if a.Serial <= 0 {
		return "-"
	}
	return fmt.Sprintf("%s (%d%%)", ms(a.Saved()), int(100*a.Saved()/a.Serial))
}

// WriteTable prints the per-agent table. Without timings the output
// depends on the seed and flags only: it is what the golden test compares.
func (s *Summary) WriteTable(w io.Writer, timings bool) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	hdr := "AGENT\tCALLS\tPARALLEL\tEXCLUSIVE\tOK\tDENIED\tFAILED BY CODE"
	if timings {
		hdr += "\tSERIAL\tWALL\tSAVED BY PARALLELISM"
	}
	fmt.Fprintln(tw, hdr)
	line := func(name string, a AgentStats) {
		l := fmt.Sprintf("%s\t%d\t%d\t%d\t%d\t%d\t%s", name, a.Calls, a.Parallel, a.Exclusive, a.OK, a.Denied, failedText(a.Failed))
		if timings {
			l += fmt.Sprintf("\t%s\t%s\t%s", ms(a.Serial), ms(a.Wall), savedText(a))
		}
		fmt.Fprintln(tw, l)
	}
	for _, a := range s.Agents {
		name := a.Agent
		if a.Depth > 0 {
			name = strings.Repeat("  ", a.Depth-1) + "└ " + a.Agent[strings.LastIndex(a.Agent, ".")+1:]
		}
		line(name, a)
	}
	line("total", s.Total)
	tw.Flush()
	fmt.Fprintf(w, "\n%s (%d cancelled by the user, %d of their calls never dispatched) · %s redacted · approver: %d allowed, %d rejected\n",
		count(s.Turns, "turn"), s.Cancelled, s.NeverStarted, count(s.Redacted, "secret"), s.Approved, s.Rejected)
	if len(s.CodeAgents) > 0 {
		fmt.Fprintf(w, "code mode (%s): %s made %d of the calls\n", strings.Join(s.CodeAgents, ", "), count(s.Programs, "run_code program"), s.ProgramCalls)
	}
	if timings {
		fmt.Fprintf(w, "seed %d · %s in %s", s.Seed, count(s.Total.Calls, "call"), ms(s.Elapsed))
		if s.Virtual {
			fmt.Fprintf(w, " of virtual time (%s on the wall)", ms(s.WallElapsed))
		}
		if s.Timeline != "" {
			fmt.Fprintf(w, " · timeline: %s", s.Timeline)
		}
		if s.Events != "" {
			fmt.Fprintf(w, " · events (-json): %s", s.Events)
		}
		fmt.Fprintln(w)
	}
}

// count writes n with word, in the plural unless n is 1 ("1 turn",
// "2 turns").
func count(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// Golden is the timing-free rendering of the summary.
func (s *Summary) Golden() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "seed %d\n", s.Seed)
	s.WriteTable(&sb, false)
	return sb.String()
}
