package gemini_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolscope/toolscope/agent"
	"github.com/toolscope/toolscope/providers/gemini"
	"github.com/toolscope/toolscope/runtime"
	"google.golang.org/genai"
)

// reply is a generateContent response body with one candidate.
func reply(finish string, parts ...string) string {
	content := ""
	if len(parts) > 0 {
		content = fmt.Sprintf(`"content": {"role": "model", "parts": [%s]},`, strings.Join(parts, ",\n      "))
	}
	return fmt.Sprintf(`{
  "candidates": [{
    %s
    "finishReason": %q,
    "index": 0
  }],
  "usageMetadata": {"promptTokenCount": 321, "candidatesTokenCount": 57, "totalTokenCount": 378},
  "modelVersion": "gemini-2.5-flash",
  "responseId": "resp-1"
}`, content, finish)
}

func call(name, args string) string {
	return fmt.Sprintf(`{"functionCall": {"name": %q, "args": %s}}`, name, args)
}

func callID(id, name, args string) string {
	return fmt.Sprintf(`{"functionCall": {"id": %q, "name": %q, "args": %s}}`, id, name, args)
}

func text(s string) string { return fmt.Sprintf(`{"text": %q}`, s) }

func newModel(t testing.TB, s *server) *gemini.Model {
	t.Helper()
	m, err := gemini.New(s.client(t), testModel, &genai.GenerateContentConfig{
		SystemInstruction: genai.NewContentFromText("Be brief.", genai.RoleUser)})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func run(t *testing.T, ctx context.Context, f *fixture, m *gemini.Model) *agent.Outcome[*genai.Content] {
	t.Helper()
	var out *agent.Outcome[*genai.Content]
	var err error
	within(t, 20*time.Second, func() {
		out, err = agent.Run(ctx, f.scope, m, []*genai.Content{genai.NewContentFromText("tidy the notes", genai.RoleUser)})
	})
	if err != nil {
		t.Fatalf("Run: %v (stop %s)", err, out.Stop)
	}
	return out
}

// TestModel_RunEndToEnd: the official client (Gemini API backend) against
// a loopback generateContent. Step 1: parallel function calls without ids
// (two reads, a write barrier, a failing tool, a read with arguments of
// the wrong type, an image tool), the first with a thought signature;
// step 2: one call with a model-sent id; step 3: a text answer. Each
// request must carry the declarations, the calls with the ids the adapter
// generated (or the model's), and one response per call, in order, with
// the same id and name, output or error, then the contexts in a content of
// their own.
func TestModel_RunEndToEnd(t *testing.T) {
	s := newServer(t,
		reply("STOP",
			`{"functionCall": {"name": "read", "args": {"path": "a.txt"}}, "thoughtSignature": "c2lnbmF0dXJl"}`,
			call("read", `{"path":"b.txt"}`),
			call("write", `{"path":"sum.txt","text":"a+b"}`),
			call("fail", `{}`),
			call("read", `{"path": 7}`),
			call("picture", `{}`),
		),
		reply("STOP", callID("fc-7f3a", "read", `{"path":"sum.txt"}`)),
		reply("STOP", text("Done: sum.txt written.")),
	)
	f := newFixture(t)
	out := run(t, context.Background(), f, newModel(t, s))

	if out.Stop != agent.Answered || out.Steps != 3 || out.LastStopReason != "STOP" {
		t.Fatalf("stop %s after %d steps (last %q), want answered after 3 (STOP)", out.Stop, out.Steps, out.LastStopReason)
	}
	reqs := s.requests(t)
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	schemas, err := f.scope.Schemas()
	must(t, err)
	for i, req := range reqs {
		if len(req.Tools) != 1 || len(req.Tools[0].FunctionDeclarations) != len(schemas) {
			t.Fatalf("request %d: tools %+v", i, req.Tools)
		}
		for j, d := range req.Tools[0].FunctionDeclarations {
			if d.Name != schemas[j].Name || d.Description != schemas[j].Description || !sameJSON(t, d.ParametersJSONSchema, schemas[j].Parameters) {
				t.Errorf("declaration %d: %+v, want %+v", j, d, schemas[j])
			}
		}
	}

	// Request 2: [user, model calls with generated ids, user responses, user contexts].
	c := reqs[1].Contents
	if len(c) != 4 || c[1].Role != "model" || c[2].Role != "user" || c[3].Role != "user" {
		t.Fatalf("second request contents: %+v", c)
	}
	calls, resps := c[1].Parts, c[2].Parts
	if len(calls) != 6 || len(resps) != 6 {
		t.Fatalf("%d calls, %d responses, want 6 and 6", len(calls), len(resps))
	}
	if calls[0].ThoughtSignature != "c2lnbmF0dXJl" {
		t.Errorf("thought signature lost: %+v", calls[0])
	}
	for i := range calls {
		fc, fr := calls[i].FunctionCall, resps[i].FunctionResponse
		want := gemini.CallID(1, i)
		if fc == nil || fr == nil || fc.ID != want || fr.ID != want || fr.Name != fc.Name {
			t.Fatalf("pair %d: call %+v response %+v, want id %s on both", i, fc, fr, want)
		}
	}
	resp := func(i int) string { return compact(t, resps[i].FunctionResponse.Response) }
	if got := resp(0); got != `{"output":"contents of a.txt"}` {
		t.Errorf("read a.txt: %s", got)
	}
	if got := resp(3); got != `{"error":{"code":"QUOTA_EXCEEDED","message":"quota exceeded"}}` {
		t.Errorf("fail: %s", got)
	}
	if got := resp(4); !strings.Contains(got, `"code":"INVALID_ARGS"`) || !strings.HasPrefix(got, `{"error":`) {
		t.Errorf("read with a number path: %s, want an INVALID_ARGS error", got)
	}
	pic := resps[5].FunctionResponse
	if got := resp(5); got != `{"output":"a red dot"}` || len(pic.Parts) != 1 || pic.Parts[0].InlineData == nil ||
		pic.Parts[0].InlineData.MIMEType != "image/png" || pic.Parts[0].InlineData.Data != "iVBORw0KGgo=" {
		t.Errorf("picture: %s %+v", got, pic.Parts)
	}
	if ctx := c[3].Parts; len(ctx) != 1 || ctx[0].Text != "the picture is 1x1" {
		t.Errorf("contexts: %+v", ctx)
	}

	// Request 3: the model's own id is kept on both sides.
	c = reqs[2].Contents
	if fc, fr := c[4].Parts[0].FunctionCall, c[5].Parts[0].FunctionResponse; fc == nil || fr == nil || fc.ID != "fc-7f3a" || fr.ID != "fc-7f3a" {
		t.Errorf("model-sent id: call %+v response %+v", fc, fr)
	}

	// The write is a barrier: both reads finished before it started.
	ev := out.Turns[0].Events
	idx := func(s string) int {
		return slices.IndexFunc(ev, func(e runtime.TurnEvent) bool { return e.String() == s })
	}
	if w := idx("call:" + gemini.CallID(1, 2)); w < 0 || idx("result:"+gemini.CallID(1, 0)) > w || idx("result:"+gemini.CallID(1, 1)) > w {
		t.Errorf("write started before the reads finished: %v", ev)
	}
}

func sameJSON(t testing.TB, a, b []byte) bool {
	t.Helper()
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// TestModel_FinishReasons: MAX_TOKENS and MALFORMED_FUNCTION_CALL (Gemini's
// answer to arguments it could not produce as JSON: no call at all) end the
// loop as answered with the reason as sent; a blocked prompt is an error.
func TestModel_FinishReasons(t *testing.T) {
	t.Run("MAX_TOKENS", func(t *testing.T) {
		s := newServer(t, reply("MAX_TOKENS", text("The notes are about")))
		out := run(t, context.Background(), newFixture(t), newModel(t, s))
		if out.Stop != agent.Answered || out.LastStopReason != "MAX_TOKENS" || len(out.Transcript) != 2 {
			t.Fatalf("stop %s (%q), %d contents", out.Stop, out.LastStopReason, len(out.Transcript))
		}
	})
	t.Run("MALFORMED_FUNCTION_CALL", func(t *testing.T) {
		s := newServer(t, `{"candidates": [{"finishReason": "MALFORMED_FUNCTION_CALL",
  "finishMessage": "Malformed function call: print(read(path=))", "index": 0}],
  "modelVersion": "gemini-2.5-flash"}`)
		out := run(t, context.Background(), newFixture(t), newModel(t, s))
		if out.Stop != agent.Answered || out.LastStopReason != "MALFORMED_FUNCTION_CALL" || len(out.Transcript) != 1 {
			t.Fatalf("stop %s (%q), %d contents", out.Stop, out.LastStopReason, len(out.Transcript))
		}
	})
	t.Run("blocked prompt", func(t *testing.T) {
		s := newServer(t, `{"promptFeedback": {"blockReason": "SAFETY"}, "modelVersion": "gemini-2.5-flash"}`)
		f := newFixture(t)
		var err error
		within(t, 20*time.Second, func() {
			_, err = agent.Run(context.Background(), f.scope, newModel(t, s), []*genai.Content{genai.NewContentFromText("x", genai.RoleUser)})
		})
		if !errors.Is(err, gemini.ErrInvalid) || !strings.Contains(err.Error(), "SAFETY") {
			t.Fatalf("err %v, want ErrInvalid naming SAFETY", err)
		}
	})
}

// TestModel_AbortedTurn: a tool cancels the step ctx mid-turn; every call
// still gets its response, in order, the unstarted ones with
// ABORTED_BEFORE_DISPATCH.
func TestModel_AbortedTurn(t *testing.T) {
	s := newServer(t, reply("STOP",
		call("read", `{"path":"a.txt"}`),
		call("stop", `{}`),
		call("read", `{"path":"b.txt"}`),
		call("write", `{"path":"c.txt","text":""}`)))
	f := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.stop = cancel
	var out *agent.Outcome[*genai.Content]
	within(t, 20*time.Second, func() {
		var err error
		out, err = agent.Run(ctx, f.scope, newModel(t, s), []*genai.Content{genai.NewContentFromText("go", genai.RoleUser)})
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	if out.Stop != agent.ContextDone {
		t.Fatalf("stop %s, want context_done", out.Stop)
	}
	b, err := json.Marshal(out.Transcript[len(out.Transcript)-1])
	must(t, err)
	var last wireContent
	must(t, json.Unmarshal(b, &last))
	if last.Role != "user" || len(last.Parts) != 4 {
		t.Fatalf("response content: %s", b)
	}
	wantCode := []string{"", "ABORTED", "ABORTED_BEFORE_DISPATCH", "ABORTED_BEFORE_DISPATCH"}
	for i, p := range last.Parts {
		fr := p.FunctionResponse
		if fr == nil || fr.ID != gemini.CallID(1, i) {
			t.Fatalf("part %d: %+v", i, p)
		}
		got := compact(t, fr.Response)
		if wantCode[i] == "" && !strings.HasPrefix(got, `{"output":`) ||
			wantCode[i] != "" && !strings.Contains(got, `"code":"`+wantCode[i]+`"`) {
			t.Errorf("part %d: %s, want code %q", i, got, wantCode[i])
		}
	}
	if got := f.ranOrder(); !slices.Equal(got, []string{"read a.txt", "stop"}) {
		t.Errorf("ran %v", got)
	}
}

// TestModel_ParallelIgnored: Gemini has no parallel flag; the request is
// the same either way.
func TestModel_ParallelIgnored(t *testing.T) {
	s := newServer(t, reply("STOP", text("a")), reply("STOP", text("b")))
	m := newModel(t, s)
	tools := []runtime.ToolSchema{{Name: "read", Parameters: json.RawMessage(`{"type":"object"}`)}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, p := range []bool{true, false} {
		if _, err := m.Generate(ctx, []*genai.Content{genai.NewContentFromText("hi", genai.RoleUser)}, tools, p); err != nil {
			t.Fatal(err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if string(s.bodies[0]) != string(s.bodies[1]) {
		t.Errorf("requests differ:\n%s\n%s", s.bodies[0], s.bodies[1])
	}
}

// TestNew_Invalid: a Model needs a client and a model name.
func TestNew_Invalid(t *testing.T) {
	if _, err := gemini.New(nil, "m", nil); !errors.Is(err, gemini.ErrInvalid) {
		t.Errorf("nil client: %v", err)
	}
	s := newServer(t)
	if _, err := gemini.New(s.client(t), "", nil); !errors.Is(err, gemini.ErrInvalid) {
		t.Errorf("no name: %v", err)
	}
}

// TestModel_DeniedAndFreshTools: a denied call is answered with an error
// without a code; a tool registered by a tool is declared on the next step
// (Schemas are read fresh) and the model can call it.
func TestModel_DeniedAndFreshTools(t *testing.T) {
	s := newServer(t,
		reply("STOP", call("write", `{"path":"/etc/passwd","text":"x"}`), call("learn", `{}`)),
		reply("STOP", call("recall", `{}`)),
		reply("STOP", text("ok")))
	f := newFixture(t)
	out := run(t, context.Background(), f, newModel(t, s))
	if out.Stop != agent.Answered || out.Steps != 3 {
		t.Fatalf("stop %s after %d steps", out.Stop, out.Steps)
	}
	reqs := s.requests(t)
	names := func(r wireRequest) []string {
		var n []string
		for _, d := range r.Tools[0].FunctionDeclarations {
			n = append(n, d.Name)
		}
		return n
	}
	if slices.Contains(names(reqs[0]), "recall") || !slices.Contains(names(reqs[1]), "recall") {
		t.Errorf("declarations: step 1 %v, step 2 %v; want recall from step 2 on", names(reqs[0]), names(reqs[1]))
	}
	denied := reqs[1].Contents[2].Parts[0].FunctionResponse
	if denied == nil || denied.ID != gemini.CallID(1, 0) || compact(t, denied.Response) != `{"error":{"message":"writes outside the project are denied"}}` {
		t.Errorf("denied write: %+v", denied)
	}
	recall := reqs[2].Contents[4].Parts[0].FunctionResponse
	if recall == nil || recall.ID != gemini.CallID(2, 0) || compact(t, recall.Response) != `{"output":"remembered"}` {
		t.Errorf("recall: %+v", recall)
	}
	if got := f.ranOrder(); !slices.Equal(got, []string{"learn", "recall"}) {
		t.Errorf("ran %v", got)
	}
}

// TestModel_ConfigUntouched: the SDK sets a missing system instruction
// role on the config it is given; the caller's config must not change.
func TestModel_ConfigUntouched(t *testing.T) {
	s := newServer(t, reply("STOP", text("a")))
	cfg := &genai.GenerateContentConfig{SystemInstruction: &genai.Content{Parts: []*genai.Part{{Text: "Be brief."}}}}
	m, err := gemini.New(s.client(t), testModel, cfg)
	must(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := m.Generate(ctx, []*genai.Content{genai.NewContentFromText("hi", genai.RoleUser)}, nil, true); err != nil {
		t.Fatal(err)
	}
	if cfg.SystemInstruction.Role != "" || cfg.Tools != nil {
		t.Errorf("caller's config changed: %+v", cfg)
	}
}

// The usage of every reply reaches the outcome, thoughts added to output
// and tool-use prompt tokens to input.
func TestModel_Item9_UsageInTheOutcome(t *testing.T) {
	withUsage := func(body string) string {
		return strings.Replace(body, `{"promptTokenCount": 321, "candidatesTokenCount": 57, "totalTokenCount": 378}`,
			`{"promptTokenCount": 321, "cachedContentTokenCount": 300, "toolUsePromptTokenCount": 9, "candidatesTokenCount": 57, "thoughtsTokenCount": 40, "totalTokenCount": 427}`, 1)
	}
	s := newServer(t, withUsage(reply("STOP", call("read", `{"path":"a.txt"}`))), reply("STOP", text("done")))
	f := newFixture(t)
	out := run(t, context.Background(), f, newModel(t, s))
	want := []agent.Usage{
		{InputTokens: 330, CachedInputTokens: 300, OutputTokens: 97, ReasoningTokens: 40, TotalTokens: 427},
		{InputTokens: 321, OutputTokens: 57, TotalTokens: 378},
	}
	if out.Stop != agent.Answered || len(out.StepUsage) != 2 || out.StepUsage[0] != want[0] || out.StepUsage[1] != want[1] || out.Usage != want[0].Add(want[1]) {
		t.Fatalf("stop %s, usage %+v, steps %+v", out.Stop, out.Usage, out.StepUsage)
	}
}
