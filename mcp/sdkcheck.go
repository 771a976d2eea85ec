package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The go-sdk's Server.AddTool panics on a tool it refuses. The exporter
// checks each tool against the same rules first (sdkRefuses), so such a
// tool is left out with a warning, and recovers around AddTool as a last
// resort (addTool) should the two ever disagree. The rules, from the go-sdk
// (v1.8.0, mcp/server.go AddTool and mcp/streamable_headers.go): the input
// schema, decoded with exact (case-sensitive) keys and a nesting bound of
// 1,000, has "type" equal to the string "object"; the output schema, when
// present, decodes; and every x-mcp-header annotation, at any depth of
// "properties", sits on a property of type string, integer or boolean, is a
// non-empty HTTP token, and is unique across the schema ignoring case.

// sdkMaxDepth is the go-sdk's JSON nesting bound.
const sdkMaxDepth = 1000

// sdkRefuses reports why the go-sdk's AddTool would refuse t, or nil.
func sdkRefuses(t *sdk.Tool) error {
	in, err := json.Marshal(t.InputSchema)
	if err != nil {
		return fmt.Errorf("input schema: %w", err)
	}
	if tooDeep(in) {
		return errors.New("input schema: nested too deeply")
	}
	var m map[string]any
	if err := json.Unmarshal(in, &m); err != nil {
		return fmt.Errorf(`MCP needs an input schema of type "object": %w`, err)
	}
	if m["type"] != "object" {
		return errors.New(`MCP needs an input schema of type "object"`)
	}
	if t.OutputSchema != nil {
		out, err := json.Marshal(t.OutputSchema)
		if err != nil {
			return fmt.Errorf("output schema: %w", err)
		}
		if tooDeep(out) {
			return errors.New("output schema: nested too deeply")
		}
	}
	root, ok := decodeHeaderSchema(in)
	if !ok || len(root.props) == 0 {
		return nil // the go-sdk checks no header annotation then
	}
	return checkHeaders(root.props, "", map[string]bool{})
}

// isObjectSchema reports whether b is a JSON object whose "type" (exact
// key) is "object".
func isObjectSchema(b json.RawMessage) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return false
	}
	var typ string
	return json.Unmarshal(m["type"], &typ) == nil && typ == "object"
}

// tooDeep reports whether JSON text nests objects and arrays deeper than
// the go-sdk accepts.
func tooDeep(b []byte) bool {
	depth := 0
	inString, escaped := false, false
	for _, c := range b {
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
			if depth > sdkMaxDepth {
				return true
			}
		case '}', ']':
			depth--
		}
	}
	return false
}

// headerSchema is the part of a schema the go-sdk reads for x-mcp-header.
type headerSchema struct {
	typ       string
	header    json.RawMessage
	hasHeader bool
	props     map[string]*headerSchema
}

// decodeHeaderSchema decodes b as the go-sdk does (exact keys): ok is false
// when that decoding fails, in which case the go-sdk checks nothing.
func decodeHeaderSchema(b json.RawMessage) (*headerSchema, bool) {
	s := &headerSchema{}
	if isNull(b) {
		return s, true
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return nil, false
	}
	if v, ok := m["type"]; ok && !isNull(v) {
		if json.Unmarshal(v, &s.typ) != nil {
			return nil, false
		}
	}
	if v, ok := m["x-mcp-header"]; ok {
		s.header, s.hasHeader = v, true
	}
	if v, ok := m["properties"]; ok && !isNull(v) {
		var pm map[string]json.RawMessage
		if json.Unmarshal(v, &pm) != nil {
			return nil, false
		}
		s.props = make(map[string]*headerSchema, len(pm))
		for k, pv := range pm {
			c, ok := decodeHeaderSchema(pv)
			if !ok {
				return nil, false
			}
			s.props[k] = c
		}
	}
	return s, true
}

func isNull(b json.RawMessage) bool { return string(bytes.TrimSpace(b)) == "null" }

func checkHeaders(props map[string]*headerSchema, prefix string, seen map[string]bool) error {
	for name, p := range props {
		path := name
		if prefix != "" {
			path = prefix + "." + name
		}
		if p.hasHeader {
			if p.typ != "string" && p.typ != "integer" && p.typ != "boolean" {
				return fmt.Errorf("property %q: x-mcp-header on a property of type %q (MCP allows integer, string, boolean)", path, p.typ)
			}
			var h string
			if json.Unmarshal(p.header, &h) != nil || h == "" {
				return fmt.Errorf("property %q: x-mcp-header must be a non-empty string", path)
			}
			for _, c := range h {
				if !isTChar(c) {
					return fmt.Errorf("property %q: x-mcp-header %q contains %q", path, h, c)
				}
			}
			lower := strings.ToLower(h)
			if seen[lower] {
				return fmt.Errorf("property %q: x-mcp-header %q repeated (case-insensitive)", path, h)
			}
			seen[lower] = true
		}
		if len(p.props) > 0 {
			if err := checkHeaders(p.props, path, seen); err != nil {
				return err
			}
		}
	}
	return nil
}

// isTChar reports whether c is an HTTP token character (RFC 9110 tchar).
func isTChar(c rune) bool {
	switch {
	case c >= '0' && c <= '9', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		return true
	}
	return strings.ContainsRune("!#$%&'*+-.^_`|~", c)
}

// addTool adds t to the tool set's go-sdk server, turning a panic of the
// go-sdk's AddTool (a rule sdkRefuses does not know) into an error.
func (ts *toolSet) addTool(t *sdk.Tool) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the go-sdk refused the tool: %v", r)
		}
	}()
	ts.sdk.AddTool(t, ts.call)
	return nil
}
