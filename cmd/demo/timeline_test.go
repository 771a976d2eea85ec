package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toolscope/toolscope/messages"
	"github.com/toolscope/toolscope/runtime"
)

// manyAgents builds a plan of n lanes (workers with a sub-agent each third
// one) and seeded call records shaped like the demo's: sequential turns of
// overlapping parallel calls, exclusive calls that run alone, instant
// denials, failures, timeouts and commit waits. The demo itself stops at 7 top-level
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
				case x == 2:
					rec.Outcome, rec.Code, rec.IsError = "timed_out", string(runtime.CodeToolTimeout), true
				case x < 5:
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

// pageData reads the timeline's data back out of a rendered page, as the
// page's script reads it: the one JSON script, calls and turns as arrays.
func pageData(t testing.TB, page string) *tlData {
	t.Helper()
	const open = `<script type="application/json" id="tl-data">`
	if n := strings.Count(page, open); n != 1 {
		t.Fatalf("%d data scripts in the page, want 1", n)
	}
	rest := page[strings.Index(page, open)+len(open):]
	end := strings.Index(rest, "</script>")
	if end < 0 {
		t.Fatal("the data script does not end")
	}
	var raw struct {
		End          int64
		Kinds, Tools []string
		Lanes        []tlLane
		Turns, Calls [][]any
	}
	if err := json.Unmarshal([]byte(rest[:end]), &raw); err != nil {
		t.Fatalf("the page's data is not JSON: %v", err)
	}
	d := &tlData{End: raw.End, Kinds: raw.Kinds, Tools: raw.Tools, Lanes: raw.Lanes}
	num := func(v any) int64 { return int64(v.(float64)) }
	for _, a := range raw.Turns {
		d.Turns = append(d.Turns, tlTurn{Lane: int(num(a[0])), Start: num(a[1]), End: num(a[2]), ID: a[3].(string)})
	}
	for _, a := range raw.Calls {
		d.Calls = append(d.Calls, tlCall{Lane: int(num(a[0])), Turn: int(num(a[1])), Start: num(a[2]), Run: num(a[3]), End: num(a[4]),
			Kind: int(num(a[5])), Mode: int(num(a[6])), Tool: int(num(a[7])), Program: int(num(a[8])), Group: int32(num(a[9])),
			ID: a[10].(string), Code: a[11].(string), Args: a[12].(string), Msg: a[13].(string)})
	}
	return d
}

func renderPage(t testing.TB, plan *Plan, calls []callRecord) string {
	t.Helper()
	page, err := renderTimeline(plan, summarize(plan, calls), calls)
	if err != nil {
		t.Fatal(err)
	}
	return page
}

