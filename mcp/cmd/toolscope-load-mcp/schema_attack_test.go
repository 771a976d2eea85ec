package main

// The scenario format's JSON Schema (load/scenario.schema.json) against
// load.Parse, checked by a real 2020-12 validator (jsonschema-go, which
// this module has): it lives here because the root module does not
// depend on one.

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/toolscope/toolscope/load"
)

// semantic are the reasons of Parse's checks that the schema cannot
// express (its description names them): a document the schema accepts
// may be refused by Parse only for these.
var semantic = []string{
	"no tool is named",                   // mix and levels name existing tools
	"see no tool",                        // every level sees a tool to call
	"agent scopes in the forest",         // at most MaxAgents scopes
	"turns is more than",                 // at most MaxTurns turns
	"levels for a forest",                // levels ≤ depth+1
	"needs subAgents",                    // depth and subAgents go together
	"subAgents needs depth",              //
	"duplicate of",                       // tool names are unique
	"must be ≥ min",                      // uniform max ≥ min
	"must be in [min",                    // callsPerTurn max ≥ min
	"failureRate + timeoutRate",          // the rates sum to at most 1
	"more than 24h0m0s",                  // durations ≤ MaxLatency
	"only for the closed model",          // thinkTime in the closed model
	"must increase", "must not decrease", // percentile points in order
	"the first point must be p 0", "the last point must be p 100",
	"median: must be > 0",  // lognormal
	"timeout: required",    // timeoutRate > 0 with a timeout of 0s
	"want an integer, got", // 1.0 and 1e3 are integers to a schema, not to Parse (documented)
}

