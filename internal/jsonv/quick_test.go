package jsonv

import "testing"

var quickSchemas = []string{
	`{"type":"object","properties":{"path":{"type":"string"},"line":{"type":"integer"}},"required":["path"],"additionalProperties":false}`,
	`{"type":"object","properties":{"x":{"type":"string"}},"required":["x"]}`,
	`{"type":"object","properties":{"n":{"type":"number"},"b":{"type":"boolean"},"z":{"type":"null"},"a":{"type":"array","items":{"type":"integer"}},"o":{"type":"object","properties":{"k":{"type":"string"}},"required":["k"],"additionalProperties":false},"any":{"description":"anything"}}}`,
	`{"type":"array"}`,
	`{"type":"array","items":{"type":"array","items":{"type":"number"}}}`,
	`{"type":"string"}`,
	`{"type":"integer"}`,
	`{"description":"any"}`,
	`{"type":"string","enum":["a","b"]}`,
	`{"oneOf":[{"type":"string"},{"type":"number"}]}`,
	`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"},"c":{"type":"string"},"d":{"type":"string"},"e":{"type":"string"},"f":{"type":"string"},"g":{"type":"string"},"h":{"type":"string"},"i":{"type":"string"},"j":{"type":"string"}},"required":["a","j"],"additionalProperties":false}`,
}

// FuzzQuickValidAgreesWithValidate: whenever the quick check accepts, the
// full validator reports nothing (the quick check may decline valid input).
func FuzzQuickValidAgreesWithValidate(f *testing.F) {
	for i := range quickSchemas {
		for _, s := range fuzzJSONSeeds {
			f.Add(uint8(i), []byte(s))
		}
	}
	for _, s := range []string{`{"path":"x","line":3}`, `{"path":"x","line":3.5}`, `{"line":3}`, `{"x":"a"}`,
		`{"x":"a","x":1}`, `{"x":1,"x":"a"}`, `{"n":1e400,"a":[1,2.0,-0],"o":{"k":"v"},"any":{"q":[-0]}}`,
		`{"n":1,"b":true,"z":null,"a":[1,2],"o":{"k":"v"},"any":[{"a":null}]}`, `[[1,2],[3.5]]`, `"a\u0041"`,
		`{"a":"1","j":"2","e":"x"}`, `{"a":"1"}`, `{"n":2e308}`, `{"path":"x","line":-1e-400}`, `[1e999]`, `{"\u0078":"a"}`, `12`, `12.0`, `1e2`, `"a"`, `{"x":"a"} `} {
		for i := range quickSchemas {
			f.Add(uint8(i), []byte(s))
		}
	}
	compiled := make([]*Schema, len(quickSchemas))
	for i, s := range quickSchemas {
		compiled[i] = mustCompile(f, s)
	}
	f.Fuzz(func(t *testing.T, which uint8, v []byte) {
		s := compiled[int(which)%len(compiled)]
		if quickValid(s.root, v) {
			if vs := s.validateTape(v, ""); len(vs) > 0 {
				t.Fatalf("quick check accepted %q against %s, the validator reports %q", v, s.json, vs)
			}
		}
		if quickValid(anyNode, v) {
			if vs := (*Schema)(nil).validateTape(v, "value"); len(vs) > 0 {
				t.Fatalf("quick check accepted %q as any value, the validator reports %q", v, vs)
			}
		}
	})
}

// The quick check must take the common shapes, or it buys nothing.
func TestQuickValid_TakesCommonShapes(t *testing.T) {
	for _, tc := range []struct {
		schema int
		v      string
		want   bool
	}{
		{0, `{"path":"x","line":3}`, true},
		{0, `{"path":"x"}`, true},
		{0, `{"line":3}`, false},         // missing required
		{0, `{"path":"x","q":1}`, false}, // closed
		{0, `{"path":"x","line":3.5}`, false},
		{0, `{ "path":"x"}`, false}, // not compact: declined
		{1, `{"x":"a","extra":[1,{"y":null}]}`, true},
		{2, `{"n":1,"b":true,"z":null,"a":[1,2],"o":{"k":"v"},"any":[{"a":null}]}`, true},
		{2, `{"any":[-0]}`, false},
		{5, `"a\u0041"`, true},
		{8, `"a"`, false}, // enum: declined
		{9, `"a"`, false}, // oneOf: declined
		{10, `{"a":"1","j":"2","e":"x"}`, true},
	} {
		s := mustCompile(t, quickSchemas[tc.schema])
		if got := quickValid(s.root, []byte(tc.v)); got != tc.want {
			t.Errorf("quickValid(%s, %s) = %v, want %v", quickSchemas[tc.schema], tc.v, got, tc.want)
		}
		if got := len(s.Validate([]byte(tc.v), "")) == 0; tc.want && !got {
			t.Errorf("Validate(%s) reports violations", tc.v)
		}
	}
}