// TestTimeline_Item11_EveryCallOnce: the page's data has every call once,
// in its agent's lane and in a turn of that lane that holds it, and a call
// of an agent the plan does not know gets a lane rather than being lost.
// With $TIMELINE_OUT set it writes the page there (timeline-50.html) for
// the browser check in .ci/pagecheck.sh.
func TestTimeline_Item11_EveryCallOnce(t *testing.T) {
	plan, calls := manyAgents(50, 6)
	stray := calls[0]
	stray.CallID, stray.Agent = "stray/t1/c1", "stray"
	calls = append(calls, stray)
	page := renderPage(t, plan, calls)
	if dir := os.Getenv("TIMELINE_OUT"); dir != "" {
		if err := os.WriteFile(filepath.Join(dir, "timeline-50.html"), []byte(page), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d := pageData(t, page)
	if want := timelineData(plan, calls); !reflect.DeepEqual(d, want) {
		t.Fatal("the page's data differs from timelineData's")
	}
	if len(d.Calls) != len(calls) {
		t.Errorf("%d calls in the page, want %d", len(d.Calls), len(calls))
	}
	byID := map[string][]tlCall{}
	for _, c := range d.Calls {
		byID[c.ID] = append(byID[c.ID], c)
	}
	for _, r := range calls {
		cs := byID[r.CallID]
		if len(cs) != 1 {
			t.Errorf("call %s is in the page %d times, want once", r.CallID, len(cs))
			continue
		}
		c := cs[0]
		lane := d.Lanes[c.Lane].Name
		if lane != r.Agent && lane != r.Agent+" (not in the plan)" {
			t.Errorf("call %s of %s is in lane %s", r.CallID, r.Agent, lane)
		}
		if d.Tools[c.Tool] != r.Tool || c.Args != r.Args {
			t.Errorf("call %s: tool %s args %s, want %s %s", r.CallID, d.Tools[c.Tool], c.Args, r.Tool, r.Args)
		}
		if !(0 <= c.Start && c.Start <= c.Run && c.Run <= c.End && c.End <= d.End) {
			t.Errorf("call %s: start %d run %d end %d, axis end %d: out of order", r.CallID, c.Start, c.Run, c.End, d.End)
		}
		tu := d.Turns[c.Turn]
		if tu.Lane != c.Lane || tu.Start > c.Start || tu.End < c.End {
			t.Errorf("call %s (%d–%d µs, lane %d) is not inside its turn %s (%d–%d µs, lane %d)", r.CallID, c.Start, c.End, c.Lane, tu.ID, tu.Start, tu.End, tu.Lane)
		}
	}
	if last := d.Lanes[len(d.Lanes)-1]; last.Name != "stray (not in the plan)" || last.Parent != -1 {
		t.Errorf("the stray call's lane is %+v", last)
	}
}

// TestTimeline_Item11_ExtentsCoverLastTurn: the time axis ends where the
// last call ends (rounded up to the µs, never cut), so the last turn's
// frame is inside the plot; each turn spans its calls.
func TestTimeline_Item11_ExtentsCoverLastTurn(t *testing.T) {
	plan, calls := manyAgents(12, 4)
	// The run's last call ends 1 ns past a µs, in the last lane.
	var t0, t1 int64
	for i, c := range calls {
		if i == 0 || c.Start < t0 {
			t0 = c.Start
		}
		t1 = max(t1, c.End)
	}
	last := &calls[len(calls)-1]
	last.End, last.Dispatched = t1+5*int64(time.Millisecond)+1, t1+5*int64(time.Millisecond)+1
	d := pageData(t, renderPage(t, plan, calls))
	if want := (last.End - t0 + 999) / 1000; d.End != want {
		t.Errorf("axis ends at %d µs, want %d (the last call's end, rounded up)", d.End, want)
	}
	var lastTurn int64
	for _, tu := range d.Turns {
		lastTurn = max(lastTurn, tu.End)
		if tu.End > d.End {
			t.Errorf("turn %s ends at %d µs, past the axis (%d)", tu.ID, tu.End, d.End)
		}
	}
	if lastTurn != d.End {
		t.Errorf("the last turn ends at %d µs, the axis at %d: want the axis to end with it", lastTurn, d.End)
	}
	for i, tu := range d.Turns {
		var a, b int64 = -1, -1
		for _, c := range d.Calls {
			if c.Turn == i {
				if a < 0 || c.Start < a {
					a = c.Start
				}
				b = max(b, c.End)
			}
		}
		if tu.Start != a || tu.End != b {
			t.Errorf("turn %s spans %d–%d µs, its calls %d–%d", tu.ID, tu.Start, tu.End, a, b)
		}
	}
}

// TestTimeline_Item11_FailuresFlagged: each kind of failure has a kind of
// its own (the page gives each a marker shape and colour), and every call
// that failed is flagged.
func TestTimeline_Item11_FailuresFlagged(t *testing.T) {
	for _, c := range []struct {
		rec  callRecord
		want string
	}{
		{callRecord{Tool: "read", Mode: messages.ModeParallel}, "parallel"},
		{callRecord{Tool: "git", Mode: messages.ModeExclusive}, "exclusive"},
		{callRecord{Tool: runtime.RunCodeName, Mode: messages.ModeExclusive}, "program"},
		{callRecord{Tool: "shell", Outcome: "denied", Code: "denied", IsError: true}, "denied"},
		{callRecord{Tool: "fetch", Outcome: "timed_out", Code: string(runtime.CodeToolTimeout), IsError: true}, "timeout"},
		{callRecord{Tool: "shell", Outcome: "cancelled", Code: string(runtime.CodeAborted), IsError: true}, "aborted"},
		{callRecord{Tool: "shell", Outcome: "cancelled", Code: string(runtime.CodeAbortedBeforeDispatch), IsError: true}, "aborted"},
		{callRecord{Tool: "lint", Outcome: "failed", Code: "failed", IsError: true}, "failed"},
		{callRecord{Tool: "read", Outcome: "failed", Code: string(runtime.CodeInvalidArgs), IsError: true}, "failed"},
		{callRecord{Tool: runtime.RunCodeName, Outcome: "failed", Code: "failed", IsError: true}, "failed"},
	} {
		k := callKind(c.rec)
		if tlKinds[k] != c.want {
			t.Errorf("%s %q: kind %s, want %s", c.rec.Tool, c.rec.Code, tlKinds[k], c.want)
		}
		if (tlCall{Kind: k}).Failed() != c.rec.IsError {
			t.Errorf("%s %q: failed %v, want %v", c.rec.Tool, c.rec.Code, !c.rec.IsError, c.rec.IsError)
		}
	}
	plan, calls := manyAgents(30, 6)
	d := pageData(t, renderPage(t, plan, calls))
	isErr := map[string]bool{}
	kinds := map[string]int{}
	for _, r := range calls {
		isErr[r.CallID] = r.IsError
	}
	for _, c := range d.Calls {
		if c.Failed() != isErr[c.ID] {
			t.Errorf("call %s (code %q): flagged failed %v, want %v", c.ID, c.Code, c.Failed(), isErr[c.ID])
		}
		kinds[d.Kinds[c.Kind]]++
	}
	for _, k := range []string{"denied", "failed", "timeout"} {
		if kinds[k] == 0 {
			t.Errorf("no %s call in the page: %v", k, kinds)
		}
	}
}

// TestTimeline_Item11_PageCarriesDataOnce: the page holds each call once,
// as data, and no pre-drawn markup per call (the script draws it), so it
// stays small: a budget of 300 bytes a call (the pre-drawn page took
// about 800).
func TestTimeline_Item11_PageCarriesDataOnce(t *testing.T) {
	plan, calls := manyAgents(50, 20)
	page := renderPage(t, plan, calls)
	// The markup outside the scripts (the script's own templates are code).
	markup := regexp.MustCompile(`(?s)<script[^>]*>.*?</script>`).ReplaceAllString(page, "")
	for _, drawn := range []string{"<rect", "<g ", `class="bar `, "<line", "<text", "<path"} {
		if strings.Contains(markup, drawn) {
			t.Errorf("the page has pre-drawn markup %q", drawn)
		}
	}
	if budget := 300*len(calls) + 48<<10; len(page) > budget {
		t.Errorf("page of %d calls is %d bytes, over its budget of %d", len(calls), len(page), budget)
	}
	t.Logf("%d lanes, %d calls: %d bytes (%d a call)", len(plan.Agents), len(calls), len(page), len(page)/len(calls))
	for _, bad := range []string{"<script src", "<link", "@import", "url(", "http://", "https://"} {
		if strings.Contains(page, bad) {
			t.Errorf("the page is not self-contained: it contains %q", bad)
		}
	}
}

// TestTimeline_Item11_ScriptSafeData: arguments and results are data: a
// "</script>" in them cannot end the data script, and they reach the page
// intact.
func TestTimeline_Item11_ScriptSafeData(t *testing.T) {
	plan, calls := manyAgents(2, 1)
	evil := `{"q":"</script><script>alert(1)</script><!-- \u2028 & é"}`
	calls[0].Args, calls[0].Message = evil, "</SCRIPT>"+evil
	page := renderPage(t, plan, calls)
	if n := strings.Count(strings.ToLower(page), "</script>"); n != 2 {
		t.Errorf("%d </script> in the page, want 2 (the data's and the code's)", n)
	}
	d := pageData(t, page)
	for _, c := range d.Calls {
		if c.ID == calls[0].CallID && (c.Args != evil || c.Msg != "</SCRIPT>"+evil) {
			t.Errorf("args %q result %q, want them intact", c.Args, c.Msg)
		}
	}
}

// TestTimeline_Item11_SubAgentsUnderParent: a sub-agent's lane names its
// parent's lane (the page folds it into the parent when collapsed), the
// nearest earlier one when keys repeat.
func TestTimeline_Item11_SubAgentsUnderParent(t *testing.T) {
	plan := &Plan{Agents: []*agentPlan{
		{Key: "coordinator"}, {Key: "coder-1"}, {Key: "coder-1.tester", Parent: "coder-1", Depth: 1},
		{Key: "coder-1"}, {Key: "coder-1.tester", Parent: "coder-1", Depth: 1}, {Key: "reviewer-1"},
	}}
	d := timelineData(plan, nil)
	got := make([]int, len(d.Lanes))
	for i, l := range d.Lanes {
		got[i] = l.Parent
	}
	if want := []int{-1, -1, 1, -1, 3, -1}; !reflect.DeepEqual(got, want) {
		t.Errorf("parents %v, want %v", got, want)
	}
	if d.End != 1000 {
		t.Errorf("an empty run's axis ends at %d µs, want 1000 (1 ms)", d.End)
	}
}

// TestTimeline_Item11_ProgramCallsInProgramTurn: a run_code program's
// calls point at their program and belong to its turn (its frame holds
// them), even when the next program starts right where one ends.
func TestTimeline_Item11_ProgramCallsInProgramTurn(t *testing.T) {
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
	d := pageData(t, renderPage(t, plan, calls))
	if !d.Lanes[0].Code || len(d.Turns) != 2 {
		t.Fatalf("code %v, %d turns, want true and 2 (a program's calls share its turn)", d.Lanes[0].Code, len(d.Turns))
	}
	for _, c := range d.Calls {
		if d.Tools[c.Tool] == "run_code" {
			if c.Program != -1 || d.Kinds[c.Kind] != "program" {
				t.Errorf("run_code %s: program %d kind %s, want -1 and program", c.ID, c.Program, d.Kinds[c.Kind])
			}
			continue
		}
		if c.Program < 0 || !strings.HasPrefix(c.ID, d.Calls[c.Program].ID+"/") {
			t.Errorf("%s: program %d, want its run_code call", c.ID, c.Program)
			continue
		}
		if p := d.Calls[c.Program]; c.Turn != p.Turn {
			t.Errorf("%s: turn %s, its program's is %s", c.ID, d.Turns[c.Turn].ID, d.Turns[p.Turn].ID)
		}
	}
	// Serial time counts a program's calls and only the program's own time
	// around them (40 ms less the 34 its calls cover).
	if want := time.Duration(2 * (18 + 18 + 16 + 6) * ms); sum.Agents[0].Serial != want {
		t.Errorf("serial %v, want %v", sum.Agents[0].Serial, want)
	}
}

func TestLaneNamesUnique(t *testing.T) {
	got := laneNames([]*agentPlan{{Key: "coder-1"}, {Key: "coder-1.tester"}, {Key: "coder-1"}, {Key: "coder-1"}})
	want := []string{"coder-1", "coder-1.tester", "coder-1 #3", "coder-1 #4"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("laneNames = %q, want %q", got, want)
	}
}
