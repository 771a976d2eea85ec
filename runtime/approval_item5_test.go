package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolscope/toolscope/runtime"
)

// Issue 25 item 5: approval that fits a platform (docs/contract.md#r55).

func askEverything(t *testing.T, s *runtime.Scope) {
	t.Helper()
	_, err := s.OnPreExecute(func(context.Context, runtime.Execution, func() (runtime.Decision, error)) (runtime.Decision, error) {
		return runtime.Ask("it writes"), nil
	})
	require.NoError(t, err)
}

func namedApprover(name string, seen *[]string, mu *sync.Mutex) runtime.Approver {
	return func(_ context.Context, req runtime.ApprovalRequest) (runtime.ApprovalOutcome, error) {
		mu.Lock()
		*seen = append(*seen, name+":"+req.Agent)
		mu.Unlock()
		return runtime.ApprovalAllowedOnce, nil
	}
}

// The request carries what an approver needs to decide and route the ask:
// the arguments, the scope key, the tool, the call id, the turn, the ask's
// reason; the call's Execution is in its ctx.
func TestApproval_Item5_RequestCarriesTheCall(t *testing.T) {
	reg := mustNew(t)
	defer reg.Close(context.Background())
	s, err := reg.NewScope("session-7")
	require.NoError(t, err)
	mustRegister(t, s, bpTool("write", true, okBody))
	askEverything(t, s)
	var got []runtime.ApprovalRequest
	var exec []string
	_, err = s.SetApprover(func(ctx context.Context, req runtime.ApprovalRequest) (runtime.ApprovalOutcome, error) {
		got = append(got, req)
		if e, ok := runtime.ExecutionFromContext(ctx); ok {
			exec = append(exec, e.CallID())
		}
		return runtime.ApprovalAllowedOnce, nil
	})
	require.NoError(t, err)
	res := s.Execute(context.Background(), runtime.Call{ID: "c1", Name: "write", Arguments: json.RawMessage(`{"path":"a.txt"}`)})
	require.False(t, res.IsError(), res.ErrorMessage())
	_, err = s.ExecuteTurn(context.Background(), []runtime.TurnCall{{ID: "c2", Name: "write", ArgumentsText: `{"path":"b.txt"}`}}, runtime.WithTurnID("turn-1"))
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, "session-7", got[0].Agent)
	assert.Equal(t, "write", got[0].Tool)
	assert.Equal(t, "c1", got[0].CallID)
	assert.Equal(t, "it writes", got[0].Reason)
	assert.JSONEq(t, `{"path":"a.txt"}`, string(got[0].Arguments))
	assert.Equal(t, "", got[0].TurnID)
	assert.JSONEq(t, `{"path":"b.txt"}`, string(got[1].Arguments))
	assert.Equal(t, "turn-1", got[1].TurnID)
	assert.Equal(t, []string{"c1", "c2"}, exec)
	// The request's arguments are a copy: changing them changes nothing.
	got[0].Arguments[0] = 'X'
}

// A scope's approver answers the asks of its calls and of its sub-agents'
// (the nearest scope with one answers), the global scope's stands for every
// scope without one, and the registry's answers when none is set; the
// newest set through a scope answers, and disposing it (or the scope)
// hands the asks back to the next one.
func TestApproval_Item5_PerScopeApproverInheritance(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	reg := mustNew(t, runtime.WithApprover(namedApprover("registry", &seen, &mu)))
	defer reg.Close(context.Background())
	mustRegister(t, reg.Global(), bpTool("write", true, okBody))
	askEverything(t, reg.Global())
	team, err := reg.NewScope("team")
	require.NoError(t, err)
	worker, err := team.NewScope("team.worker")
	require.NoError(t, err)
	own, err := team.NewScope("team.own")
	require.NoError(t, err)
	other, err := reg.NewScope("other")
	require.NoError(t, err)

	call := func(s *runtime.Scope) string {
		mu.Lock()
		seen = nil
		mu.Unlock()
		res := s.Execute(context.Background(), runtime.Call{ID: "c", Name: "write"})
		require.False(t, res.IsError(), res.ErrorMessage())
		mu.Lock()
		defer mu.Unlock()
		require.Len(t, seen, 1)
		return seen[0]
	}
	assert.Equal(t, "registry:team.worker", call(worker), "nobody set one: the registry's")

	undoTeam, err := team.SetApprover(namedApprover("team", &seen, &mu))
	require.NoError(t, err)
	_, err = own.SetApprover(namedApprover("own", &seen, &mu))
	require.NoError(t, err)
	assert.Equal(t, "team:team", call(team))
	assert.Equal(t, "team:team.worker", call(worker), "a sub-agent inherits its parent's")
	assert.Equal(t, "own:team.own", call(own), "a sub-agent's own overrides")
	assert.Equal(t, "registry:other", call(other))

	undoGlobal, err := reg.Global().SetApprover(namedApprover("global", &seen, &mu))
	require.NoError(t, err)
	assert.Equal(t, "global:other", call(other), "the global scope's stands for every scope without one")
	assert.Equal(t, "team:team.worker", call(worker), "the nearest wins over the global scope's")

	undoNewer, err := team.SetApprover(namedApprover("team-newer", &seen, &mu))
	require.NoError(t, err)
	assert.Equal(t, "team-newer:team.worker", call(worker), "the newest set through a scope answers")
	undoNewer()
	assert.Equal(t, "team:team.worker", call(worker))
	undoTeam()
	assert.Equal(t, "global:team.worker", call(worker))
	undoGlobal()
	assert.Equal(t, "registry:team.worker", call(worker))

	_, err = team.SetApprover(nil)
	assert.ErrorIs(t, err, runtime.ErrNilCallback)
	_, err = worker.SetApprover(namedApprover("worker", &seen, &mu))
	require.NoError(t, err)
	worker.Dispose()
	w2, err := team.NewScope("team.worker")
	require.NoError(t, err)
	assert.Equal(t, "registry:team.worker", call(w2), "disposing a scope removes its approver")
}

