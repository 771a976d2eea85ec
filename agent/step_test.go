package agent_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolscope/toolscope/agent"
	"github.com/toolscope/toolscope/runtime"
)

// withUsage gives a reply the usage of its step n.
func withUsage(r agent.Reply[msg], n int) agent.Reply[msg] {
	r.Usage = agent.Usage{InputTokens: int64(10 * n), CachedInputTokens: int64(n), OutputTokens: int64(n), ReasoningTokens: 1, TotalTokens: int64(11 * n)}
	return r
}

func TestRun_Item9_UsageSummedAndPerStep(t *testing.T) {
	s := newScope(t)
	register(t, s, def(readTool()))
	m := &script{reply: func(n int, _ step) (agent.Reply[msg], error) {
		if n < 3 {
			return withUsage(callTools(runtime.TurnCall{ID: fmt.Sprint("r", n), Name: "read", ArgumentsText: `{"path":"a"}`}), n), nil
		}
		return withUsage(answer("done"), n), nil
	}}
	out, err := run(t, context.Background(), s, m, nil)
	require.NoError(t, err)
	require.Equal(t, agent.Answered, out.Stop)
	require.Equal(t, []agent.Usage{
		{InputTokens: 10, CachedInputTokens: 1, OutputTokens: 1, ReasoningTokens: 1, TotalTokens: 11},
		{InputTokens: 20, CachedInputTokens: 2, OutputTokens: 2, ReasoningTokens: 1, TotalTokens: 22},
		{InputTokens: 30, CachedInputTokens: 3, OutputTokens: 3, ReasoningTokens: 1, TotalTokens: 33},
	}, out.StepUsage)
	require.Equal(t, agent.Usage{InputTokens: 60, CachedInputTokens: 6, OutputTokens: 6, ReasoningTokens: 3, TotalTokens: 66}, out.Usage)
}

// A failed request has no usage; the replies before it keep theirs.
func TestRun_Item9_UsageOfAFailedStepIsNotCounted(t *testing.T) {
	s := newScope(t)
	register(t, s, def(readTool()))
	m := &script{reply: func(n int, _ step) (agent.Reply[msg], error) {
		if n == 1 {
			return withUsage(callTools(runtime.TurnCall{ID: "r", Name: "read", ArgumentsText: `{"path":"a"}`}), 1), nil
		}
		return agent.Reply[msg]{Usage: agent.Usage{InputTokens: 999}}, errors.New("boom")
	}}
	out, err := run(t, context.Background(), s, m, nil)
	require.Error(t, err)
	require.Equal(t, 2, out.Steps)
	require.Len(t, out.StepUsage, 1)
	require.Equal(t, int64(10), out.Usage.InputTokens)
}

// The hooks run in the order of a step, each point in the order the
// WithHooks were given, and see what the step has at that point.
func TestRun_Item9_HooksOrderAndWhatTheySee(t *testing.T) {
	s := newScope(t)
	register(t, s, def(readTool()))
	m := &script{reply: func(n int, _ step) (agent.Reply[msg], error) {
		if n == 1 {
			return withUsage(callTools(runtime.TurnCall{ID: "r1", Name: "read", ArgumentsText: `{"path":"a"}`}), 1), nil
		}
		return withUsage(answer("done"), 2), nil
	}}
	var log []string
	h := func(tag string) agent.Hooks[msg] {
		return agent.Hooks[msg]{
			BeforeModel: func(_ context.Context, st *agent.Step[msg]) error {
				require.Nil(t, st.Reply)
				require.Equal(t, []string{"read"}, names(st.Tools))
				log = append(log, fmt.Sprintf("%s before-model %d transcript=%d", tag, st.Number, len(st.Transcript)))
				return nil
			},
			AfterModel: func(_ context.Context, st *agent.Step[msg]) error {
				log = append(log, fmt.Sprintf("%s after-model %d calls=%d input=%d", tag, st.Number, len(st.Reply.Calls), st.Usage.InputTokens))
				return nil
			},
			BeforeTurn: func(_ context.Context, st *agent.Step[msg]) error {
				log = append(log, fmt.Sprintf("%s before-turn %d", tag, st.Number))
				return nil
			},
			AfterTurn: func(_ context.Context, st *agent.Step[msg]) error {
				log = append(log, fmt.Sprintf("%s after-turn %d results=%d transcript=%d", tag, st.Number, len(st.Turn.Results), len(st.Transcript)))
				return nil
			},
		}
	}
	out, err := run(t, context.Background(), s, m, []msg{{Role: "user", Text: "go"}}, agent.WithHooks(h("a")), agent.WithHooks(h("b")))
	require.NoError(t, err)
	require.Equal(t, agent.Answered, out.Stop)
	require.Equal(t, []string{
		"a before-model 1 transcript=1", "b before-model 1 transcript=1",
		"a after-model 1 calls=1 input=10", "b after-model 1 calls=1 input=10",
		"a before-turn 1", "b before-turn 1",
		"a after-turn 1 results=1 transcript=3", "b after-turn 1 results=1 transcript=3",
		"a before-model 2 transcript=3", "b before-model 2 transcript=3",
		"a after-model 2 calls=0 input=20", "b after-model 2 calls=0 input=20",
	}, log)
}

