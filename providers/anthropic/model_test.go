package anthropic_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/toolscope/toolscope/agent"
	"github.com/toolscope/toolscope/providers/anthropic"
	"github.com/toolscope/toolscope/runtime"
)

// reply is a Messages API response body (non-streaming) with the given
// content blocks and stop reason.
func reply(id, stop string, blocks ...string) string {
	return fmt.Sprintf(`{
  "id": %q,
  "type": "message",
  "role": "assistant",
  "model": "claude-sonnet-4-5",
  "content": [%s],
  "stop_reason": %q,
  "stop_sequence": null,
  "usage": {"input_tokens": 412, "output_tokens": 96}
}`, id, strings.Join(blocks, ",\n    "), stop)
}

func toolUse(id, name, input string) string {
	return fmt.Sprintf(`{"type": "tool_use", "id": %q, "name": %q, "input": %s}`, id, name, input)
}

func text(s string) string { return fmt.Sprintf(`{"type": "text", "text": %q}`, s) }

func newModel(t testing.TB, s *server) *anthropic.Model {
	t.Helper()
	m, err := anthropic.New(s.client(), sdk.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 1024})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func userText(s string) sdk.MessageParam { return sdk.NewUserMessage(sdk.NewTextBlock(s)) }

func run(t *testing.T, ctx context.Context, f *fixture, m *anthropic.Model, opts ...agent.Option) *agent.Outcome[sdk.MessageParam] {
	t.Helper()
	var out *agent.Outcome[sdk.MessageParam]
	var err error
	within(t, 20*time.Second, func() {
		out, err = agent.Run(ctx, f.scope, m, []sdk.MessageParam{userText("tidy the notes")}, opts...)
	})
	if err != nil {
		t.Fatalf("Run: %v (stop %s)", err, out.Stop)
	}
	return out
}

