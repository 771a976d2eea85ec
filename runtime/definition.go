package runtime

import (
	"context"
	"encoding/json"
	"time"
)

// Definition describes one tool (R10). Register keeps its own copy:
// changing the struct or its maps afterwards has no effect (R18).
type Definition struct {
	// Name is the tool's name as the model calls it. "run_code" is reserved.
	Name string
	// Description is shown to the model.
	Description string
	// Parameters is the model-facing JSON schema of the arguments: any
	// lossless JSON value (R47); a json.RawMessage keeps its key order. It
	// is not validated at Register (R11); Schemas rejects a lossy one (R33).
	Parameters any
	// Output is mandatory: the output schema, renderer and optional
	// presentation-metadata projector.
	Output *Output
	// Execute is the tool body. It receives the argument snapshot (its own
	// copy) and a run context, and returns a lossless JSON value (R47) or an
	// error. It must observe ctx and return only once its work is quiescent.
	Execute func(ctx context.Context, args json.RawMessage, rc *RunContext) (any, error)
	// FinalizeContent, if set, sees every result of a call that resolved to
	// this definition at entry; a non-nil return replaces the Content only
	// (R72–R74).
	FinalizeContent func(ctx context.Context, exec Execution, res *Result) ([]Block, error)
	// Timeout, if non-nil, declares a call timeout. It must be positive
	// (R11). The registry enforces it by default, counted from the call's
	// dispatch: a body still running when it passes has its ctx cancelled
	// and the call gets TOOL_TIMEOUT (R83). A registry created with
	// WithoutTimeouts treats it as metadata (R19).
	Timeout *time.Duration
	// IsConcurrencySafe classifies a call: parallel only when it returns
	// exactly (true, nil) without panicking (R36). ctx carries the
	// execution being classified (R51), so a call made with it is nested;
	// for ExecutionMode, which classifies for no execution, it is a
	// callback ctx that carries none (R86).
	IsConcurrencySafe func(ctx context.Context, args json.RawMessage) (bool, error)
	// Presenters is stored and returned by Get, never called (R10, R108).
	// Register and Get deep-copy it (R18, R30): maps and slices of any type,
	// recursively; pointers, structs and funcs are kept as they are, so what
	// they refer to is shared.
	Presenters any

	typed *typedInfo // set by NewTool
}

// Output declares what a tool returns (R10).
type Output struct {
	// Schema is the output JSON schema, in the subset of docs/contract.md#schema (R100).
	Schema any
	// Render turns the arguments and the validated value into content.
	// ctx carries the execution (R51): a call made with it is nested in it.
	Render func(ctx context.Context, args, value json.RawMessage) ([]Block, error)
	// PresentationMeta, if set, projects metadata for top-level calls
	// (R64). ctx carries the execution, as Render's does.
	PresentationMeta func(ctx context.Context, args, value json.RawMessage) (any, error)
}

// Block is one content block of a result.
type Block struct {
	// Type is the block kind, e.g. "text" or "image".
	Type string
	// Text is the text of a "text" block.
	Text string
	// Data is the JSON payload of other block kinds; it must be valid JSON.
	Data json.RawMessage
}

// Text returns a text block.
func Text(s string) Block { return Block{Type: "text", Text: s} }

// Restriction filters the names a scope inherits (docs/contract.md#restrict). A nil list is
// absent; an empty non-nil Allow hides every inherited tool.
type Restriction struct {
	Allow []string
	Deny  []string
}

// ToolSchema is the model-facing projection of a tool (R31). It marshals
// with the field names model APIs use: {"name","description","parameters"}.
type ToolSchema struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Parameters is a fresh copy of the parameter schema as JSON.
	Parameters json.RawMessage `json:"parameters"`
}