func names(tools []runtime.ToolSchema) []string {
	var out []string
	for _, t := range tools {
		out = append(out, t.Name)
	}
	return out
}

// Each point may stop the loop: with ErrStop the outcome is Stopped and
// there is no error; with any other error it is Failed with that error.
// What is kept follows the point: before the turn nothing of the reply is
// appended and no call runs; after it the results stay.
func TestRun_Item9_HookStopsAtEachPoint(t *testing.T) {
	boom := errors.New("boom")
	for _, point := range []string{"BeforeModel", "AfterModel", "BeforeTurn", "AfterTurn"} {
		for _, stopWith := range []error{agent.ErrStop, fmt.Errorf("wrapped: %w", agent.ErrStop), boom} {
			t.Run(point+"/"+stopWith.Error(), func(t *testing.T) {
				s := newScope(t)
				runs := 0
				register(t, s, def(runtime.NewTool("pay", "Pay", func(context.Context, struct{}, *runtime.RunContext) (string, error) {
					runs++
					return "paid", nil
				})))
				m := &script{reply: func(n int, _ step) (agent.Reply[msg], error) {
					return callTools(runtime.TurnCall{ID: fmt.Sprint("p", n), Name: "pay"}), nil
				}}
				stop := func(_ context.Context, st *agent.Step[msg]) error {
					st.Steer(msg{Role: "user", Text: "dropped"})
					return stopWith
				}
				var h agent.Hooks[msg]
				switch point {
				case "BeforeModel":
					h.BeforeModel = stop
				case "AfterModel":
					h.AfterModel = stop
				case "BeforeTurn":
					h.BeforeTurn = stop
				case "AfterTurn":
					h.AfterTurn = stop
				}
				user := []msg{{Role: "user", Text: "pay"}}
				out, err := run(t, context.Background(), s, m, user, agent.WithHooks(h))
				if stopWith == boom {
					require.ErrorIs(t, err, boom)
					require.Contains(t, err.Error(), point)
					require.Equal(t, agent.Failed, out.Stop)
				} else {
					require.NoError(t, err)
					require.Equal(t, agent.Stopped, out.Stop)
				}
				require.Equal(t, 1, out.Steps)
				switch point {
				case "BeforeModel":
					require.Empty(t, m.steps, "the model was asked")
					require.Equal(t, user, out.Transcript)
				case "AfterModel", "BeforeTurn":
					require.Zero(t, runs)
					require.Equal(t, user, out.Transcript)
					require.Empty(t, out.Turns)
				case "AfterTurn":
					require.Equal(t, 1, runs)
					require.Len(t, out.Transcript, 3)
					require.Equal(t, msg{Role: "tool", CallID: "p1", Text: "paid"}, out.Transcript[2])
				}
			})
		}
	}
}

