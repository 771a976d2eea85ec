package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/toolscope/toolscope/agent"
	"github.com/toolscope/toolscope/providers/openai"
	"github.com/toolscope/toolscope/providers/openai/internal/wire"
	"github.com/toolscope/toolscope/runtime"
)

func userItem(text string) responses.ResponseInputItemUnionParam {
	return responses.ResponseInputItemParamOfMessage(text, responses.EasyInputMessageRoleUser)
}

func TestResponses_ToolDefinitionsStrictOnlyInTheSubset(t *testing.T) {
	srv, client := newServer(t, wire.Response("completed", "", wire.Message("msg_1", "done")))
	reg := newRegistry(t)
	for _, c := range strictCases {
		register(t, reg.Global(), rawTool(c.name, c.params), nil)
	}
	model := openai.NewResponsesModel(client, responses.ResponseNewParams{Model: "gpt-test"})
	out, err := agent.Run(testCtx(t), reg.Global(), model, []responses.ResponseInputItemUnionParam{userItem("hi")})
	if err != nil || out.Stop != agent.Answered || out.LastStopReason != "completed" {
		t.Fatalf("run: %v %+v", err, out)
	}
	s := decodeSent(t, srv.Requests()[0])
	if len(s.Tools) != len(strictCases) {
		t.Fatalf("%d tools", len(s.Tools))
	}
	for i, c := range strictCases {
		tool := s.Tools[i]
		if tool.Type != "function" || tool.Name != c.name {
			t.Errorf("tool %d: %s %s", i, tool.Type, tool.Name)
		}
		if tool.Strict == nil || *tool.Strict != c.strict {
			t.Errorf("%s: strict %v, want %v", c.name, tool.Strict, c.strict)
		}
		if string(tool.Params) != c.want {
			t.Errorf("%s: parameters\n got %s\nwant %s", c.name, tool.Params, c.want)
		}
	}
}

// TestResponses_R91_RunCarriesOutputItemsAndAnswersEveryCall: a response
// with reasoning, a message and three function calls (one with invalid
// argument text); the next request's input holds the user message, every
// output item, then one function_call_output per call (call_id matching)
// in model order, then the contexts.
func TestResponses_R91_RunCarriesOutputItemsAndAnswersEveryCall(t *testing.T) {
	srv, client := newServer(t,
		wire.Response("completed", "",
			wire.Reasoning("rs_1", "thinking"),
			wire.Message("msg_1", "Let me check."),
			wire.FunctionCall("fc_1", wire.Call{ID: "call_1", Name: "echo", Arguments: `{"text":"a"}`}),
			wire.FunctionCall("fc_2", wire.Call{ID: "call_2", Name: "echo", Arguments: `not json`}),
			wire.FunctionCall("fc_3", wire.Call{ID: "call_3", Name: "note", Arguments: `{}`})),
		wire.Response("completed", "", wire.Message("msg_2", "done")))
	reg := newRegistry(t)
	echoTool(t, reg.Global())
	note, err := runtime.NewTool("note", "Take a note", func(ctx context.Context, _ struct{}, rc *runtime.RunContext) (string, error) {
		rc.DeferContext(runtime.ContextMessage{Role: "developer", Text: "noted"})
		return "ok", nil
	}, runtime.WithParallel())
	register(t, reg.Global(), note, err)
	model := openai.NewResponsesModel(client, responses.ResponseNewParams{Model: "gpt-test"})
	out, err := agent.Run(testCtx(t), reg.Global(), model, []responses.ResponseInputItemUnionParam{userItem("go")})
	if err != nil || out.Stop != agent.Answered || out.Steps != 2 {
		t.Fatalf("run: %v %+v", err, out)
	}
	reqs := srv.Requests()
	if reqs[0].Path != "/v1/responses" {
		t.Fatalf("path %s", reqs[0].Path)
	}
	first := decodeSent(t, reqs[0])
	if first.ParallelToolCalls == nil || !*first.ParallelToolCalls {
		t.Errorf("parallel_tool_calls %v", first.ParallelToolCalls)
	}
	in := decodeSent(t, reqs[1]).Input
	var kinds []string
	for _, it := range in {
		kind := it.Type
		if kind == "" && it.Role != "" {
			kind = "message" // an easy input message may omit its type
		}
		kinds = append(kinds, kind+":"+it.CallID)
	}
	want := "message:,reasoning:,message:,function_call:call_1,function_call:call_2,function_call:call_3," +
		"function_call_output:call_1,function_call_output:call_2,function_call_output:call_3,message:"
	if strings.Join(kinds, ",") != want {
		t.Fatalf("input items\n got %v\nwant %s", kinds, want)
	}
	if in[1].ID != "rs_1" || in[2].ID != "msg_1" || in[3].ID != "fc_1" || in[4].Arguments != `not json` {
		t.Errorf("output items not carried exactly: %+v", in[:5])
	}
	if got := text(in[6].Output); got != "echo:a" {
		t.Errorf("call_1 output %q", got)
	}
	if got := text(in[7].Output); !strings.HasPrefix(got, "Error: invalid arguments") || !strings.HasSuffix(got, "[code: INVALID_ARGS]") {
		t.Errorf("call_2 output %q", got)
	}
	if in[9].Role != "developer" || text(in[9].Content) != "noted" {
		t.Errorf("context item %+v", in[9])
	}
}

