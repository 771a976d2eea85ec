package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toolscope/toolscope/messages"
)

// manyAgents builds a plan of n lanes (workers with a sub-agent each third
// one) and seeded call records shaped like the demo's: sequential turns of
// overlapping parallel calls, exclusive calls that run alone, instant
// denials, failures and commit waits. The demo itself stops at 7 top-level
// agents (11 lanes); this drives the timeline where it is crowded.
func manyAgents(n, turns int) (*Plan, []callRecord) {
	plan := &Plan{Seed: 42}
	roles := []string{roleCoder, roleReviewer, roleResearcher}
	plan.Agents = append(plan.Agents, &agentPlan{Key: roleCoordinator, Role: roleCoordinator})
	for i := 1; len(plan.Agents) < n; i++ {
		role := roles[(i-1)%len(roles)]
		w := &agentPlan{Key: fmt.Sprintf("%s-%d", role, (i-1)/len(roles)+1), Role: role}
		plan.Agents = append(plan.Agents, w)
		if i%3 == 1 && len(plan.Agents) < n {
			plan.Agents = append(plan.Agents, &agentPlan{Key: w.Key + ".tester", Role: roleTester, Parent: w.Key, Depth: 1})
		}
	}
	r := rand.New(rand.NewPCG(42, 7))
	tools := []string{"read", "search", "fetch", "git", "lint", "shell", "write"}
	const t0 = int64(1_700_000_000_000_000_000)
	var calls []callRecord
	for _, a := range plan.Agents {
		at := t0 + int64(r.IntN(40))*int64(time.Millisecond)
		for t := range turns {
			turn := fmt.Sprintf("%s/t%d", a.Key, t+1)
			end := at
			for c := range 2 + r.IntN(5) {
				rec := callRecord{
					CallID: fmt.Sprintf("%s/c%d", turn, c+1), Agent: a.Key, Turn: turn,
					Tool: tools[r.IntN(len(tools))], Mode: messages.ModeParallel, Args: `{"path":"/workspace/go.mod"}`,
					Start: at + int64(r.IntN(3))*int64(time.Millisecond),
				}
				run := int64(1+r.IntN(60)) * int64(time.Millisecond)
				switch x := r.IntN(20); {
				case x == 0:
					rec.Outcome, rec.Code, rec.IsError, run = "denied", "denied", true, 50*int64(time.Microsecond)
				case x == 1:
					rec.Outcome, rec.Code, rec.IsError = "failed", "failed", true
				case x < 4:
					rec.Mode, rec.Start = messages.ModeExclusive, end // runs alone
				}
				rec.Dispatched = rec.Start + run
				rec.End = rec.Dispatched
				if r.IntN(3) == 0 {
					rec.End += int64(r.IntN(30)) * int64(time.Millisecond) // waits to commit
				}
				if rec.Mode == messages.ModeExclusive {
					at = rec.End
				}
				end = max(end, rec.End)
				calls = append(calls, rec)
			}
			at = end + int64(2+r.IntN(15))*int64(time.Millisecond)
		}
	}
	return plan, calls
}

