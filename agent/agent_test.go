package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/toolscope/toolscope/agent"
	"github.com/toolscope/toolscope/runtime"
)

// msg is a provider-neutral message: what the scripted model below reads
// and writes. The adapters' own tests run the loop against the official
// SDK clients; here the loop itself is under test.
type msg struct {
	Role  string // "user", "assistant", "tool", "context"
	Text  string
	Calls []runtime.TurnCall
	// Of a tool message: the call it answers and whether it is an error.
	CallID  string
	IsError bool
}

// step is what the scripted model saw on one request.
type step struct {
	transcript []msg
	tools      []string
	parallel   bool
}

// script is a Model whose replies come from a function of the step.
type script struct {
	mu    sync.Mutex
	steps []step
	reply func(n int, s step) (agent.Reply[msg], error)
}

func (m *script) Generate(ctx context.Context, transcript []msg, tools []runtime.ToolSchema, parallel bool) (agent.Reply[msg], error) {
	s := step{transcript: append([]msg(nil), transcript...), parallel: parallel}
	for _, t := range tools {
		s.tools = append(s.tools, t.Name)
	}
	m.mu.Lock()
	m.steps = append(m.steps, s)
	n := len(m.steps)
	m.mu.Unlock()
	return m.reply(n, s)
}

func (m *script) ToolResults(calls []runtime.TurnCall, res *runtime.TurnResult) ([]msg, error) {
	out := make([]msg, 0, len(calls)+len(res.Contexts))
	for i, c := range calls {
		r := res.Results[i]
		text := r.Text()
		if r.IsError() {
			text = string(r.Code()) + ": " + r.ErrorMessage()
		}
		out = append(out, msg{Role: "tool", CallID: c.ID, Text: text, IsError: r.IsError()})
	}
	for _, c := range res.Contexts {
		out = append(out, msg{Role: "context", Text: c.Text})
	}
	return out, nil
}

// answer is a reply without tool calls.
func answer(text string) agent.Reply[msg] {
	return agent.Reply[msg]{Messages: []msg{{Role: "assistant", Text: text}}, StopReason: "stop"}
}

// callTools is a reply asking for the given calls.
func callTools(calls ...runtime.TurnCall) agent.Reply[msg] {
	return agent.Reply[msg]{Messages: []msg{{Role: "assistant", Calls: calls}}, Calls: calls, StopReason: "tool_calls"}
}

func newScope(t *testing.T, opts ...runtime.Option) *runtime.Scope {
	t.Helper()
	reg, err := runtime.New(opts...)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = reg.Close(ctx)
	})
	s, err := reg.NewScope("agent")
	require.NoError(t, err)
	return s
}

func register(t *testing.T, s *runtime.Scope, def runtime.Definition) {
	t.Helper()
	_, err := s.Register(def)
	require.NoError(t, err)
}

// def unwraps NewTool's result; a bad definition is a bug of the test.
func def(d runtime.Definition, err error) runtime.Definition {
	if err != nil {
		panic(err)
	}
	return d
}

type pathArgs struct {
	Path string `json:"path"`
}

func readTool() (runtime.Definition, error) {
	return runtime.NewTool("read", "Read a file", func(ctx context.Context, in pathArgs, rc *runtime.RunContext) (string, error) {
		return "contents of " + in.Path, nil
	}, runtime.WithParallel())
}

func writeTool() (runtime.Definition, error) {
	return runtime.NewTool("write", "Write a file", func(ctx context.Context, in pathArgs, rc *runtime.RunContext) (string, error) {
		return "wrote " + in.Path, nil
	})
}

// run calls agent.Run with a bound, dumping goroutines if it does not return.
func run(t *testing.T, ctx context.Context, s *runtime.Scope, m agent.Model[msg], transcript []msg, opts ...agent.Option) (*agent.Outcome[msg], error) {
	t.Helper()
	type ret struct {
		out *agent.Outcome[msg]
		err error
	}
	done := make(chan ret, 1)
	go func() {
		out, err := agent.Run(ctx, s, m, transcript, opts...)
		done <- ret{out, err}
	}()
	select {
	case r := <-done:
		return r.out, r.err
	case <-time.After(20 * time.Second):
		_ = pprof.Lookup("goroutine").WriteTo(os.Stderr, 2)
		t.Fatal("agent.Run did not return within 20s")
		return nil, nil
	}
}

func TestRun_AnsweredAtOnce(t *testing.T) {
	s := newScope(t)
	register(t, s, def(readTool()))
	m := &script{reply: func(int, step) (agent.Reply[msg], error) { return answer("hello"), nil }}
	out, err := run(t, context.Background(), s, m, []msg{{Role: "user", Text: "hi"}})
	require.NoError(t, err)
	require.Equal(t, agent.Answered, out.Stop)
	require.Equal(t, 1, out.Steps)
	require.Equal(t, "stop", out.LastStopReason)
	require.Equal(t, []msg{{Role: "user", Text: "hi"}, {Role: "assistant", Text: "hello"}}, out.Transcript)
	require.Empty(t, out.Turns)
	require.Equal(t, []string{"read"}, m.steps[0].tools)
}