// TestModel_RunEndToEnd: the official client against a loopback Messages
// API. Step 1 answers with parallel tool_use blocks (two reads, a write
// barrier, a failing tool, a read whose input is not an object, an image
// tool); step 2 ends the turn. The second request must carry the assistant
// message as sent and one tool_result per call, in order, ids matching,
// is_error on the failures, then the contexts.
func TestModel_RunEndToEnd(t *testing.T) {
	s := newServer(t,
		reply("msg_1", "tool_use",
			text("Reading both notes, then writing the summary."),
			toolUse("toolu_01", "read", `{"path": "a.txt"}`),
			toolUse("toolu_02", "read", `{"path":"b.txt"}`),
			toolUse("toolu_03", "write", `{"path":"sum.txt","text":"a+b"}`),
			toolUse("toolu_04", "fail", `{}`),
			toolUse("toolu_05", "read", `"a.txt"`),
			toolUse("toolu_06", "picture", `{}`),
		),
		reply("msg_2", "end_turn", text("Done: sum.txt written.")),
	)
	f := newFixture(t)
	out := run(t, context.Background(), f, newModel(t, s))

	if out.Stop != agent.Answered || out.Steps != 2 || out.LastStopReason != "end_turn" {
		t.Fatalf("stop %s after %d steps (last %q), want answered after 2 (end_turn)", out.Stop, out.Steps, out.LastStopReason)
	}
	reqs := s.requests(t)
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}

	// Tool definitions: the scope's Schemas, in view order, as input_schema.
	schemas, err := f.scope.Schemas()
	must(t, err)
	for i, req := range reqs {
		if req.Model != "claude-sonnet-4-5" || req.MaxTokens != 1024 {
			t.Errorf("request %d: model %q max_tokens %d", i, req.Model, req.MaxTokens)
		}
		if len(req.Tools) != len(schemas) {
			t.Fatalf("request %d: %d tools, want %d", i, len(req.Tools), len(schemas))
		}
		for j, tool := range req.Tools {
			if tool.Name != schemas[j].Name || tool.Description != schemas[j].Description {
				t.Errorf("tool %d: %q/%q, want %q/%q", j, tool.Name, tool.Description, schemas[j].Name, schemas[j].Description)
			}
			if !sameJSON(t, tool.InputSchema, schemas[j].Parameters) {
				t.Errorf("tool %q: input_schema %s, want %s", tool.Name, tool.InputSchema, schemas[j].Parameters)
			}
		}
		// read is parallel-classified, so parallel tool use stays on.
		if tc := req.ToolChoice; tc == nil || tc.Type != "auto" || tc.DisableParallelToolUse == nil || *tc.DisableParallelToolUse {
			t.Errorf("request %d: tool_choice %+v, want auto with disable_parallel_tool_use false", i, tc)
		}
	}

	msgs := reqs[1].Messages
	if len(msgs) != 3 || msgs[0].Role != "user" || msgs[1].Role != "assistant" || msgs[2].Role != "user" {
		t.Fatalf("second request messages: %+v", msgs)
	}
	// The assistant message goes back as the model sent it.
	uses := msgs[1].Content[1:]
	wantInputs := []string{`{"path":"a.txt"}`, `{"path":"b.txt"}`, `{"path":"sum.txt","text":"a+b"}`, `{}`, `"a.txt"`, `{}`}
	for i, u := range uses {
		if u.Type != "tool_use" || u.ID != fmt.Sprintf("toolu_%02d", i+1) || compact(t, u.Input) != wantInputs[i] {
			t.Errorf("assistant block %d: %+v", i+1, u)
		}
	}
	// One tool_result per call, in model order, then the context.
	results := msgs[2].Content
	if len(results) != 7 {
		t.Fatalf("%d blocks in the tool result message, want 6 results and a context: %+v", len(results), results)
	}
	wantErr := []bool{false, false, false, true, true, false}
	for i, want := range wantErr {
		r := results[i]
		if r.Type != "tool_result" || r.ToolUseID != uses[i].ID {
			t.Errorf("block %d: %s for %q, want tool_result for %q", i, r.Type, r.ToolUseID, uses[i].ID)
		}
		if got := r.IsError != nil && *r.IsError; got != want {
			t.Errorf("block %d (%s): is_error %v, want %v", i, r.ToolUseID, got, want)
		}
	}
	if got := blockTexts(results[0].Content); got != "contents of a.txt" {
		t.Errorf("read a.txt: %q", got)
	}
	if got := blockTexts(results[3].Content); got != "Error: quota exceeded|[code: QUOTA_EXCEEDED]" {
		t.Errorf("fail: %q", got)
	}
	if got := blockTexts(results[4].Content); !strings.Contains(got, "[code: INVALID_ARGS]") {
		t.Errorf("read with a string input: %q, want an INVALID_ARGS error", got)
	}
	pic := results[5].Content
	if len(pic) != 2 || pic[0].Text != "a red dot" || pic[1].Type != "image" ||
		compact(t, pic[1].Source) != `{"data":"iVBORw0KGgo=","media_type":"image/png","type":"base64"}` {
		t.Errorf("picture content: %+v", pic)
	}
	if c := results[6]; c.Type != "text" || c.Text != "the picture is 1x1" {
		t.Errorf("context block: %+v", c)
	}

	// The write is a barrier: both reads finished before it started.
	ev := out.Turns[0].Events
	idx := func(s string) int {
		return slices.IndexFunc(ev, func(e runtime.TurnEvent) bool { return e.String() == s })
	}
	if w := idx("call:toolu_03"); w < 0 || idx("result:toolu_01") > w || idx("result:toolu_02") > w {
		t.Errorf("write started before the reads finished: %v", ev)
	}
	if got := out.Transcript[len(out.Transcript)-1]; got.OfAssistant == nil || got.OfAssistant.Content[0].OfText.Text != "Done: sum.txt written." {
		t.Errorf("last message: %+v", got)
	}
}

func blockTexts(bs []wireBlock) string {
	var s []string
	for _, b := range bs {
		s = append(s, b.Text)
	}
	return strings.Join(s, "|")
}