// TestTimelineManyAgents renders 50 lanes of 6 turns and checks the page's
// structure: a bar per call with an accessible name, unique lane names, no
// fixed width anywhere, and labels only where they fit at the narrowest
// plot. With $TIMELINE_OUT set it also writes the page there (timeline-50.html)
// for the screenshot check in .ci/pagecheck.sh.
func TestTimelineManyAgents(t *testing.T) {
	plan, calls := manyAgents(50, 6)
	sum := summarize(plan, calls)
	sum.Turns = 50 * 6
	page, err := renderTimeline(plan, sum, calls)
	if err != nil {
		t.Fatal(err)
	}
	if dir := os.Getenv("TIMELINE_OUT"); dir != "" {
		if err := os.WriteFile(filepath.Join(dir, "timeline-50.html"), []byte(page), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if n := strings.Count(page, `<g class="bar `); n != len(calls) {
		t.Errorf("%d bars, want %d", n, len(calls))
	}
	if n := strings.Count(page, `<g class="bar denied" role="img" aria-label="`); n == 0 {
		t.Error("no denied bar with an accessible name")
	}
	if n := regexp.MustCompile(`<g class="bar [a-z]+" role="img" aria-label="[^"]+`).FindAllStringIndex(page, -1); len(n) != len(calls) {
		t.Errorf("%d bars have an aria-label, want %d", len(n), len(calls))
	}
	if n := strings.Count(page, "<title>"); n < len(calls) {
		t.Errorf("%d titles for %d bars", n, len(calls))
	}
	for _, a := range plan.Agents {
		if n := strings.Count(page, `<span class="k">`+a.Key+`</span>`); n != 1 {
			t.Errorf("%d lanes named %s, want 1", n, a.Key)
		}
	}
	if m := regexp.MustCompile(`<svg[^>]* width="[0-9.]+"`).FindString(page); m != "" {
		t.Errorf("an svg has a fixed width: %s", m)
	}
	// Labels: some inside bars, some beside, turn labels; none wider than
	// the room the layout computed (the screenshot check measures them).
	for _, cls := range []string{`class="bt in"`, `class="bt out"`, `class="tlabel"`} {
		if !strings.Contains(page, cls) {
			t.Errorf("no %s label", cls)
		}
	}
}

// TestTimelineLabelsFit checks the layout's promise on the page model: at
// the narrowest plot every label lies inside the plot, bar labels sit
// inside their bar or after its end, and turn labels inside their band.
func TestTimelineLabelsFit(t *testing.T) {
	plan, calls := manyAgents(20, 20)
	p := timelinePage(plan, summarize(plan, calls), calls)
	labels := 0
	for _, l := range p.Lanes {
		for _, tu := range l.Turns {
			if tu.Label == "" {
				continue
			}
			labels++
			if w := textW(tu.Label, tlTurnFont) + 3; w > tu.W*tlMinPlotW {
				t.Errorf("%s: turn label %q (%.0f px) is wider than its band (%.0f px)", l.Name, tu.Label, w, tu.W*tlMinPlotW)
			}
		}
		for _, b := range l.Bars {
			for _, tx := range b.Texts {
				labels++
				x0 := tx.X*tlMinPlotW + tx.DX
				x1 := x0 + textW(tx.S, tlBarFont)
				if x1 > tlMinPlotW {
					t.Errorf("%s: label %q ends at %.0f px, past the plot", l.Name, tx.S, x1)
				}
				if tx.Class == "bt in" && x1 > (b.X+b.W)*tlMinPlotW {
					t.Errorf("%s: label %q does not fit inside its bar", l.Name, tx.S)
				}
				if tx.Class != "bt in" && x0 < (b.X+b.W)*tlMinPlotW {
					t.Errorf("%s: label %q beside its bar starts inside it", l.Name, tx.S)
				}
			}
		}
	}
	if labels == 0 {
		t.Fatal("no labels at all")
	}
}

func TestLaneNamesUnique(t *testing.T) {
	got := laneNames([]*agentPlan{{Key: "coder-1"}, {Key: "coder-1.tester"}, {Key: "coder-1"}, {Key: "coder-1"}})
	want := []string{"coder-1", "coder-1.tester", "coder-1 #3", "coder-1 #4"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("laneNames = %q, want %q", got, want)
	}
}

// A run_code program's calls are drawn in the rows beneath its bar, inside
// its box, even when the previous program ended right where it starts and
// an earlier row is free again.
func TestTimelineProgramCallsBeneathRunCode(t *testing.T) {
	const ms = int64(time.Millisecond)
	const t0 = int64(1_700_000_000_000_000_000)
	plan := &Plan{Seed: 1, Agents: []*agentPlan{{Key: codeAgent, Role: roleReviewer, Code: true}}}
	var calls []callRecord
	at := t0
	for turn := 1; turn <= 2; turn++ {
		id := fmt.Sprintf("%s/t%d/c1", codeAgent, turn)
		prog := callRecord{CallID: id, Agent: codeAgent, Tool: "run_code", Turn: fmt.Sprintf("%s/t%d", codeAgent, turn),
			Mode: messages.ModeExclusive, Start: at, End: at + 40*ms, Dispatched: at + 40*ms}
		calls = append(calls, prog)
		for i := range 3 { // a parallel batch, then one more call
			start, end := at+2*ms, at+20*ms
			if i == 2 {
				start, end = at+22*ms, at+38*ms
			}
			calls = append(calls, callRecord{CallID: fmt.Sprintf("%s/%d", id, i+1), Agent: codeAgent, Tool: "read", Program: id,
				Turn: id + "/p1", Mode: messages.ModeParallel, Start: start, End: end, Dispatched: end})
		}
		at = prog.End // the next turn starts as this one ends
	}
	sum := summarize(plan, calls)
	page := timelinePage(plan, sum, calls)
	lane := page.Lanes[0]
	if !lane.Code || len(lane.Programs) != 2 {
		t.Fatalf("code %v, %d program boxes, want true and 2", lane.Code, len(lane.Programs))
	}
	rowOf, bar := map[string]int{}, map[string]tlBar{}
	for _, b := range lane.Bars {
		id := b.Aria[strings.LastIndex(b.Aria, "call ")+len("call "):] // the aria label ends with the call id
		rowOf[id], bar[id] = (b.Y-tlHeadH-2)/tlRowH, b
	}
	for _, c := range calls {
		b, ok := bar[c.CallID]
		if !ok {
			t.Fatalf("no bar for %s", c.CallID)
		}
		if c.Program == "" {
			if rowOf[c.CallID] != 0 || b.Class != "program" {
				t.Errorf("run_code %s: row %d class %s, want the top row and class program", c.CallID, rowOf[c.CallID], b.Class)
			}
			continue
		}
		if rowOf[c.CallID] <= rowOf[c.Program] {
			t.Errorf("%s: row %d, not beneath its program's row %d", c.CallID, rowOf[c.CallID], rowOf[c.Program])
		}
		if !strings.Contains(b.Tip, "called by the program of "+c.Program) {
			t.Errorf("%s: the hover card does not name its program: %q", c.CallID, b.Tip)
		}
	}
	// One turn band per program: its calls are banded with it.
	if len(lane.Turns) != 2 {
		t.Errorf("%d turn bands, want 2 (a program's calls share its turn)", len(lane.Turns))
	}
	// Serial time counts a program's calls and only the program's own time
	// around them (40 ms less the 34 its calls cover).
	if want := time.Duration(2 * (18 + 18 + 16 + 6) * ms); sum.Agents[0].Serial != want {
		t.Errorf("serial %v, want %v", sum.Agents[0].Serial, want)
	}
}
