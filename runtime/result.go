package runtime

import (
	"context"
	"encoding/json"
	"strings"
)

// Token identifies one execution (R43). It is comparable and cannot be
// constructed outside this package; the zero Token means "no execution".
type Token struct{ s *execState }

// IsZero reports whether t is the zero Token.
func (t Token) IsZero() bool { return t.s == nil }

// Execution is the immutable view of one call that hooks, guards and
// observers receive. Accessors return copies.
type Execution struct{ s *execState }

// Token returns the execution's token.
func (e Execution) Token() Token { return Token(e) }

// CallID returns the call id.
func (e Execution) CallID() string { return e.s.callID }

// RootCallID returns the root call id (the call id unless given).
func (e Execution) RootCallID() string { return e.s.rootID }

// Name returns the called tool's name.
func (e Execution) Name() string { return e.s.name }

// Agent returns the scope key the call runs for ("" for none).
func (e Execution) Agent() string { return e.s.agent }

// Parent returns the token of the enclosing execution, if nested.
func (e Execution) Parent() Token { return e.s.parent }

// Arguments returns a copy of the argument snapshot. ok is false when the
// arguments could not be snapshotted (R48).
func (e Execution) Arguments() (args json.RawMessage, ok bool) {
	if e.s.args == nil {
		return nil, false
	}
	return cloneBytes(e.s.args), true
}

// Context returns the caller's context (R59).
func (e Execution) Context() context.Context { return e.s.ctx() }

// RunContext is what a tool body gets besides ctx and arguments (R77, R78).
type RunContext struct{ s *execState }

// DeferContext attaches a context message to this call's result, in call
// order (R77). It survives body failure and cancellation replacement.
func (rc *RunContext) DeferContext(m ContextMessage) {
	rc.s.mu.Lock()
	rc.s.deferred = append(rc.s.deferred, m)
	rc.s.mu.Unlock()
}

// ConcludeTurn marks the execution: a success created afterwards carries
// ConcludesTurn (R78).
func (rc *RunContext) ConcludeTurn() { rc.s.concluded.Store(true) }

// Token returns the execution's token; pass it as Call.Parent for nested
// calls (R43).
func (rc *RunContext) Token() Token { return Token{rc.s} }

// Execution returns the execution view.
func (rc *RunContext) Execution() Execution { return Execution{rc.s} }

// Result is the immutable outcome of one call (SPEC §0.2, R76). Accessors
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

// Failure returns a failure result derived from err (SPEC §0.3).
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
// error (SPEC §0.3).
func (r *Result) ErrorInfo() (name string, code Code, ok bool) {
	return r.errName, r.errCode, r.hasInfo
}

// Code returns the failure code, or "" when there is none.
func (r *Result) Code() Code { return r.errCode }

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

// DecisionKind is the outcome of a pre-execute decision.
type DecisionKind int

// The pre-execute decisions (R52).
const (
	DecisionAllow DecisionKind = iota
	DecisionDeny
	DecisionAsk
)

// Decision is a pre-execute outcome: Allow, Deny or Ask (R52).
type Decision struct {
	Kind      DecisionKind
	Reason    string
	HasReason bool
}

// Allow lets the call go on to the guards.
func Allow() Decision { return Decision{Kind: DecisionAllow} }

// Deny refuses the call with reason (R57).
func Deny(reason string) Decision {
	return Decision{Kind: DecisionDeny, Reason: reason, HasReason: true}
}

// Ask routes the call through the approver (R55), with an optional reason.
func Ask(reason ...string) Decision {
	d := Decision{Kind: DecisionAsk}
	if len(reason) > 0 {
		d.Reason, d.HasReason = strings.Join(reason, " "), true
	}
	return d
}

// PostDecision is a post-execute outcome (R69). Build it with Accept,
// AcceptContent, AcceptValue or Blocked; setting both Content and Value is a
// misuse the registry reports as a failure.
type PostDecision struct {
	// Blocked replaces the result with a failure whose content is Feedback.
	Blocked  bool
	Feedback []Block
	// Content, when non-nil, replaces the content only.
	Content []Block
	// Value, when HasValue, replaces the value of a success (re-rendered).
	Value    any
	HasValue bool
	// Contexts are appended to the result's contexts (Accept) or are the
	// only contexts (Block) (R70).
	Contexts []ContextMessage
}

// Accept keeps the result.
func Accept() PostDecision { return PostDecision{} }

// AcceptContent keeps the result but replaces its content.
func AcceptContent(blocks ...Block) PostDecision {
	if blocks == nil {
		blocks = []Block{}
	}
	return PostDecision{Content: blocks}
}

// AcceptValue replaces the value of a success; it is validated and
// rendered again.
func AcceptValue(v any) PostDecision { return PostDecision{Value: v, HasValue: true} }

// Blocked turns the result into a failure shown to the model as feedback
// (R69's Block decision).
func Blocked(feedback ...Block) PostDecision {
	return PostDecision{Blocked: true, Feedback: feedback}
}

// WithContexts returns d with msgs added to its contexts.
func (d PostDecision) WithContexts(msgs ...ContextMessage) PostDecision {
	d.Contexts = append(append([]ContextMessage(nil), d.Contexts...), msgs...)
	return d
}

// ApprovalOutcome is the approver's answer (R55).
type ApprovalOutcome string

// The approver outcomes of R55. Anything else is a final failure.
const (
	ApprovalAllowedOnce ApprovalOutcome = "allowed-once"
	ApprovalRejected    ApprovalOutcome = "rejected"
	ApprovalCancelled   ApprovalOutcome = "cancelled"
	ApprovalUnavailable ApprovalOutcome = "unavailable"
)

// ApprovalRequest is what the approver is asked (R55).
type ApprovalRequest struct {
	Agent     string
	Tool      string
	CallID    string
	Reason    string
	HasReason bool
}

// Approver resolves Ask decisions (R55). It is called under no registry lock.
type Approver func(ctx context.Context, req ApprovalRequest) (ApprovalOutcome, error)

// Guard is a deny-only check of a call (R27): deny=true refuses the call
// with reason (an empty reason still denies).
type Guard func(ctx context.Context, e Execution) (reason string, deny bool)

// PreExecuteHook decides Allow, Deny or Ask; calling next delegates inward,
// not calling it vetoes the later hooks (R52).
type PreExecuteHook func(ctx context.Context, e Execution, next func() (Decision, error)) (Decision, error)

// AroundHook wraps dispatch (R58): it may call next with a derived ctx (nil
// keeps the current one), short-circuit with its own result, or transform
// the result next returned.
type AroundHook func(ctx context.Context, e Execution, next func(ctx context.Context) *Result) (*Result, error)

// PostExecuteHook sees the result and decides what to do with it (R67–R71).
type PostExecuteHook func(ctx context.Context, e Execution, r *Result, next func() (PostDecision, error)) (PostDecision, error)

// ResultObserver is told every final result exactly once (R75).
type ResultObserver func(ctx context.Context, e Execution, r *Result) error

// ChangeSubscriber is told after every tool or restriction change (R87).
// An error while an addition is announced rolls the addition back (R16).
// ctx is a callback ctx that carries no execution (the mutating methods
// take no ctx, so the registry cannot tell which call, if any, made the
// change): a call made with it is never nested, and one that cannot be
// admitted at once fails with WOULD_DEADLOCK instead of waiting (R86). It
// is never cancelled.
type ChangeSubscriber func(ctx context.Context) error
