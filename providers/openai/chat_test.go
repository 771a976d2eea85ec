package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	oai "github.com/openai/openai-go/v3"

	"github.com/toolscope/toolscope/agent"
	"github.com/toolscope/toolscope/providers/openai"
	"github.com/toolscope/toolscope/providers/openai/internal/wire"
	"github.com/toolscope/toolscope/runtime"
)

// rawTool is a tool with a hand-written parameter schema that answers
// "<name> ok".
func rawTool(name, params string) runtime.Definition {
	return runtime.Definition{
		Name: name, Description: "the " + name + " tool",
		Parameters: json.RawMessage(params),
		Output: &runtime.Output{
			Schema: json.RawMessage(`{"type":"string"}`),
			Render: func(_ context.Context, _, v json.RawMessage) ([]runtime.Block, error) {
				var s string
				err := json.Unmarshal(v, &s)
				return []runtime.Block{runtime.Text(s)}, err
			},
		},
		Execute: func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) { return name + " ok", nil },
	}
}

// strictCases are parameter schemas and whether (and how) they are sent
// strict.
var strictCases = []struct {
	name, params string
	strict       bool
	want         string // the schema on the wire
}{
	{"closed", `{"type":"object","properties":{"b":{"type":"string"},"a":{"type":"integer"}},"required":["b","a"],"additionalProperties":false}`, true,
		`{"type":"object","properties":{"b":{"type":"string"},"a":{"type":"integer"}},"required":["b","a"],"additionalProperties":false}`},
	{"closable", `{"type":"object","properties":{"z":{"type":"object","properties":{"x":{"type":["string","null"]}},"required":["x"]}},"required":["z"]}`, true,
		`{"type":"object","properties":{"z":{"type":"object","properties":{"x":{"type":["string","null"]}},"required":["x"],"additionalProperties":false}},"required":["z"],"additionalProperties":false}`},
	{"optional", `{"type":"object","properties":{"q":{"type":"string"},"n":{"type":"integer"}},"required":["q"]}`, false,
		`{"type":"object","properties":{"q":{"type":"string"},"n":{"type":"integer"}},"required":["q"]}`},
	{"open", `{"type":"object","properties":{"q":{"type":"string"}},"required":["q"],"additionalProperties":true}`, false,
		`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"],"additionalProperties":true}`},
	{"freeform", `{"type":"object"}`, false, `{"type":"object"}`},
	{"oneof", `{"type":"object","properties":{"v":{"oneOf":[{"type":"string"},{"type":"integer"}]}},"required":["v"]}`, false,
		`{"type":"object","properties":{"v":{"oneOf":[{"type":"string"},{"type":"integer"}]}},"required":["v"]}`},
	{"minlength", `{"type":"object","properties":{"s":{"type":"string","minLength":1}},"required":["s"]}`, false,
		`{"type":"object","properties":{"s":{"type":"string","minLength":1}},"required":["s"]}`},
	{"noargs", `{"type":"object","properties":{}}`, true, `{"type":"object","properties":{},"additionalProperties":false,"required":[]}`},
}