// Denials say what happened in words a model or a user can act on: that
// approval was needed and nobody can give it; that the approver refused,
// with its reason when it gives one and never "the user" (a programmatic
// approver is no user). All are denials (Outcome).
func TestApproval_Item5_DenialMessages(t *testing.T) {
	cases := []struct {
		name     string
		reason   []string
		approver runtime.Approver
		want     string
	}{
		{name: "no approver", want: `tool "write" requires approval, and no approver is set up to grant it; the call was not run`},
		{name: "no approver, ask's reason", reason: []string{"it deletes files"},
			want: `tool "write" requires approval (it deletes files), and no approver is set up to grant it; the call was not run`},
		{name: "rejected", approver: func(context.Context, runtime.ApprovalRequest) (runtime.ApprovalOutcome, error) {
			return runtime.ApprovalRejected, nil
		}, want: `approval for tool "write" was refused`},
		{name: "rejected with the approver's reason", approver: func(_ context.Context, req runtime.ApprovalRequest) (runtime.ApprovalOutcome, error) {
			return req.Reject("the monthly budget is spent"), nil
		}, want: `approval for tool "write" was refused: the monthly budget is spent`},
		{name: "Reject with an empty reason", approver: func(_ context.Context, req runtime.ApprovalRequest) (runtime.ApprovalOutcome, error) {
			return req.Reject(""), nil
		}, want: `approval for tool "write" was refused`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reg := mustNew(t)
			defer reg.Close(context.Background())
			s, err := reg.NewScope("agent")
			require.NoError(t, err)
			mustRegister(t, s, bpTool("write", true, okBody))
			_, err = s.OnPreExecute(func(context.Context, runtime.Execution, func() (runtime.Decision, error)) (runtime.Decision, error) {
				return runtime.Ask(c.reason...), nil
			})
			require.NoError(t, err)
			if c.approver != nil {
				_, err = s.SetApprover(c.approver)
				require.NoError(t, err)
			}
			res := s.Execute(context.Background(), runtime.Call{ID: "c", Name: "write"})
			assert.Equal(t, c.want, res.ErrorMessage())
			assert.Equal(t, runtime.OutcomeDenied, res.Outcome())
			assert.NotContains(t, res.ErrorMessage(), "user")
		})
	}
}

// ExampleScope_SetApprover gives each session of a multi-tenant server its
// own approver, which sees the arguments and explains a refusal.
func ExampleScope_SetApprover() {
	reg, err := runtime.New()
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close(context.Background())
	transfer, err := runtime.NewTool("transfer", "Move money", func(_ context.Context, in struct {
		Amount int `json:"amount"`
	}, _ *runtime.RunContext) (string, error) {
		return fmt.Sprintf("moved %d", in.Amount), nil
	})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := reg.Global().Register(transfer); err != nil {
		log.Fatal(err)
	}
	if _, err := reg.Global().OnPreExecute(func(context.Context, runtime.Execution, func() (runtime.Decision, error)) (runtime.Decision, error) {
		return runtime.Ask("money moves"), nil
	}); err != nil {
		log.Fatal(err)
	}

	session, err := reg.NewScope("session-42")
	if err != nil {
		log.Fatal(err)
	}
	const limit = 100 // this tenant's limit
	if _, err := session.SetApprover(func(_ context.Context, req runtime.ApprovalRequest) (runtime.ApprovalOutcome, error) {
		var in struct{ Amount int }
		if err := json.Unmarshal(req.Arguments, &in); err != nil {
			return "", err
		}
		if in.Amount > limit {
			return req.Reject(fmt.Sprintf("%d is over this session's limit of %d", in.Amount, limit)), nil
		}
		return runtime.ApprovalAllowedOnce, nil
	}); err != nil {
		log.Fatal(err)
	}

	for _, args := range []string{`{"amount":40}`, `{"amount":400}`} {
		res := session.Execute(context.Background(), runtime.Call{ID: "c", Name: "transfer", Arguments: json.RawMessage(args)})
		if res.IsError() {
			fmt.Println(res.Outcome(), "-", res.ErrorMessage())
		} else {
			fmt.Println(res.Outcome(), "-", res.Text())
		}
	}
	// Output:
	// ok - moved 40
	// denied - approval for tool "transfer" was refused: 400 is over this session's limit of 100
}