func TestResponses_IncompleteAndFailed(t *testing.T) {
	_, client := newServer(t, wire.Response("incomplete", "max_output_tokens", wire.Message("msg_1", "cut")),
		wire.Response("failed", ""))
	reg := newRegistry(t)
	model := openai.NewResponsesModel(client, responses.ResponseNewParams{Model: "gpt-test"})
	out, err := agent.Run(testCtx(t), reg.Global(), model, []responses.ResponseInputItemUnionParam{userItem("go")})
	if err != nil || out.Stop != agent.Answered || out.LastStopReason != "max_output_tokens" {
		t.Fatalf("incomplete: %v %+v", err, out)
	}
	out, err = agent.Run(testCtx(t), reg.Global(), model, []responses.ResponseInputItemUnionParam{userItem("go")})
	var failed *openai.ResponseFailedError
	if out.Stop != agent.Failed || !errors.As(err, &failed) || failed.Code != "server_error" {
		t.Fatalf("failed: %v %+v", err, out)
	}
}

// TestResponses_ImagesTravelAsInputImage: a result with an image block is
// a list output (input_text, input_image); chat renders a placeholder.
func TestResponses_ImagesTravelAsInputImage(t *testing.T) {
	res := &runtime.TurnResult{Results: []*runtime.Result{
		runtime.Success("x").WithContent(runtime.Text("a chart"),
			runtime.Block{Type: "image", Data: json.RawMessage(`{"data":"iVBORw0KGgo=","mimeType":"image/png"}`)},
			runtime.Block{Type: "image", Data: json.RawMessage(`{"url":"https://example.com/a.png"}`)}),
	}}
	calls := []runtime.TurnCall{{ID: "call_img", Name: "plot"}}
	items, err := openai.ResponseToolOutputs(calls, res)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(items[0])
	if err != nil {
		t.Fatal(err)
	}
	want := `{"call_id":"call_img","output":[{"text":"a chart","type":"input_text"},{"image_url":"data:image/png;base64,iVBORw0KGgo=","type":"input_image"},{"image_url":"https://example.com/a.png","type":"input_image"}],"type":"function_call_output"}`
	if !jsonEqual(b, []byte(want)) {
		t.Errorf("\n got %s\nwant %s", b, want)
	}
	msgs, err := openai.ChatToolMessages(calls, res)
	if err != nil {
		t.Fatal(err)
	}
	if got := msgs[0].OfTool.Content.OfString.Value; got != "a chart\n[image: image/png, 12 bytes base64]\n[image: https://example.com/a.png]" {
		t.Errorf("chat text %q", got)
	}
}

func TestResponseModel_NoClient(t *testing.T) {
	var m *openai.ResponsesModel
	if _, err := m.Generate(context.Background(), nil, nil, false); err == nil {
		t.Error("nil model generated")
	}
	if _, err := openai.NewChatModel(nil, oai.ChatCompletionNewParams{}).Generate(context.Background(), nil, nil, false); err == nil {
		t.Error("model without client generated")
	}
}