func sameJSON(t testing.TB, a, b []byte) bool {
	t.Helper()
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// TestModel_StopReasons: max_tokens without tool use ends the loop as
// answered with the provider's reason; max_tokens with a tool_use block
// still runs the call (it needs its tool_result).
func TestModel_StopReasons(t *testing.T) {
	t.Run("max_tokens", func(t *testing.T) {
		s := newServer(t, reply("msg_1", "max_tokens", text("The notes are about")))
		out := run(t, context.Background(), newFixture(t), newModel(t, s))
		if out.Stop != agent.Answered || out.LastStopReason != "max_tokens" || len(out.Transcript) != 2 {
			t.Fatalf("stop %s (%q), %d messages", out.Stop, out.LastStopReason, len(out.Transcript))
		}
	})
	t.Run("max_tokens with tool_use", func(t *testing.T) {
		s := newServer(t,
			reply("msg_1", "max_tokens", toolUse("toolu_1", "read", `{"path":"a.txt"}`)),
			reply("msg_2", "end_turn", text("ok")))
		f := newFixture(t)
		out := run(t, context.Background(), f, newModel(t, s))
		if out.Stop != agent.Answered || out.Steps != 2 || !slices.Equal(f.ranOrder(), []string{"read a.txt"}) {
			t.Fatalf("stop %s after %d steps, ran %v", out.Stop, out.Steps, f.ranOrder())
		}
		if got := s.requests(t)[1].Messages[2].Content[0]; got.ToolUseID != "toolu_1" {
			t.Fatalf("tool result %+v", got)
		}
	})
	t.Run("empty end_turn", func(t *testing.T) {
		s := newServer(t, reply("msg_1", "end_turn"))
		out := run(t, context.Background(), newFixture(t), newModel(t, s))
		if out.Stop != agent.Answered || len(out.Transcript) != 1 {
			t.Fatalf("stop %s, %d messages (an empty assistant message must not be kept)", out.Stop, len(out.Transcript))
		}
	})
}

// TestModel_ParallelFlag: disable_parallel_tool_use follows the loop's
// flag, on the tool_choice the params hold; without tools no tool_choice
// is sent.
func TestModel_ParallelFlag(t *testing.T) {
	tools := []runtime.ToolSchema{{Name: "read", Parameters: json.RawMessage(`{"type":"object"}`)}}
	cases := []struct {
		name     string
		choice   sdk.ToolChoiceUnionParam
		tools    []runtime.ToolSchema
		parallel bool
		want     string
	}{
		{"auto parallel", sdk.ToolChoiceUnionParam{}, tools, true, `{"disable_parallel_tool_use":false,"type":"auto"}`},
		{"auto serial", sdk.ToolChoiceUnionParam{}, tools, false, `{"disable_parallel_tool_use":true,"type":"auto"}`},
		{"any serial", sdk.ToolChoiceUnionParam{OfAny: &sdk.ToolChoiceAnyParam{}}, tools, false, `{"disable_parallel_tool_use":true,"type":"any"}`},
		{"tool serial", sdk.ToolChoiceUnionParam{OfTool: &sdk.ToolChoiceToolParam{Name: "read"}}, tools, false, `{"name":"read","disable_parallel_tool_use":true,"type":"tool"}`},
		{"none", sdk.ToolChoiceUnionParam{OfNone: &sdk.ToolChoiceNoneParam{}}, tools, false, `{"type":"none"}`},
		{"no tools", sdk.ToolChoiceUnionParam{}, nil, false, ``},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newServer(t, reply("msg_1", "end_turn", text("ok")))
			m, err := anthropic.New(s.client(), sdk.MessageNewParams{Model: "claude-haiku-4-5", MaxTokens: 64, ToolChoice: c.choice})
			must(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := m.Generate(ctx, []sdk.MessageParam{userText("hi")}, c.tools, c.parallel); err != nil {
				t.Fatal(err)
			}
			var raw struct {
				ToolChoice json.RawMessage `json:"tool_choice"`
				Tools      json.RawMessage `json:"tools"`
			}
			s.mu.Lock()
			must(t, json.Unmarshal(s.bodies[0], &raw))
			s.mu.Unlock()
			got := ""
			if raw.ToolChoice != nil {
				got = compact(t, raw.ToolChoice)
			}
			if got != c.want {
				t.Errorf("tool_choice %s, want %s", got, c.want)
			}
			if (raw.Tools != nil) != (len(c.tools) > 0) {
				t.Errorf("tools %s sent with %d tools", raw.Tools, len(c.tools))
			}
		})
	}
}

