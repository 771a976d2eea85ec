package load

// Tests of an outside attack on the load tool: hostile or odd input, each a
// finding that failed before its fix.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	goruntime "runtime"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestAttack_Record_BlankLinesBeforeTheHeader: a log whose first lines are
// blank and whose first non-blank line is a call (a truncated or spliced
// log) is refused with the line, not a nil-pointer panic on the scenario
// the missing header would have given; blank lines before the header are
// still fine.
func TestAttack_Record_BlankLinesBeforeTheHeader(t *testing.T) {
	sc := `{"name":"f","agents":{"count":1},"tools":[{"name":"t","mode":"parallel","latency":{"kind":"constant","value":"1ms"}}],"turns":{"perAgent":2,"callsPerTurn":{"min":1,"max":1}},"load":{"model":"closed"}}`
	header := `{"kind":"header","version":1,"virtual":true,"scenario":` + sc + `}`
	call := `{"kind":"call","agent":"a0","turn":1,"call":0,"tool":"t","args":{},"entered":0,"finished":5,"commit":0,"result":{"sha256":""}}`
	turn := `{"kind":"turn","agent":"a0","turn":0,"intended":0,"calls":1,"admission":[0],"commit":[0]}`
	for _, tc := range []struct {
		name, log string
		line      int
	}{
		{"call", "\n" + call + "\n", 2},
		{"turn", "\n\n" + turn + "\n", 3},
		{"header after a call", "\n" + call + "\n" + header + "\n", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadLog(strings.NewReader(tc.log))
			var le *LogError
			if !errors.As(err, &le) || le.Line != tc.line || !strings.Contains(err.Error(), "must be the header") {
				t.Fatalf("err %v, want line %d: must be the header", err, tc.line)
			}
		})
	}
	l, err := ReadLog(strings.NewReader("\n \n" + header + "\n" + call + "\n\n" + header + "\n"))
	var le *LogError
	if !errors.As(err, &le) || le.Line != 6 || !strings.Contains(err.Error(), "a second header") {
		t.Fatalf("a second header after blank lines: %v %v", l, err)
	}
	if l, err := ReadLog(strings.NewReader("\n\n" + header + "\n" + call + "\n")); err != nil || len(l.Calls) != 1 {
		t.Fatalf("blank lines before the header: %v", err)
	}
}

// failingWriter refuses every write, as a full disk or a closed pipe does.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

const attackSmall = `{"name": "small", "seed": 5, "agents": {"count": 2},
  "tools": [{"name": "t", "mode": "parallel", "latency": {"kind": "constant", "value": "0s"}}],
  "turns": {"perAgent": 3, "callsPerTurn": {"min": 2, "max": 2}},
  "load": {"model": "closed"}}`

// TestAttack_Run_RecordWriteErrorKeepsTheReport: a log that cannot be
// written (a full disk) fails the run's record, not the run: Run returns
// the report of what ran with the record's error, and its progress and
// timeline goroutines end (they leaked, the report was lost).
func TestAttack_Run_RecordWriteErrorKeepsTheReport(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	sc := mustParse(t, attackSmall)
	type out struct {
		r   *Report
		err error
	}
	ch := make(chan out, 1)
	go func() {
		r, err := Run(context.Background(), sc, Options{Record: failingWriter{}, Progress: func(Progress) {}, ProgressEvery: time.Millisecond})
		ch <- out{r, err}
	}()
	var o out
	select {
	case o = <-ch:
	case <-time.After(2 * time.Minute):
		var b strings.Builder
		_ = pprof.Lookup("goroutine").WriteTo(&b, 2)
		t.Fatalf("Run did not return within 2 minutes; goroutines:\n%s", b.String())
	}
	if o.err == nil || !strings.Contains(o.err.Error(), "record") || !strings.Contains(o.err.Error(), "disk full") {
		t.Fatalf("err %v, want the record's error", o.err)
	}
	if o.r == nil || o.r.Stopped != StoppedComplete || o.r.Calls != 12 || o.r.Results != 12 {
		t.Fatalf("report %+v, want the complete run's 12 calls", o.r)
	}
}

