package gemini_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/toolscope/toolscope/providers/gemini"
	"github.com/toolscope/toolscope/runtime"
	"google.golang.org/genai"
)

func image(data string) runtime.Block {
	return runtime.Block{Type: "image", Data: json.RawMessage(data)}
}

func encode(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestToolResults_Blocks: how each kind of content block, failure and
// context is carried.
func TestToolResults_Blocks(t *testing.T) {
	calls := []runtime.TurnCall{{ID: "c1", Name: "look"}, {ID: "c2", Name: "act"}, {ID: "c3", Name: "act"}, {ID: "c4", Name: "none"}}
	res := &runtime.TurnResult{
		Results: []*runtime.Result{
			runtime.Success("v").WithContent(
				runtime.Text(""),
				runtime.Text("hello"),
				image(`{"url":"gs://b/a.png","media_type":"image/png"}`),
				image(`{"media_type":"image/jpeg","data":"/9j/"}`),
				runtime.Block{Type: "resource", Text: "notes", Data: json.RawMessage(`{"uri":"file:///n.txt"}`)},
			),
			runtime.Failure(errors.New("denied by policy")),
			runtime.Failure(runtime.NewError("ToolArgsError", runtime.CodeInvalidArgs, "path: want string")).WithContent(runtime.Text("try a string path")),
			runtime.Success(nil),
		},
		Contexts: []runtime.ContextMessage{{Role: "user", Text: "first"}, {Role: "system", Text: "second"}, {Text: ""}},
	}
	got, err := gemini.ToolResults(calls, res)
	must(t, err)
	want := `[{"parts":[` +
		`{"functionResponse":{"parts":[{"fileData":{"fileUri":"gs://b/a.png","mimeType":"image/png"}},{"inlineData":{"mimeType":"image/jpeg","data":"/9j/"}}],"id":"c1","name":"look","response":{"output":"hello\n[resource] notes {\"uri\":\"file:///n.txt\"}"}}},` +
		`{"functionResponse":{"id":"c2","name":"act","response":{"error":{"message":"denied by policy"}}}},` +
		`{"functionResponse":{"id":"c3","name":"act","response":{"error":{"code":"INVALID_ARGS","details":"try a string path","message":"path: want string"}}}},` +
		`{"functionResponse":{"id":"c4","name":"none","response":{"output":""}}}],"role":"user"},` +
		`{"parts":[{"text":"first"},{"text":"[system] second"}],"role":"user"}]`
	if g := encode(t, got); g != want {
		t.Errorf("got\n%s\nwant\n%s", g, want)
	}
	// Without contexts there is one content only.
	got, err = gemini.ToolResults(calls[:1], &runtime.TurnResult{Results: res.Results[:1]})
	must(t, err)
	if len(got) != 1 {
		t.Errorf("%d contents without contexts, want 1", len(got))
	}
}

// TestToolResults_Invalid: results that do not answer their calls are
// errors naming the call.
func TestToolResults_Invalid(t *testing.T) {
	one := []runtime.TurnCall{{ID: "c1", Name: "x"}}
	cases := map[string]struct {
		res  *runtime.TurnResult
		want string
	}{
		"nil result": {nil, "nil turn result"},
		"too few":    {&runtime.TurnResult{}, "0 results for 1 calls"},
		"nil entry":  {&runtime.TurnResult{Results: []*runtime.Result{nil}}, `no result for call "c1"`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := gemini.ToolResults(one, c.res)
			if !errors.Is(err, gemini.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want ErrInvalid containing %q", err, c.want)
			}
		})
	}
}

