package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"
	"unsafe"

	"github.com/toolscope/toolscope/internal/jsonv"
)

// typedInfo is what NewTool adds to a Definition: the compiled parameter
// schema that guards the body (R105) and the classifier (R106).
type typedInfo struct {
	params     *jsonv.Schema
	classifier func(context.Context, json.RawMessage) (bool, error) // the author's, unwrapped
	// The helper's body only reads its argument bytes (decodes them), so
	// it needs no private copy.
	alwaysParallel bool
	defaultRender  bool
	// execPtr identifies the helper's body: the typed shortcuts apply only
	// while the definition still runs it (a caller may replace Execute).
	execPtr  uintptr
	classPtr uintptr // likewise for IsConcurrencySafe
	// output is the output schema derived from Out (nil when given with
	// WithOutputSchema): Register reuses its compiled form while the
	// definition still holds the same schema text.
	output *derivedSchema
	// paramsDerived likewise for the parameter schema derived from In.
	paramsDerived *derivedSchema
}

// derivedSchema is a schema derived from a Go type by NewTool (immutable).
// Definitions get their own copies of raw.
type derivedSchema struct {
	raw    []byte // canonical JSON
	schema *jsonv.Schema
	err    error // an UNSUPPORTED_SCHEMA error
}

// deriveSchema derives and compiles the schema of t. It is computed for
// each NewTool, not cached by type: the package keeps no state of its own,
// and NewTool runs when a tool is defined, never on a call's path.
func deriveSchema(t reflect.Type, root bool) *derivedSchema {
	d := &derivedSchema{}
	if b, err := jsonv.ForType(t, root); err != nil {
		d.err = unsupportedSchema([]string{err.Error()})
	} else if schema, violations := jsonv.CompileSchema(json.RawMessage(b)); len(violations) > 0 {
		d.err = unsupportedSchema(violations)
	} else if d.raw, err = jsonv.Encode(json.RawMessage(b)); err != nil {
		d.err = unsupportedSchema([]string{"schema must be a schema object"})
	} else {
		d.schema = schema
	}
	return d
}

// ToolOption configures NewTool.
type ToolOption interface{ applyTool(*toolOptions) }

type toolOptions struct {
	params any
	// maxSchema bounds params and output (WithMaxSchemaBytes); nil: the
	// default.
	maxSchema  *MaxSchemaBytesOption
	output     any
	timeout    *time.Duration
	classifier func(ctx context.Context, args json.RawMessage) (bool, error)
	parallel   bool
	render     func(ctx context.Context, args, value json.RawMessage) ([]Block, error)
	meta       func(ctx context.Context, args, value json.RawMessage) (any, error)
	finalize   func(context.Context, Execution, *Result) ([]Block, error)
}

type toolOptionFunc func(*toolOptions)

func (f toolOptionFunc) applyTool(o *toolOptions) { f(o) }

// WithParametersSchema gives the parameter schema explicitly instead of
// deriving it from In. It must be in the subset of docs/contract.md#schema.
func WithParametersSchema(schema any) ToolOption {
	return toolOptionFunc(func(o *toolOptions) { o.params = schema })
}

// WithOutputSchema gives the output schema explicitly instead of deriving
// it from Out.
func WithOutputSchema(schema any) ToolOption {
	return toolOptionFunc(func(o *toolOptions) { o.output = schema })
}

// WithTimeout declares the tool's timeout. A registry enforces it by
// default, counted from the call's dispatch (R83); one created with
// WithoutTimeouts treats it as metadata (R19).
func WithTimeout(d time.Duration) ToolOption {
	return toolOptionFunc(func(o *toolOptions) { o.timeout = &d })
}

// WithParallel classifies every call with valid arguments as parallel.
func WithParallel() ToolOption {
	return toolOptionFunc(func(o *toolOptions) {
		o.classifier = func(context.Context, json.RawMessage) (bool, error) { return true, nil }
		o.parallel = true
	})
}

// WithClassifier sets the classifier; it is only called for valid
// arguments (R106). Its ctx is IsConcurrencySafe's.
func WithClassifier(f func(ctx context.Context, args json.RawMessage) (bool, error)) ToolOption {
	return toolOptionFunc(func(o *toolOptions) { o.classifier = f })
}

// WithRender sets the renderer (default: a JSON string value as its text,
// anything else as compact JSON text). Its ctx carries the execution.
func WithRender(f func(ctx context.Context, args, value json.RawMessage) ([]Block, error)) ToolOption {
	return toolOptionFunc(func(o *toolOptions) { o.render = f })
}

// WithPresentationMeta sets the presentation-metadata projector (R64). Its
// ctx carries the execution.
func WithPresentationMeta(f func(ctx context.Context, args, value json.RawMessage) (any, error)) ToolOption {
	return toolOptionFunc(func(o *toolOptions) { o.meta = f })
}

