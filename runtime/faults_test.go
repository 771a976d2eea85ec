package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/toolscope/toolscope/runtime"
)

// Fail-closed policy (issue 7.6): whatever pre-execute hooks, the approver
// and guards do — panic, deny, ask with or without an approver, return
// garbage — a call that any guard denies (or that a guard fails on) never
// reaches the body, and a body that runs saw every guard allow.
func TestProperty_GuardDenialNeverReachesBody(t *testing.T) {
	const rounds = 300
	for round := range rounds {
		seed := uint64(round)*7919 + 1
		rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
		var approver runtime.Option
		switch rng.IntN(6) {
		case 0:
			approver = runtime.WithApprover(func(context.Context, runtime.ApprovalRequest) (runtime.ApprovalOutcome, error) {
				return runtime.ApprovalAllowedOnce, nil
			})
		case 1:
			approver = runtime.WithApprover(func(context.Context, runtime.ApprovalRequest) (runtime.ApprovalOutcome, error) {
				panic("approver")
			})
		case 2:
			approver = runtime.WithApprover(func(context.Context, runtime.ApprovalRequest) (runtime.ApprovalOutcome, error) {
				return "garbage", nil
			})
		case 3:
			approver = runtime.WithApprover(func(context.Context, runtime.ApprovalRequest) (runtime.ApprovalOutcome, error) {
				return runtime.ApprovalAllowedOnce, errors.New("approver error")
			})
		}
		reg := mustNew(t, approver, runtime.WithEvents(false))
		parent, _ := reg.NewScope("p")
		child, _ := parent.NewScope("c")
		layers := []*runtime.Scope{reg.Global(), parent, child}
		var bodyRan atomic.Int32
		mustRegister(t, reg.Global(), hdef("tool", rng.IntN(2) == 0, func(context.Context) (any, error) {
			bodyRan.Add(1)
			return "ran", nil
		}))

		// Guards: the configured behaviour of each.
		nGuards := rng.IntN(5)
		denies := false
		var allowedCalls atomic.Int32
		for range nGuards {
			kind := rng.IntN(6)
			switch kind {
			case 0, 1:
			default:
				denies = true // deny, empty deny, panic, panic with an error value
			}
			g := func(context.Context, runtime.Execution) (string, bool) {
				switch kind {
				case 2:
					return "no", true
				case 3:
					return "", true
				case 4:
					panic("guard")
				case 5:
					panic(errors.New("guard error"))
				}
				allowedCalls.Add(1)
				return "reason ignored when allowing", false
			}
			if _, err := layers[rng.IntN(3)].Guard(g); err != nil {
				t.Fatal(err)
			}
		}
		// Pre-execute hooks: anything, including garbage decisions.
		for range rng.IntN(4) {
			kind := rng.IntN(8)
			h := func(_ context.Context, e runtime.Execution, next func() (runtime.Decision, error)) (runtime.Decision, error) {
				switch kind {
				case 0:
					return runtime.Allow(), nil // veto later hooks, allow
				case 1:
					return runtime.Deny("pre denies"), nil
				case 2:
					return runtime.Ask("pre asks"), nil
				case 3:
					panic("pre")
				case 4:
					return runtime.Decision{Kind: runtime.DecisionKind(99)}, nil
				case 5:
					return runtime.Allow(), errors.New("pre error")
				case 6:
					d, err := next()
					if err == nil && d.Kind != runtime.DecisionAllow {
						return runtime.Allow(), nil // tries to override a later deny
					}
					return d, err
				}
				return next()
			}
			if _, err := layers[rng.IntN(3)].OnPreExecute(h); err != nil {
				t.Fatal(err)
			}
		}
		// Around hooks that call next, retry it, or short-circuit.
		for range rng.IntN(3) {
			kind := rng.IntN(3)
			h := func(ctx context.Context, e runtime.Execution, next func(context.Context) *runtime.Result) (*runtime.Result, error) {
				switch kind {
				case 0:
					next(ctx)
					return next(ctx), nil
				case 1:
					return nil, nil // garbage: no result
				}
				return next(ctx), nil
			}
			if _, err := layers[rng.IntN(3)].OnExecute(h); err != nil {
				t.Fatal(err)
			}
		}

		calls := 0
		for i := range 4 {
			bodyRan.Store(0)
			allowedCalls.Store(0)
			var res *runtime.Result
			if i%2 == 0 {
				res = child.Execute(context.Background(), runtime.Call{ID: fmt.Sprint(i), Name: "tool"})
			} else {
				tr, err := child.ExecuteTurn(context.Background(), []runtime.TurnCall{{ID: fmt.Sprint(i), Name: "tool"}})
				if err != nil || len(tr.Results) != 1 {
					t.Fatalf("turn: %v", err)
				}
				res = tr.Results[0]
			}
			calls++
			if denies && bodyRan.Load() != 0 {
				t.Fatalf("seed %d: a denying guard was configured but the body ran (result %q)", seed, res.Text())
			}
			if bodyRan.Load() != 0 && int(allowedCalls.Load()) != nGuards {
				t.Fatalf("seed %d: body ran after %d of %d guards allowed", seed, allowedCalls.Load(), nGuards)
			}
			if denies && !res.IsError() {
				t.Fatalf("seed %d: denied call succeeded: %q", seed, res.Text())
			}
		}
		closeNow(t, reg)
	}
}
