package runtime

// Call is one tool call, the input of Execute and ExecutionMode (R41).
type Call struct {
	// ID is the call id; RootID defaults to ID.
	ID     string
	RootID string
	// Name is the tool to call.
	Name string
	// Arguments is any lossless JSON value (R47), e.g. a json.RawMessage or
	// a map[string]any. It is read once and never retained or mutated. A Go
	// string is a JSON string value, not JSON text: to pass the model's
	// text, use json.RawMessage(text) (TurnCall.ArgumentsText takes text).
	// Absent arguments — nil, an empty json.RawMessage — are {} (R45).
	Arguments any
	// Agent is the scope key whose view is used; "" is the global view.
	// Scope methods fill it with the scope's own key.
	Agent string
	// Parent is the token of the execution this call is nested in, if any
	// (R43, R51). When it is zero and the call's ctx belongs to an
	// execution of the same registry (the ctx a body, hook or guard was
	// given, or one derived from it), that execution is the parent: passing
	// ctx down is enough. An explicit Parent wins.
	Parent Token
}

// Mode is how a call may be scheduled (R36).
type Mode int

const (
	// Exclusive calls run alone. It is the fail-closed default.
	Exclusive Mode = iota
	// Parallel calls may overlap with other parallel calls.
	Parallel
)

// String returns "exclusive" or "parallel".
func (m Mode) String() string {
	if m == Parallel {
		return "parallel"
	}
	return "exclusive"
}