// TestAttack_Parse_RefusesWhatTheSchemaRefuses: documents Parse accepted
// though the schema refuses them — an editor flagged a file the tool ran —
// are refused with the path: null (taken as absent), a field of another
// kind of distribution at its zero value, a negative zero duration, the
// open model's arrival "" and maxInFlight 0 (taken as their defaults),
// and the closed model given rate, arrival or maxInFlight at 0. (The
// schema's side: mcp/cmd/toolscope-load-mcp's TestAttack_Schema_AgreesWithParse.)
func TestAttack_Parse_RefusesWhatTheSchemaRefuses(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(m map[string]any)
		path string
	}{
		{"null seed", func(m map[string]any) { m["seed"] = nil }, "$.seed"},
		{"null levels", func(m map[string]any) { obj(m, "agents")["levels"] = nil }, "$.agents.levels"},
		{"null allow", func(m map[string]any) { obj(m, "agents", "levels", 1)["deny"] = nil }, "$.agents.levels[1].deny"},
		{"value of a uniform", func(m map[string]any) { obj(m, "tools", 1, "latency")["value"] = "0s" }, "$.tools[1].latency.value"},
		{"sigma of a constant", func(m map[string]any) { obj(m, "tools", 0, "latency")["sigma"] = 0 }, "$.tools[0].latency.sigma"},
		{"minus zero", func(m map[string]any) { obj(m, "tools", 0, "latency")["value"] = "-0s" }, "$.tools[0].latency.value"},
		{"closed rate 0", func(m map[string]any) { obj(m, "load")["rate"] = 0 }, "$.load.rate"},
		{"closed maxInFlight 0", func(m map[string]any) { obj(m, "load")["maxInFlight"] = 0 }, "$.load.maxInFlight"},
		{"closed arrival empty", func(m map[string]any) { obj(m, "load")["arrival"] = "" }, "$.load.arrival"},
		{"open arrival empty", func(m map[string]any) { m["load"] = map[string]any{"model": "open", "rate": 1, "arrival": ""} }, "$.load.arrival"},
		{"open maxInFlight 0", func(m map[string]any) { m["load"] = map[string]any{"model": "open", "rate": 1, "maxInFlight": 0} }, "$.load.maxInFlight"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(edit(t, c.edit))
			var se *ScenarioError
			if !errors.As(err, &se) {
				t.Fatalf("accepted: %v", err)
			}
			for _, p := range se.Problems {
				if p.Path == c.path {
					return
				}
			}
			t.Fatalf("no problem at %s: %v", c.path, err)
		})
	}
	// What they stand for is still accepted written the schema's way.
	if _, err := Parse(edit(t, func(m map[string]any) {
		obj(m, "tools", 0, "latency")["value"] = "+0"
		m["load"] = map[string]any{"model": "open", "rate": 1}
	})); err != nil {
		t.Fatal(err)
	}
}

// TestAttack_Parse_ScenarioNameBounded: the scenario's name is printed on
// the terminal (the summary, a replayed log's) and titles the page: a name
// with a control character (an escape sequence from a log or scenario of
// someone else's) or longer than 200 characters is refused with its path.
func TestAttack_Parse_ScenarioNameBounded(t *testing.T) {
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{"plain", true},
		{strings.Repeat("é", 200), true},
		{"ünïcødé · ✓ 名前", true},
		{strings.Repeat("n", 201), false},
		{"evil\x1b]0;pwned\a", false},
		{"line\nbreak", false},
		{"tab\there", false},
		{"c1\u0085", false},
	} {
		_, err := Parse(edit(t, func(m map[string]any) { m["name"] = c.name }))
		var se *ScenarioError
		switch {
		case c.ok && err != nil:
			t.Errorf("%q refused: %v", c.name, err)
		case !c.ok && (!errors.As(err, &se) || se.Problems[0].Path != "$.name"):
			t.Errorf("%q: %v, want a problem at $.name", c.name, err)
		}
	}
}

