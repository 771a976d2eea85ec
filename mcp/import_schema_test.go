package mcp_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/toolscope/toolscope/runtime"
)

// schemaTools is a hostile server listing one tool per output schema
// (named by the map's keys, plus "plain" without one) whose calls answer
// with the structuredContent of values[name].
func schemaServer(t *testing.T, schemas map[string]string, values map[string]string) hostile {
	t.Helper()
	tools := []string{`{"name":"plain","inputSchema":{"type":"object"}}`}
	for name, schema := range schemas {
		tools = append(tools, fmt.Sprintf(`{"name":%q,"inputSchema":{"type":"object"},"outputSchema":%s}`, name, schema))
	}
	return hostile{
		list: func(string) string { return toolList("", tools...) },
		call: func(name string, _ json.RawMessage) string {
			v, ok := values[name]
			if !ok {
				return `{"content":[{"type":"text","text":"plain"}]}`
			}
			return `{"content":[{"type":"text","text":"x"}],"structuredContent":` + v + `}`
		},
	}
}

// An output schema outside the subset whose $ref or in-place applicators
// loop without descending into the value would make jsonschema-go recurse
// until the process dies: such a tool is refused at import, reported in
// Skipped(), and the server's other tools are imported.
func TestImport_SelfRefOutputSchemaRefused(t *testing.T) {
	loops := map[string]string{
		"self":       `{"$ref":"#"}`,
		"pair":       `{"$defs":{"a":{"allOf":[{"$ref":"#/$defs/b"}]},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`,
		"anchor":     `{"$defs":{"a":{"$anchor":"top","anyOf":[{"type":"object"},{"$ref":"#top"}]}},"$ref":"#top"}`,
		"not":        `{"type":"object","not":{"$ref":"#"}}`,
		"ifthen":     `{"if":{"$ref":"#/then"},"then":{"$ref":"#/if"}}`,
		"dependent":  `{"type":"object","dependentSchemas":{"a":{"$ref":"#"}}}`,
		"escaped":    `{"$defs":{"a/b":{"oneOf":[{"$ref":"#/$defs/a~1b"}]}},"$ref":"#/$defs/a~1b"}`,
		"rootid":     `{"$id":"https://example.com/s","allOf":[{"$ref":"https://example.com/s#"}]}`,
		"external":   `{"$ref":"https://example.com/other.json"}`,
		"dynamic":    `{"$dynamicAnchor":"n","$dynamicRef":"#n"}`,
		"nested_id":  `{"$defs":{"a":{"$id":"https://example.com/a","$ref":"#"}},"$ref":"#/$defs/a"}`,
		"nowhere":    `{"$ref":"#/$defs/missing"}`,
		"not_schema": `{"examples":[{"a":1}],"$ref":"#/examples/0"}`,
	}
	cs := connectHostile(t, schemaServer(t, loops, nil))
	reg := newRegistry(t)
	im := mustImport(t, reg.Global(), cs)
	if got := im.Tools(); len(got) != 1 || got[0] != "plain" {
		t.Fatalf("Tools() = %v, want only plain", got)
	}
	reasons := map[string]string{}
	for _, s := range im.Skipped() {
		reasons[s.Tool] = s.Reason
	}
	for name := range loops {
		if reasons[name] == "" {
			t.Errorf("%s: not skipped (Skipped() = %v)", name, im.Skipped())
		} else if !strings.Contains(reasons[name], "outputSchema") {
			t.Errorf("%s: reason %q does not name the outputSchema", name, reasons[name])
		}
	}
	for _, name := range []string{"self", "pair", "anchor", "not", "ifthen", "dependent", "escaped", "rootid"} {
		if !strings.Contains(reasons[name], "cycle") {
			t.Errorf("%s: reason %q, want the cycle named", name, reasons[name])
		}
	}
	if res := execute(t, reg.Global(), "plain", `{}`); res.IsError() || res.Text() != "plain" {
		t.Fatalf("plain: %v %q", res.IsError(), res.Text())
	}
}

// A recursive output schema whose $ref descends into the value is fine:
// it is imported and validates values of any reasonable depth.
func TestImport_RecursiveOutputSchemaThatDescendsImported(t *testing.T) {
	tree := `{"$defs":{"node":{"type":"object","properties":{"name":{"type":"string","minLength":1},"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["name"]}},"$ref":"#/$defs/node"}`
	good := `{"name":"a","kids":[{"name":"b","kids":[{"name":"c"}]},{"name":"d"}]}`
	bad := `{"name":"a","kids":[{"name":"b","kids":[{"name":""}]}]}`
	cs := connectHostile(t, schemaServer(t, map[string]string{"good": tree, "bad": tree}, map[string]string{"good": good, "bad": bad}))
	reg := newRegistry(t)
	im := mustImport(t, reg.Global(), cs)
	if len(im.Skipped()) != 0 {
		t.Fatalf("Skipped() = %v", im.Skipped())
	}
	if res := execute(t, reg.Global(), "good", `{}`); res.IsError() {
		t.Fatalf("good: %s", res.ErrorMessage())
	}
	if res := execute(t, reg.Global(), "bad", `{}`); !res.IsError() || res.Code() != runtime.CodeInvalidToolOutput ||
		!strings.Contains(res.ErrorMessage(), "does not match the outputSchema") {
		t.Fatalf("bad: error=%v code=%q %q", res.IsError(), res.Code(), res.ErrorMessage())
	}
}

