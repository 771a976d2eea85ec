package runtime

import (
	"context"
)

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
