package jsonv

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
)

const kw = " is not a supported keyword (subset: type/oneOf/properties/required/additionalProperties/items/enum/const + annotations)"

type compileCase struct {
	name   string
	schema any
	want   []string // nil: accepted
}

func raw(s string) json.RawMessage { return json.RawMessage(s) }

func runCompileCases(t *testing.T, cases []compileCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, got := CompileSchema(tc.schema)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("violations\n got: %q\nwant: %q", got, tc.want)
			}
			if (s == nil) != (tc.want != nil) {
				t.Fatalf("schema = %v with violations %q", s, got)
			}
			if s != nil {
				// An accepted schema is lossless and recompiles from its JSON.
				if _, again := CompileSchema(json.RawMessage(s.JSON())); again != nil {
					t.Fatalf("recompiling %s: %q", s.JSON(), again)
				}
			}
		})
	}
}

func TestCompileSchema_R100_NodeMustBeObject(t *testing.T) {
	runCompileCases(t, []compileCase{
		{"string root", raw(`"object"`), []string{"schema must be a schema object"}},
		{"array root", raw(`[]`), []string{"schema must be a schema object"}},
		{"null root", nil, []string{"schema must be a schema object"}},
		{"Go struct root", struct{}{}, []string{"schema must be a schema object"}},
		{"invalid raw root", raw(`{`), []string{"schema must be a schema object"}},
		{"property not object", raw(`{"type":"object","properties":{"a":5,"b":{"type":"string"},"c":[]}}`),
			[]string{"schema.properties.a must be a schema object", "schema.properties.c must be a schema object"}},
		{"items not object", raw(`{"type":"array","items":true}`), []string{"schema.items must be a schema object"}},
		{"oneOf branch not object", raw(`{"oneOf":[{"type":"string"},"x"]}`), []string{"schema.oneOf[1] must be a schema object"}},
	})
}

func TestCompileSchema_R100_Circular(t *testing.T) {
	self := map[string]any{"type": "object"}
	self["properties"] = map[string]any{"self": self}
	branch := map[string]any{"type": "string"}
	loop := map[string]any{}
	loop["oneOf"] = []any{branch, loop}
	shared := map[string]any{"type": "string"}
	runCompileCases(t, []compileCase{
		{"property refers to ancestor", self, []string{"schema.properties.self is circular"}},
		{"oneOf refers to ancestor", loop, []string{"schema.oneOf[1] is circular"}},
		{"sibling reuse is fine", map[string]any{
			"type":       "object",
			"properties": map[string]any{"a": shared, "b": shared},
			"required":   []any{"a", "b"},
		}, nil},
		{"oneOf sibling reuse is fine", map[string]any{"oneOf": []any{shared, shared}}, nil},
	})
}

func TestCompileSchema_R100_Keywords(t *testing.T) {
	runCompileCases(t, []compileCase{
		{"all keywords and annotations", raw(`{"type":"object","title":"T","description":"D","default":{"a":[1]},"examples":[{"a":"x"}],
			"properties":{"a":{"type":"string","enum":["x","y"],"const":"x","default":"x"}},"required":["a"],"additionalProperties":false}`), nil},
		{"items", raw(`{"type":"array","items":{"type":"integer"}}`), nil},
		{"unknown keys in input order", raw(`{"type":"string","pattern":"x","$ref":"#","minLength":1}`),
			[]string{"schema.pattern" + kw, "schema.$ref" + kw, "schema.minLength" + kw}},
		{"unknown keys of a map in sorted order", map[string]any{"type": "string", "zeta": 1, "alpha": 2},
			[]string{"schema.alpha" + kw, "schema.zeta" + kw}},
		{"$schema is not an annotation", raw(`{"$schema":"x","type":"null"}`), []string{"schema.$schema" + kw}},
		{"description and title must be strings", raw(`{"title":1,"description":false}`),
			[]string{"schema.description must be a string", "schema.title must be a string"}},
		{"default must be lossless (raw -0)", raw(`{"default":-0}`),
			[]string{"schema.default annotation must be lossless JSON data"}},
		{"default and examples must be lossless (Go)", map[string]any{
			"examples": []any{math.NaN()}, "default": struct{}{}, "description": math.Inf(1)},
			[]string{
				"schema.default annotation must be lossless JSON data",
				"schema.description annotation must be lossless JSON data",
				"schema.examples annotation must be lossless JSON data",
				"schema.description must be a string",
			}},
		{"nested unknown key path", raw(`{"type":"object","properties":{"a":{"type":"array","items":{"format":"uri"}}}}`),
			[]string{"schema.properties.a.items.format" + kw}},
	})
}