// WithFinalizer sets the content finalizer (R72).
func WithFinalizer(f func(context.Context, Execution, *Result) ([]Block, error)) ToolOption {
	return toolOptionFunc(func(o *toolOptions) { o.finalize = f })
}

// NewTool defines a typed tool (R105). The parameter and output
// schemas are derived from In and Out (encoding/json conventions: json
// tags, omitempty marks optional; a `description` tag documents a field)
// or given with WithParametersSchema / WithOutputSchema, and checked
// against the subset of docs/contract.md#schema: a violation is an UNSUPPORTED_SCHEMA
// error listing every violation. Arguments are validated before fn runs;
// invalid ones fail with INVALID_ARGS and every violation with its path.
func NewTool[In, Out any](name, description string, fn func(ctx context.Context, in In, rc *RunContext) (Out, error), opts ...ToolOption) (Definition, error) {
	if err := checkToolName(name); err != nil {
		return Definition{}, err
	}
	if fn == nil {
		return Definition{}, fmt.Errorf("%w: tool %q needs a func to run (NewTool's fn is nil)", ErrInvalidDefinition, name)
	}
	var o toolOptions
	for _, opt := range opts {
		if opt != nil {
			opt.applyTool(&o)
		}
	}
	if o.timeout != nil && *o.timeout <= 0 {
		return Definition{}, fmt.Errorf("%w: tool %q: timeout must be positive, got %v", ErrInvalidDefinition, name, *o.timeout)
	}
	maxSchema := DefaultMaxSchemaBytes
	if o.maxSchema != nil {
		if err := o.maxSchema.check(); err != nil {
			return Definition{}, err
		}
		maxSchema = o.maxSchema.n
	}
	if err := checkSchemaSize("parameters", o.params, maxSchema); err != nil {
		return Definition{}, err
	}
	if err := checkSchemaSize("output", o.output, maxSchema); err != nil {
		return Definition{}, err
	}
	var pschema *jsonv.Schema
	var pjson []byte
	var paramsDerived *derivedSchema
	if o.params == nil {
		paramsDerived = deriveSchema(reflect.TypeFor[In](), true)
		if paramsDerived.err != nil {
			return Definition{}, paramsDerived.err
		}
		pschema, pjson = paramsDerived.schema, bytes.Clone(paramsDerived.raw)
	} else {
		var violations []string
		if pschema, violations = jsonv.CompileSchema(o.params); len(violations) > 0 {
			return Definition{}, unsupportedSchema(violations)
		}
		pjson = pschema.JSON() // the canonical text CompileSchema wrote once
	}
	output := o.output
	var outDerived *derivedSchema
	if output == nil {
		outDerived = deriveSchema(reflect.TypeFor[Out](), false)
		if outDerived.err != nil {
			return Definition{}, outDerived.err
		}
		output = json.RawMessage(bytes.Clone(outDerived.raw))
	} else if _, violations := jsonv.CompileSchema(output); len(violations) > 0 {
		return Definition{}, unsupportedSchema(violations)
	}
	render := o.render
	if render == nil {
		render = defaultRender
	}
	def := Definition{
		Name:            name,
		Description:     description,
		Parameters:      json.RawMessage(pjson),
		Output:          &Output{Schema: output, Render: render, PresentationMeta: o.meta},
		FinalizeContent: o.finalize,
		Timeout:         o.timeout,
		typed:           &typedInfo{params: pschema, classifier: o.classifier, alwaysParallel: o.parallel, defaultRender: o.render == nil, output: outDerived, paramsDerived: paramsDerived},
	}
	// Arguments decode as encoding/json would, through a decoder compiled
	// for In where jsonv can reproduce it exactly (nil: encoding/json).
	dec := jsonv.UnmarshalerFor(reflect.TypeFor[In]())
	plain := isPlain(reflect.TypeFor[Out]())
	stringOut := reflect.TypeFor[Out]().Kind() == reflect.String
	def.Execute = func(ctx context.Context, args json.RawMessage, rc *RunContext) (any, error) {
		// direct: the registry itself called this body (not another body or
		// a wrapper holding rc), so the output may go through the side
		// channel. Taken once, at entry, so a nested direct call of another
		// typed body from fn sees false.
		direct := false
		if rc != nil && rc.s != nil {
			direct, rc.s.directBody = rc.s.directBody, false
		}
		// R105: validated inside the body, unless this execution's
		// classification already checked the same bytes against pschema.
		if rc == nil || rc.s == nil || rc.s.argsChecked != pschema {
			if v := pschema.Validate(args, ""); len(v) > 0 {
				return nil, NewError(NameToolArgs, CodeInvalidArgs, "invalid arguments: "+typedArgsMessage(rc, args, v))
			}
		}
		var in In
		if dec == nil || !dec.Unmarshal(args, unsafe.Pointer(&in)) {
			// Outside the fast decoder's subset (or a partial write):
			// encoding/json from a zero value decides, errors included.
			var zero In
			in = zero
			if err := json.Unmarshal(args, &in); err != nil {
				return nil, NewError(NameToolArgs, CodeInvalidArgs, "invalid arguments: "+err.Error())
			}
		}
		out, err := fn(ctx, in, rc)
		if err != nil {
			return nil, err
		}
		if stringOut && direct {
			// Snapshot a string output here, straight into the execution,
			// without boxing it (success creation picks it up).
			str := *(*string)(unsafe.Pointer(&out))
			rc.s.typedOut = jsonv.AppendString(make([]byte, 0, len(str)+2), str)
			return typedOutMarker{}, nil
		}
		if plain {
			// A string, bool or number is already a lossless JSON value
			// (R47); success creation snapshots it without a round trip
			// through encoding/json.
			return plainValue(out), nil
		}
		b, err := json.Marshal(out)
		if err != nil {
			// R62 step 1: a value that cannot be snapshotted as JSON (NaN,
			// ±Inf, a func or chan field, a failing MarshalJSON) is the
			// INVALID_TOOL_OUTPUT "value is not lossless JSON" a raw tool
			// gets for the same value, not a body error.
			return notLosslessValue{}, nil
		}
		return json.RawMessage(b), nil
	}
	def.typed.execPtr = reflect.ValueOf(def.Execute).Pointer()
	if c := o.classifier; c != nil {
		def.IsConcurrencySafe = func(ctx context.Context, args json.RawMessage) (bool, error) {
			if v := pschema.Validate(args, ""); len(v) > 0 {
				return false, nil
			}
			return c(ctx, args)
		}
		def.typed.classPtr = reflect.ValueOf(def.IsConcurrencySafe).Pointer()
	}
	return def, nil
}