// TestAttack_Record_TurnLinesChecked: a log's turn lines were kept
// unchecked and uncounted (calls were bounded, turns not: a log could
// hold any number, each with orders of millions of entries); they are now
// checked as calls are, with the line and why.
func TestAttack_Record_TurnLinesChecked(t *testing.T) {
	sc := `{"name":"f","agents":{"count":1},"tools":[{"name":"t","mode":"parallel","latency":{"kind":"constant","value":"1ms"}}],"turns":{"perAgent":2,"callsPerTurn":{"min":1,"max":2}},"load":{"model":"closed"}}`
	header := `{"kind":"header","version":1,"virtual":true,"scenario":` + sc + "}\n"
	for _, c := range []struct{ name, turn, want string }{
		{"no agent", `"agent":"","turn":0,"calls":1,"admission":[0],"commit":[0]`, "not an agent key"},
		{"turn out of range", `"agent":"a0","turn":2,"calls":1,"admission":[0],"commit":[0]`, "turn 2 out of range"},
		{"negative turn", `"agent":"a0","turn":-1,"calls":1,"admission":[0],"commit":[0]`, "out of range"},
		{"too many calls", `"agent":"a0","turn":0,"calls":1001,"admission":[],"commit":[]`, "calls 1001 out of range"},
		{"longer orders", `"agent":"a0","turn":0,"calls":1,"admission":[0,0,0],"commit":[0]`, "3 admitted and 1 committed of 1 calls"},
		{"order out of range", `"agent":"a0","turn":0,"calls":2,"admission":[0,7],"commit":[0,1]`, "call 7 out of range"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadLog(strings.NewReader(header + `{"kind":"turn",` + c.turn + `,"intended":0}` + "\n"))
			var le *LogError
			if !errors.As(err, &le) || le.Line != 2 || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want line 2: %q", err, c.want)
			}
		})
	}
	if _, err := ReadLog(strings.NewReader(header + `{"kind":"turn","agent":"a0","turn":1,"intended":0,"calls":2,"admission":[1],"commit":[1,0]}` + "\n")); err != nil {
		t.Fatal(err)
	}
}

// baseYAML is base (scenario_test.go) written as YAML.
const baseYAML = `# the base scenario, as YAML
name: t
agents:
  count: 2
  subAgents: 1
  depth: 1
  levels:
    - {}
    - deny: [b]
tools:
  - name: a
    mode: parallel
    latency: {kind: constant, value: 1ms}
  - name: b
    mode: exclusive
    latency:
      kind: uniform
      min: 1ms
      max: "2ms"
    failureRate: 0.1
turns:
  perAgent: 0x3
  callsPerTurn: {min: 1, max: 2}
load:
  model: closed
`

