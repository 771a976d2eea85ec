package runtime

import (
	"encoding/json"
	"strings"
)

// Result is the immutable outcome of one call (docs/contract.md#conventions, R76). Accessors
// return copies; a wrapper that wants a different result builds a new one
// with Success, Failure or the With methods.
type Result struct {
	isError   bool
	value     []byte // nil: absent; "null": JSON null
	content   []Block
	errMsg    string
	errName   string
	errCode   Code
	hasInfo   bool
	meta      []byte // nil: absent
	contexts  []ContextMessage
	concludes bool
	// stamp is the execution whose own dispatch produced this exact value
	// (R65); every derived result has none.
	stamp *execState
	// lossy marks a Success built from a value that is not lossless JSON.
	// Outside the pipeline it is a plain failure; R65 normalization treats
	// it as the foreign success it was meant to be, whose value is invalid
	// (final INVALID_TOOL_OUTPUT). The With methods keep the mark.
	lossy bool
	// denied marks a denial (R57): Outcome reports OutcomeDenied. Only
	// the registry sets it; the With methods keep it.
	denied bool
}

// Success returns a wrapper-authored successful result holding value (any
// lossless JSON value). The registry re-validates and re-renders it (R65).
// A value that is not lossless JSON yields a failure result, which an
// around hook's return turns into a final INVALID_TOOL_OUTPUT (R65).
func Success(value any) *Result {
	b, err := encodeJSON(value)
	if err != nil {
		r := failureFromMessage("tool result must be losslessly JSON-serializable", nil)
		r.lossy = true
		return r
	}
	return &Result{value: b}
}

// lossyValue reports whether r came from Success with a value that is not
// lossless JSON: R65 normalizes it as a foreign success (not a foreign
// failure) and its rebuild fails as invalid output.
func (r *Result) lossyValue() bool { return r.lossy }

// notLosslessValue is a value encodeJSON rejects: what a lossy Success is
// rebuilt from, so createSuccess reports it as any other invalid value.
type notLosslessValue struct{}

// foreignValue is the value R65 rebuilds a foreign success from: its
// canonical bytes, or for a lossy Success a value that is not lossless
// JSON (createSuccess then yields INVALID_TOOL_OUTPUT "value is not
// lossless JSON").
func (r *Result) foreignValue() any {
	if r.lossy {
		return notLosslessValue{}
	}
	return canonical(r.value)
}

// Failure returns a failure result derived from err (docs/contract.md#failures).
func Failure(err error) *Result { return failureFrom(err) }

// IsError reports whether the result is a failure.
func (r *Result) IsError() bool { return r.isError }

// Value returns a copy of the success value. ok is false on failures; a
// JSON null value is present ("null").
func (r *Result) Value() (value json.RawMessage, ok bool) {
	if r.value == nil {
		return nil, false
	}
	return cloneBytes(r.value), true
}

// Content returns a copy of the content blocks.
func (r *Result) Content() []Block { return cloneBlocks(r.content) }

// Text joins the text of the text blocks with newlines.
func (r *Result) Text() string {
	var sb strings.Builder
	for i, b := range r.content {
		if i > 0 {
			sb.WriteByte('\n')
		}
		sb.WriteString(b.Text)
	}
	return sb.String()
}

// ErrorMessage returns the failure message ("" on success).
func (r *Result) ErrorMessage() string { return r.errMsg }

// ErrorInfo returns the failure's name and code, if it came from a coded
// error (docs/contract.md#failures).
func (r *Result) ErrorInfo() (name string, code Code, ok bool) {
	return r.errName, r.errCode, r.hasInfo
}

// Code returns the failure code, or "" when there is none.
func (r *Result) Code() Code { return r.errCode }

// Outcome says what happened (docs/contract.md#outcomes): OutcomeOK for a
// success, OutcomeDenied for a denial by pre-execute, approval or a guard
// (uncoded: Code is ""), and for any other failure its code's outcome
// (Code.Outcome: timed out, cancelled, refused, else failed). A failure
// built with Failure is never a denial. Event.Outcome and CallDone.Outcome
// of the call's final result are this value.
func (r *Result) Outcome() Outcome {
	switch {
	case !r.isError:
		return OutcomeOK
	case r.denied:
		return OutcomeDenied
	}
	return r.errCode.Outcome()
}

// Meta returns a copy of the presentation metadata, if any (R64).
func (r *Result) Meta() (meta json.RawMessage, ok bool) {
	if r.meta == nil {
		return nil, false
	}
	return cloneBytes(r.meta), true
}

// AdditionalContexts returns a copy of the context messages.
func (r *Result) AdditionalContexts() []ContextMessage {
	if len(r.contexts) == 0 {
		return nil
	}
	return append([]ContextMessage(nil), r.contexts...)
}

// ConcludesTurn reports whether the call concluded the turn (R78).
func (r *Result) ConcludesTurn() bool { return r.concludes }

// WithContent returns a copy of r whose content is blocks.
func (r *Result) WithContent(blocks ...Block) *Result {
	n := *r
	n.stamp = nil
	n.content = cloneBlocks(blocks)
	return &n
}

// WithContexts returns a copy of r with msgs appended to its contexts.
func (r *Result) WithContexts(msgs ...ContextMessage) *Result {
	n := *r
	n.stamp = nil
	n.contexts = append(append([]ContextMessage(nil), r.contexts...), msgs...)
	return &n
}

// WithMeta returns a copy of r whose metadata is meta (lossless JSON).
func (r *Result) WithMeta(meta any) *Result {
	n := *r
	n.stamp = nil
	b, err := encodeJSON(meta)
	if err != nil {
		return failureFromMessage("tool result must be losslessly JSON-serializable", nil)
	}
	n.meta = b
	return &n
}

// ContextMessage is one additional context message attached to a result (R77).
type ContextMessage struct {
	Role string
	Text string
}
