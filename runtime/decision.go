package runtime

import (
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

// ApprovalRequest is what the approver is asked (R55).
type ApprovalRequest struct {
	Agent     string
	Tool      string
	CallID    string
	Reason    string
	HasReason bool
}