// A tool that registers another tool: the new tool is offered on the next
// step, because the loop reads the scope's schemas afresh each step.
func TestRun_ThreeStepsToolRegisteredBetweenSteps(t *testing.T) {
	s := newScope(t)
	register(t, s, def(readTool()))
	register(t, s, def(runtime.NewTool("install", "Install the grep tool", func(ctx context.Context, in struct{}, rc *runtime.RunContext) (string, error) {
		def, err := runtime.NewTool("grep", "Search files", func(ctx context.Context, in struct {
			Pattern string `json:"pattern"`
		}, rc *runtime.RunContext) (string, error) {
			return "found " + in.Pattern, nil
		}, runtime.WithParallel())
		if err != nil {
			return "", err
		}
		if _, err := s.Register(def); err != nil {
			return "", err
		}
		return "installed grep", nil
	})))
	m := &script{reply: func(n int, st step) (agent.Reply[msg], error) {
		switch n {
		case 1:
			return callTools(
				runtime.TurnCall{ID: "a", Name: "read", ArgumentsText: `{"path":"x.go"}`},
				runtime.TurnCall{ID: "b", Name: "install"}), nil
		case 2:
			return callTools(runtime.TurnCall{ID: "c", Name: "grep", ArgumentsText: `{"pattern":"TODO"}`}), nil
		default:
			return answer("done"), nil
		}
	}}
	out, err := run(t, context.Background(), s, m, []msg{{Role: "user", Text: "go"}})
	require.NoError(t, err)
	require.Equal(t, agent.Answered, out.Stop)
	require.Equal(t, 3, out.Steps)
	require.Len(t, out.Turns, 2)
	require.Equal(t, []string{"read", "install"}, m.steps[0].tools)
	require.Equal(t, []string{"read", "install", "grep"}, m.steps[1].tools)
	var tools []string
	for _, x := range out.Transcript {
		if x.Role == "tool" {
			tools = append(tools, x.CallID+"="+x.Text)
		}
	}
	require.Equal(t, []string{"a=contents of x.go", "b=installed grep", "c=found TODO"}, tools)
	// Each request carried everything before it.
	require.Len(t, m.steps[2].transcript, 1+1+2+1+1) // user, reply, 2 results, reply, result
}

func TestRun_ConcludedTurnStops(t *testing.T) {
	s := newScope(t)
	register(t, s, def(runtime.NewTool("finish", "End the task", func(ctx context.Context, in struct{}, rc *runtime.RunContext) (string, error) {
		rc.ConcludeTurn()
		return "finished", nil
	})))
	m := &script{reply: func(int, step) (agent.Reply[msg], error) {
		return callTools(runtime.TurnCall{ID: "f", Name: "finish"}), nil
	}}
	out, err := run(t, context.Background(), s, m, nil)
	require.NoError(t, err)
	require.Equal(t, agent.Concluded, out.Stop)
	require.Equal(t, 1, out.Steps)
	require.True(t, out.Turns[0].Concluded)
	require.Equal(t, msg{Role: "tool", CallID: "f", Text: "finished"}, out.Transcript[len(out.Transcript)-1])
}

func TestRun_StepLimit(t *testing.T) {
	s := newScope(t)
	register(t, s, def(readTool()))
	m := &script{reply: func(n int, _ step) (agent.Reply[msg], error) {
		return callTools(runtime.TurnCall{ID: fmt.Sprint("r", n), Name: "read", ArgumentsText: `{"path":"a"}`}), nil
	}}
	out, err := run(t, context.Background(), s, m, nil, agent.WithMaxSteps(2))
	require.NoError(t, err)
	require.Equal(t, agent.StepLimit, out.Stop)
	require.Equal(t, 2, out.Steps)
	require.Len(t, m.steps, 2)
	require.Len(t, out.Transcript, 4) // two replies, two results
	require.Equal(t, "r2", out.Transcript[3].CallID)
}