// TestAttack_Parse_YAMLScenario: the issue's format is "one JSON or YAML
// file", and Parse refused every YAML file ("not a JSON document"). A
// YAML scenario now parses to the same Scenario as its JSON, bad fields
// are named by the same JSON paths, and hostile YAML is refused before it
// costs anything: anchors and aliases (a "billion laughs" multiplies a
// small file), merge keys, tags beyond the core schema, two documents,
// numbers JSON has not, nesting past the bound.
func TestAttack_Parse_YAMLScenario(t *testing.T) {
	fromJSON, err := Parse([]byte(base))
	if err != nil {
		t.Fatal(err)
	}
	fromYAML, err := Parse([]byte(baseYAML))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromJSON, fromYAML) {
		t.Fatalf("YAML %+v\nJSON %+v", fromYAML, fromJSON)
	}
	var se *ScenarioError
	for _, c := range []struct{ from, to, path string }{
		{"kind: constant", "kind: gamma", "$.tools[0].latency.kind"},
		{"model: closed", "model: closed\n  colour: red", "$.load.colour"},
		{"min: 1ms", "min: 1", "$.tools[1].latency.min"},
	} {
		_, err = Parse([]byte(strings.Replace(baseYAML, c.from, c.to, 1)))
		if !errors.As(err, &se) || len(se.Problems) != 1 || se.Problems[0].Path != c.path {
			t.Fatalf("%s: %v, want a problem at %s", c.to, err, c.path)
		}
	}
	bomb := "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
	for _, c := range []struct{ name, doc, want string }{
		{"empty", "  \n\t\n", "an empty document"},
		{"comment only", "# nothing\n", "an empty YAML document"},
		{"alias bomb", bomb, "anchors and aliases are not allowed"},
		{"alias", strings.Replace(baseYAML, "name: t", "name: &n t\ndescription: *n", 1), "anchors and aliases"},
		{"merge key", strings.Replace(baseYAML, "  count: 2", "  <<: {count: 2}", 1), "merge key"},
		{"tag", strings.Replace(baseYAML, "name: t", "name: !!python/object:os.system t", 1), "tag"},
		{"binary tag", strings.Replace(baseYAML, "name: t", "name: !!binary dA==", 1), ""},
		{"two documents", baseYAML + "---\nname: u\n", "more than one YAML document"},
		{"infinity", strings.Replace(baseYAML, "failureRate: 0.1", "failureRate: .inf", 1), "not a JSON number"},
		{"nan", strings.Replace(baseYAML, "failureRate: 0.1", "failureRate: .nan", 1), "not a JSON number"},
		{"int overflow", strings.Replace(baseYAML, "perAgent: 0x3", "perAgent: 99999999999999999999", 1), "$.turns.perAgent"},
		{"key twice", baseYAML + "name: u\n", "given twice"},
		{"complex key", "? [a, b]\n: c\n", "a key must be a string"},
		{"deep", strings.Repeat("[", 200) + strings.Repeat("]", 200), "nested too deep"},
		{"not a mapping", "- a\n- b\n", "want an object"},
		{"null", strings.Replace(baseYAML, "name: t", "name: t\ndescription: ~", 1), "null is not a value here"},
		{"date", strings.Replace(baseYAML, "name: t", "name: 2026-12-02", 1), ""},
		{"flow mapping", "{name: f, agents: {count: 1}, tools: [{name: t, mode: parallel, latency: {kind: constant}}], turns: {perAgent: 1, callsPerTurn: {min: 1, max: 1}}, load: {model: closed}}", ""},
		{"bad JSON", `{"name": "x"`, "not a JSON document"},
		{"JSON then more", base + ` {}`, "more than one JSON value"},
		{"not yaml", "name: [unclosed\n", "not a YAML document"},
	} {
		t.Run(c.name, func(t *testing.T) {
			sc, err := Parse([]byte(c.doc))
			if c.want == "" { // accepted: the scalar is the name's text
				if err != nil || sc.Name == "" {
					t.Fatalf("%v", err)
				}
				return
			}
			if !errors.As(err, &se) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want %q", err, c.want)
			}
		})
	}
}