func resolvedSchema(t testing.TB) *jsonschema.Resolved {
	t.Helper()
	var s jsonschema.Schema
	if err := json.Unmarshal(load.Schema(), &s); err != nil {
		t.Fatal(err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// agree checks one document: Parse accepts it ⇒ the schema does; the
// schema accepts it and Parse does not ⇒ only for semantic reasons.
func agree(t *testing.T, rs *jsonschema.Resolved, doc []byte) {
	t.Helper()
	var inst any
	if err := json.Unmarshal(doc, &inst); err != nil {
		return // not JSON: both refuse
	}
	schemaErr := rs.Validate(inst)
	_, parseErr := load.Parse(doc)
	switch {
	case parseErr == nil && schemaErr != nil:
		t.Errorf("Parse accepts, the schema refuses (%v):\n%s", schemaErr, doc)
	case parseErr != nil && schemaErr == nil:
		for _, p := range parseErr.(*load.ScenarioError).Problems {
			ok := false
			for _, s := range semantic {
				ok = ok || strings.Contains(p.Error(), s)
			}
			if !ok {
				t.Errorf("the schema accepts, Parse refuses for a reason the schema could say (%s):\n%s", p, doc)
			}
		}
	}
}

// TestAttack_Schema_AgreesWithParse: the examples, hand-made edge cases,
// and random mutations of the examples (a value replaced by an odd one, a
// key dropped or added) — everything Parse accepts, the schema accepts,
// and what the schema accepts Parse refuses only for the checks the
// schema cannot express.
func TestAttack_Schema_AgreesWithParse(t *testing.T) {
	rs := resolvedSchema(t)
	docs := [][]byte{demoScenario}
	for _, name := range load.Examples() {
		b, err := load.Example(name)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, b)
	}
	for _, d := range docs {
		agree(t, rs, d)
	}
	const tool = `{"name":"t","mode":"parallel","latency":{"kind":"constant","value":"1ms"}}`
	edge := func(toolJSON, loadJSON, extra string) []byte {
		return []byte(`{"name":"e","agents":{"count":1},"tools":[` + toolJSON + `],"turns":{"perAgent":1,"callsPerTurn":{"min":1,"max":1}},"load":` + loadJSON + extra + `}`)
	}
	for _, d := range [][]byte{
		edge(`{"name":"t","mode":"parallel","latency":{"kind":"uniform","max":"1ms","value":"0s"}}`, `{"model":"closed"}`, ``),
		edge(`{"name":"t","mode":"parallel","latency":{"kind":"constant"}}`, `{"model":"closed"}`, ``),
		edge(`{"name":"t","mode":"parallel","latency":{"kind":"lognormal","median":"1ms","sigma":0}}`, `{"model":"closed"}`, ``),
		edge(`{"name":"t","mode":"parallel","latency":{"kind":"percentiles","points":[{"p":0,"value":"0"},{"p":100,"value":"+1.5s"}]}}`, `{"model":"closed"}`, ``),
		edge(`{"name":"t","mode":"parallel","parallelFraction":0,"latency":{"kind":"constant","value":"1ms"}}`, `{"model":"closed"}`, ``),
		edge(`{"name":"t","mode":"by-argument","latency":{"kind":"constant","value":"1ms"}}`, `{"model":"closed"}`, ``),
		edge(`{"name":"t","mode":"parallel","latency":{"kind":"constant","value":"1ms"},"timeoutRate":0.5,"timeout":"0s"}`, `{"model":"closed"}`, ``),
		edge(`{"name":"t","mode":"parallel","latency":{"kind":"constant","value":"-0s"}}`, `{"model":"closed"}`, ``),
		edge(tool, `{"model":"closed","rate":0}`, ``),
		edge(tool, `{"model":"closed","maxInFlight":0}`, ``),
		edge(tool, `{"model":"open","rate":1,"maxInFlight":0}`, ``),
		edge(tool, `{"model":"open","rate":1,"arrival":""}`, ``),
		edge(tool, `{"model":"open","rate":1,"maxInFlight":2000000}`, ``),
		edge(tool, `{"model":"open","rate":1e7}`, ``),
		edge(tool, `{"model":"closed","duration":"0"}`, ``),
		edge(tool, `{"model":"closed"}`, `,"seed":0,"registry":{}`),
		edge(tool, `{"model":"closed"}`, `,"seed":1.0`),
		edge(tool, `{"model":"closed"}`, `,"registry":{"maxParallel":0}`),
		edge(tool, `{"model":"closed"}`, `,"description":""`),
		edge(tool, `{"model":"closed"}`, `,"turns":{"perAgent":1,"callsPerTurn":{"min":1,"max":1},"mix":{}}`),
		edge(tool, `{"model":"closed"}`, `,"agents":{"count":1,"levels":[{"allow":[]}]}`),
		edge(tool, `{"model":"closed"}`, `,"agents":{"count":1,"levels":[{"allow":null}]}`),
	} {
		agree(t, rs, d)
	}
	odd := []any{nil, true, 0, -1, 1, 2, 0.5, 1.5, 100, 1e3, 1e7, 2e7, "", "x", "0", "0s", "1ms", ".5s", "+1s", "-0s", "-1s",
		"1μs", "1µs", "25h", "1h", "parallel", "exclusive", "by-argument", "closed", "open", "poisson", "constant",
		"uniform", "normal", "lognormal", "percentiles", []any{}, []any{"t"}, map[string]any{},
		"\x1b[2J", "tab\there", "\u0085", strings.Repeat("é", 200), strings.Repeat("n", 201)}
	r := rand.New(rand.NewPCG(7, 29))
	n := 1500
	if testing.Short() {
		n = 300
	}
	for range n {
		var tree any
		if err := json.Unmarshal(docs[r.IntN(len(docs))], &tree); err != nil {
			t.Fatal(err)
		}
		for range 1 + r.IntN(2) {
			tree = mutate(r, tree, odd)
		}
		b, err := json.Marshal(tree)
		if err != nil {
			t.Fatal(err)
		}
		agree(t, rs, b)
		if t.Failed() {
			return
		}
	}
}

// mutate changes one random place of v: a value replaced by one of odd, an
// object key dropped, or an unknown key added.
func mutate(r *rand.Rand, v any, odd []any) any {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		if len(keys) == 0 || r.IntN(8) == 0 {
			switch r.IntN(2) {
			case 0:
				if len(keys) > 0 {
					delete(x, keys[r.IntN(len(keys))])
				}
			default:
				x[fmt.Sprintf("extra%d", r.IntN(3))] = pick(r, odd)
			}
			return x
		}
		// map order is random; pick by sorted index for reproducibility
		sortStrings(keys)
		k := keys[r.IntN(len(keys))]
		x[k] = mutate(r, x[k], odd)
		return x
	case []any:
		if len(x) == 0 || r.IntN(8) == 0 {
			return pick(r, odd)
		}
		i := r.IntN(len(x))
		x[i] = mutate(r, x[i], odd)
		return x
	}
	return pick(r, odd)
}

// pick is one of odd, a fresh copy (mutate changes objects in place).
func pick(r *rand.Rand, odd []any) any {
	switch v := odd[r.IntN(len(odd))].(type) {
	case map[string]any:
		return map[string]any{}
	case []any:
		return append([]any(nil), v...)
	default:
		return v
	}
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}