// TestToolResults_Images: the image shapes accepted, and images Gemini
// cannot take, which become text in the output saying so (one bad block
// must not cost the turn its results).
func TestToolResults_Images(t *testing.T) {
	cases := map[string]struct{ data, want string }{
		"base64":       {`{"media_type":"image/png","data":"AA=="}`, `"parts":[{"inlineData":{"mimeType":"image/png","data":"AA=="}}],"id":"c1","name":"x","response":{"output":""}`},
		"MCP mimeType": {`{"mimeType":"image/webp","data":"AA=="}`, `"parts":[{"inlineData":{"mimeType":"image/webp","data":"AA=="}}],"id":"c1","name":"x","response":{"output":""}`},
		"file uri":     {`{"url":"gs://b/a.png","mime_type":"image/png"}`, `"parts":[{"fileData":{"fileUri":"gs://b/a.png","mimeType":"image/png"}}],"id":"c1","name":"x","response":{"output":""}`},
		"not JSON obj": {`"png"`, `"id":"c1","name":"x","response":{"output":"[image omitted: its data is not {\"media_type\",\"data\"} or {\"url\",\"media_type\"}]"}`},
		"no type":      {`{"data":"AA=="}`, `"id":"c1","name":"x","response":{"output":"[image omitted: it has no media type, which Gemini requires]"}`},
		"bad base64":   {`{"media_type":"image/png","data":"%%%"}`, `"id":"c1","name":"x","response":{"output":"[image omitted: its data is not standard base64]"}`},
		"both":         {`{"media_type":"image/png","data":"AA==","url":"gs://x"}`, `"id":"c1","name":"x","response":{"output":"[image omitted: its data must hold exactly one of \"data\" and \"url\"]"}`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			out, err := gemini.ToolResults([]runtime.TurnCall{{ID: "c1", Name: "x"}},
				&runtime.TurnResult{Results: []*runtime.Result{runtime.Success("v").WithContent(image(c.data))}})
			must(t, err)
			want := `[{"parts":[{"functionResponse":{` + c.want + `}}],"role":"user"}]`
			if got := encode(t, out); got != want {
				t.Errorf("got\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// TestCalls_IDs: ids the model sent are kept, missing ones are generated
// from the step and the call's position, written into a copy of the
// content (the original is not modified), other parts untouched.
func TestCalls_IDs(t *testing.T) {
	var resp genai.GenerateContentResponse
	must(t, json.Unmarshal([]byte(reply("STOP",
		text("thinking aloud"),
		`{"functionCall": {"name": "read", "args": {"path": "a.txt", "n": 2}}, "thoughtSignature": "c2ln"}`,
		callID("fc-1", "read", `{}`),
		`{"functionCall": {"name": "now"}}`)), &resp))
	orig := resp.Candidates[0].Content
	before := encode(t, orig)
	calls, content, err := gemini.Calls(orig, 3)
	must(t, err)
	want := []runtime.TurnCall{
		{ID: "call_3_0", Name: "read", ArgumentsText: `{"n":2,"path":"a.txt"}`},
		{ID: "fc-1", Name: "read", ArgumentsText: `{}`},
		{ID: "call_3_2", Name: "now", ArgumentsText: `{}`},
	}
	if fmt.Sprint(calls) != fmt.Sprint(want) {
		t.Errorf("calls %q\nwant %q", calls, want)
	}
	if encode(t, orig) != before {
		t.Errorf("the model's content was modified")
	}
	if content.Parts[0] != orig.Parts[0] || content.Parts[2] != orig.Parts[2] ||
		content.Parts[1].FunctionCall.ID != "call_3_0" || string(content.Parts[1].ThoughtSignature) != "sig" ||
		content.Parts[3].FunctionCall.ID != "call_3_2" || content.Role != "model" {
		t.Errorf("content with ids: %s", encode(t, content))
	}
	// All ids present: the content itself.
	_, same, err := gemini.Calls(&genai.Content{Role: "model", Parts: []*genai.Part{orig.Parts[2]}}, 1)
	must(t, err)
	if same.Parts[0] != orig.Parts[2] {
		t.Error("content copied although every call had an id")
	}
	if calls, c, err := gemini.Calls(nil, 1); calls != nil || c != nil || err != nil {
		t.Error("nil content gave calls")
	}
}

// TestTools_Declarations: one tool, one declaration per schema, the schema
// as parametersJsonSchema.
func TestTools_Declarations(t *testing.T) {
	tools, skipped := gemini.Tools([]runtime.ToolSchema{
		{Name: "read", Description: "Read a file", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)},
		{Name: "now"},
	})
	want := `[{"functionDeclarations":[{"description":"Read a file","name":"read","parametersJsonSchema":{"type":"object","properties":{"path":{"type":"string"}}}},{"name":"now"}]}]`
	if got := encode(t, tools); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if len(skipped) != 0 {
		t.Error(skipped)
	}
	if tools, _ := gemini.Tools(nil); tools != nil {
		t.Error("no schemas gave a tool")
	}
}

// TestToolResults_RoundTripProperty: for random turn results, the contents
// encode through the SDK's types and decode back to one FunctionResponse
// per call, in order, with the call's id and name, "error" exactly on
// failures (with the code on coded ones), "output" otherwise, then the
// contexts in a content of their own.
func TestToolResults_RoundTripProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 2))
	codePool := []runtime.Code{runtime.CodeAbortedBeforeDispatch, runtime.CodeUnknownTool, runtime.CodeInvalidArgs, "QUOTA_EXCEEDED"}
	for iter := range 300 {
		n := 1 + r.IntN(24)
		calls := make([]runtime.TurnCall, n)
		res := &runtime.TurnResult{Results: make([]*runtime.Result, n)}
		codes := make([]runtime.Code, n)
		for i := range calls {
			calls[i] = runtime.TurnCall{ID: gemini.CallID(iter, i), Name: fmt.Sprintf("tool_%d", r.IntN(5))}
			switch r.IntN(5) {
			case 0:
				res.Results[i] = runtime.Success(i).WithContent(runtime.Text(fmt.Sprintf("out %d \"q\" <&>", i)))
			case 1:
				res.Results[i] = runtime.Success(nil).WithContent(image(`{"media_type":"image/gif","data":"R0lGODlh"}`))
			case 2:
				codes[i] = codePool[r.IntN(len(codePool))]
				res.Results[i] = runtime.Failure(runtime.NewError("E", codes[i], "failed"))
			case 3:
				res.Results[i] = runtime.Failure(errors.New("plain failure"))
			case 4:
				res.Results[i] = runtime.Success(true)
			}
			if r.IntN(4) == 0 {
				res.Contexts = append(res.Contexts, runtime.ContextMessage{Role: "user", Text: fmt.Sprintf("ctx %d", i)})
			}
		}
		out, err := gemini.ToolResults(calls, res)
		if err != nil {
			t.Fatalf("iteration %d: %v", iter, err)
		}
		var back []*genai.Content
		if err := json.Unmarshal([]byte(encode(t, out)), &back); err != nil {
			t.Fatalf("iteration %d: decode: %v", iter, err)
		}
		wantContents := 1
		if len(res.Contexts) > 0 {
			wantContents = 2
		}
		if len(back) != wantContents || back[0].Role != genai.RoleUser || len(back[0].Parts) != n {
			t.Fatalf("iteration %d: %s", iter, encode(t, back))
		}
		for i, c := range calls {
			fr := back[0].Parts[i].FunctionResponse
			if fr == nil || fr.ID != c.ID || fr.Name != c.Name {
				t.Fatalf("iteration %d: part %d does not answer %q: %s", iter, i, c.ID, encode(t, back[0].Parts[i]))
			}
			e, isErr := fr.Response["error"].(map[string]any)
			_, isOut := fr.Response["output"]
			if isErr != res.Results[i].IsError() || isOut == isErr {
				t.Fatalf("iteration %d: call %d: response %v for error %v", iter, i, fr.Response, res.Results[i].IsError())
			}
			if codes[i] != "" && e["code"] != string(codes[i]) {
				t.Fatalf("iteration %d: call %d: code %v, want %s", iter, i, e["code"], codes[i])
			}
		}
		for j, ctx := range res.Contexts {
			if p := back[1].Parts[j]; p.Text != ctx.Text {
				t.Fatalf("iteration %d: context %d: %+v", iter, j, p)
			}
		}
	}
}
