package codemode

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/toolscope/toolscope/runtime"
)

// describe writes run_code's model-facing description for one view: what
// a program is, one function stub per tool of the view (its parameters,
// their types and the tool's description), the helpers and the limits.
// Only the view's tools are named, so a hidden tool never appears.
func (e *engine) describe(_ string, tools []runtime.ToolSchema) string {
	var sb strings.Builder
	sb.WriteString("Run a Starlark program (a small Python dialect: no imports, classes, try/except or recursion) " +
		"that calls the tools below as functions, combines their results and returns one answer. " +
		"The program's value is its last expression (or a global named result); print() output is returned with it.\n")
	if len(tools) > 0 {
		sb.WriteString("\nTools (keyword arguments only; a call returns the tool's structured value, else its text; a failed call raises an error with the tool's message and code):\n")
		for _, t := range tools {
			if t.Name == runtime.RunCodeName {
				continue
			}
			writeStub(&sb, t)
		}
	}
	l := e.lim
	fmt.Fprintf(&sb, "\nHelpers:\n"+
		"call(name, **args) -> result: never raises for a tool failure; result.ok, .value, .text, .error, .code\n"+
		"parallel([(name, {args}), ...], limit=%d) -> [result, ...] in order; parallel-classified tools overlap\n"+
		"json.encode(x), json.decode(s), math.*, sum(iterable, start=0)\n"+
		"\nLimits: %d steps, %d tool calls, %s, %d bytes of print output and of value, %d bytes of program, "+
		"%d elements or bytes per list, string or range.\n",
		l.Parallel, l.Steps, l.Calls, l.Time, l.Output, l.Program, l.Size)
	return sb.String()
}

// writeStub writes one tool as a def line and its description.
func writeStub(sb *strings.Builder, t runtime.ToolSchema) {
	params := stubParams(t.Parameters)
	if callable(t.Name) {
		fmt.Fprintf(sb, "def %s(%s)", t.Name, strings.Join(params, ", "))
	} else {
		fmt.Fprintf(sb, "call(%q", t.Name)
		for _, p := range params {
			sb.WriteString(", " + p)
		}
		sb.WriteString(")")
	}
	if d := oneLine(t.Description); d != "" {
		sb.WriteString(": " + d)
	}
	sb.WriteByte('\n')
}

// stubParams lists a parameters schema's properties in order: "name: type",
// then " = None" for an optional one, then "  # description" folded in.
func stubParams(schema json.RawMessage) []string {
	props, required := properties(schema)
	req := map[string]bool{}
	for _, r := range required {
		req[r] = true
	}
	var out []string
	for _, p := range props {
		s := p.name + ": " + pyType(p.schema)
		if !req[p.name] {
			s += " = None"
		}
		if d := oneLine(p.description); d != "" {
			s += " (" + d + ")"
		}
		out = append(out, s)
	}
	return out
}

type prop struct {
	name, description string
	schema            map[string]any
}

// properties reads "properties" in key order and "required".
func properties(schema json.RawMessage) ([]prop, []string) {
	if len(schema) == 0 {
		return nil, nil
	}
	var top struct {
		Properties json.RawMessage `json:"properties"`
		Required   []string        `json:"required"`
	}
	if json.Unmarshal(schema, &top) != nil || len(top.Properties) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(top.Properties))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, top.Required
	}
	var out []prop
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			break
		}
		var m map[string]any
		if dec.Decode(&m) != nil {
			break
		}
		k, _ := kt.(string)
		d, _ := m["description"].(string)
		out = append(out, prop{name: k, description: d, schema: m})
	}
	return out, top.Required
}

// pyType names a property schema's type as a Python annotation.
func pyType(s map[string]any) string {
	if e, ok := s["enum"].([]any); ok && len(e) > 0 && len(e) <= 8 {
		parts := make([]string, len(e))
		for i, v := range e {
			b, _ := json.Marshal(v)
			parts[i] = string(b)
		}
		return "one of " + strings.Join(parts, "|")
	}
	switch t := s["type"].(type) {
	case string:
		return jsonType(t, s)
	case []any:
		var parts []string
		for _, x := range t {
			if ts, ok := x.(string); ok {
				parts = append(parts, jsonType(ts, s))
			}
		}
		return strings.Join(parts, "|")
	}
	return "any"
}

func jsonType(t string, s map[string]any) string {
	switch t {
	case "string":
		return "str"
	case "integer":
		return "int"
	case "number":
		return "float"
	case "boolean":
		return "bool"
	case "null":
		return "None"
	case "array":
		if items, ok := s["items"].(map[string]any); ok {
			return "list[" + pyType(items) + "]"
		}
		return "list"
	case "object":
		return "dict"
	}
	return "any"
}

// oneLine folds a description onto one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
