package load

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// base is a valid scenario; each bad case edits a copy of its tree.
const base = `{
  "name": "t",
  "agents": {"count": 2, "subAgents": 1, "depth": 1, "levels": [{}, {"deny": ["b"]}]},
  "tools": [
    {"name": "a", "mode": "parallel", "latency": {"kind": "constant", "value": "1ms"}},
    {"name": "b", "mode": "exclusive", "latency": {"kind": "uniform", "min": "1ms", "max": "2ms"}, "failureRate": 0.1}
  ],
  "turns": {"perAgent": 3, "callsPerTurn": {"min": 1, "max": 2}},
  "load": {"model": "closed"}
}`

func edit(t *testing.T, f func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(base), &m); err != nil {
		t.Fatal(err)
	}
	f(m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func obj(m map[string]any, path ...any) map[string]any {
	var cur any = m
	for _, p := range path {
		switch p := p.(type) {
		case string:
			cur = cur.(map[string]any)[p]
		case int:
			cur = cur.([]any)[p]
		}
	}
	return cur.(map[string]any)
}

func TestParse_ValidBaseAndExamples(t *testing.T) {
	sc, err := Parse([]byte(base))
	if err != nil {
		t.Fatal(err)
	}
	if sc.AgentCount() != 4 || *sc.Seed != 1 {
		t.Fatalf("agents %d seed %d", sc.AgentCount(), *sc.Seed)
	}
	if got := sc.pickable(1); !slices.Equal(got, []int{0}) {
		t.Fatalf("depth 1 picks %v, want [0] (b denied)", got)
	}
	for _, name := range Examples() {
		b, err := Example(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Parse(b); err != nil {
			t.Errorf("example %s: %v", name, err)
		}
	}
	if len(Examples()) < 2 {
		t.Fatalf("examples: %v", Examples())
	}
}

// TestParse_BadFieldsRefusedWithPath: every bad field is refused with its
// JSON path and a reason.
func TestParse_BadFieldsRefusedWithPath(t *testing.T) {
	cases := []struct {
		name   string
		edit   func(m map[string]any)
		path   string
		reason string
	}{
		{"unknown top field", func(m map[string]any) { m["agent"] = 1 }, "$.agent", "unknown field"},
		{"unknown nested field", func(m map[string]any) { obj(m, "tools", 0)["latncy"] = 1 }, "$.tools[0].latncy", "unknown field"},
		{"wrong case", func(m map[string]any) { obj(m, "agents")["Count"] = 1 }, "$.agents.Count", `did you mean "count"`},
		{"count a string", func(m map[string]any) { obj(m, "agents")["count"] = "2" }, "$.agents.count", "want an integer"},
		{"count fractional", func(m map[string]any) { obj(m, "agents")["count"] = 1.5 }, "$.agents.count", "want an integer"},
		{"count zero", func(m map[string]any) { obj(m, "agents")["count"] = 0 }, "$.agents.count", "must be ≥ 1"},
		{"depth without subAgents", func(m map[string]any) { obj(m, "agents")["subAgents"] = 0 }, "$.agents.depth", "needs subAgents"},
		{"forest too big", func(m map[string]any) {
			obj(m, "agents")["subAgents"] = 1000
			obj(m, "agents")["depth"] = 3
		}, "$.agents", "more than 1000000"},
		{"too many levels", func(m map[string]any) {
			obj(m, "agents")["levels"] = []any{map[string]any{}, map[string]any{}, map[string]any{}}
		}, "$.agents.levels", "at most depth+1"},
		{"level names unknown tool", func(m map[string]any) {
			obj(m, "agents")["levels"] = []any{map[string]any{"allow": []any{"zz"}}}
		}, "$.agents.levels[0].allow[0]", `no tool is named "zz"`},
		{"level sees nothing", func(m map[string]any) {
			obj(m, "agents")["levels"] = []any{map[string]any{}, map[string]any{"allow": []any{}}}
		}, "$.agents.levels", "depth 1 see no tool"},
		{"no tools", func(m map[string]any) { m["tools"] = []any{} }, "$.tools", "at least one"},
		{"tools an object", func(m map[string]any) { m["tools"] = map[string]any{} }, "$.tools", "want an array"},
		{"bad tool name", func(m map[string]any) { obj(m, "tools", 1)["name"] = "a b" }, "$.tools[1].name", "1–64"},
		{"duplicate tool", func(m map[string]any) { obj(m, "tools", 1)["name"] = "a" }, "$.tools[1].name", "duplicate of $.tools[0].name"},
		{"bad mode", func(m map[string]any) { obj(m, "tools", 0)["mode"] = "serial" }, "$.tools[0].mode", `got "serial"`},
		{"missing mode", func(m map[string]any) { delete(obj(m, "tools", 0), "mode") }, "$.tools[0].mode", "required"},
		{"by-argument without fraction", func(m map[string]any) { obj(m, "tools", 0)["mode"] = "by-argument" }, "$.tools[0].parallelFraction", "required"},
		{"fraction on parallel", func(m map[string]any) { obj(m, "tools", 0)["parallelFraction"] = 0.5 }, "$.tools[0].parallelFraction", "only for mode"},
		{"fraction out of range", func(m map[string]any) {
			obj(m, "tools", 0)["mode"] = "by-argument"
			obj(m, "tools", 0)["parallelFraction"] = 1.5
		}, "$.tools[0].parallelFraction", "[0, 1]"},
		{"failure rate > 1", func(m map[string]any) { obj(m, "tools", 1)["failureRate"] = 2 }, "$.tools[1].failureRate", "[0, 1]"},
		{"rates sum > 1", func(m map[string]any) {
			obj(m, "tools", 1)["failureRate"] = 0.6
			obj(m, "tools", 1)["timeoutRate"] = 0.6
			obj(m, "tools", 1)["timeout"] = "1s"
		}, "$.tools[1].timeoutRate", "≤ 1"},
		{"timeout rate without timeout", func(m map[string]any) { obj(m, "tools", 1)["timeoutRate"] = 0.1 }, "$.tools[1].timeout", "required when timeoutRate"},
		{"negative output", func(m map[string]any) { obj(m, "tools", 0)["outputBytes"] = -1 }, "$.tools[0].outputBytes", "must be in"},
		{"latency kind unknown", func(m map[string]any) { obj(m, "tools", 0, "latency")["kind"] = "gamma" }, "$.tools[0].latency.kind", `got "gamma"`},
		{"latency kind missing", func(m map[string]any) { delete(obj(m, "tools", 0, "latency"), "kind") }, "$.tools[0].latency.kind", "required"},
		{"latency not a duration", func(m map[string]any) { obj(m, "tools", 0, "latency")["value"] = "5 parsecs" }, "$.tools[0].latency.value", "not a duration"},
		{"latency a number", func(m map[string]any) { obj(m, "tools", 0, "latency")["value"] = 5 }, "$.tools[0].latency.value", "want a duration string"},
		{"negative duration", func(m map[string]any) { obj(m, "tools", 0, "latency")["value"] = "-1ms" }, "$.tools[0].latency.value", "negative"},
		{"field of another kind", func(m map[string]any) { obj(m, "tools", 0, "latency")["mean"] = "1ms" }, "$.tools[0].latency.mean", "not a field of a constant"},
		{"uniform max < min", func(m map[string]any) { obj(m, "tools", 1, "latency")["max"] = "0s" }, "$.tools[1].latency.max", "≥ min"},
		{"lognormal sigma", func(m map[string]any) {
			m["tools"].([]any)[0] = map[string]any{"name": "a", "mode": "parallel", "latency": map[string]any{"kind": "lognormal", "median": "1ms", "sigma": -1}}
		}, "$.tools[0].latency.sigma", "[0, 10]"},
		{"percentiles not from 0", func(m map[string]any) {
			obj(m, "tools", 0)["latency"] = map[string]any{"kind": "percentiles", "points": []any{
				map[string]any{"p": 50, "value": "1ms"}, map[string]any{"p": 100, "value": "2ms"}}}
		}, "$.tools[0].latency.points[0].p", "p 0"},
		{"percentiles decreasing", func(m map[string]any) {
			obj(m, "tools", 0)["latency"] = map[string]any{"kind": "percentiles", "points": []any{
				map[string]any{"p": 0, "value": "3ms"}, map[string]any{"p": 50, "value": "2ms"}, map[string]any{"p": 100, "value": "4ms"}}}
		}, "$.tools[0].latency.points[1].value", "must not decrease"},
		{"perAgent zero", func(m map[string]any) { obj(m, "turns")["perAgent"] = 0 }, "$.turns.perAgent", "≥ 1"},
		{"calls max < min", func(m map[string]any) { obj(m, "turns", "callsPerTurn")["max"] = 0 }, "$.turns.callsPerTurn.max", "[min"},
		{"mix unknown tool", func(m map[string]any) { obj(m, "turns")["mix"] = map[string]any{"a": 1, "zz": 1} }, `$.turns.mix["zz"]`, "no tool"},
		{"mix negative", func(m map[string]any) { obj(m, "turns")["mix"] = map[string]any{"a": -1} }, `$.turns.mix["a"]`, "≥ 0"},
		{"mix a string", func(m map[string]any) { obj(m, "turns")["mix"] = map[string]any{"a": "1"} }, `$.turns.mix["a"]`, "want a number"},
		{"think time in open loop", func(m map[string]any) {
			obj(m, "turns")["thinkTime"] = map[string]any{"kind": "constant", "value": "1ms"}
			m["load"] = map[string]any{"model": "open", "rate": 10}
		}, "$.turns.thinkTime", "only for the closed"},
		{"model missing", func(m map[string]any) { m["load"] = map[string]any{} }, "$.load.model", "required"},
		{"model unknown", func(m map[string]any) { m["load"] = map[string]any{"model": "burst"} }, "$.load.model", `got "burst"`},
		{"open without rate", func(m map[string]any) { m["load"] = map[string]any{"model": "open"} }, "$.load.rate", "needs a rate"},
		{"rate on closed", func(m map[string]any) { obj(m, "load")["rate"] = 3 }, "$.load.rate", "only for the open"},
		{"bad arrival", func(m map[string]any) { m["load"] = map[string]any{"model": "open", "rate": 1, "arrival": "bursty"} }, "$.load.arrival", "uniform or poisson"},
		{"name missing", func(m map[string]any) { delete(m, "name") }, "$.name", "required"},
		{"seed a string", func(m map[string]any) { m["seed"] = "7" }, "$.seed", "want an integer"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(edit(t, c.edit))
			var se *ScenarioError
			if !errors.As(err, &se) {
				t.Fatalf("want a *ScenarioError, got %v", err)
			}
			for _, p := range se.Problems {
				if p.Path == c.path && strings.Contains(p.Reason, c.reason) {
					return
				}
			}
			t.Fatalf("want %s: …%s…, got %v", c.path, c.reason, se.Problems)
		})
	}
}

func TestParse_NotJSONOrTrailingOrHuge(t *testing.T) {
	for _, in := range []string{``, `{`, `[]`, base + ` {}`, `null`, `"x"`} {
		if _, err := Parse([]byte(in)); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
	huge := []byte(`{"name":"` + strings.Repeat("x", MaxScenarioBytes) + `"}`)
	if _, err := Parse(huge); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Fatalf("huge: %v", err)
	}
	deep := strings.Repeat(`{"agents":`, 100) + strings.Repeat(`}`, 100)
	if _, err := Parse([]byte(deep)); err == nil {
		t.Fatal("deep accepted")
	}
}

// TestDistribution_SampledMomentsMatchConfigured: seeded draws of every kind
// land within tolerance of the configured mean and percentiles.
func TestDistribution_SampledMomentsMatchConfigured(t *testing.T) {
	ms := func(f float64) Duration { return Duration(f * float64(time.Millisecond)) }
	cases := []struct {
		d Distribution
		// want percentiles (q in [0,1]) → value in ms, besides the mean
		q map[float64]float64
	}{
		{Distribution{Kind: DistConstant, Value: ms(5)}, map[float64]float64{0.5: 5, 0.99: 5}},
		{Distribution{Kind: DistUniform, Min: ms(10), Max: ms(30)}, map[float64]float64{0.25: 15, 0.5: 20, 0.9: 28}},
		{Distribution{Kind: DistNormal, Mean: ms(20), StdDev: ms(4)}, map[float64]float64{0.5: 20, 0.8413: 24, 0.9772: 28}},
		{Distribution{Kind: DistLognormal, Median: ms(10), Sigma: 0.5}, map[float64]float64{0.5: 10, 0.8413: 10 * math.Exp(0.5), 0.1587: 10 * math.Exp(-0.5)}},
		{Distribution{Kind: DistPercentiles, Points: []Point{{0, ms(1)}, {50, ms(8)}, {90, ms(20)}, {99, ms(60)}, {100, ms(100)}}},
			map[float64]float64{0.5: 8, 0.9: 20, 0.99: 60, 0.25: 4.5}},
	}
	const n = 200_000
	for _, c := range cases {
		t.Run(c.d.Kind, func(t *testing.T) {
			if probs := c.d.check("$"); len(probs) > 0 {
				t.Fatal(probs)
			}
			r := rand.New(rand.NewPCG(42, 7))
			xs := make([]float64, n)
			var sum float64
			for i := range xs {
				xs[i] = float64(c.d.Sample(r)) / float64(time.Millisecond)
				sum += xs[i]
			}
			slices.Sort(xs)
			mean := float64(c.d.MeanDuration()) / float64(time.Millisecond)
			if got := sum / n; math.Abs(got-mean) > 0.02*mean+1e-9 {
				t.Errorf("mean %.4f ms, want %.4f ±2%%", got, mean)
			}
			for q, want := range c.q {
				got := xs[int(q*n)]
				if math.Abs(got-want) > 0.03*want+1e-9 {
					t.Errorf("p%v = %.4f ms, want %.4f ±3%%", q*100, got, want)
				}
			}
		})
	}
}

// TestSchema_NamesTheFieldsOfTheGoTypes: the JSON Schema's properties are
// exactly the json names of the Go types, at every level, so the schema
// cannot drift from what Parse accepts.
func TestSchema_NamesTheFieldsOfTheGoTypes(t *testing.T) {
	var s map[string]any
	if err := json.Unmarshal(Schema(), &s); err != nil {
		t.Fatal(err)
	}
	defs := s["$defs"].(map[string]any)
	var walk func(node map[string]any, typ reflect.Type, path string)
	walk = func(node map[string]any, typ reflect.Type, path string) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice {
			typ = typ.Elem()
		}
		if ref, ok := node["$ref"].(string); ok {
			node = defs[strings.TrimPrefix(ref, "#/$defs/")].(map[string]any)
		}
		if it, ok := node["items"].(map[string]any); ok && node["properties"] == nil {
			walk(it, typ, path+"[]")
			return
		}
		if typ.Kind() != reflect.Struct || typ == durationType {
			return
		}
		props := map[string]any{}
		if p, ok := node["properties"].(map[string]any); ok {
			props = p
		}
		for _, alt := range anySlice(node["oneOf"]) { // the distribution's kinds
			for k, v := range alt.(map[string]any)["properties"].(map[string]any) {
				props[k] = v
			}
		}
		var fields []string
		for i := range typ.NumField() {
			name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			fields = append(fields, name)
			sub, ok := props[name].(map[string]any)
			if !ok {
				t.Errorf("%s.%s: in the Go type, not in the schema", path, name)
				continue
			}
			walk(sub, typ.Field(i).Type, path+"."+name)
		}
		for k := range props {
			if !slices.Contains(fields, k) {
				t.Errorf("%s.%s: in the schema, not in the Go type", path, k)
			}
		}
	}
	walk(s, reflect.TypeFor[Scenario](), "$")
}

