package runtime

import (
	"encoding/json"
	"strings"
)

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

// ApprovalRequest is what the approver is asked (R55): everything a
// platform needs to route the ask and show it to whoever decides. The
// approver is called with the caller's ctx, from which
// ExecutionFromContext also returns the call's Execution.
type ApprovalRequest struct {
	// Agent is the key of the scope the call runs for (never "": a call
	// without one is denied before any approver is asked).
	Agent  string
	Tool   string
	CallID string
	// Reason is the ask's reason (HasReason: the ask gave one).
	Reason    string
	HasReason bool
	// Arguments is a copy of the call's argument snapshot (R45), the
	// arguments the tool would run with.
	Arguments json.RawMessage
	// TurnID is the turn the call belongs to ("" outside a turn).
	TurnID string

	// rejection receives Reject's reason while the approver runs.
	rejection *string
}

// Reject returns ApprovalRejected and gives reason as the rejection's
// reason: the denial reads "approval for tool "<name>" was refused:
// <reason>", for the model or user to act on. Without it (a plain
// ApprovalRejected) the denial is "approval for tool "<name>" was
// refused". Call it while the approver runs.
func (req ApprovalRequest) Reject(reason string) ApprovalOutcome {
	if req.rejection != nil {
		*req.rejection = reason
	}
	return ApprovalRejected
}
