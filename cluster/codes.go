package cluster

import (
	"fmt"

	"github.com/toolscope/toolscope/runtime"
)

// The codes of a remote call's failures that a local call never has. They
// are tool-level codes in the sense of docs/contract.md#failures (a coded
// failure result whose code is not one of the registry's own); the model
// sees the message, which says what to do.
const (
	// CodeScopeUnavailable: the tree cannot serve the request now — it is
	// moving to another member, its store cannot be reached, or its
	// activation failed. Nothing ran: the call may be retried later.
	CodeScopeUnavailable runtime.Code = "SCOPE_UNAVAILABLE"
	// CodeOutcomeUnknown: the call may or may not have run (it was claimed
	// by an activation that died or lost its lease before recording a
	// result, or no reply came before the deadline). It is never run again
	// automatically: check before repeating it.
	CodeOutcomeUnknown runtime.Code = "OUTCOME_UNKNOWN"
	// CodeNoSuchScope: the request names a scope the tree does not have
	// (never created, or disposed). Nothing ran.
	CodeNoSuchScope runtime.Code = "NO_SUCH_SCOPE"
	// CodeInvalid: a mutation or request was refused as given (bad catalog
	// config, unknown name, wrong id). Nothing changed.
	CodeInvalid runtime.Code = "INVALID"
)

// The names paired with the codes above.
const (
	NameScopeUnavailable = "ScopeUnavailableError"
	NameOutcomeUnknown   = "OutcomeUnknownError"
	NameNoSuchScope      = "NoSuchScopeError"
	NameInvalid          = "InvalidRequestError"
)

func codeName(c runtime.Code) string {
	switch c {
	case CodeScopeUnavailable:
		return NameScopeUnavailable
	case CodeOutcomeUnknown:
		return NameOutcomeUnknown
	case CodeNoSuchScope:
		return NameNoSuchScope
	}
	return NameInvalid
}

// failResult is a coded failure result.
func failResult(c runtime.Code, format string, args ...any) *runtime.Result {
	return runtime.Failure(runtime.NewError(codeName(c), c, fmt.Sprintf(format, args...)))
}

// unknownOutcome is the result of a call whose outcome this member cannot
// know. The message is for the model.
func unknownOutcome(callID, why string) *runtime.Result {
	return failResult(CodeOutcomeUnknown, "the outcome of call %q is unknown (%s); it will not be run again automatically: check whether it took effect before repeating it", callID, why)
}

// Error is the error a client method returns for a refused or failed
// request other than a call: it carries the code (CodeScopeUnavailable,
// CodeOutcomeUnknown, CodeNoSuchScope, CodeInvalid). errors.As finds it;
// it implements runtime.Coded.
type Error struct {
	code runtime.Code
	msg  string
}

// Error returns the message a caller (or a model) reads.
func (e *Error) Error() string { return e.msg }

// Code returns the error's code.
func (e *Error) Code() string { return string(e.code) }

// Name returns the error's name.
func (e *Error) Name() string { return codeName(e.code) }

func newError(c runtime.Code, format string, args ...any) *Error {
	return &Error{code: c, msg: fmt.Sprintf(format, args...)}
}
