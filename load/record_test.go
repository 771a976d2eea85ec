package load

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
)

func replayRun(t *testing.T, log []byte) *Report {
	t.Helper()
	l, err := ReadLog(bytes.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	r := runBounded(t, context.Background(), nil, Options{Virtual: l.Header.Virtual, Replay: l})
	if r.Replay == nil {
		t.Fatal("no replay report")
	}
	return r
}

// TestReplay_RecordThenReplayHasNoDivergence: a recorded run replayed
// (outputs served from the log) gives every agent the same results in the
// same order.
func TestReplay_RecordThenReplayHasNoDivergence(t *testing.T) {
	rec, log := recordRun(t, mixedScenario, true)
	r := replayRun(t, log)
	if r.Replay.Divergences != 0 || r.Replay.First != nil {
		t.Fatalf("replay diverged: %+v (first %v)", r.Replay, r.Replay.First)
	}
	if int64(r.Replay.Calls) != rec.Results || r.Results != rec.Results {
		t.Fatalf("replay compared %d calls, ran %d; the recording had %d", r.Replay.Calls, r.Results, rec.Results)
	}
}

// TestReplay_ChangedToolOutputIsTheFirstDivergence: one call's recorded
// output is changed; the replay serves it, the agent sees it, and the
// replay reports exactly that call, by agent, turn and call.
func TestReplay_ChangedToolOutputIsTheFirstDivergence(t *testing.T) {
	_, log := recordRun(t, mixedScenario, true)
	lines := strings.Split(strings.TrimSpace(string(log)), "\n")
	var target LogCall
	changed := false
	for i, line := range lines {
		var c LogCall
		if json.Unmarshal([]byte(line), &c) != nil || c.Kind != "call" || c.Output == nil || c.Output.Error != "" || c.Turn < 2 {
			continue
		}
		c.Output.Text = "tampered"
		b, _ := json.Marshal(c)
		lines[i], target, changed = string(b), c, true
		break
	}
	if !changed {
		t.Fatal("no successful call after turn 1 in the log")
	}
	r := replayRun(t, []byte(strings.Join(lines, "\n")))
	f := r.Replay.First
	if f == nil || r.Replay.Divergences != 1 {
		t.Fatalf("want one divergence, got %+v", r.Replay)
	}
	if f.Agent != target.Agent || f.Turn != target.Turn || f.Call != target.Call || !strings.Contains(f.Reason, `"tampered"`) {
		t.Fatalf("first divergence %v, want agent %s turn %d call %d with the tampered text", f, target.Agent, target.Turn, target.Call)
	}
}

// TestReadLog_RefusesBadLogs: each bad log is refused with its line and why.
func TestReadLog_RefusesBadLogs(t *testing.T) {
	_, good := recordRun(t, hourScenario, true)
	lines := strings.Split(strings.TrimSpace(string(good)), "\n")
	header, call := lines[0], lines[1]
	for _, tc := range []struct {
		name, log, want string
		line            int
	}{
		{"empty", "", "empty: no header", 0},
		{"not json", "{", "not a JSON object", 1},
		{"no header first", call, `the first line must be the header`, 1},
		{"second header", header + "\n" + header, "a second header", 2},
		{"unknown kind", header + "\n" + `{"kind":"bogus"}`, `unknown kind "bogus"`, 2},
		{"unknown field", header + "\n" + strings.Replace(call, `"kind":"call"`, `"kind":"call","extra":1`, 1), `unknown field "extra"`, 2},
		{"turn out of range", header + "\n" + strings.Replace(call, `"turn":`, `"turn":99`, 1), "out of range", 2},
		{"twice", header + "\n" + call + "\n" + call, "given twice", 3},
		{"bad version", strings.Replace(header, `"version":1`, `"version":7`, 1), "version 7", 1},
		{"bad scenario", strings.Replace(header, `"perAgent":10`, `"perAgent":-1`, 1), "$.turns.perAgent", 1},
		{"line too long", header + "\n", "longer than", 2}, // + MaxLogLine+1 bytes, below
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rd io.Reader = strings.NewReader(tc.log)
			if tc.name == "line too long" {
				rd = io.MultiReader(rd, io.LimitReader(xs{}, MaxLogLine+1))
			}
			_, err := ReadLog(rd)
			var le *LogError
			if !errors.As(err, &le) || le.Line != tc.line || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want line %d with %q", err, tc.line, tc.want)
			}
		})
	}
}

// xs reads as an endless run of 'x'.
type xs struct{}

func (xs) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

// FuzzReadLog: ReadLog never panics, and what it accepts holds calls in
// range, each once.
func FuzzReadLog(f *testing.F) {
	sc := `{"name":"f","agents":{"count":1},"tools":[{"name":"t","mode":"parallel","latency":{"kind":"constant","value":"1ms"}}],"turns":{"perAgent":2,"callsPerTurn":{"min":1,"max":1}},"load":{"model":"closed"}}`
	h := `{"kind":"header","version":1,"virtual":true,"scenario":` + sc + "}\n"
	f.Add(h)
	f.Add(h + `{"kind":"call","agent":"a0","turn":1,"call":0,"tool":"t","args":{"sleep_ns":1},"entered":0,"finished":5,"commit":0,"output":{"text":"x"},"result":{}}` + "\n")
	f.Add(h + `{"kind":"turn","agent":"a0","turn":0,"intended":0,"calls":1,"admission":[0],"commit":[0]}`)
	f.Add("{\"kind\":\"header\"}\n\n\n")
	f.Add("\n" + `{"kind":"call","agent":"a0","turn":1,"call":0,"tool":"t","args":{},"entered":0,"finished":5,"commit":0,"result":{}}`)
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 1<<20 {
			return
		}
		l, err := ReadLog(strings.NewReader(s))
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, c := range l.Calls {
			id := callID(c.Agent, c.Turn, c.Call)
			if seen[id] || c.Turn < 0 || c.Turn >= l.Scenario.Turns.PerAgent || c.Call < 0 || c.Call >= MaxCallsPerTurn {
				t.Fatalf("accepted a bad call %+v", c)
			}
			seen[id] = true
		}
	})
}