// TestAttack_Replay_LogOfAnotherScenario: a log whose header was swapped
// for another scenario's (another seed; a tool renamed) is replayed: the
// replay diverges, and its first divergence names a call the log has, by
// agent, turn and call, with what differs (the tool or the arguments). A
// header whose scenario cannot hold the logged calls (fewer turns) is
// refused by ReadLog with the line.
func TestAttack_Replay_LogOfAnotherScenario(t *testing.T) {
	_, log := recordRun(t, mixedScenario, true)
	lines := strings.Split(strings.TrimSpace(string(log)), "\n")
	logged := map[string]bool{}
	for _, line := range lines[1:] {
		var c LogCall
		if json.Unmarshal([]byte(line), &c) == nil && c.Kind == "call" {
			logged[callID(c.Agent, c.Turn, c.Call)] = true
		}
	}
	withScenario := func(doc string) []byte {
		var h LogHeader
		if err := json.Unmarshal([]byte(lines[0]), &h); err != nil {
			t.Fatal(err)
		}
		h.Scenario = json.RawMessage(doc)
		b, err := json.Marshal(h)
		if err != nil {
			t.Fatal(err)
		}
		return []byte(strings.Join(append([]string{string(b)}, lines[1:]...), "\n"))
	}
	for _, c := range []struct{ name, doc, reason string }{
		{"another seed", strings.Replace(mixedScenario, `"seed": 11`, `"seed": 12`, 1), ", the log has "}, // another tool or other arguments
		{"a tool renamed", strings.ReplaceAll(mixedScenario, `"excl"`, `"excl2"`), `, the log has "excl"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := replayRun(t, withScenario(c.doc))
			f := r.Replay.First
			if f == nil || r.Replay.Divergences == 0 {
				t.Fatalf("no divergence: %+v", r.Replay)
			}
			if !logged[callID(f.Agent, f.Turn, f.Call)] || !strings.Contains(f.Reason, c.reason) {
				t.Fatalf("first divergence %v: want a logged call and %q", f, c.reason)
			}
		})
	}
	_, err := ReadLog(bytes.NewReader(withScenario(strings.Replace(mixedScenario, `"perAgent": 6`, `"perAgent": 2`, 1))))
	var le *LogError
	if !errors.As(err, &le) || le.Line < 2 || !strings.Contains(err.Error(), "out of range") {
		t.Fatalf("a scenario too small for the log: %v", err)
	}
}

// TestAttack_HTML_OddReportsRenderBounded: WriteHTML on reports a run
// never makes but a report.json from elsewhere (or a Go caller) can hold:
// names with markup, every call failed, counts at the int64 limit, huge,
// negative and tiny positive numbers (a timeline of 5e-324 s, a rate of
// 1e-320 — the axis ticks looped forever on a step that underflowed to
// 0), NaN and infinities, long series. Each renders in bounded time, and
// no markup from the report reaches the page unescaped.
func TestAttack_HTML_OddReportsRenderBounded(t *testing.T) {
	evil := `<script>alert(1)</script><img src=x onerror=alert(2)>"'&`
	lat := func(ms float64) Latency {
		return Latency{Count: math.MaxInt64, MinMs: ms, MeanMs: ms, P50Ms: ms, P90Ms: ms, P99Ms: ms, P999Ms: ms, MaxMs: ms,
			CDF:     []Quantile{{P: 0, Ms: ms}, {P: 50, Ms: ms}, {P: 100, Ms: ms * 2}},
			Buckets: []Bucket{{LeMs: ms, Count: math.MaxInt64}, {LeMs: 2 * ms, Count: -5}}}
	}
	long := make([]Sample, 20000)
	for i := range long {
		long[i] = Sample{Seconds: float64(i), Results: int64(i) * 1000, TurnsInFlight: int64(i % 7)}
	}
	cases := map[string]func(r *Report){
		"all failed": func(r *Report) {
			r.Results, r.Calls = 10, 10
			r.Failures = map[string]int64{evil: 10}
			r.Tools = map[string]*ToolReport{evil: {Calls: 10, Failures: map[string]int64{evil: 10}}}
		},
		"int64 limit": func(r *Report) {
			r.Results, r.Calls, r.TurnsDone = math.MaxInt64, math.MaxInt64, math.MaxInt64
			r.Failures = map[string]int64{"A": math.MaxInt64, "B": math.MaxInt64}
			r.QueueDepth.MaxTurnsInFlight = math.MaxInt64
			r.CallLatency, r.TurnLatency, r.AdmissionWait = lat(1e300), lat(1e-300), lat(1)
			r.Timeline = []Sample{{Seconds: 1, Results: math.MaxInt64, TurnsInFlight: math.MaxInt64}, {Seconds: 2, Results: math.MinInt64}}
		},
		"tiny": func(r *Report) {
			r.Elapsed = 5e-324
			r.Throughput.CallsPerSecond = 1e-320
			r.CallLatency, r.TurnLatency, r.AdmissionWait = lat(5e-324), lat(1e-320), lat(1e-322)
			r.Timeline = []Sample{{Seconds: 5e-324, Results: 1, TurnsInFlight: 1}, {Seconds: 1e-323, Results: 2}}
		},
		"tiny rate": func(r *Report) {
			r.Timeline = []Sample{{Seconds: 1e300, Results: 1}, {Seconds: 2e300, Results: 2, TurnsInFlight: 0}}
		},
		"negative": func(r *Report) {
			r.Elapsed, r.Throughput.CallsPerSecond = -1, -1e9
			r.CallLatency, r.TurnLatency, r.AdmissionWait = lat(-5), lat(-1e300), lat(-1)
			r.Timeline = []Sample{{Seconds: -1, Results: -1, TurnsInFlight: -3}, {Seconds: -2, Results: 5}}
		},
		"nan and inf": func(r *Report) {
			r.Elapsed, r.Throughput.CallsPerSecond, r.Parallelism.SavedSeconds = math.NaN(), math.Inf(1), math.Inf(-1)
			r.CallLatency, r.TurnLatency, r.AdmissionWait = lat(math.NaN()), lat(math.Inf(1)), lat(math.Inf(-1))
			r.Timeline = []Sample{{Seconds: math.NaN(), Results: 1}, {Seconds: math.Inf(1), Results: 2}, {Seconds: 3, Results: 3}}
		},
		"long": func(r *Report) { r.Timeline = long },
		"inf": func(r *Report) {
			r.CallLatency, r.TurnLatency, r.AdmissionWait = lat(math.Inf(1)), lat(1), lat(math.Inf(1))
			r.Timeline = []Sample{{Seconds: 1, Results: 1}, {Seconds: math.Inf(1), Results: 2, TurnsInFlight: 1}}
		},
		"max float": func(r *Report) {
			r.CallLatency, r.TurnLatency, r.AdmissionWait = lat(math.MaxFloat64), lat(math.SmallestNonzeroFloat64), lat(math.MaxFloat64)
			r.Timeline = []Sample{{Seconds: math.MaxFloat64, Results: math.MaxInt64, TurnsInFlight: math.MaxInt64}}
		},
	}
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			r := &Report{Scenario: evil, Model: evil, Stopped: evil}
			f(r)
			done := make(chan error, 1)
			var b bytes.Buffer
			go func() { done <- r.WriteHTML(&b) }()
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(time.Minute):
				var s strings.Builder
				_ = pprof.Lookup("goroutine").WriteTo(&s, 2)
				t.Fatalf("WriteHTML did not return in a minute\n%s", s.String())
			}
			page := b.String()
			for _, raw := range []string{"<script", "<img"} {
				if strings.Contains(page, raw) {
					t.Fatalf("the page holds %q unescaped", raw)
				}
			}
			if !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;") {
				t.Fatal("the scenario's name is not on the page, escaped")
			}
		})
	}
}

