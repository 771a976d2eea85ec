package jsonv

import (
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func mustCompile(t testing.TB, schema string) *Schema {
	t.Helper()
	s, viol := CompileSchema(json.RawMessage(schema))
	if viol != nil {
		t.Fatalf("CompileSchema(%s): %q", schema, viol)
	}
	return s
}

type validateCase struct {
	name   string
	schema string
	value  any // string: JSON text for Validate; anything else: ValidateValue
	root   string
	want   []string
}

func runValidateCases(t *testing.T, cases []validateCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := mustCompile(t, tc.schema)
			var got []string
			if text, ok := tc.value.(string); ok {
				got = s.Validate([]byte(text), tc.root)
				// Go-value validation of the decoded text agrees.
				if tree, err := Decode([]byte(text)); err == nil {
					if alt := s.ValidateValue(tree, tc.root); !reflect.DeepEqual(alt, got) {
						t.Fatalf("ValidateValue disagrees: %q vs %q", alt, got)
					}
				}
			} else {
				got = s.ValidateValue(tc.value, tc.root)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("violations\n got: %q\nwant: %q", got, tc.want)
			}
		})
	}
}

func TestValidate_R102_TypeMismatch(t *testing.T) {
	runValidateCases(t, []validateCase{
		{"string", `{"type":"string"}`, `1`, "value", []string{`"value" must be a string`}},
		{"number", `{"type":"number"}`, `"1"`, "value", []string{`"value" must be a number`}},
		{"integer", `{"type":"integer"}`, `"1"`, "value", []string{`"value" must be an integer`}},
		{"boolean", `{"type":"boolean"}`, `null`, "value", []string{`"value" must be a boolean`}},
		{"null", `{"type":"null"}`, `false`, "value", []string{`"value" must be null`}},
		{"object", `{"type":"object"}`, `[]`, "value", []string{`"value" must be an object`}},
		{"array", `{"type":"array"}`, `{}`, "value", []string{`"value" must be an array`}},
		{"matching scalars", `{"type":"array","items":{"oneOf":[{"type":"string"},{"type":"boolean"},{"type":"null"},{"type":"object"}]}}`,
			`["s",true,false,null,{}]`, "value", nil},
	})
}

func TestValidate_R102_Numbers(t *testing.T) {
	runValidateCases(t, []validateCase{
		{"number accepts any finite", `{"type":"number"}`, `-1.5e300`, "value", nil},
		{"NaN", `{"type":"number"}`, math.NaN(), "value", []string{`"value" must be a finite JSON number`}},
		{"+Inf", `{"type":"number"}`, math.Inf(1), "value", []string{`"value" must be a finite JSON number`}},
		{"-Inf", `{"type":"number"}`, math.Inf(-1), "value", []string{`"value" must be a finite JSON number`}},
		{"-0 (Go)", `{"type":"number"}`, negZero, "value", []string{`"value" must be a finite JSON number`}},
		{"-0 (text)", `{"type":"number"}`, `-0.0`, "value", []string{`"value" must be a finite JSON number`}},
		{"overflowing literal", `{"type":"number"}`, `1e400`, "value", []string{`"value" must be a finite JSON number`}},
		{"integer accepts integral forms", `{"type":"array","items":{"type":"integer"}}`, `[1,1.0,1e2,-12.50e1,0]`, "value", nil},
		{"integer rejects fractions", `{"type":"integer"}`, `1.5`, "value", []string{`"value" must be an integer`}},
		{"integer rejects NaN", `{"type":"integer"}`, math.NaN(), "value", []string{`"value" must be an integer`}},
		{"integer rejects -0", `{"type":"integer"}`, negZero, "value", []string{`"value" must be an integer`}},
		{"integer rejects overflow", `{"type":"integer"}`, `1e400`, "value", []string{`"value" must be an integer`}},
		{"integer exact beyond float precision", `{"type":"integer"}`, `1.0000000000000000001`, "value", []string{`"value" must be an integer`}},
		{"Go integer kinds", `{"type":"array","items":{"type":"integer"}}`, []any{1, int8(2), uint64(3), 4.0, json.Number("5")}, "value", nil},
		{"Go float fraction", `{"type":"integer"}`, 2.5, "value", []string{`"value" must be an integer`}},
	})
}

