package agent_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolscope/toolscope/agent"
	"github.com/toolscope/toolscope/runtime"
)

// A reply with a call that has no id, or an id another call of the reply
// has, cannot be answered call by call: Run refuses it before any call
// runs, whatever the adapter's ToolResults would have said afterwards.
func TestRun_UnanswerableReplyRefusedBeforeAnyCallRuns(t *testing.T) {
	for name, calls := range map[string][]runtime.TurnCall{
		"no id":        {{ID: "a", Name: "pay"}, {Name: "pay"}},
		"shared id":    {{ID: "a", Name: "pay"}, {ID: "b", Name: "pay"}, {ID: "a", Name: "pay"}},
		"many, shared": {{ID: "1", Name: "pay"}, {ID: "2", Name: "pay"}, {ID: "3", Name: "pay"}, {ID: "4", Name: "pay"}, {ID: "5", Name: "pay"}, {ID: "6", Name: "pay"}, {ID: "7", Name: "pay"}, {ID: "8", Name: "pay"}, {ID: "9", Name: "pay"}, {ID: "3", Name: "pay"}},
	} {
		t.Run(name, func(t *testing.T) {
			s := newScope(t)
			var runs atomic.Int32
			register(t, s, def(runtime.NewTool("pay", "Pay", func(ctx context.Context, _ struct{}, rc *runtime.RunContext) (string, error) {
				runs.Add(1)
				return "paid", nil
			}, runtime.WithParallel())))
			m := &script{reply: func(n int, _ step) (agent.Reply[msg], error) {
				if n == 1 {
					return callTools(calls...), nil
				}
				return answer("done"), nil
			}}
			out, err := run(t, context.Background(), s, m, []msg{{Role: "user", Text: "pay"}})
			require.True(t, errors.Is(err, agent.ErrInvalidReply), "error %v", err)
			require.Equal(t, agent.Failed, out.Stop)
			require.Zero(t, runs.Load(), "a call of the refused reply ran")
			require.Empty(t, out.Turns)
			require.Equal(t, []msg{{Role: "user", Text: "pay"}}, out.Transcript, "the refused reply is not appended")
		})
	}
}

func TestCheckCalls_AcceptsDistinctIDs(t *testing.T) {
	require.NoError(t, agent.CheckCalls(nil))
	require.NoError(t, agent.CheckCalls([]runtime.TurnCall{{ID: "a"}, {ID: "b"}}))
	many := make([]runtime.TurnCall, 20)
	for i := range many {
		many[i].ID = string(rune('a' + i))
	}
	require.NoError(t, agent.CheckCalls(many))
}
