package runtime

import (
	"encoding/json"
	"fmt"

	"github.com/toolscope/toolscope/internal/jsonv"
)

// Input bounds (issue 20, item 31): schema text and argument text are
// input from outside — an MCP server's tool list, a model's reply — and
// their cost grows with their size (compiling a schema allocates about 70
// bytes per byte of text), so each has a bound, far above anything a real
// tool needs, past which it is refused before it is parsed.

const (
	// DefaultMaxSchemaBytes is the default bound on a schema's JSON text
	// (a tool's parameters or output schema): 1 MiB. A tool's parameters
	// go to the model with every request, and 1 MiB of schema is some
	// 250,000 tokens, more than a model's whole context.
	DefaultMaxSchemaBytes = 1 << 20
	// DefaultMaxArgumentBytes is the default bound on one call's argument
	// text: 16 MiB, some 30 times what a model can write in one reply,
	// leaving room for hosts passing documents as arguments.
	DefaultMaxArgumentBytes = 16 << 20
)

// WithMaxSchemaBytes bounds the JSON text of a tool's schemas (default
// DefaultMaxSchemaBytes). Passed to New, it bounds what Register accepts:
// a parameters or output schema whose text is longer is refused with the
// coded UNSUPPORTED_SCHEMA error, before it is parsed. Passed to NewTool,
// it bounds the schemas given with WithParametersSchema and
// WithOutputSchema the same way (NewTool, having no registry, applies
// DefaultMaxSchemaBytes otherwise). A json.RawMessage is measured as it
// is; a Go value (map[string]any…) by its canonical JSON encoding. n < 1
// is a configuration error.
func WithMaxSchemaBytes(n int) MaxSchemaBytesOption { return MaxSchemaBytesOption{n: n} }

// MaxSchemaBytesOption is what WithMaxSchemaBytes returns: both an Option
// (the registry's bound) and a ToolOption (NewTool's bound).
type MaxSchemaBytesOption struct{ n int }

func (o MaxSchemaBytesOption) check() error {
	if o.n < 1 {
		return fmt.Errorf("%w: MaxSchemaBytes must be at least 1, got %d", ErrInvalidConfig, o.n)
	}
	return nil
}

func (o MaxSchemaBytesOption) apply(c *config) error {
	if err := o.check(); err != nil {
		return err
	}
	c.maxSchemaBytes = o.n
	return nil
}

func (o MaxSchemaBytesOption) applyTool(t *toolOptions) { t.maxSchema = &o }

// WithMaxArgumentBytes bounds one call's argument text (default
// DefaultMaxArgumentBytes): a call whose arguments are longer — a
// json.RawMessage or a TurnCall's ArgumentsText measured as it is, before
// it is parsed; a Go value by its canonical JSON encoding; a protobuf
// request's arguments_json by its bytes — is refused with the coded
// INVALID_ARGS failure and, like arguments that are not lossless JSON
// (R48), runs no hook and no body. n < 1 is a configuration error.
func WithMaxArgumentBytes(n int) Option {
	return optionFunc(func(c *config) error {
		if n < 1 {
			return fmt.Errorf("%w: MaxArgumentBytes must be at least 1, got %d", ErrInvalidConfig, n)
		}
		c.maxArgBytes = n
		return nil
	})
}

// schemaBound returns the registry's bound on schema text.
func (c *config) schemaBound() int {
	if c.maxSchemaBytes > 0 {
		return c.maxSchemaBytes
	}
	return DefaultMaxSchemaBytes
}

// argBound returns the registry's bound on argument text.
func (c *config) argBound() int {
	if c.maxArgBytes > 0 {
		return c.maxArgBytes
	}
	return DefaultMaxArgumentBytes
}

// checkSchemaSize refuses schema (the "parameters" or "output" schema, by
// what) whose JSON text is longer than bound, before anything parses it:
// the coded UNSUPPORTED_SCHEMA error. A Go value is measured by its
// canonical encoding; one that cannot be encoded is left to the checks
// that report why.
func checkSchemaSize(what string, schema any, bound int) error {
	var n int
	switch v := schema.(type) {
	case nil:
		return nil
	case json.RawMessage:
		n = len(v)
	default:
		var err error
		if n, err = jsonv.EncodedLen(v); err != nil {
			return nil
		}
	}
	if n <= bound {
		return nil
	}
	return unsupportedSchema([]string{fmt.Sprintf("the %s schema's JSON text is %d bytes, more than the bound of %d bytes (WithMaxSchemaBytes)", what, n, bound)})
}

// argsTooLarge is the failure of a call whose argument text is n bytes,
// over the bound.
func argsTooLarge(n, bound int) *Result {
	return codedFailure(NameToolArgs, CodeInvalidArgs,
		fmt.Sprintf("invalid arguments: the argument text is %d bytes, more than the bound of %d bytes (WithMaxArgumentBytes)", n, bound))
}