func TestCompileSchema_R100_TypeAndOneOf(t *testing.T) {
	runCompileCases(t, []compileCase{
		{"both declared, not examined further", raw(`{"type":"string","oneOf":5,"items":3,"enum":[]}`),
			[]string{"schema cannot declare both type and oneOf"}},
		{"oneOf", raw(`{"oneOf":[{"type":"string"},{"type":"number"}],"description":"d"}`), nil},
		{"oneOf with one branch", raw(`{"oneOf":[{"type":"string"}]}`),
			[]string{"schema.oneOf must be an array of at least two schemas"}},
		{"oneOf not an array", raw(`{"oneOf":{"a":{}}}`),
			[]string{"schema.oneOf must be an array of at least two schemas"}},
		{"siblings beside oneOf, after branches, fixed order", raw(`{"const":1,"oneOf":[{"type":"x"},{}],"items":{},"properties":{}}`),
			[]string{
				"schema.oneOf[0].type must be one of object/array/string/number/integer/boolean/null",
				"schema.properties is not supported beside oneOf",
				"schema.items is not supported beside oneOf",
				"schema.const is not supported beside oneOf",
			}},
		{"empty schema accepts anything", raw(`{}`), nil},
		{"annotation-only", raw(`{"description":"anything","default":null}`), nil},
		{"neither: constraint keys need a type, fixed order", raw(`{"const":1,"enum":[1],"items":{},"additionalProperties":true,"required":[],"properties":{}}`),
			[]string{
				"schema.properties requires type or oneOf",
				"schema.required requires type or oneOf",
				"schema.additionalProperties requires type or oneOf",
				"schema.items requires type or oneOf",
				"schema.enum requires type or oneOf",
				"schema.const requires type or oneOf",
			}},
		{"type array", raw(`{"type":["string","null"]}`),
			[]string{"schema.type must be a single type string (type arrays are not supported)"}},
		{"unknown type", raw(`{"type":"float"}`),
			[]string{"schema.type must be one of object/array/string/number/integer/boolean/null"}},
		{"non-string type", raw(`{"type":1,"items":5}`),
			[]string{"schema.type must be one of object/array/string/number/integer/boolean/null"}},
		{"every type", raw(`{"oneOf":[{"type":"object"},{"type":"array"},{"type":"string"},{"type":"number"},{"type":"integer"},{"type":"boolean"},{"type":"null"}]}`), nil},
	})
}

func TestCompileSchema_R100_Placement(t *testing.T) {
	runCompileCases(t, []compileCase{
		{"object keys on string", raw(`{"type":"string","properties":{},"required":[],"additionalProperties":false}`),
			[]string{
				`schema.properties is not supported on type "string"`,
				`schema.required is not supported on type "string"`,
				`schema.additionalProperties is not supported on type "string"`,
			}},
		{"items on object", raw(`{"type":"object","items":{}}`), []string{`schema.items is not supported on type "object"`}},
		{"enum and const on array", raw(`{"type":"array","const":[],"enum":[[]]}`),
			[]string{`schema.enum is not supported on type "array"`, `schema.const is not supported on type "array"`}},
		{"enum on object", raw(`{"type":"object","enum":[{}]}`), []string{`schema.enum is not supported on type "object"`}},
		{"misplaced children are not visited", raw(`{"type":"string","items":{"type":"bogus"}}`),
			[]string{`schema.items is not supported on type "string"`}},
	})
}

func TestCompileSchema_R100_Object(t *testing.T) {
	runCompileCases(t, []compileCase{
		{"properties must be an object", raw(`{"type":"object","properties":[{"type":"string"}]}`),
			[]string{"schema.properties must be an object of schemas"}},
		{"required must be strings", raw(`{"type":"object","properties":{"a":{}},"required":["a",1]}`),
			[]string{"schema.required must be an array of strings"}},
		{"required must be an array", raw(`{"type":"object","required":"a"}`),
			[]string{"schema.required must be an array of strings"}},
		{"required names undeclared", raw(`{"type":"object","properties":{"a":{}},"required":["b","a","c"]}`),
			[]string{`schema.required names "b" which is not in properties`, `schema.required names "c" which is not in properties`}},
		{"required without properties", raw(`{"type":"object","required":["a"]}`),
			[]string{`schema.required names "a" which is not in properties`}},
		{"additionalProperties must be boolean", raw(`{"type":"object","additionalProperties":{}}`),
			[]string{"schema.additionalProperties must be a boolean"}},
		{"tail after children", raw(`{"zzz":1,"type":"object","items":{},"properties":{"a":{"type":"x"}},"required":["b"],"additionalProperties":1}`),
			[]string{
				"schema.zzz" + kw,
				`schema.items is not supported on type "object"`,
				"schema.properties.a.type must be one of object/array/string/number/integer/boolean/null",
				`schema.required names "b" which is not in properties`,
				"schema.additionalProperties must be a boolean",
			}},
		{"children in declaration order", raw(`{"type":"object","properties":{"z":{"type":1},"a":{"oneOf":[]}}}`),
			[]string{
				"schema.properties.z.type must be one of object/array/string/number/integer/boolean/null",
				"schema.properties.a.oneOf must be an array of at least two schemas",
			}},
		{"many properties", manyPropsSchema(50), nil},
	})
}

