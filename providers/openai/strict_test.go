package openai_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolscope/toolscope/providers/openai"
)

func TestStrictParameters_Rule(t *testing.T) {
	deep := `{"type":"string"}`
	for range 11 {
		deep = `{"type":"object","properties":{"d":` + deep + `},"required":["d"],"additionalProperties":false}`
	}
	ten := `{"type":"string"}`
	for range 10 {
		ten = `{"type":"object","properties":{"d":` + ten + `},"required":["d"]}`
	}
	bigEnum := `{"type":"object","properties":{"e":{"type":"integer","enum":[` + strings.Repeat("1,", 1000) + `1]}},"required":["e"]}`
	for _, c := range []struct {
		name, params string
		strict       bool
		want         string
	}{
		{"empty", ``, true, `{"type":"object","properties":{},"required":[],"additionalProperties":false}`},
		{"defs and refs are closed too",
			`{"type":"object","$defs":{"p":{"type":"object","properties":{"x":{"type":"number","minimum":0}},"required":["x"]}},"properties":{"a":{"$ref":"#/$defs/p"},"l":{"type":"array","items":{"$ref":"#/$defs/p"},"maxItems":3}},"required":["a","l"]}`,
			true,
			`{"type":"object","$defs":{"p":{"type":"object","properties":{"x":{"type":"number","minimum":0}},"required":["x"],"additionalProperties":false}},"properties":{"a":{"$ref":"#/$defs/p"},"l":{"type":"array","items":{"$ref":"#/$defs/p"},"maxItems":3}},"required":["a","l"],"additionalProperties":false}`},
		{"anyOf inside", `{"type":"object","properties":{"v":{"anyOf":[{"type":"string","format":"email"},{"type":"null"}]}},"required":["v"]}`, true,
			`{"type":"object","properties":{"v":{"anyOf":[{"type":"string","format":"email"},{"type":"null"}]}},"required":["v"],"additionalProperties":false}`},
		{"anyOf at the root", `{"anyOf":[{"type":"object","properties":{},"required":[]}]}`, false, ""},
		{"array without items", `{"type":"object","properties":{"l":{"type":"array"}},"required":["l"]}`, false, ""},
		{"unsupported format", `{"type":"object","properties":{"u":{"type":"string","format":"uri"}},"required":["u"]}`, false, ""},
		{"default", `{"type":"object","properties":{"u":{"type":"string","default":"x"}},"required":["u"]}`, false, ""},
		{"map", `{"type":"object","properties":{},"additionalProperties":{"type":"string"}}`, false, ""},
		{"required twice", `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"required":["a","a"]}`, false, ""},
		{"remote ref", `{"type":"object","properties":{"a":{"$ref":"https://x/y"}},"required":["a"]}`, false, ""},
		{"ten levels", ten, true, ""},
		{"eleven levels", deep, false, ""},
		{"1001 enum values", bigEnum, false, ""},
		{"not an object root", `{"type":"string"}`, false, `{"type":"string"}`},
	} {
		got, strict, err := openai.StrictParameters(json.RawMessage(c.params))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if strict != c.strict {
			t.Errorf("%s: strict %v, want %v", c.name, strict, c.strict)
		}
		want := c.want
		if want == "" && !c.strict {
			want = c.params // unchanged when not strict
		}
		if want != "" && string(got) != want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, want)
		}
	}
	if _, _, err := openai.StrictParameters(json.RawMessage(`{"type":`)); err == nil {
		t.Error("invalid JSON accepted")
	}
}
