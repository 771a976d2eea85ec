package runtime

import (
	"errors"
	"strings"
)

// Sentinel errors returned by registry methods. Validation failures wrap
// one of them (test with errors.Is) and carry the contract's wording.
var (
	// ErrClosed is returned by every method of a registry after Close,
	// including the mutating methods of its scope handles (N5).
	ErrClosed = errors.New("runtime: registry closed")
	// ErrEventsDropped is what the error handler receives, once per
	// subscription, when an event first finds a subscriber's buffer full
	// (Subscribe); Subscription.Dropped counts the rest.
	ErrEventsDropped = errors.New("runtime: event subscriber dropped events")
	// ErrScopeDisposed is returned by mutating methods of a disposed scope
	// handle or owner group (R7); after Close they return ErrClosed.
	ErrScopeDisposed = errors.New("runtime: scope disposed")
	// ErrScopeExists is returned by NewScope for a key that is live.
	ErrScopeExists = errors.New("runtime: scope already exists")
	// ErrScopeLink is returned when a parent link would be rebound or form a
	// cycle (R3).
	ErrScopeLink = errors.New("runtime: invalid scope link")
	// ErrInvalidDefinition is wrapped by every Register validation failure
	// except UNSUPPORTED_SCHEMA, which is a coded *Error.
	ErrInvalidDefinition = errors.New("runtime: invalid tool definition")
	// ErrDuplicate is wrapped by the duplicate-name failures of Register
	// (R13).
	ErrDuplicate = errors.New("runtime: duplicate tool")
	// ErrInvalidRestriction is wrapped by every Restrict validation failure.
	ErrInvalidRestriction = errors.New("runtime: invalid restriction")
	// ErrInvalidConfig is returned for an invalid option value, such as a
	// MaxParallel below 1 (R91).
	ErrInvalidConfig = errors.New("runtime: invalid configuration")
	// ErrNilCallback is returned when a nil function is registered.
	ErrNilCallback = errors.New("runtime: nil callback")
)

// Coded is what errors.As finds on a coded error (docs/contract.md#failures): a value with a
// stable Name and Code. Tool bodies and hooks may return their own (any
// error type with these two methods: Code returns a plain string, so such a
// type need not import this package); the registry copies Name and Code into
// the failure result, where Result.Code returns it as a Code.
type Coded interface {
	error
	Name() string
	Code() string
}

// Code classifies a failure result (docs/contract.md#failures): Result.Code returns one,
// "" for a success or a plain (uncoded) failure such as a denial. The
// registry's own codes are the constants below; a tool's own coded error
// may use any other value.
type Code string

// String returns the code as written on the wire, e.g. "UNKNOWN_TOOL".
func (c Code) String() string { return string(c) }

// The registry's codes (docs/contract.md#failures, plus WOULD_DEADLOCK for nested calls).
const (
	// CodeUnknownTool: no tool of that name is visible when the call
	// dispatches (R61).
	CodeUnknownTool Code = "UNKNOWN_TOOL"
	// CodeInvalidArgs: the arguments fail the tool's parameter schema
	// (typed tools, R105).
	CodeInvalidArgs Code = "INVALID_ARGS"
	// CodeInvalidToolOutput: the body's value is not lossless JSON or
	// fails the output schema, or rendering failed (R62).
	CodeInvalidToolOutput Code = "INVALID_TOOL_OUTPUT"
	// CodeAborted: the caller's ctx ended while the body ran and the body
	// then succeeded (R80).
	CodeAborted Code = "ABORTED"
	// CodeAbortedBeforeDispatch: the caller's ctx ended before the body was
	// invoked — at entry, in the gate, or while waiting for admission
	// (R79, R80).
	CodeAbortedBeforeDispatch Code = "ABORTED_BEFORE_DISPATCH"
	// CodeToolTimeout: the tool's declared timeout fired (enforced by
	// default, or by TimeoutHook, R83).
	CodeToolTimeout Code = "TOOL_TIMEOUT"
	// CodeUnsupportedSchema: a schema outside the supported subset (R100);
	// returned by Register and NewTool as an error.
	CodeUnsupportedSchema Code = "UNSUPPORTED_SCHEMA"
	// CodeOverloaded: too many calls already wait for admission in the
	// scope (WithMaxQueued).
	CodeOverloaded Code = "OVERLOADED"
	// CodeClosed: the registry is closed.
	CodeClosed Code = "CLOSED"
	// CodeWouldDeadlock: a nested call whose wait for admission could never
	// end (see the runtime package doc, "Nested calls").
	CodeWouldDeadlock Code = "WOULD_DEADLOCK"
)

// The names paired with the codes above (docs/contract.md#failures).
const (
	NameToolNotFound = "ToolNotFoundError"
	NameToolArgs     = "ToolArgsError"
	NameToolOutput   = "ToolOutputError"
	NameAbort        = "AbortError"
	NameToolTimeout  = "ToolTimeoutError"
	NameJSONSchema   = "JsonSchemaError"
	NameOverloaded   = "OverloadedError"
	NameClosed       = "ClosedError"
	NameDeadlock     = "DeadlockError"
)

// Error is toolscope's coded error. It implements Coded.
type Error struct {
	name, msg string
	code      Code
}

// NewError returns a coded error with the given name, code and message.
func NewError(name string, code Code, message string) *Error {
	return &Error{name: name, code: code, msg: message}
}

// Error returns the message.
func (e *Error) Error() string { return e.msg }

// Name returns the error's name, e.g. "ToolNotFoundError".
func (e *Error) Name() string { return e.name }

// Code returns the error's code, e.g. "UNKNOWN_TOOL".
// (a string, as the Coded interface asks; Result.Code returns it typed).
func (e *Error) Code() string { return string(e.code) }

func unsupportedSchema(violations []string) *Error {
	return NewError(NameJSONSchema, CodeUnsupportedSchema,
		"unsupported JSON schema: "+strings.Join(violations, "; "))
}

// unprintableMessage is docs/contract.md#failures's message for a failure whose Error
// method itself panics.
const unprintableMessage = "<unprintable value>"

// errorText calls err.Error(), reporting false if that call panics.
func errorText(err error) (msg string, ok bool) {
	defer func() {
		if recover() != nil {
			msg, ok = unprintableMessage, false
		}
	}()
	return err.Error(), true
}

// printable returns err when its Error method works, else an error that
// reads "<unprintable value>" (docs/contract.md#failures) and unwraps to err, so it
// can be formatted, wrapped and logged safely while errors.Is/As still
// reach the original.
func printable(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := errorText(err); ok {
		return err
	}
	return unprintableError{err}
}

// unprintableError stands for an error whose Error method panics.
type unprintableError struct{ err error }

func (e unprintableError) Error() string { return unprintableMessage }

func (e unprintableError) Unwrap() error { return e.err }