// The ctx ends while a turn runs: every call still gets a result (the
// running ones see the cancellation, the queued ones are never started),
// the results are appended, and the loop stops without asking again.
func TestRun_ContextCancelledMidTurn(t *testing.T) {
	s := newScope(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan struct{})
	register(t, s, def(runtime.NewTool("wait", "Wait for the user", func(ctx context.Context, in struct{}, rc *runtime.RunContext) (string, error) {
		close(started)
		<-ctx.Done()
		return "", ctx.Err()
	})))
	register(t, s, def(writeTool()))
	go func() {
		select {
		case <-started:
			cancel()
		case <-time.After(20 * time.Second):
		}
	}()
	m := &script{reply: func(n int, _ step) (agent.Reply[msg], error) {
		if n > 1 {
			return agent.Reply[msg]{}, errors.New("asked again after the ctx ended")
		}
		return callTools(
			runtime.TurnCall{ID: "w", Name: "wait"},
			runtime.TurnCall{ID: "x", Name: "write", ArgumentsText: `{"path":"a"}`},
			runtime.TurnCall{ID: "y", Name: "write", ArgumentsText: `{"path":"b"}`}), nil
	}}
	out, err := run(t, ctx, s, m, nil)
	require.NoError(t, err)
	require.Equal(t, agent.ContextDone, out.Stop)
	require.Equal(t, 1, out.Steps)
	var ids []string
	for _, x := range out.Transcript[1:] {
		require.Equal(t, "tool", x.Role)
		require.True(t, x.IsError, x.Text)
		ids = append(ids, x.CallID)
	}
	require.Equal(t, []string{"w", "x", "y"}, ids)
	require.True(t, strings.HasPrefix(out.Transcript[2].Text, string(runtime.CodeAbortedBeforeDispatch)), out.Transcript[2].Text)
}

func TestRun_ContextDoneBeforeTheFirstStep(t *testing.T) {
	s := newScope(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	m := &script{reply: func(int, step) (agent.Reply[msg], error) { return answer("no"), nil }}
	out, err := run(t, ctx, s, m, []msg{{Role: "user", Text: "hi"}})
	require.NoError(t, err)
	require.Equal(t, agent.ContextDone, out.Stop)
	require.Zero(t, out.Steps)
	require.Empty(t, m.steps)
}

func TestRun_ModelErrorFails(t *testing.T) {
	s := newScope(t)
	boom := errors.New("503 from the provider")
	m := &script{reply: func(int, step) (agent.Reply[msg], error) { return agent.Reply[msg]{}, boom }}
	out, err := run(t, context.Background(), s, m, []msg{{Role: "user", Text: "hi"}})
	require.ErrorIs(t, err, boom)
	require.Equal(t, agent.Failed, out.Stop)
	require.Equal(t, []msg{{Role: "user", Text: "hi"}}, out.Transcript)
}

type failingResults struct{ script }

func (m *failingResults) ToolResults([]runtime.TurnCall, *runtime.TurnResult) ([]msg, error) {
	return nil, errors.New("cannot encode")
}

func TestRun_AdapterErrorFails(t *testing.T) {
	s := newScope(t)
	register(t, s, def(readTool()))
	m := &failingResults{script{reply: func(int, step) (agent.Reply[msg], error) {
		return callTools(runtime.TurnCall{ID: "a", Name: "read", ArgumentsText: `{"path":"p"}`}), nil
	}}}
	out, err := run(t, context.Background(), s, m, nil)
	require.ErrorContains(t, err, "cannot encode")
	require.Equal(t, agent.Failed, out.Stop)
	require.Len(t, out.Turns, 1)
}

// A turn the registry refuses (it was closed) fails the loop with the
// turn's error; nothing is appended for its calls.
func TestRun_TurnErrorFails(t *testing.T) {
	reg, err := runtime.New()
	require.NoError(t, err)
	s, err := reg.NewScope("agent")
	require.NoError(t, err)
	register(t, s, def(readTool()))
	m := &script{reply: func(int, step) (agent.Reply[msg], error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, reg.Close(ctx))
		return callTools(runtime.TurnCall{ID: "a", Name: "read"}), nil
	}}
	out, err := run(t, context.Background(), s, m, nil)
	require.ErrorIs(t, err, runtime.ErrClosed)
	require.Equal(t, agent.Failed, out.Stop)
	require.Len(t, out.Transcript, 1) // the reply, no results
}

func TestRun_InvalidOptions(t *testing.T) {
	s := newScope(t)
	m := &script{reply: func(int, step) (agent.Reply[msg], error) { return answer(""), nil }}
	_, err := agent.Run(context.Background(), s, m, nil, agent.WithMaxSteps(0))
	require.ErrorIs(t, err, agent.ErrInvalidOption)
	_, err = agent.Run[msg](context.Background(), nil, m, nil)
	require.ErrorIs(t, err, agent.ErrInvalidOption)
	_, err = agent.Run[msg](context.Background(), s, nil, nil)
	require.ErrorIs(t, err, agent.ErrInvalidOption)
	//lint:ignore SA1012 a nil ctx is the input under test
	_, err = agent.Run(nil, s, m, nil)
	require.ErrorIs(t, err, agent.ErrInvalidOption)
	require.Empty(t, m.steps)
}