// R99: a turn that concludes ends the loop unless steering arrived
// meanwhile; then the steered message is appended after the results and
// the model is asked again.
func TestRun_R99_SteeringOverridesConclusion(t *testing.T) {
	s := newScope(t)
	register(t, s, def(runtime.NewTool("finish", "End the task", func(ctx context.Context, in struct{}, rc *runtime.RunContext) (string, error) {
		rc.ConcludeTurn()
		return "finished", nil
	})))
	m := &script{reply: func(n int, _ step) (agent.Reply[msg], error) {
		if n == 1 {
			return callTools(runtime.TurnCall{ID: "f", Name: "finish"}), nil
		}
		return answer("ok, also the tests"), nil
	}}
	steered := false
	out, err := run(t, context.Background(), s, m, []msg{{Role: "user", Text: "do it"}}, agent.WithHooks(agent.Hooks[msg]{
		AfterTurn: func(_ context.Context, st *agent.Step[msg]) error {
			require.True(t, st.Turn.Concluded)
			if !steered {
				steered = true
				st.Steer(msg{Role: "user", Text: "run the tests too"})
			}
			return nil
		},
	}))
	require.NoError(t, err)
	require.Equal(t, agent.Answered, out.Stop)
	require.Equal(t, 2, out.Steps)
	require.Equal(t, []msg{
		{Role: "user", Text: "do it"},
		{Role: "assistant", Calls: []runtime.TurnCall{{ID: "f", Name: "finish"}}},
		{Role: "tool", CallID: "f", Text: "finished"},
		{Role: "user", Text: "run the tests too"},
		{Role: "assistant", Text: "ok, also the tests"},
	}, out.Transcript)
	require.Equal(t, out.Transcript[:4], m.steps[1].transcript)

	// Without steering, the same turn concludes the loop.
	m2 := &script{reply: m.reply}
	out, err = run(t, context.Background(), s, m2, nil)
	require.NoError(t, err)
	require.Equal(t, agent.Concluded, out.Stop)
}

// Steering before the request reaches this request; steering after an
// answer asks the model again; the step limit still holds.
func TestRun_Item9_SteerBeforeModelAndAfterAnswer(t *testing.T) {
	s := newScope(t)
	m := &script{reply: func(n int, _ step) (agent.Reply[msg], error) { return answer(fmt.Sprint("answer ", n)), nil }}
	out, err := run(t, context.Background(), s, m, []msg{{Role: "user", Text: "hi"}}, agent.WithMaxSteps(3), agent.WithHooks(agent.Hooks[msg]{
		BeforeModel: func(_ context.Context, st *agent.Step[msg]) error {
			if st.Number == 1 {
				st.Steer(msg{Role: "user", Text: "be brief"})
			}
			return nil
		},
		AfterModel: func(_ context.Context, st *agent.Step[msg]) error {
			st.Steer(msg{Role: "user", Text: "more"})
			return nil
		},
	}))
	require.NoError(t, err)
	require.Equal(t, agent.StepLimit, out.Stop)
	require.Equal(t, 3, out.Steps)
	require.Equal(t, []msg{{Role: "user", Text: "hi"}, {Role: "user", Text: "be brief"}}, m.steps[0].transcript)
	require.Equal(t, []msg{
		{Role: "user", Text: "hi"}, {Role: "user", Text: "be brief"},
		{Role: "assistant", Text: "answer 1"}, {Role: "user", Text: "more"},
		{Role: "assistant", Text: "answer 2"}, {Role: "user", Text: "more"},
		{Role: "assistant", Text: "answer 3"}, {Role: "user", Text: "more"},
	}, out.Transcript)
}

func TestRun_Item9_HooksOfAnotherMessageTypeRefused(t *testing.T) {
	s := newScope(t)
	m := &script{reply: func(int, step) (agent.Reply[msg], error) { return answer("x"), nil }}
	out, err := run(t, context.Background(), s, m, nil, agent.WithHooks(agent.Hooks[string]{}))
	require.ErrorIs(t, err, agent.ErrInvalidOption)
	require.Contains(t, err.Error(), "string")
	require.Equal(t, agent.Failed, out.Stop)
	require.Empty(t, m.steps)
}

// streamer is a scripted StreamingModel: its reply's text arrives in
// pieces; what it returns is what Generate returns.
type streamer struct {
	script
	streamed int
}

func (m *streamer) GenerateStream(ctx context.Context, transcript []msg, tools []runtime.ToolSchema, parallel bool, text func(string)) (agent.Reply[msg], error) {
	m.streamed++
	r, err := m.Generate(ctx, transcript, tools, parallel)
	for _, m := range r.Messages {
		for _, piece := range strings.SplitAfter(m.Text, " ") {
			text(piece)
		}
	}
	return r, err
}