// TestModel_AbortedTurn: a tool cancels the step ctx mid-turn; the calls
// after it get ABORTED_BEFORE_DISPATCH results, and every call still has
// its tool_result, in order, is_error set, with the code.
func TestModel_AbortedTurn(t *testing.T) {
	s := newServer(t, reply("msg_1", "tool_use",
		toolUse("toolu_1", "read", `{"path":"a.txt"}`),
		toolUse("toolu_2", "stop", `{}`),
		toolUse("toolu_3", "read", `{"path":"b.txt"}`),
		toolUse("toolu_4", "write", `{"path":"c.txt","text":""}`)))
	f := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.stop = cancel
	var out *agent.Outcome[sdk.MessageParam]
	within(t, 20*time.Second, func() {
		var err error
		out, err = agent.Run(ctx, f.scope, newModel(t, s), []sdk.MessageParam{userText("go")})
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	if out.Stop != agent.ContextDone {
		t.Fatalf("stop %s, want context_done", out.Stop)
	}
	last := out.Transcript[len(out.Transcript)-1]
	b, err := json.Marshal(last)
	must(t, err)
	var msg wireMessage
	must(t, json.Unmarshal(b, &msg))
	if msg.Role != "user" || len(msg.Content) != 4 {
		t.Fatalf("tool result message: %s", b)
	}
	// stop's own ctx ended while it ran: ABORTED (R80); the calls after it
	// never started: ABORTED_BEFORE_DISPATCH (R97).
	wantCode := []string{"", "ABORTED", "ABORTED_BEFORE_DISPATCH", "ABORTED_BEFORE_DISPATCH"}
	for i, r := range msg.Content {
		failed := wantCode[i] != ""
		if r.ToolUseID != fmt.Sprintf("toolu_%d", i+1) || (r.IsError != nil && *r.IsError) != failed {
			t.Errorf("result %d: %+v", i, r)
		}
		if got := blockTexts(r.Content); failed && !strings.HasSuffix(got, "[code: "+wantCode[i]+"]") {
			t.Errorf("result %d: %q, want code %s", i, got, wantCode[i])
		}
	}
	if got := f.ranOrder(); !slices.Equal(got, []string{"read a.txt", "stop"}) {
		t.Errorf("ran %v", got)
	}
}

// TestNew_Invalid: a Model needs a model name and no preset messages.
func TestNew_Invalid(t *testing.T) {
	c := sdk.NewClient()
	if _, err := anthropic.New(c, sdk.MessageNewParams{MaxTokens: 1}); err == nil {
		t.Error("no model: no error")
	}
	if _, err := anthropic.New(c, sdk.MessageNewParams{Model: "m", Messages: []sdk.MessageParam{userText("x")}}); err == nil {
		t.Error("preset messages: no error")
	}
}

// TestModel_DeniedAndFreshTools: a denied call is answered as an error
// without a code; a tool registered by a tool is offered on the next step
// (Schemas are read fresh) and the model can call it.
func TestModel_DeniedAndFreshTools(t *testing.T) {
	s := newServer(t,
		reply("msg_1", "tool_use",
			toolUse("toolu_1", "write", `{"path":"/etc/passwd","text":"x"}`),
			toolUse("toolu_2", "learn", `{}`)),
		reply("msg_2", "tool_use", toolUse("toolu_3", "recall", `{}`)),
		reply("msg_3", "end_turn", text("ok")))
	f := newFixture(t)
	out := run(t, context.Background(), f, newModel(t, s))
	if out.Stop != agent.Answered || out.Steps != 3 {
		t.Fatalf("stop %s after %d steps", out.Stop, out.Steps)
	}
	reqs := s.requests(t)
	names := func(r wireRequest) []string {
		var n []string
		for _, tool := range r.Tools {
			n = append(n, tool.Name)
		}
		return n
	}
	if slices.Contains(names(reqs[0]), "recall") || !slices.Contains(names(reqs[1]), "recall") {
		t.Errorf("tools: step 1 %v, step 2 %v; want recall from step 2 on", names(reqs[0]), names(reqs[1]))
	}
	denied := reqs[1].Messages[2].Content[0]
	if denied.ToolUseID != "toolu_1" || denied.IsError == nil || !*denied.IsError ||
		blockTexts(denied.Content) != "Error: writes outside the project are denied" {
		t.Errorf("denied write: %+v", denied)
	}
	if got := reqs[2].Messages[4].Content[0]; got.ToolUseID != "toolu_3" || blockTexts(got.Content) != "remembered" {
		t.Errorf("recall: %+v", got)
	}
	if got := f.ranOrder(); !slices.Equal(got, []string{"learn", "recall"}) {
		t.Errorf("ran %v", got)
	}
}