func defaultRender(_ context.Context, _, value json.RawMessage) ([]Block, error) {
	// Anyone holding the Definition may call this with bytes they change
	// later: the text is a copy.
	if n := len(value); n >= 2 && value[0] == '"' && !hasEscape(value[1:n-1]) {
		return []Block{Text(string(value[1 : n-1]))}, nil
	}
	return []Block{renderDefault(value)}, nil
}

// renderDefault is defaultRender's block for the registry's own success
// creation. A string value without escapes shares the value's bytes: the
// registry hands it its own canonical snapshot, which nothing ever changes.
func renderDefault(value []byte) Block {
	if n := len(value); n >= 2 && value[0] == '"' && !hasEscape(value[1:n-1]) {
		return Text(unsafe.String(&value[1], n-2))
	}
	if len(value) > 0 && value[0] == '"' {
		var s string // declared here: it escapes, so other values skip its allocation
		if json.Unmarshal(value, &s) == nil {
			return Text(s)
		}
	}
	return Text(string(value))
}

func hasEscape(b []byte) bool {
	for _, c := range b {
		if c == '\\' {
			return true
		}
	}
	return false
}

// isPlain reports an output type whose values convert to one of R47's
// scalar kinds directly.
func isPlain(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float64:
		return true
	}
	return false
}

// plainValue converts a value of a plain type (named or not) to the
// built-in type R47 accepts.
func plainValue(v any) any {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.String:
		if s, ok := v.(string); ok {
			return s
		}
		return rv.String()
	case reflect.Bool:
		return rv.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return rv.Uint()
	case reflect.Float64:
		return rv.Float()
	}
	return v
}

// typedOutMarker is what the typed helper's body returns when it already
// put the canonical output in its execution (execState.typedOut). Boxing a
// zero-size value allocates nothing.
type typedOutMarker struct{}

// typedArgsMessage words R105's violations of args: turn text that is not
// valid JSON (R91) is reported as such, with where it breaks, instead of
// as a string that is not an object; a Go string holding JSON text gets
// a hint to pass json.RawMessage.
func typedArgsMessage(rc *RunContext, args json.RawMessage, violations []string) string {
	msg := strings.Join(violations, "; ")
	if len(args) == 0 || args[0] != '"' {
		return msg
	}
	var fromText, badText bool
	if rc != nil && rc.s != nil {
		fromText, badText = rc.s.fromText, rc.s.badText
	}
	var text string
	if json.Unmarshal(args, &text) != nil {
		return msg
	}
	if badText {
		if note := syntaxNote([]byte(text)); note != "" {
			return note
		}
		return msg
	}
	if t := strings.TrimSpace(text); !fromText && t != "" && (t[0] == '{' || t[0] == '[') && json.Valid([]byte(t)) {
		return msg + " (the arguments are a Go string holding JSON text: pass json.RawMessage(text) for JSON text)"
	}
	return msg
}
