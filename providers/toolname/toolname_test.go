package toolname

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestWire_ValidKeptInvalidMappedToValidDeterministicNames(t *testing.T) {
	names := []string{"plain", "a.b", "a:b", "a b", "", "é", "9lives", ".dot", strings.Repeat("x", 200), strings.Repeat("é", 70)}
	for _, r := range []Rule{OpenAI, Anthropic, Gemini} {
		seen := map[string]string{}
		for _, n := range names {
			w := r.Wire(n)
			if !r.Valid(w) || r.Wire(n) != w {
				t.Fatalf("Wire(%q) = %q (max %d)", n, w, r.Max)
			}
			if r.Valid(n) && w != n {
				t.Fatalf("valid %q mapped to %q", n, w)
			}
			if o, dup := seen[w]; dup {
				t.Fatalf("%q and %q both %q", n, o, w)
			}
			seen[w] = n
		}
	}
	if !Gemini.Valid("fs.read:file-1") || OpenAI.Valid("fs.read") || Gemini.Valid("9lives") || !OpenAI.Valid("9lives") {
		t.Fatal("rules")
	}
}

func TestAssign_ValidNamesWinAndNoTwoToolsShareAName(t *testing.T) {
	taken := OpenAI.Wire("a.b")
	wire, m := OpenAI.Assign([]string{"a.b", taken, "c.d"})
	if wire[0] != "" || wire[1] != taken || wire[2] != OpenAI.Wire("c.d") {
		t.Fatalf("%q", wire)
	}
	if m.Tool(wire[2]) != "c.d" || m.Tool(taken) != taken || m.Tool("unknown.x") != "unknown.x" || !m.Mapped() {
		t.Fatal("back mapping")
	}
	wire, m = OpenAI.Assign([]string{"a", "b"})
	if wire[0] != "a" || wire[1] != "b" || m.Mapped() {
		t.Fatalf("%q", wire)
	}
}

func TestObjectSchema(t *testing.T) {
	for s, ok := range map[string]bool{"": true, "null": true, `{}`: true, `{"type":"object"}`: true,
		`{"type":"string"}`: false, `[]`: false, `{"type":["object","null"]}`: false, `true`: false} {
		if err := ObjectSchema(json.RawMessage(s)); (err == nil) != ok {
			t.Fatalf("%s: %v", s, err)
		}
	}
}