// TestAttack_Parse_ForestSizeCannotOverflow: the forest's size was a
// product that could wrap round: count 2^62 with 3 sub-agents (4 scopes a
// tree: 2^64, 0) or subAgents 2^63-1 with count 2 passed as a forest of 0
// scopes, and Run would have built 2^62 trees; a depth of 2^62 without
// sub-agents kept Parse counting levels for ever. Each is refused at once
// with $.agents.
func TestAttack_Parse_ForestSizeCannotOverflow(t *testing.T) {
	for _, c := range []struct {
		count, sub, depth int64
		path              string
	}{
		{1 << 62, 3, 1, "$.agents"},
		{2, math.MaxInt64, 1, "$.agents"},
		{3, 1 << 32, 2, "$.agents"},
		{math.MaxInt64, 1, 1, "$.agents"},
		{1, 0, 1 << 62, "$.agents.depth"},
		{1, 1, 1 << 62, "$.agents"},
	} {
		doc := fmt.Sprintf(`{"name":"x","agents":{"count":%d,"subAgents":%d,"depth":%d},"tools":[{"name":"t","mode":"parallel","latency":{"kind":"constant","value":"1ms"}}],"turns":{"perAgent":1,"callsPerTurn":{"min":1,"max":1}},"load":{"model":"closed"}}`, c.count, c.sub, c.depth)
		done := make(chan error, 1)
		go func() { _, err := Parse([]byte(doc)); done <- err }()
		select {
		case err := <-done:
			var se *ScenarioError
			if !errors.As(err, &se) || se.Problems[0].Path != c.path {
				t.Errorf("count %d, subAgents %d, depth %d: %v, want a problem at %s", c.count, c.sub, c.depth, err, c.path)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("count %d, subAgents %d, depth %d: Parse did not return in 30 s", c.count, c.sub, c.depth)
		}
	}
	if n, ok := forestSize(10, 9, 5); !ok || n != 10*(1+9+81+729+6561+59049) {
		t.Fatalf("10 trees of 9 children 5 deep: %d %v", n, ok)
	}
	if n, ok := forestSize(MaxAgents, 0, 0); !ok || n != MaxAgents {
		t.Fatalf("MaxAgents single scopes: %d %v", n, ok)
	}
}

// TestAttack_Dist_MeanDurationSaturates: the mean of a lognormal of a
// wide sigma (a 24h median, sigma 10: e^50 days) overflowed
// time.Duration and came out negative (-2562047h); it is now the largest
// Duration. Uniform's mean of two large bounds no longer overflows their
// sum either.
func TestAttack_Dist_MeanDurationSaturates(t *testing.T) {
	wide := Distribution{Kind: DistLognormal, Median: Duration(MaxLatency), Sigma: 10}
	if m := wide.MeanDuration(); m != time.Duration(math.MaxInt64) {
		t.Fatalf("mean %v, want the largest Duration", m)
	}
	big := Distribution{Kind: DistUniform, Min: Duration(math.MaxInt64 - 2), Max: Duration(math.MaxInt64)}
	if m := big.MeanDuration(); m < time.Duration(math.MaxInt64-4) {
		t.Fatalf("mean %v of [max-2, max]", m)
	}
	if m := (Distribution{Kind: DistUniform, Min: Duration(time.Millisecond), Max: Duration(3 * time.Millisecond)}).MeanDuration(); m != 2*time.Millisecond {
		t.Fatalf("mean %v, want 2ms", m)
	}
}

// TestAttack_Replay_DivergencesKeepOnlyTheFirst: the replayer kept every
// divergence, each with its formatted reason (quoted texts, arguments),
// to sort them at the end for the first: a replay where every call of a
// large log differs held them all. It now counts them and keeps the
// earliest: 50,000 divergences cost no memory that stays, and the first
// and the count are as before.
func TestAttack_Replay_DivergencesKeepOnlyTheFirst(t *testing.T) {
	p := newReplayer(&Log{Scenario: &Scenario{}})
	var before, after goruntime.MemStats
	goruntime.GC()
	goruntime.ReadMemStats(&before)
	const n = 50_000
	long := strings.Repeat("y", 200)
	for i := range n {
		p.diverge(fmt.Sprintf("a%d", i%7), i%11, i%5, int64(n-i)+10, "result text %s, the log has %q", quoteShort(long), long)
	}
	p.diverge("a3", 2, 1, 10, "the earliest")
	p.diverge("a2", 2, 1, 10, "earlier still: same time, a smaller agent")
	p.diverge("a2", 2, 1, 10, "the same place again: the first one stays")
	goruntime.GC()
	goruntime.ReadMemStats(&after)
	r := p.result()
	if r.Divergences != n+3 || r.First == nil || r.First.Reason != "earlier still: same time, a smaller agent" {
		t.Fatalf("report %+v, first %v", r, r.First)
	}
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 4<<20 {
		t.Fatalf("%d divergences kept %d bytes", n, grew)
	}
}

// TestAttack_Parse_ProblemsBounded: a 1 MiB document of unknown keys gave
// one problem per key (about 90,000), each listing every known field: an
// error of megabytes printed line by line. The first 100 are listed, then
// how many more.
func TestAttack_Parse_ProblemsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"name":"x"`)
	for i := 0; b.Len() < MaxScenarioBytes-32; i++ {
		fmt.Fprintf(&b, `,"k%d":1`, i)
	}
	b.WriteString("}")
	_, err := Parse([]byte(b.String()))
	var se *ScenarioError
	if !errors.As(err, &se) || len(se.Problems) != 101 || !strings.HasPrefix(se.Problems[100].Reason, "and ") || !strings.HasSuffix(se.Problems[100].Reason, " more problems") {
		t.Fatalf("%d problems, the last %v", len(se.Problems), se.Problems[len(se.Problems)-1])
	}
	if len(err.Error()) > 64<<10 {
		t.Fatalf("an error of %d bytes", len(err.Error()))
	}
}