func TestRun_Item9_StreamingDeliversDeltasToTheTextHook(t *testing.T) {
	s := newScope(t)
	m := &streamer{script: script{reply: func(int, step) (agent.Reply[msg], error) { return answer("the answer is 42"), nil }}}
	var deltas []string
	out, err := run(t, context.Background(), s, m, nil, agent.WithHooks(agent.Hooks[msg]{
		Text: func(st *agent.Step[msg], d string) {
			require.Equal(t, 1, st.Number)
			deltas = append(deltas, d)
		},
	}))
	require.NoError(t, err)
	require.Equal(t, 1, m.streamed)
	require.Equal(t, []string{"the ", "answer ", "is ", "42"}, deltas)
	require.Equal(t, []msg{{Role: "assistant", Text: "the answer is 42"}}, out.Transcript)

	// Without a Text hook the same model is asked with Generate.
	out, err = run(t, context.Background(), s, m, nil)
	require.NoError(t, err)
	require.Equal(t, 1, m.streamed)
	require.Len(t, m.steps, 2)
	require.Equal(t, agent.Answered, out.Stop)
}

// A model that cannot stream is asked with Generate even with a Text
// hook; no delta arrives.
func TestRun_Item9_TextHookWithAModelThatDoesNotStream(t *testing.T) {
	s := newScope(t)
	m := &script{reply: func(int, step) (agent.Reply[msg], error) { return answer("whole"), nil }}
	called := false
	out, err := run(t, context.Background(), s, m, nil, agent.WithHooks(agent.Hooks[msg]{Text: func(*agent.Step[msg], string) { called = true }}))
	require.NoError(t, err)
	require.Equal(t, agent.Answered, out.Stop)
	require.False(t, called)
}

func ExampleWithHooks() {
	reg, err := runtime.New()
	if err != nil {
		panic(err)
	}
	defer reg.Close(context.Background())
	scope, err := reg.NewScope("agent")
	if err != nil {
		panic(err)
	}
	model := &script{reply: func(n int, _ step) (agent.Reply[msg], error) {
		r := answer(fmt.Sprint("draft ", n))
		r.Usage = agent.Usage{InputTokens: 100, OutputTokens: 20, TotalTokens: 120}
		return r, nil
	}}
	out, err := agent.Run(context.Background(), scope, model, []msg{{Role: "user", Text: "write"}},
		agent.WithHooks(agent.Hooks[msg]{
			AfterModel: func(_ context.Context, s *agent.Step[msg]) error {
				fmt.Printf("step %d used %d tokens\n", s.Number, s.Usage.TotalTokens)
				if s.Number == 1 {
					s.Steer(msg{Role: "user", Text: "shorter, please"}) // the loop goes on
				}
				return nil
			},
		}))
	if err != nil {
		panic(err)
	}
	fmt.Println(out.Stop, out.Steps, out.Usage.TotalTokens, len(out.Transcript))
	// Output:
	// step 1 used 120 tokens
	// step 2 used 120 tokens
	// answered 2 240 4
}

// A provider's absurd usage — negative, or so large the sum wraps —
// never makes the outcome's usage negative or smaller than a step's.
func TestRun_Item9_AbsurdUsageNeverWrapsTheSum(t *testing.T) {
	s := newScope(t)
	register(t, s, def(readTool()))
	huge := agent.Usage{InputTokens: math.MaxInt64 - 1, OutputTokens: 10, TotalTokens: math.MaxInt64}
	negative := agent.Usage{InputTokens: -5, OutputTokens: -7, TotalTokens: -12, CachedInputTokens: -1, ReasoningTokens: -1}
	m := &script{reply: func(n int, _ step) (agent.Reply[msg], error) {
		r := callTools(runtime.TurnCall{ID: fmt.Sprint("r", n), Name: "read", ArgumentsText: `{"path":"a"}`})
		switch n {
		case 1:
			r.Usage = huge
		case 2:
			r.Usage = negative
		default:
			r = answer("done")
			r.Usage = huge
		}
		return r, nil
	}}
	out, err := run(t, context.Background(), s, m, nil)
	require.NoError(t, err)
	require.Equal(t, agent.Usage{InputTokens: math.MaxInt64, OutputTokens: 20, TotalTokens: math.MaxInt64}, out.Usage)
	require.Equal(t, agent.Usage{InputTokens: 3, OutputTokens: 4, TotalTokens: 7}, agent.Usage{InputTokens: 3, OutputTokens: 4, TotalTokens: 7}.Add(negative))
}