func TestChat_ToolDefinitionsStrictOnlyInTheSubset(t *testing.T) {
	srv, client := newServer(t, wire.Chat("stop", "done"))
	reg := newRegistry(t)
	for _, c := range strictCases {
		register(t, reg.Global(), rawTool(c.name, c.params), nil)
	}
	model := openai.NewChatModel(client, oai.ChatCompletionNewParams{Model: "gpt-test"})
	out, err := agent.Run(testCtx(t), reg.Global(), model,
		[]oai.ChatCompletionMessageParamUnion{oai.UserMessage("hi")})
	if err != nil || out.Stop != agent.Answered || out.LastStopReason != "stop" {
		t.Fatalf("run: %v %+v", err, out)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	s := decodeSent(t, reqs[0])
	if s.Model != "gpt-test" || len(s.Tools) != len(strictCases) {
		t.Fatalf("model %q, %d tools", s.Model, len(s.Tools))
	}
	for i, c := range strictCases {
		tool := s.Tools[i]
		if tool.Type != "function" || tool.Function.Name != c.name {
			t.Errorf("tool %d: %s %s", i, tool.Type, tool.Function.Name)
		}
		if tool.Function.Strict == nil || *tool.Function.Strict != c.strict {
			t.Errorf("%s: strict %v, want %v", c.name, tool.Function.Strict, c.strict)
		}
		if string(tool.Function.Params) != c.want {
			t.Errorf("%s: parameters\n got %s\nwant %s", c.name, tool.Function.Params, c.want)
		}
	}
	// MayRunParallel: no tool has a classifier, so the flag is off.
	if s.ParallelToolCalls == nil || *s.ParallelToolCalls {
		t.Errorf("parallel_tool_calls %v, want false", s.ParallelToolCalls)
	}
}

func TestChat_NoToolsSendsNeitherToolsNorParallelFlag(t *testing.T) {
	srv, client := newServer(t, wire.Chat("stop", "hello"))
	reg := newRegistry(t)
	model := openai.NewChatModel(client, oai.ChatCompletionNewParams{Model: "gpt-test"})
	out, err := agent.Run(testCtx(t), reg.Global(), model,
		[]oai.ChatCompletionMessageParamUnion{oai.UserMessage("hi")}, agent.WithParallelToolCalls(true))
	if err != nil || out.Stop != agent.Answered {
		t.Fatalf("run: %v %+v", err, out)
	}
	s := decodeSent(t, srv.Requests()[0])
	for _, k := range []string{"tools", "parallel_tool_calls"} {
		if _, ok := s.Raw[k]; ok {
			t.Errorf("%s sent without tools: %s", k, s.Raw[k])
		}
	}
	if got := out.Transcript[len(out.Transcript)-1].OfAssistant.Content.OfString.Value; got != "hello" {
		t.Errorf("answer %q", got)
	}
}

// TestChat_R91_RunParallelCallsAndInvalidArgumentText runs the loop end to
// end: one assistant message with three parallel calls, one of them with
// argument text that is not JSON; the next request carries one tool
// message per call, in model order, ids matching, then the contexts.
func TestChat_R91_RunParallelCallsAndInvalidArgumentText(t *testing.T) {
	srv, client := newServer(t,
		wire.Chat("tool_calls", "", wire.Call{ID: "call_a", Name: "echo", Arguments: `{"text":"one"}`},
			wire.Call{ID: "call_b", Name: "echo", Arguments: `{"text":`},
			wire.Call{ID: "call_c", Name: "note", Arguments: ``}),
		wire.Chat("stop", "all done"))
	reg := newRegistry(t)
	echoTool(t, reg.Global())
	note, err := runtime.NewTool("note", "Take a note", func(ctx context.Context, _ struct{}, rc *runtime.RunContext) (string, error) {
		rc.DeferContext(runtime.ContextMessage{Role: "system", Text: "note taken"})
		rc.DeferContext(runtime.ContextMessage{Role: "reminder", Text: "be brief"})
		return "noted", nil
	}, runtime.WithParallel())
	register(t, reg.Global(), note, err)

	model := openai.NewChatModel(client, oai.ChatCompletionNewParams{Model: "gpt-test"})
	out, err := agent.Run(testCtx(t), reg.Global(), model,
		[]oai.ChatCompletionMessageParamUnion{oai.UserMessage("go")})
	if err != nil || out.Stop != agent.Answered || out.Steps != 2 || out.LastStopReason != "stop" {
		t.Fatalf("run: %v stop=%s steps=%d reason=%s", err, out.Stop, out.Steps, out.LastStopReason)
	}
	reqs := srv.Requests()
	first, second := decodeSent(t, reqs[0]), decodeSent(t, reqs[1])
	if first.ParallelToolCalls == nil || !*first.ParallelToolCalls {
		t.Errorf("parallel_tool_calls %v, want true (the scope has parallel tools)", first.ParallelToolCalls)
	}
	msgs := second.Messages
	roles := make([]string, len(msgs))
	for i, m := range msgs {
		roles[i] = m.Role
	}
	if strings.Join(roles, ",") != "user,assistant,tool,tool,tool,system,user" {
		t.Fatalf("roles %v", roles)
	}
	asst := msgs[1]
	if len(asst.ToolCalls) != 3 || asst.ToolCalls[1].ID != "call_b" || asst.ToolCalls[1].Function.Arguments != `{"text":` {
		t.Errorf("assistant message sent back: %+v", asst)
	}
	wantIDs := []string{"call_a", "call_b", "call_c"}
	for i, m := range msgs[2:5] {
		if m.ToolCallID != wantIDs[i] {
			t.Errorf("tool message %d answers %q, want %q", i, m.ToolCallID, wantIDs[i])
		}
	}
	if got := text(msgs[2].Content); got != "echo:one" {
		t.Errorf("call_a: %q", got)
	}
	if got := text(msgs[3].Content); !strings.HasPrefix(got, "Error: invalid arguments") || !strings.HasSuffix(got, "[code: INVALID_ARGS]") {
		t.Errorf("call_b (invalid text): %q", got)
	}
	if got := text(msgs[4].Content); got != "noted" {
		t.Errorf("call_c (empty text is {}): %q", got)
	}
	if text(msgs[5].Content) != "note taken" || text(msgs[6].Content) != "[reminder] be brief" {
		t.Errorf("contexts: %s %s", msgs[5].Content, msgs[6].Content)
	}
}

// TestChat_FinishLengthTruncatedCall: a reply cut off by max tokens
// (finish_reason "length") with a truncated call still has its call run
// and answered.
func TestChat_FinishLengthTruncatedCall(t *testing.T) {
	srv, client := newServer(t,
		wire.Chat("length", "", wire.Call{ID: "call_t", Name: "echo", Arguments: `{"text":"trunc`}),
		wire.Chat("length", "partial answ"))
	reg := newRegistry(t)
	echoTool(t, reg.Global())
	model := openai.NewChatModel(client, oai.ChatCompletionNewParams{Model: "gpt-test"})
	out, err := agent.Run(testCtx(t), reg.Global(), model, []oai.ChatCompletionMessageParamUnion{oai.UserMessage("go")})
	if err != nil || out.Stop != agent.Answered || out.LastStopReason != "length" {
		t.Fatalf("run: %v %+v", err, out)
	}
	msgs := decodeSent(t, srv.Requests()[1]).Messages
	if len(msgs) != 3 || msgs[2].ToolCallID != "call_t" || !strings.Contains(text(msgs[2].Content), "[code: INVALID_ARGS]") {
		t.Fatalf("second request: %+v", msgs)
	}
}

// TestChat_R97_AbortedTurnAnswersEveryCall: the ctx ends inside the first
// (exclusive) call; the calls after it never start, and still every call
// gets its tool message, ABORTED_BEFORE_DISPATCH with its code.
func TestChat_R97_AbortedTurnAnswersEveryCall(t *testing.T) {
	_, client := newServer(t,
		wire.Chat("tool_calls", "", wire.Call{ID: "c1", Name: "stop_all", Arguments: `{}`},
			wire.Call{ID: "c2", Name: "echo", Arguments: `{"text":"x"}`},
			wire.Call{ID: "c3", Name: "stop_all", Arguments: `{}`}))
	reg := newRegistry(t)
	echoTool(t, reg.Global())
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	stop, err := runtime.NewTool("stop_all", "Cancel the run", func(ctx context.Context, _ struct{}, rc *runtime.RunContext) (string, error) {
		cancel()
		<-ctx.Done()
		return "", ctx.Err()
	})
	register(t, reg.Global(), stop, err)
	model := openai.NewChatModel(client, oai.ChatCompletionNewParams{Model: "gpt-test"})
	out, err := agent.Run(ctx, reg.Global(), model, []oai.ChatCompletionMessageParamUnion{oai.UserMessage("go")})
	if err != nil || out.Stop != agent.ContextDone {
		t.Fatalf("run: %v %+v", err, out)
	}
	tail := out.Transcript[2:]
	if len(tail) != 3 {
		t.Fatalf("%d messages after the assistant's", len(tail))
	}
	for i, id := range []string{"c1", "c2", "c3"} {
		tm := tail[i].OfTool
		if tm == nil || tm.ToolCallID != id {
			t.Fatalf("message %d: %+v", i, tail[i])
		}
		got := tm.Content.OfString.Value
		if !strings.HasPrefix(got, "Error") {
			t.Errorf("%s: %q", id, got)
		}
		if i > 0 && !strings.HasSuffix(got, "[code: ABORTED_BEFORE_DISPATCH]") {
			t.Errorf("%s never started: %q", id, got)
		}
	}
}

func TestChatToolMessages_RefusesResultsThatDoNotMatchTheCalls(t *testing.T) {
	calls := []runtime.TurnCall{{ID: "a", Name: "x"}, {ID: "b", Name: "x"}}
	ok := runtime.Success("v").WithContent(runtime.Text("v"))
	for name, res := range map[string]*runtime.TurnResult{
		"nil":   nil,
		"short": {Results: []*runtime.Result{ok}},
		"hole":  {Results: []*runtime.Result{ok, nil}},
	} {
		if msgs, err := openai.ChatToolMessages(calls, res); err == nil || msgs != nil {
			t.Errorf("%s: %v %v", name, msgs, err)
		}
	}
	if _, err := openai.ChatToolMessages([]runtime.TurnCall{{Name: "x"}}, &runtime.TurnResult{Results: []*runtime.Result{ok}}); err == nil {
		t.Error("a call without id was accepted")
	}
}

func TestChatModel_APIErrorIsReturned(t *testing.T) {
	_, client := newServer(t) // empty script: 500
	reg := newRegistry(t)
	model := openai.NewChatModel(client, oai.ChatCompletionNewParams{Model: "gpt-test"})
	out, err := agent.Run(testCtx(t), reg.Global(), model, []oai.ChatCompletionMessageParamUnion{oai.UserMessage("go")})
	var apiErr *oai.Error
	if out.Stop != agent.Failed || !errors.As(err, &apiErr) || apiErr.StatusCode != 500 {
		t.Fatalf("stop %s, err %v", out.Stop, err)
	}
}

// TestChat_ToolRegisteredByAToolIsOfferedNextStep: three steps; the tool
// of step 1 registers another tool, which the second request offers and
// the model calls.
func TestChat_ToolRegisteredByAToolIsOfferedNextStep(t *testing.T) {
	srv, client := newServer(t,
		wire.Chat("tool_calls", "", wire.Call{ID: "c1", Name: "install", Arguments: `{}`}),
		wire.Chat("tool_calls", "", wire.Call{ID: "c2", Name: "echo", Arguments: `{"text":"new"}`}),
		wire.Chat("stop", "done"))
	reg := newRegistry(t)
	g := reg.Global()
	install, err := runtime.NewTool("install", "Install the echo tool", func(ctx context.Context, _ struct{}, rc *runtime.RunContext) (string, error) {
		echo, err := runtime.NewTool("echo", "Echo the text", func(ctx context.Context, in struct {
			Text string `json:"text"`
		}, rc *runtime.RunContext) (string, error) {
			return "echo:" + in.Text, nil
		})
		if err != nil {
			return "", err
		}
		_, err = g.Register(echo) // not t.Fatal: this runs on a pool worker
		return "installed", err
	})
	register(t, g, install, err)
	model := openai.NewChatModel(client, oai.ChatCompletionNewParams{Model: "gpt-test"})
	out, err := agent.Run(testCtx(t), g, model, []oai.ChatCompletionMessageParamUnion{oai.UserMessage("go")})
	if err != nil || out.Stop != agent.Answered || out.Steps != 3 {
		t.Fatalf("run: %v %+v", err, out)
	}
	reqs := srv.Requests()
	var offered [3][]string
	for i, r := range reqs {
		for _, tool := range decodeSent(t, r).Tools {
			offered[i] = append(offered[i], tool.Function.Name)
		}
	}
	if strings.Join(offered[0], ",") != "install" || strings.Join(offered[1], ",") != "install,echo" {
		t.Fatalf("offered per step: %v", offered)
	}
	last := decodeSent(t, reqs[2]).Messages
	if tm := last[len(last)-1]; tm.ToolCallID != "c2" || text(tm.Content) != "echo:new" {
		t.Fatalf("last tool message %+v", tm)
	}
}
