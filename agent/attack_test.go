package agent_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	goruntime "runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/toolscope/toolscope/agent"
	"github.com/toolscope/toolscope/runtime"
)

// TestRun_Attack_RandomHooksAndReplies drives Run with random replies
// (calls, answers, concluding calls), random hooks at every point
// (steering, huge steering, ErrStop, an error, a re-entrant Run) and
// random step limits, and checks the loop's invariants each time: it
// ends within the step limit, every call in the transcript is answered
// exactly once right after it, every call that ran is in the transcript,
// the error is set exactly when Stop is Failed, and no goroutine is left.
func TestRun_Attack_RandomHooksAndReplies(t *testing.T) {
	before := goruntime.NumGoroutine()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	for iter := range 300 {
		reg, err := runtime.New()
		require.NoError(t, err)
		s, err := reg.NewScope("agent")
		require.NoError(t, err)
		var ran atomic.Int64
		register(t, s, def(runtime.NewTool("read", "Read", func(ctx context.Context, in pathArgs, rc *runtime.RunContext) (string, error) {
			ran.Add(1)
			return "r", nil
		}, runtime.WithParallel())))
		register(t, s, def(runtime.NewTool("finish", "Finish", func(ctx context.Context, in pathArgs, rc *runtime.RunContext) (string, error) {
			ran.Add(1)
			rc.ConcludeTurn()
			return "done", nil
		})))
		maxSteps := 1 + rng.IntN(6)
		kinds := make([]int, 64)
		for i := range kinds {
			kinds[i] = rng.IntN(4)
		}
		m := &script{reply: func(n int, _ step) (agent.Reply[msg], error) {
			switch kinds[n%len(kinds)] {
			case 0:
				return answer("done"), nil
			case 1:
				return callTools(runtime.TurnCall{ID: fmt.Sprint("f", n), Name: "finish", ArgumentsText: `{"path":"x"}`}), nil
			default:
				calls := make([]runtime.TurnCall, 1+rng.IntN(4))
				for i := range calls {
					calls[i] = runtime.TurnCall{ID: fmt.Sprint("c", n, "_", i), Name: "read", ArgumentsText: `{"path":"x"}`}
				}
				return callTools(calls...), nil
			}
		}}
		var failWith = errors.New("hook failed")
		stopped, failed := false, false
		steered := map[string]int{}
		hook := func(point string) func(ctx context.Context, st *agent.Step[msg]) error {
			return func(ctx context.Context, st *agent.Step[msg]) error {
				switch rng.IntN(12) {
				case 0:
					stopped = true
					return fmt.Errorf("wrapped: %w", agent.ErrStop)
				case 1:
					failed = true
					return failWith
				case 2, 3, 4:
					text := fmt.Sprint("steer ", point, " ", st.Number, " ", rng.Uint64())
					if rng.IntN(8) == 0 {
						text += strings.Repeat("x", 1<<20)
					}
					st.Steer(msg{Role: "user", Text: text})
					steered[text]++
				case 5:
					inner, err := agent.Run(ctx, s, &script{reply: func(int, step) (agent.Reply[msg], error) { return answer("inner"), nil }}, nil)
					if err != nil || inner.Stop != agent.Answered {
						return fmt.Errorf("inner run: %v %v", err, inner.Stop)
					}
				}
				return nil
			}
		}
		h := agent.Hooks[msg]{BeforeModel: hook("bm"), AfterModel: hook("am"), BeforeTurn: hook("bt"), AfterTurn: hook("at")}
		out, err := run(t, context.Background(), s, m, []msg{{Role: "user", Text: "hi"}}, agent.WithMaxSteps(maxSteps), agent.WithHooks(h))
		where := fmt.Sprintf("iter %d (seed %d): stop %v err %v steps %d/%d", iter, seed, out.Stop, err, out.Steps, maxSteps)
		require.LessOrEqual(t, out.Steps, maxSteps, where)
		require.Equal(t, out.Stop == agent.Failed, err != nil, where)
		if out.Stop == agent.Failed {
			require.True(t, failed, where)
			require.ErrorIs(t, err, failWith, where)
		}
		if out.Stop == agent.Stopped {
			require.True(t, stopped, where)
		}
		answered := 0
		for i, mm := range out.Transcript {
			if mm.Role == "user" && strings.HasPrefix(mm.Text, "steer ") {
				steered[mm.Text]--
				require.GreaterOrEqual(t, steered[mm.Text], 0, "%s: a steered message appended twice", where)
			}
			if len(mm.Calls) == 0 {
				continue
			}
			require.GreaterOrEqual(t, len(out.Transcript), i+1+len(mm.Calls), "%s: calls at %d unanswered", where, i)
			for k, c := range mm.Calls {
				r := out.Transcript[i+1+k]
				require.Equal(t, "tool", r.Role, "%s: call %s not followed by its result", where, c.ID)
				require.Equal(t, c.ID, r.CallID, where)
				answered++
			}
		}
		require.Equal(t, int64(answered), ran.Load(), "%s: calls that ran vs results in the transcript", where)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		require.NoError(t, reg.Close(ctx))
		cancel()
	}
	deadline := time.Now().Add(10 * time.Second)
	for goruntime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	require.LessOrEqual(t, goruntime.NumGoroutine(), before, "goroutines left")
}

// A hook that panics panics Run's caller (as net/http/httptrace's
// functions do); the loop holds nothing that leaks.
func TestRun_Attack_PanickingHookLeavesNothing(t *testing.T) {
	s := newScope(t)
	register(t, s, def(readTool()))
	m := &script{reply: func(n int, _ step) (agent.Reply[msg], error) {
		return callTools(runtime.TurnCall{ID: fmt.Sprint("c", n), Name: "read", ArgumentsText: `{"path":"x"}`}), nil
	}}
	for _, point := range []string{"bm", "am", "bt", "at"} {
		p := func(context.Context, *agent.Step[msg]) error { panic("hook " + point) }
		var h agent.Hooks[msg]
		switch point {
		case "bm":
			h.BeforeModel = p
		case "am":
			h.AfterModel = p
		case "bt":
			h.BeforeTurn = p
		case "at":
			h.AfterTurn = p
		}
		got := func() (r any) {
			defer func() { r = recover() }()
			_, _ = agent.Run(context.Background(), s, m, nil, agent.WithHooks(h))
			return nil
		}()
		require.Equal(t, "hook "+point, got)
	}
}

// Steering after the model's answer on the last allowed step ends the
// loop with StepLimit (the model is not asked again), the steered message
// appended.
func TestRun_Attack_SteeringAtTheLastStepIsTheStepLimit(t *testing.T) {
	s := newScope(t)
	m := &script{reply: func(int, step) (agent.Reply[msg], error) { return answer("done"), nil }}
	h := agent.Hooks[msg]{AfterModel: func(_ context.Context, st *agent.Step[msg]) error {
		st.Steer(msg{Role: "user", Text: "one more thing"})
		return nil
	}}
	out, err := run(t, context.Background(), s, m, nil, agent.WithMaxSteps(2), agent.WithHooks(h))
	require.NoError(t, err)
	require.Equal(t, agent.StepLimit, out.Stop)
	require.Equal(t, 2, out.Steps)
	require.Len(t, m.steps, 2)
	require.Equal(t, msg{Role: "user", Text: "one more thing"}, out.Transcript[len(out.Transcript)-1])
}
