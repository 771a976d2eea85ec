package openai

import (
	"encoding/json"
	"fmt"

	"github.com/toolscope/toolscope/lossless"
)

// Limits of OpenAI's strict subset (Structured Outputs, "supported
// schemas"): a schema beyond them is sent with strict: false.
const (
	strictMaxProperties = 5000 // object properties in total
	strictMaxDepth      = 10   // object nesting levels
	strictMaxEnum       = 1000 // enum values in total
)

// strictKeywords are the keywords OpenAI's strict mode accepts. Anything
// else (oneOf, allOf, not, if/then/else, patternProperties, minLength,
// minProperties, default, examples, ...) makes a schema non-strict.
var strictKeywords = map[string]bool{
	"type": true, "properties": true, "required": true, "additionalProperties": true,
	"items": true, "enum": true, "const": true, "anyOf": true,
	"$ref": true, "$defs": true, "definitions": true,
	"description": true, "title": true,
	"pattern": true, "format": true,
	"multipleOf": true, "maximum": true, "minimum": true,
	"exclusiveMaximum": true, "exclusiveMinimum": true,
	"minItems": true, "maxItems": true,
}

// strictFormats are the string formats strict mode accepts.
var strictFormats = map[string]bool{
	"date-time": true, "time": true, "date": true, "duration": true, "email": true,
	"hostname": true, "ipv4": true, "ipv6": true, "uuid": true,
}

var strictTypes = map[string]bool{
	"object": true, "array": true, "string": true, "number": true,
	"integer": true, "boolean": true, "null": true,
}

// StrictParameters decides whether a tool's parameter schema can be sent
// with strict: true, and returns the schema to send.
//
// The rule: strict is on only when the whole schema lies in OpenAI's strict
// subset, possibly after closing it, and closing never changes what the
// tool accepts in a way that matters:
//
//   - the root is an object schema ("type": "object"), not a union;
//   - every node uses only the strict keywords (type, properties, required,
//     additionalProperties, items, enum, const, anyOf, $ref to "#..." with
//     $defs/definitions, description, title, pattern, format of
//     date-time/time/date/duration/email/hostname/ipv4/ipv6/uuid,
//     multipleOf, maximum, minimum, exclusiveMaximum, exclusiveMinimum,
//     minItems, maxItems); "type" is a type name or an array of them;
//   - every object declares "properties", and "required" lists every one
//     of them: an optional property cannot be expressed in strict mode
//     without changing the tool's contract, so such a schema stays
//     non-strict (an absent "required" is added as [] only when there are
//     no properties);
//   - every object's additionalProperties is false, or absent: an absent
//     one is closed (set to false), which is safe because every value the
//     closed schema admits the open one admits too, and the model was told
//     the declared properties anyway. additionalProperties true or a schema
//     (a map) is left alone and the schema stays non-strict;
//   - every array has an "items" schema;
//   - at most 5000 properties, 10 levels of object nesting and 1000 enum
//     values in total.
//
// When strict is false the returned schema is params unchanged (compacted);
// when it is true it is the closed copy. Key order is kept in both cases.
// The error reports parameters that are not a JSON value at all.
func StrictParameters(params json.RawMessage) (schema json.RawMessage, strict bool, err error) {
	if len(params) == 0 {
		// No parameters: a tool without arguments; strict with the empty
		// closed object.
		return json.RawMessage(`{"type":"object","properties":{},"required":[],"additionalProperties":false}`), true, nil
	}
	tree, err := lossless.Decode(params)
	if err != nil {
		return nil, false, fmt.Errorf("openai: tool parameters: %w", err)
	}
	root, ok := tree.(*lossless.Object)
	if !ok || !isType(root, "object") {
		return compactSchema(params)
	}
	c := strictCheck{}
	if !c.node(root, 0) {
		return compactSchema(params)
	}
	out, err := lossless.Encode(root)
	if err != nil {
		return nil, false, fmt.Errorf("openai: tool parameters: %w", err)
	}
	return out, true, nil
}

func compactSchema(params json.RawMessage) (json.RawMessage, bool, error) {
	out, err := lossless.Canonical(params)
	if err != nil {
		return nil, false, fmt.Errorf("openai: tool parameters: %w", err)
	}
	return out, false, nil
}