func anySlice(v any) []any {
	s, _ := v.([]any)
	return s
}

// FuzzParse: Parse never panics, and an accepted scenario survives a round
// trip through encoding/json unchanged.
func FuzzParse(f *testing.F) {
	f.Add([]byte(base))
	f.Add([]byte(baseYAML))
	for _, name := range Examples() {
		b, _ := Example(name)
		f.Add(b)
	}
	f.Add([]byte(`{"name":"x","agents":{"count":1},"tools":[{"name":"a","mode":"parallel","latency":{"kind":"constant","value":"1ms"}}],"turns":{"perAgent":1,"callsPerTurn":{"min":1,"max":1}},"load":{"model":"open","rate":1}}`))
	// YAML the attacks found gaps in: a flow mapping, tags on collections,
	// floats where integers are wanted.
	f.Add([]byte("{name: f, agents: {count: 1}, tools: [{name: t, mode: parallel, latency: {kind: constant}}], turns: {perAgent: 1, callsPerTurn: {min: 1, max: 1}}, load: {model: closed}}"))
	f.Add([]byte("{name: &n f, agents: !!set {count}}"))
	f.Add([]byte("name: t\nagents: !foo\n  count: 1.0\nturns: {perAgent: 1e1}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := Parse(data)
		if err != nil {
			var se *ScenarioError
			if !errors.As(err, &se) || len(se.Problems) == 0 {
				t.Fatalf("error without problems: %v", err)
			}
			return
		}
		b, err := json.Marshal(sc)
		if err != nil {
			t.Fatal(err)
		}
		again, err := Parse(b)
		if err != nil {
			t.Fatalf("re-parse of %s: %v", b, err)
		}
		if !reflect.DeepEqual(sc, again) {
			t.Fatalf("round trip changed the scenario:\n%+v\n%+v", sc, again)
		}
	})
}

// TestReadScenario_ExamplesAndBoundedFiles: what a command's -scenario
// names — an embedded example, a file, a file over MaxScenarioBytes
// (refused, never cut), an unknown example, a missing file.
func TestReadScenario_ExamplesAndBoundedFiles(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "s.json")
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(small, []byte(`{"name":"x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(big, bytes.Repeat([]byte(" "), MaxScenarioBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	want, _ := Example("closed")
	for _, c := range []struct {
		arg, want, err string
	}{
		{"example:closed", string(want), ""},
		{small, `{"name":"x"}`, ""},
		{big, "", "more than 1048576 bytes"},
		{"example:nope", "", `no example scenario "nope"`},
		{filepath.Join(dir, "missing.json"), "", "no such file"},
	} {
		got, err := ReadScenario(c.arg)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want one saying %q", c.arg, err, c.err)
			}
			continue
		}
		if err != nil || string(got) != c.want {
			t.Errorf("%s: %d bytes, %v", c.arg, len(got), err)
		}
	}
}
