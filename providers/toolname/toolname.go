// Package toolname maps a scope's tool names to the names a model provider
// accepts for its functions, and back, for the provider adapters
// (providers/openai, providers/anthropic, providers/gemini). Tool names
// come from anywhere (an imported MCP tool may have dots and run to 128
// characters); a provider refuses the whole request when one function name
// breaks its rule, so a name that breaks it is sent mapped, and the calls
// the model makes by the mapped name are mapped back.
//
// It is a public package of the root module so that the adapters, each a
// module of its own, share it without importing an internal package; its
// API follows their needs.
package toolname

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
)

// Rule is a provider's rule for function names: 1 to Max bytes, the first
// one accepted by First, every other by Rest.
type Rule struct {
	Max         int
	First, Rest func(c byte) bool
}

func word(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

var (
	// OpenAI is the rule of OpenAI function names (Chat Completions and
	// Responses): ^[a-zA-Z0-9_-]{1,64}$.
	OpenAI = Rule{Max: 64, First: word, Rest: word}
	// Anthropic is the rule of Anthropic custom tool names:
	// ^[a-zA-Z0-9_-]{1,64}$.
	Anthropic = Rule{Max: 64, First: word, Rest: word}
	// Gemini is the rule of Gemini function declaration names (genai's
	// FunctionDeclaration.Name): a letter or an underscore, then letters,
	// digits, underscores, dots, colons and dashes, at most 128 in all.
	Gemini = Rule{Max: 128,
		First: func(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' },
		Rest:  func(c byte) bool { return word(c) || c == '.' || c == ':' }}
)

// Valid reports whether the provider accepts name as it is.
func (r Rule) Valid(name string) bool {
	if len(name) == 0 || len(name) > r.Max || !r.First(name[0]) {
		return false
	}
	for i := 1; i < len(name); i++ {
		if !r.Rest(name[i]) {
			return false
		}
	}
	return true
}

// hashLen is the number of hex digits of the name's SHA-256 a mapped name
// ends with (40 bits).
const hashLen = 10

// Wire returns the name sent for a tool named name: name itself when the
// provider accepts it; otherwise name with every character the rule does
// not accept replaced by "_" (prefixed with "_" where it may not start a
// name), cut so that "_" and the first ten hex digits of the SHA-256 of
// name fit after it. It depends on name alone, so it is the same on every
// request, and a mapped name is always valid.
func (r Rule) Wire(name string) string {
	if r.Valid(name) {
		return name
	}
	var b []byte
	for _, c := range name { // one "_" per rune that is not accepted
		if c < 0x80 && r.Rest(byte(c)) {
			b = append(b, byte(c))
		} else {
			b = append(b, '_')
		}
		if len(b) >= r.Max {
			break
		}
	}
	if len(b) == 0 || !r.First(b[0]) {
		b = append([]byte{'_'}, b...)
	}
	sum := sha256.Sum256([]byte(name))
	keep := min(len(b), r.Max-1-hashLen)
	return string(b[:keep]) + "_" + hex.EncodeToString(sum[:])[:hashLen]
}

// Names is the mapping of one request's tools.
type Names struct {
	rule Rule
	back map[string]string // mapped name → tool name, for the names mapped
}

// Assign maps the names of one request's tools, in order: Wire(names[i]),
// or "" for a tool left out because its mapped name is another tool's name
// (one the provider takes as it is, or the mapped name of an earlier tool):
// a name that is valid is never mapped, so it always keeps its own, and no
// two tools are sent under one name. Equal inputs give equal outputs.
func (r Rule) Assign(names []string) (wire []string, m *Names) {
	wire = make([]string, len(names))
	m = &Names{rule: r}
	var taken map[string]bool
	for _, n := range names {
		if !r.Valid(n) {
			taken = make(map[string]bool, len(names))
			break
		}
	}
	if taken == nil { // the common case: every name is sent as it is
		copy(wire, names)
		return wire, m
	}
	for _, n := range names {
		if r.Valid(n) {
			taken[n] = true
		}
	}
	for i, n := range names {
		if r.Valid(n) {
			wire[i] = n
			continue
		}
		w := r.Wire(n)
		if taken[w] {
			continue
		}
		taken[w] = true
		wire[i] = w
		if m.back == nil {
			m.back = make(map[string]string)
		}
		m.back[w] = n
	}
	return wire, m
}

// Tool returns the name of the tool the model called by the name it was
// sent under; a name that was not mapped (a tool's own name, or one the
// model made up) is returned as it is.
func (m *Names) Tool(sent string) string {
	if m != nil {
		if n, ok := m.back[sent]; ok {
			return n
		}
	}
	return sent
}

// Mapped reports whether any name was mapped.
func (m *Names) Mapped() bool { return m != nil && len(m.back) > 0 }

// ErrNameTaken explains a tool left out by Assign.
func ErrNameTaken(rule Rule, name string) error {
	return fmt.Errorf("its name is not a valid function name and its mapped name %q is another tool's", rule.Wire(name))
}

// ObjectSchema reports a parameter schema that is not an object schema,
// which no provider takes as a function's parameters: the schema must be
// absent (no parameters), null, or a JSON object whose "type", if present,
// is "object".
func ObjectSchema(params json.RawMessage) error {
	t := bytes.TrimSpace(params)
	if len(t) == 0 || string(t) == "null" {
		return nil
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(t, &top); err != nil || top == nil {
		return errors.New("its parameter schema is not a JSON object")
	}
	if v, ok := top["type"]; ok {
		var typ string
		if err := json.Unmarshal(v, &typ); err != nil || typ != "object" {
			return fmt.Errorf("its parameter schema's type must be \"object\", got %.64s", v)
		}
	}
	return nil
}
