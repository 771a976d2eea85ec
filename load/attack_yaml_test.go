package load

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// TestAttack_YAML_CollectionTagsRefused: "no tags but the core schema's"
// held for scalars only; a tag on a mapping or a sequence (!foo, !!set,
// !!omap, !!seq on a mapping) was dropped silently and the collection read
// as a plain one. Now a collection may carry only its own core tag.
func TestAttack_YAML_CollectionTagsRefused(t *testing.T) {
	for _, c := range []struct{ name, from, to, want string }{
		{"local tag on a mapping", "agents:", "agents: !foo", "the tag !foo"},
		{"set", "agents:", "agents: !!set", "the tag !!set"},
		{"omap", "tools:\n", "tools: !!omap\n", "the tag !!omap"},
		{"local tag on a sequence", "levels:", "levels: !bar", "the tag !bar"},
		{"map tag is fine", "agents:", "agents: !!map", ""},
		{"seq tag is fine", "tools:\n", "tools: !!seq\n", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			doc := strings.Replace(baseYAML, c.from, c.to, 1)
			_, err := Parse([]byte(doc))
			if c.want == "" {
				if err != nil {
					t.Fatalf("%v", err)
				}
				return
			}
			var se *ScenarioError
			if !errors.As(err, &se) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want %q", err, c.want)
			}
		})
	}
}

// TestAttack_YAML_FlowMappingErrorsNameTheYAMLProblem: a document that
// starts with '{' and is not JSON is read as a YAML flow mapping; when the
// YAML reader refused it too (an anchor, a tag, too deep), Parse reported
// only the JSON decoder's complaint ("invalid character 'n' looking for
// beginning of object key string"), which names nothing the author wrote
// wrong. Now the error gives both readings.
func TestAttack_YAML_FlowMappingErrorsNameTheYAMLProblem(t *testing.T) {
	flow := "{name: f, agents: {count: 1}, tools: [{name: t, mode: parallel, latency: {kind: constant}}], turns: {perAgent: 1, callsPerTurn: {min: 1, max: 1}}, load: {model: closed}}"
	for _, c := range []struct{ name, doc, want string }{
		{"anchor", strings.Replace(flow, "name: f", "name: &n f", 1), "anchors and aliases are not allowed"},
		{"tag", strings.Replace(flow, "name: f", "name: !x f", 1), "the tag !x"},
		{"too deep", strings.Repeat("{a: ", 100) + "1" + strings.Repeat("}", 100), "nested too deep"},
		{"bad JSON keeps its JSON error", `{"name": "x"`, "not a JSON document"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.doc))
			var se *ScenarioError
			if !errors.As(err, &se) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want %q", err, c.want)
			}
		})
	}
}

// TestAttack_YAML_FloatsStayFloats: JSON refuses 3.0 or 1e1 where an
// integer is wanted ("want an integer"), but YAML's 3.0 and 1e1 were
// re-encoded as the JSON numbers 3 and 10 and accepted: the same scenario
// meant different things in its two forms. A YAML float now stays a
// float in the JSON it stands for (its text when that is a JSON number).
func TestAttack_YAML_FloatsStayFloats(t *testing.T) {
	for _, v := range []string{"3.0", "1e1", "3.", "+3.0", "!!float 3"} {
		doc := strings.Replace(baseYAML, "perAgent: 0x3", "perAgent: "+v, 1)
		_, err := Parse([]byte(doc))
		if err == nil || !strings.Contains(err.Error(), "$.turns.perAgent: want an integer") {
			t.Errorf("perAgent: %s: err %v, want an integer refused as JSON refuses it", v, err)
		}
	}
	// A float where a number is wanted still reads as that number.
	for _, v := range []string{"0.5", ".5", "5e-1", "+0.5"} {
		doc := strings.Replace(baseYAML, "failureRate: 0.1", "failureRate: "+v, 1)
		sc, err := Parse([]byte(doc))
		if err != nil || sc.Tools[1].FailureRate != 0.5 {
			t.Errorf("failureRate: %s: %v", v, err)
		}
	}
}

// FuzzYAMLToJSON: JSON is (nearly) YAML, so a JSON document read by the
// YAML path must stand for the same JSON value, or be refused with an
// error; and whatever the YAML path accepts is one valid JSON document.
func FuzzYAMLToJSON(f *testing.F) {
	f.Add([]byte(base))
	f.Add([]byte(baseYAML))
	f.Add([]byte(`{"a": [1, 2.0, -3e2, true, null, "x\u00e9\n"], "b": {}}`))
	f.Add([]byte("a: !!set {x}\n"))
	f.Add([]byte("{a: &x 1}"))
	f.Add([]byte("a: [3., +1.5, .5, !!float 2]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		j, err := yamlToJSON(data)
		if err != nil {
			return
		}
		if !json.Valid(j) {
			t.Fatalf("not JSON: %s", j)
		}
		var fromJSON any
		if json.Unmarshal(data, &fromJSON) != nil {
			return
		}
		var fromYAML any
		if err := json.Unmarshal(j, &fromYAML); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(fromJSON, fromYAML) {
			t.Fatalf("JSON %q reads as %s through YAML", data, j)
		}
	})
}