func TestValidate_R102_EnumThenConst(t *testing.T) {
	runValidateCases(t, []validateCase{
		{"enum miss", `{"type":"string","enum":["a","b"],"const":"a"}`, `"c"`, "value", []string{`"value" must be one of ["a","b"]`}},
		{"const miss", `{"type":"string","enum":["a","b"],"const":"a"}`, `"b"`, "value", []string{`"value" must be "a"`}},
		{"both pass", `{"type":"string","enum":["a","b"],"const":"a"}`, `"a"`, "value", nil},
		{"numeric enum equality", `{"type":"array","items":{"type":"number","enum":[1,2.5,100]}}`, `[1.0,2.50,1e2,10E1]`, "value", nil},
		{"numeric enum miss renders compact array", `{"type":"number","enum":[1, 2.50, -3]}`, `3`, "value", []string{`"value" must be one of [1,2.50,-3]`}},
		{"integer const", `{"type":"integer","const":7}`, `7.0`, "value", nil},
		{"number const miss", `{"type":"number","const":1.5}`, `1.25`, "value", []string{`"value" must be 1.5`}},
		{"boolean const", `{"type":"boolean","const":true}`, `false`, "value", []string{`"value" must be true`}},
		{"null enum", `{"type":"null","enum":[null]}`, `null`, "value", nil},
		{"escaped string equality", `{"type":"string","enum":["a\nb","é"]}`, `["\u0061\u000ab"]`, "value", []string{`"value" must be a string`}},
		{"escaped string matches", `{"type":"string","enum":["a\nb","é"]}`, `"\u00e9"`, "value", nil},
		{"string enum message escapes", `{"type":"string","enum":["q\"x"]}`, `"y"`, "value", []string{`"value" must be one of ["q\"x"]`}},
	})
}

func TestValidate_R102_ObjectOrder(t *testing.T) {
	schema := `{"type":"object","properties":{"b":{"type":"string"},"a":{"type":"integer"},"c":{}},"required":["c","a","b"],"additionalProperties":false}`
	runValidateCases(t, []validateCase{
		{"missing required in required order, then children, then undeclared in value order", schema,
			`{"z":1,"a":"x","y":2,"b":3}`, "value", []string{
				`missing required property "value.c"`,
				`"value.b" must be a string`,
				`"value.a" must be an integer`,
				`"value.z" is not a declared property (additionalProperties: false)`,
				`"value.y" is not a declared property (additionalProperties: false)`,
			}},
		{"null is present, not missing", schema, `{"a":null,"b":"x","c":null}`, "value",
			[]string{`"value.a" must be an integer`}},
		{"valid", schema, `{"c":[1],"b":"x","a":2}`, "value", nil},
	})
}

func TestValidate_R102_MissingRequired(t *testing.T) {
	schema := `{"type":"object","properties":{"path":{"type":"string"},"config":{"type":"object","properties":{"host":{"type":"string"}},"required":["host"]}},"required":["path","config"]}`
	runValidateCases(t, []validateCase{
		{"argument root", schema, `{}`, "", []string{`missing required property "path"`, `missing required property "config"`}},
		{"nested argument", schema, `{"path":"p","config":{}}`, "", []string{`missing required property "config.host"`}},
		{"value root", schema, `{"config":{}}`, "value", []string{`missing required property "value.path"`, `missing required property "value.config.host"`}},
	})
}

func TestValidate_R101_Openness(t *testing.T) {
	runValidateCases(t, []validateCase{
		{"absent additionalProperties is open", `{"type":"object","properties":{"a":{"type":"string"}}}`, `{"a":"x","b":1}`, "value", nil},
		{"true is open", `{"type":"object","properties":{},"additionalProperties":true}`, `{"b":1}`, "value", nil},
		{"false rejects undeclared", `{"type":"object","additionalProperties":false}`, `{"b":1}`, "value",
			[]string{`"value.b" is not a declared property (additionalProperties: false)`}},
	})
}

func TestValidate_R102_Arrays(t *testing.T) {
	runValidateCases(t, []validateCase{
		{"items with index paths", `{"type":"array","items":{"type":"object","properties":{"host":{"type":"string"}}}}`,
			`[{"host":"a"},{"host":1},"x"]`, "value", []string{`"value[1].host" must be a string`, `"value[2]" must be an object`}},
		{"no items accepts anything", `{"type":"array"}`, `[1,"x",{"a":[null]}]`, "value", nil},
		{"nested arrays", `{"type":"array","items":{"type":"array","items":{"type":"integer"}}}`, `[[1],[2,"x"]]`, "value",
			[]string{`"value[1][1]" must be an integer`}},
	})
}