// isType reports whether o's "type" is exactly the string t.
func isType(o *lossless.Object, t string) bool {
	v, _ := o.Get("type")
	s, ok := v.(string)
	return ok && s == t
}

// hasType reports whether o's "type" names t, alone or in a type array.
func hasType(o *lossless.Object, t string) bool {
	switch v := get(o, "type").(type) {
	case string:
		return v == t
	case []any:
		for _, e := range v {
			if s, _ := e.(string); s == t {
				return true
			}
		}
	}
	return false
}

func get(o *lossless.Object, k string) any { v, _ := o.Get(k); return v }

// strictCheck walks a schema tree, closing objects as it goes. The tree is
// a private copy (decoded for this call), so closing in place is fine; a
// failed check discards it.
type strictCheck struct {
	props, enums int
}

func (c *strictCheck) node(o *lossless.Object, depth int) bool {
	for i, k := range o.Keys {
		if !strictKeywords[k] {
			return false
		}
		v := o.Values[i]
		switch k {
		case "type":
			if !c.typeValue(v) {
				return false
			}
		case "format":
			if s, ok := v.(string); !ok || !strictFormats[s] {
				return false
			}
		case "enum":
			a, ok := v.([]any)
			if !ok || len(a) == 0 {
				return false
			}
			if c.enums += len(a); c.enums > strictMaxEnum {
				return false
			}
		case "anyOf":
			a, ok := v.([]any)
			if !ok || len(a) == 0 {
				return false
			}
			for _, e := range a {
				if !c.child(e, depth) {
					return false
				}
			}
		case "$defs", "definitions":
			defs, ok := v.(*lossless.Object)
			if !ok {
				return false
			}
			for _, d := range defs.Values {
				if !c.child(d, depth) {
					return false
				}
			}
		case "$ref":
			if s, ok := v.(string); !ok || s == "" || s[0] != '#' {
				return false
			}
		case "items":
			if !c.child(v, depth) {
				return false
			}
		case "description", "title", "pattern":
			if _, ok := v.(string); !ok {
				return false
			}
		}
	}
	if hasType(o, "array") {
		if _, ok := o.Get("items"); !ok {
			return false
		}
	}
	_, hasProps := o.Get("properties")
	if hasType(o, "object") || hasProps {
		return c.object(o, depth+1)
	}
	for _, k := range [...]string{"required", "additionalProperties"} {
		if _, ok := o.Get(k); ok {
			return false // object keywords on a node that is not an object
		}
	}
	return true
}

func (c *strictCheck) child(v any, depth int) bool {
	o, ok := v.(*lossless.Object)
	return ok && c.node(o, depth)
}

func (c *strictCheck) typeValue(v any) bool {
	switch t := v.(type) {
	case string:
		return strictTypes[t]
	case []any:
		if len(t) == 0 {
			return false
		}
		for _, e := range t {
			if s, ok := e.(string); !ok || !strictTypes[s] {
				return false
			}
		}
		return true
	}
	return false
}

// object checks (and closes) one object node at nesting level depth.
func (c *strictCheck) object(o *lossless.Object, depth int) bool {
	if depth > strictMaxDepth {
		return false
	}
	props, ok := get(o, "properties").(*lossless.Object)
	if !ok {
		return false // a free-form object: closing it would forbid every key
	}
	if c.props += props.Len(); c.props > strictMaxProperties {
		return false
	}
	for _, p := range props.Values {
		if !c.child(p, depth) {
			return false
		}
	}
	switch ap, present := o.Get("additionalProperties"); {
	case !present:
		o.Keys, o.Values = append(o.Keys, "additionalProperties"), append(o.Values, false)
	case ap != false:
		return false // open on purpose, or a map
	}
	req, present := o.Get("required")
	if !present {
		if props.Len() > 0 {
			return false // every property optional
		}
		o.Keys, o.Values = append(o.Keys, "required"), append(o.Values, []any{})
		return true
	}
	list, ok := req.([]any)
	if !ok || len(list) != props.Len() {
		return false
	}
	seen := make(map[string]bool, len(list))
	for _, e := range list {
		s, ok := e.(string)
		if !ok || seen[s] {
			return false
		}
		if _, declared := props.Get(s); !declared {
			return false
		}
		seen[s] = true
	}
	return true
}