// $defs forming a DAG of allOf pairs would cost 2^n validations per call:
// refused at import; and so are schemas with too many or too deeply
// nested subschemas.
func TestImport_ExponentialOutputSchemaRefused(t *testing.T) {
	const n = 21
	var defs []string
	for i := range n {
		defs = append(defs, fmt.Sprintf(`"d%d":{"allOf":[{"$ref":"#/$defs/d%d"},{"$ref":"#/$defs/d%d"}]}`, i, i+1, i+1))
	}
	defs = append(defs, fmt.Sprintf(`"d%d":{"type":"object"}`, n))
	dag := `{"$defs":{` + strings.Join(defs, ",") + `},"$ref":"#/$defs/d0"}`
	// A small DAG stays within the bound.
	small := `{"$defs":{"a":{"allOf":[{"$ref":"#/$defs/b"},{"$ref":"#/$defs/b"}]},"b":{"allOf":[{"$ref":"#/$defs/c"},{"$ref":"#/$defs/c"}]},"c":{"type":"object"}},"$ref":"#/$defs/a"}`
	deep := strings.Repeat(`{"not":`, 100) + `{}` + strings.Repeat(`}`, 100)
	wide := `{"anyOf":[` + strings.TrimSuffix(strings.Repeat(`{"type":"string"},`, 20000), ",") + `]}`
	cs := connectHostile(t, schemaServer(t, map[string]string{"dag": dag, "small": small, "deep": deep, "wide": wide},
		map[string]string{"small": `{}`}))
	reg := newRegistry(t)
	im := mustImport(t, reg.Global(), cs)
	reasons := map[string]string{}
	for _, s := range im.Skipped() {
		reasons[s.Tool] = s.Reason
	}
	for name, want := range map[string]string{
		"dag":  "more than 1000 subschemas in place",
		"deep": "deeper than 64 levels",
		"wide": "more than 10000 subschemas",
	} {
		if !strings.Contains(reasons[name], want) {
			t.Errorf("%s: reason %q, want %q", name, reasons[name], want)
		}
	}
	if _, skipped := reasons["small"]; skipped {
		t.Fatalf("small DAG skipped: %s", reasons["small"])
	}
	if res := execute(t, reg.Global(), "small", `{}`); res.IsError() {
		t.Fatalf("small: %s", res.ErrorMessage())
	}
}

// A schema within the import bounds can still multiply work through the
// value (each level applying two subschemas to the next, 2^depth in all)
// or recurse as deep as the value: a value whose validation would pass
// the step or depth bound is refused as invalid output, before
// jsonschema-go sees it.
func TestImport_OutputValidationWorkBounded(t *testing.T) {
	doubling := `{"type":"object","properties":{"v":{"$ref":"#/$defs/n"}},"$defs":{"n":{"type":"array","allOf":[{"items":{"$ref":"#/$defs/n"}},{"items":{"$ref":"#/$defs/n"}}]}}}`
	chain := `{"type":"object","properties":{"v":{"$ref":"#/$defs/n"}},"$defs":{"n":{"type":"array","items":{"$ref":"#/$defs/n"}}}}`
	wide := `{"type":"object","properties":{"v":{"type":"array","items":{"anyOf":[{"type":"integer"},{"type":"string"}]}}}}`
	nested := func(d int) string { return `{"v":` + strings.Repeat("[", d) + strings.Repeat("]", d) + `}` }
	flat := func(n int) string { return `{"v":[` + strings.TrimSuffix(strings.Repeat("1,", n), ",") + `]}` }
	cs := connectHostile(t, schemaServer(t,
		map[string]string{"doubling": doubling, "doubling_ok": doubling, "chain": chain, "chain_ok": chain, "wide": wide, "wide_ok": wide},
		map[string]string{"doubling": nested(26), "doubling_ok": nested(5), "chain": nested(400), "chain_ok": nested(50), "wide": flat(40000), "wide_ok": flat(3000)}))
	reg := newRegistry(t)
	im := mustImport(t, reg.Global(), cs)
	if len(im.Skipped()) != 0 {
		t.Fatalf("Skipped() = %v", im.Skipped())
	}
	for name, want := range map[string]string{
		"doubling": "more than 32 MiB of error text",
		"chain":    "deeper than 256 levels",
		"wide":     "more than 100000 steps",
	} {
		res := execute(t, reg.Global(), name, `{}`)
		if !res.IsError() || res.Code() != runtime.CodeInvalidToolOutput || !strings.Contains(res.ErrorMessage(), want) {
			t.Errorf("%s: error=%v code=%q %q, want %q", name, res.IsError(), res.Code(), res.ErrorMessage(), want)
		}
	}
	for _, name := range []string{"doubling_ok", "chain_ok", "wide_ok"} {
		if res := execute(t, reg.Global(), name, `{}`); res.IsError() {
			t.Errorf("%s: %s", name, res.ErrorMessage())
		}
	}
}