func TestValidate_R102_OneOf(t *testing.T) {
	schema := `{"oneOf":[{"type":"string"},{"type":"number"},{"type":"integer","enum":[5]}]}`
	runValidateCases(t, []validateCase{
		{"exactly one", schema, `"x"`, "value", nil},
		{"none", schema, `true`, "value", []string{`"value" must match exactly one oneOf branch (matched 0)`}},
		{"two", schema, `5`, "value", []string{`"value" must match exactly one oneOf branch (matched 2)`}},
		{"one of two overlapping", schema, `6`, "value", nil},
		{"branch violations are not reported", `{"type":"object","properties":{"v":{"oneOf":[{"type":"object","required":["a"],"properties":{"a":{}}},{"type":"array"}]}}}`,
			`{"v":{"b":1}}`, "value", []string{`"value.v" must match exactly one oneOf branch (matched 0)`}},
		{"nested oneOf", `{"oneOf":[{"oneOf":[{"type":"string"},{"type":"string"}]},{"type":"number"}]}`, `"s"`, "value",
			[]string{`"value" must match exactly one oneOf branch (matched 0)`}},
		{"oneOf inside items", `{"type":"array","items":{"oneOf":[{"type":"string"},{"type":"null"}]}}`, `["a",null,1]`, "",
			[]string{`"[2]" must match exactly one oneOf branch (matched 0)`}},
	})
}

func TestValidate_R102_AnnotationOnlyAndLossless(t *testing.T) {
	type foreign struct{}
	runValidateCases(t, []validateCase{
		{"annotation-only accepts any lossless", `{"description":"any"}`, `{"a":[1,{"b":null}]}`, "value", nil},
		{"annotation-only rejects NaN", `{}`, math.NaN(), "value", []string{`"value" must be a lossless JSON value`}},
		{"annotation-only rejects foreign types", `{}`, map[string]any{"a": foreign{}}, "value", []string{`"value" must be a lossless JSON value`}},
		{"annotation-only rejects -0 text", `{}`, `[-0]`, "value", []string{`"value" must be a lossless JSON value`}},
		{"NaN under an undeclared key", `{"type":"object","properties":{"a":{"type":"string"}}}`,
			map[string]any{"a": "x", "extra": math.NaN()}, "value", []string{`"value" must be a lossless JSON object`}},
		{"-0 under an undeclared key (text)", `{"type":"object"}`, `{"extra":{"x":-0}}`, "value",
			[]string{`"value" must be a lossless JSON object`}},
		{"NaN in an array without items", `{"type":"array"}`, []any{1, math.Inf(1)}, "value",
			[]string{`"value" must be a dense lossless JSON array`}},
		{"declared violations suppress the container message", `{"type":"object","properties":{"a":{"type":"string"}}}`,
			map[string]any{"a": 1, "extra": math.NaN()}, "value", []string{`"value.a" must be a string`}},
		{"foreign value where an object is expected", `{"type":"object"}`, map[string]string{}, "value", []string{`"value" must be an object`}},
		{"cycle under a declared open object", `{"type":"object","properties":{"a":{"type":"object"}}}`, cyclicValue(), "value",
			[]string{`"value.a" must be a lossless JSON object`}},
		{"cycle validated through the alias", `{"type":"object","properties":{"a":{"type":"object","properties":{"back":{"type":"object","properties":{"a":{"type":"string"}}}}}}}`,
			cyclicValue(), "value", []string{`"value.a.back.a" must be a string`}},
		{"json.RawMessage inside a Go value", `{"type":"object","properties":{"r":{"type":"array","items":{"type":"integer"}}}}`,
			map[string]any{"r": json.RawMessage(`[1, "x"]`)}, "value", []string{`"value.r[1]" must be an integer`}},
	})
}

func cyclicValue() map[string]any {
	m := map[string]any{}
	m["a"] = map[string]any{"back": m}
	return m
}

func TestValidate_R102_ArgumentPaths(t *testing.T) {
	schema := `{"type":"object","properties":{
		"path":{"type":"string"},
		"config":{"type":"object","properties":{"host":{"type":"string"}}},
		"servers":{"type":"array","items":{"type":"object","properties":{"host":{"type":"string"}},"additionalProperties":false}}}}`
	runValidateCases(t, []validateCase{
		{"property paths have no prefix", schema, `{"path":1,"config":{"host":2},"servers":[{"host":"a"},{"host":3,"port":1}]}`, "", []string{
			`"path" must be a string`,
			`"config.host" must be a string`,
			`"servers[1].host" must be a string`,
			`"servers[1].port" is not a declared property (additionalProperties: false)`,
		}},
		{"root is shown as arguments", schema, `[]`, "", []string{`"arguments" must be an object`}},
		{"root undeclared property", `{"type":"object","additionalProperties":false}`, `{"x":1}`, "",
			[]string{`"x" is not a declared property (additionalProperties: false)`}},
		{"root lossless object", `{"type":"object"}`, map[string]any{"x": math.NaN()}, "",
			[]string{`"arguments" must be a lossless JSON object`}},
		{"value label", schema, `{"path":true}`, "value", []string{`"value.path" must be a string`}},
		{"escaped keys are decoded in paths", schema, `{"p\u0061th":1,"\u0078":1}`, "", []string{`"path" must be a string`}},
	})
}

