package runtime

import (
	"context"
	"encoding/json"
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
	rc.s.anyDeferred.Store(true)
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
