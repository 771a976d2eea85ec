package runtime

import "github.com/toolscope/toolscope/internal/jsonv"

// ValidateValue checks value against schema with the registry's own value
// validation (R102) and wording, as it checks a tool's output: the
// root is labelled "value" (`"value.items[2]" must be a string`). It
// returns every violation in walk order, or nil when value is valid.
//
// schema is what Output.Schema accepts (a json.RawMessage, or Go values
// such as map[string]any) and must be in the subset of docs/contract.md#schema (R100);
// otherwise ValidateValue returns no violations and the same coded
// UNSUPPORTED_SCHEMA error Register would (an *Error listing every
// violation). To check against a registered tool's schemas, pass the
// Output.Schema or Parameters of the Definition that Get returns.
//
// value may be any Go value. Parts outside the lossless JSON set (NaN,
// ±Inf, −0, cycles, unsupported Go types) are reported as violations where
// they occur, as R102 words them (`"value.n" must be a finite JSON
// number`, `"value" must be a lossless JSON object`), never as an error. A
// json.RawMessage is read as the JSON value it holds. Note that Execute
// refuses an output that is not lossless JSON before it validates it (R62
// step 1: "value is not lossless JSON"); ValidateValue says where.
//
// The schema is compiled on every call; it is meant for hosts checking
// values now and then, not for a hot path. A schema whose JSON text is
// longer than DefaultMaxSchemaBytes is refused, unread, with the same
// UNSUPPORTED_SCHEMA error.
func ValidateValue(schema, value any) ([]string, error) {
	return validateWith(schema, value, "value")
}

// ValidateArguments is ValidateValue for tool-call arguments, worded as
// the typed helper's INVALID_ARGS violations (R102, R105): the root is
// shown as `arguments` and properties carry no prefix (`missing required
// property "path"`, `"servers[1].host" must be a string`).
func ValidateArguments(schema, args any) ([]string, error) {
	return validateWith(schema, args, "")
}

func validateWith(schema, value any, rootLabel string) ([]string, error) {
	if err := checkSchemaSize("given", schema, DefaultMaxSchemaBytes); err != nil {
		return nil, err
	}
	s, violations := jsonv.CompileSchema(schema)
	if len(violations) > 0 {
		return nil, unsupportedSchema(violations)
	}
	return s.ValidateValue(value, rootLabel), nil
}