func TestValidate_R102_Total(t *testing.T) {
	s := mustCompile(t, `{"type":"object","properties":{"a":{"type":"string"}}}`)
	for _, in := range []string{``, `{`, `{"a":}`, `[1,]`, "\x00", `{"a":"x"} trailing`} {
		got := s.Validate([]byte(in), "")
		if !reflect.DeepEqual(got, []string{`"arguments" must be a lossless JSON value`}) {
			t.Errorf("Validate(%q) = %q", in, got)
		}
	}
	if got := s.Validate([]byte(`{`), "value"); got[0] != `"value" must be a lossless JSON value` {
		t.Errorf("got %q", got)
	}
	var nilSchema *Schema
	if got := nilSchema.Validate([]byte(`{"a":1}`), "value"); got != nil {
		t.Errorf("nil schema: %q", got)
	}
	if got := nilSchema.ValidateValue(math.NaN(), "value"); len(got) != 1 {
		t.Errorf("nil schema NaN: %q", got)
	}
	// Duplicate keys in non-canonical text: the last value wins.
	if got := s.Validate([]byte(`{"a":1,"a":"x"}`), ""); got != nil {
		t.Errorf("dup keys: %q", got)
	}
}

func TestValidate_R34_DeepNesting(t *testing.T) {
	s := mustCompile(t, `{"type":"array","items":{"type":"array"}}`)
	got := s.Validate(nested(100_000, "[", "]"), "value")
	if !reflect.DeepEqual(got, []string{`"value" must be a lossless JSON value`}) {
		t.Fatalf("100k deep: %q", got)
	}
	// A deep schema validates a deep value.
	deep := mustCompile(t, string(mustEncode(deepSchema(4_000))))
	val := strings.Repeat(`{"child":`, 4_000) + `"leaf"` + strings.Repeat("}", 4_000)
	if got := deep.Validate([]byte(val), ""); got != nil {
		t.Fatalf("deep valid value: %q", got[:1])
	}
	bad := strings.Repeat(`{"child":`, 4_000) + `1` + strings.Repeat("}", 4_000)
	got = deep.Validate([]byte(bad), "")
	if len(got) != 1 || !strings.HasSuffix(got[0], `.child" must be a string`) {
		t.Fatalf("deep invalid value: %d violations", len(got))
	}
	// ValidateValue of a Go value deeper than MaxDepth.
	var v any = []any{}
	for range MaxDepth + 5 {
		v = []any{v}
	}
	if got := s.ValidateValue(v, "value"); !reflect.DeepEqual(got, []string{`"value" must be a lossless JSON value`}) {
		t.Fatalf("deep Go value: %q", got)
	}
}

func TestValidate_SmallObjectDoesNotAllocate(t *testing.T) {
	s := mustCompile(t, `{"type":"object","properties":{"path":{"type":"string"},"n":{"type":"integer","enum":[1,2]}},"required":["path"],"additionalProperties":false}`)
	v := []byte(`{"path":"x","n":2}`)
	if raceEnabled {
		t.Skip("sync.Pool drops items under -race")
	}
	s.Validate(v, "") // warm pools
	if n := testing.AllocsPerRun(100, func() {
		if s.Validate(v, "") != nil {
			panic("invalid")
		}
	}); n > 0 {
		t.Fatalf("Validate allocates %v times", n)
	}
}

func TestValidate_ManyKeys(t *testing.T) {
	s := mustCompile(t, string(manyPropsSchema(40)))
	var members []string
	for i := range 40 {
		members = append(members, `"p`+strings.Repeat("x", i)+`":`+strconv.Itoa(i))
	}
	if got := s.Validate([]byte("{"+strings.Join(members, ",")+"}"), ""); got != nil {
		t.Fatalf("got %q", got)
	}
	members[39] = `"zz":1`
	got := s.Validate([]byte("{"+strings.Join(members, ",")+"}"), "")
	want := []string{`missing required property "p` + strings.Repeat("x", 39) + `"`, `"zz" is not a declared property (additionalProperties: false)`}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q", got)
	}
}