func manyPropsSchema(n int) json.RawMessage {
	var props, req []string
	for i := range n {
		name := `"p` + strings.Repeat("x", i) + `"`
		props = append(props, name+`:{"type":"integer"}`)
		req = append(req, name)
	}
	return raw(`{"type":"object","properties":{` + strings.Join(props, ",") + `},"required":[` + strings.Join(req, ",") + `],"additionalProperties":false}`)
}

func TestCompileSchema_R100_Scalars(t *testing.T) {
	runCompileCases(t, []compileCase{
		{"typed enums and consts", raw(`{"oneOf":[
			{"type":"string","enum":["a","b"],"const":"b"},
			{"type":"number","enum":[1,2.5,-3e2],"const":2.50},
			{"type":"integer","enum":[1,2.0,3e0],"const":2},
			{"type":"boolean","enum":[true],"const":true},
			{"type":"null","enum":[null],"const":null}]}`), nil},
		{"empty enum", raw(`{"type":"string","enum":[]}`), []string{"schema.enum must be a non-empty array of string values"}},
		{"enum not array", raw(`{"type":"string","enum":"a"}`), []string{"schema.enum must be a non-empty array of string values"}},
		{"mistyped enum", raw(`{"type":"string","enum":["a",1]}`), []string{"schema.enum must be a non-empty array of string values"}},
		{"integer enum needs integers", raw(`{"type":"integer","enum":[1,1.5]}`), []string{"schema.enum must be a non-empty array of integer values"}},
		{"number enum rejects -0", raw(`{"type":"number","enum":[-0]}`), []string{"schema.enum must be a non-empty array of number values"}},
		{"number enum rejects overflow", raw(`{"type":"number","enum":[1e400]}`), []string{"schema.enum must be a non-empty array of number values"}},
		{"number enum rejects NaN (Go)", map[string]any{"type": "number", "enum": []any{math.NaN()}},
			[]string{"schema.enum must be a non-empty array of number values"}},
		{"number enum accepts Go numbers", map[string]any{"type": "number", "enum": []any{1, 2.5, json.Number("3"), uint8(4)}}, nil},
		{"null enum", raw(`{"type":"null","enum":[0]}`), []string{"schema.enum must be a non-empty array of null values"}},
		{"mistyped const", raw(`{"type":"boolean","const":"true"}`), []string{"schema.const must be a boolean value"}},
		{"integer const", raw(`{"type":"integer","const":0.5}`), []string{"schema.const must be a integer value"}},
		{"const outside enum", raw(`{"type":"string","enum":["a"],"const":"b"}`),
			[]string{"schema.const must be one of schema.enum when both are declared"}},
		{"numeric const in enum", raw(`{"type":"number","enum":[1],"const":1.0}`), nil},
		{"const with invalid enum reports both separately", raw(`{"type":"string","enum":[],"const":"b"}`),
			[]string{"schema.enum must be a non-empty array of string values"}},
		{"nested path", raw(`{"type":"array","items":{"type":"number","const":"x"}}`), []string{"schema.items.const must be a number value"}},
	})
}

func TestCompileSchema_R100_MapAndRawAgree(t *testing.T) {
	m := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"b": map[string]any{"type": "string"},
			"a": map[string]any{"type": "integer"},
		},
		"required": []any{"a"},
	}
	s, viol := CompileSchema(m)
	if viol != nil {
		t.Fatal(viol)
	}
	want := `{"properties":{"a":{"type":"integer"},"b":{"type":"string"}},"required":["a"],"type":"object"}`
	if string(s.JSON()) != want {
		t.Fatalf("JSON = %s", s.JSON())
	}
	// The same schema inside a Go tree mixing RawMessage and *Object.
	tree := &Object{Keys: []string{"type", "properties"}, Values: []any{"object", map[string]any{"x": raw(`{"type":"string"}`)}}}
	s, viol = CompileSchema(tree)
	if viol != nil || string(s.JSON()) != `{"type":"object","properties":{"x":{"type":"string"}}}` {
		t.Fatalf("tree schema: %v %s", viol, s.JSON())
	}
	// Duplicate keys in raw schemas follow JSON.parse.
	s, viol = CompileSchema(raw(`{"type":"string","type":"integer"}`))
	if viol != nil || string(s.JSON()) != `{"type":"integer"}` {
		t.Fatalf("dup keys: %v", viol)
	}
}

func TestCompileSchema_R100_TooDeep(t *testing.T) {
	b := nested(MaxDepth+10, `{"type":"array","items":`, `}`)
	s, viol := CompileSchema(json.RawMessage(b))
	if s != nil || len(viol) != 1 || !strings.Contains(viol[0], "nested deeper") {
		t.Fatalf("got %v, %q", s, viol)
	}
	s, viol = CompileSchema(json.RawMessage(nested(100_000, "[", "]")))
	if s != nil || len(viol) != 1 {
		t.Fatalf("100k deep: %q", viol)
	}
}