// The provider's parallel flag follows the scope: on exactly when a tool
// may run in parallel, read each step, unless the caller fixes it.
func TestRun_ParallelFlagFollowsTheScope(t *testing.T) {
	s := newScope(t)
	register(t, s, def(writeTool()))
	var dispose func()
	m := &script{reply: func(n int, _ step) (agent.Reply[msg], error) {
		if n == 1 {
			def, err := readTool()
			if err != nil {
				return agent.Reply[msg]{}, err
			}
			if dispose, err = s.Register(def); err != nil {
				return agent.Reply[msg]{}, err
			}
		}
		if n == 2 {
			dispose()
		}
		if n == 3 {
			return answer("ok"), nil
		}
		return callTools(runtime.TurnCall{ID: fmt.Sprint(n), Name: "write", ArgumentsText: `{"path":"a"}`}), nil
	}}
	_, err := run(t, context.Background(), s, m, nil)
	require.NoError(t, err)
	require.Equal(t, []bool{false, true, false}, []bool{m.steps[0].parallel, m.steps[1].parallel, m.steps[2].parallel})

	fixed := &script{reply: func(int, step) (agent.Reply[msg], error) { return answer("ok"), nil }}
	_, err = run(t, context.Background(), s, fixed, nil, agent.WithParallelToolCalls(true))
	require.NoError(t, err)
	require.True(t, fixed.steps[0].parallel)
	require.False(t, agent.MayRunParallel(s))
}

// A restricted scope offers only what it sees, and the flag looks only at
// those tools.
func TestMayRunParallel_SeesOnlyTheScopesView(t *testing.T) {
	s := newScope(t)
	register(t, s.Registry().Global(), def(readTool()))
	register(t, s.Registry().Global(), def(writeTool()))
	require.True(t, agent.MayRunParallel(s))
	_, err := s.Restrict(runtime.Restriction{Deny: []string{"read"}})
	require.NoError(t, err)
	require.False(t, agent.MayRunParallel(s))
	require.True(t, agent.MayRunParallel(s.Registry().Global()))
}

// Turn options reach every turn of the loop.
func TestRun_TurnOptionsReachTheTurn(t *testing.T) {
	s := newScope(t)
	var mu sync.Mutex
	inFlight, peak := 0, 0
	gate := make(chan struct{})
	register(t, s, def(runtime.NewTool("slow", "Slow read", func(ctx context.Context, in struct{}, rc *runtime.RunContext) (string, error) {
		mu.Lock()
		inFlight++
		peak = max(peak, inFlight)
		mu.Unlock()
		select {
		case <-gate:
		case <-time.After(5 * time.Millisecond):
		}
		mu.Lock()
		inFlight--
		mu.Unlock()
		return "ok", nil
	}, runtime.WithParallel())))
	m := &script{reply: func(n int, _ step) (agent.Reply[msg], error) {
		if n > 1 {
			return answer("done"), nil
		}
		var calls []runtime.TurnCall
		for i := range 6 {
			calls = append(calls, runtime.TurnCall{ID: fmt.Sprint(i), Name: "slow"})
		}
		return callTools(calls...), nil
	}}
	out, err := run(t, context.Background(), s, m, nil, agent.WithTurnOptions(runtime.WithMaxParallel(1)))
	require.NoError(t, err)
	require.Equal(t, agent.Answered, out.Stop)
	require.Equal(t, 1, peak)
}

// Example runs two steps of a scripted model over a scope: a read, then an
// answer.
func Example() {
	reg, err := runtime.New()
	if err != nil {
		panic(err)
	}
	defer reg.Close(context.Background())
	read, err := readTool()
	if err != nil {
		panic(err)
	}
	if _, err := reg.Global().Register(read); err != nil {
		panic(err)
	}
	scope, err := reg.NewScope("agent")
	if err != nil {
		panic(err)
	}
	model := &script{reply: func(n int, _ step) (agent.Reply[msg], error) {
		if n == 1 {
			return callTools(runtime.TurnCall{ID: "call_1", Name: "read", ArgumentsText: `{"path":"go.mod"}`}), nil
		}
		return answer("go.mod is read"), nil
	}}
	out, err := agent.Run(context.Background(), scope, model, []msg{{Role: "user", Text: "read go.mod"}})
	if err != nil {
		panic(err)
	}
	for _, m := range out.Transcript {
		b, _ := json.Marshal(m.Calls)
		fmt.Println(m.Role, m.CallID, m.Text, string(b))
	}
	fmt.Println(out.Stop, out.Steps)
	// Output:
	// user  read go.mod null
	// assistant   [{"ID":"call_1","Name":"read","ArgumentsText":"{\"path\":\"go.mod\"}"}]
	// tool call_1 contents of go.mod null
	// assistant  go.mod is read null
	// answered 2
}
