package anthropic_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/toolscope/toolscope/providers/anthropic"
	"github.com/toolscope/toolscope/runtime"
)

func image(data string) runtime.Block {
	return runtime.Block{Type: "image", Data: json.RawMessage(data)}
}

// encode returns the message's wire JSON, as the SDK encodes it.
func encode(t testing.TB, m sdk.MessageParam) string {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestToolResults_Blocks: how each kind of content block and context is
// carried.
func TestToolResults_Blocks(t *testing.T) {
	calls := []runtime.TurnCall{{ID: "t1", Name: "x"}, {ID: "t2", Name: "x"}, {ID: "t3", Name: "x"}}
	res := &runtime.TurnResult{
		Results: []*runtime.Result{
			runtime.Success("v").WithContent(
				runtime.Text(""), // dropped: the API rejects empty text
				runtime.Text("hello"),
				image(`{"url":"https://example.com/a.png"}`),
				image(`{"media_type":"image/svg+xml","data":"PHN2Zy8+"}`),
				runtime.Block{Type: "resource", Text: "notes", Data: json.RawMessage(`{"uri":"file:///n.txt"}`)},
			),
			runtime.Failure(errors.New("denied by policy")).WithContent(), // no content left
			runtime.Success(1),
		},
		Contexts: []runtime.ContextMessage{{Role: "user", Text: "first"}, {Role: "system", Text: "second"}, {Role: "user"}},
	}
	m, err := anthropic.ToolResults(calls, res)
	must(t, err)
	want := `{"content":[` +
		`{"tool_use_id":"t1","content":[{"text":"hello","type":"text"},` +
		`{"source":{"url":"https://example.com/a.png","type":"url"},"type":"image"},` +
		`{"text":"[image of type \"image/svg+xml\" omitted: Anthropic accepts image/jpeg, image/png, image/gif and image/webp]","type":"text"},` +
		`{"text":"[resource] notes {\"uri\":\"file:///n.txt\"}","type":"text"}],"type":"tool_result"},` +
		`{"tool_use_id":"t2","is_error":true,"content":[{"text":"Error: denied by policy","type":"text"}],"type":"tool_result"},` +
		`{"tool_use_id":"t3","type":"tool_result"},` +
		`{"text":"first","type":"text"},{"text":"[system] second","type":"text"}],"role":"user"}`
	if got := encode(t, m); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestToolResults_Invalid: results that do not answer their calls are
// errors naming the call.
func TestToolResults_Invalid(t *testing.T) {
	one := []runtime.TurnCall{{ID: "t1", Name: "x"}}
	cases := map[string]struct {
		calls []runtime.TurnCall
		res   *runtime.TurnResult
		want  string
	}{
		"nil result": {one, nil, "nil turn result"},
		"too few":    {one, &runtime.TurnResult{}, "0 results for 1 calls"},
		"nil entry":  {one, &runtime.TurnResult{Results: []*runtime.Result{nil}}, `no result for call "t1"`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := anthropic.ToolResults(c.calls, c.res)
			if !errors.Is(err, anthropic.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want ErrInvalid containing %q", err, c.want)
			}
		})
	}
}

// TestToolResults_Images: the image shapes accepted, and images Anthropic
// cannot take, which become a text block saying so (one bad block must not
// cost the turn its results).
func TestToolResults_Images(t *testing.T) {
	cases := map[string]struct{ data, want string }{
		"base64":       {`{"media_type":"image/png","data":"AA=="}`, `{"source":{"data":"AA==","media_type":"image/png","type":"base64"},"type":"image"}`},
		"MCP mimeType": {`{"mimeType":"image/webp","data":"AA=="}`, `{"source":{"data":"AA==","media_type":"image/webp","type":"base64"},"type":"image"}`},
		"mime_type":    {`{"mime_type":"image/gif","data":"AA=="}`, `{"source":{"data":"AA==","media_type":"image/gif","type":"base64"},"type":"image"}`},
		"url":          {`{"url":"https://x/a.png"}`, `{"source":{"url":"https://x/a.png","type":"url"},"type":"image"}`},
		"not JSON obj": {`"png"`, `{"text":"[image omitted: its data is not {\"media_type\",\"data\"} or {\"url\"}]","type":"text"}`},
		"bad base64":   {`{"media_type":"image/png","data":"%%%"}`, `{"text":"[image omitted: its data is not standard base64]","type":"text"}`},
		"both":         {`{"media_type":"image/png","data":"AA==","url":"https://x"}`, `{"text":"[image omitted: its data must hold exactly one of \"data\" and \"url\"]","type":"text"}`},
		"neither":      {`{"media_type":"image/png"}`, `{"text":"[image omitted: its data must hold exactly one of \"data\" and \"url\"]","type":"text"}`},
		"no type":      {`{"data":"AA=="}`, `{"text":"[image of type \"\" omitted: Anthropic accepts image/jpeg, image/png, image/gif and image/webp]","type":"text"}`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			m, err := anthropic.ToolResults([]runtime.TurnCall{{ID: "t1"}},
				&runtime.TurnResult{Results: []*runtime.Result{runtime.Success("v").WithContent(image(c.data))}})
			must(t, err)
			want := `{"content":[{"tool_use_id":"t1","content":[` + c.want + `],"type":"tool_result"}],"role":"user"}`
			if got := encode(t, m); got != want {
				t.Errorf("got\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// TestTools_InputSchema: the parameter schema becomes input_schema with
// properties kept byte for byte; a tool with a non-object schema is left
// out and reported, the others are sent.
func TestTools_InputSchema(t *testing.T) {
	tools, skipped := anthropic.Tools([]runtime.ToolSchema{
		{Name: "read", Description: "Read a file", Parameters: json.RawMessage(
			`{"type":"object","properties":{"z":{"type":"string"},"a":{"type":"integer"}},"required":["z"],"additionalProperties":false}`)},
		{Name: "now", Parameters: nil},
	})
	if len(skipped) != 0 {
		t.Fatal(skipped)
	}
	b, err := json.Marshal(tools)
	must(t, err)
	want := `[{"input_schema":{"properties":{"z":{"type":"string"},"a":{"type":"integer"}},"required":["z"],"type":"object","additionalProperties":false},"name":"read","description":"Read a file"},` +
		`{"input_schema":{"properties":{},"type":"object"},"name":"now"}]`
	if string(b) != want {
		t.Errorf("got\n%s\nwant\n%s", b, want)
	}
	for _, bad := range []string{`{"type":"array"}`, `[1]`, `true`, `{"type":["object","null"]}`, `{"required":"z"}`} {
		tools, skipped := anthropic.Tools([]runtime.ToolSchema{{Name: "bad", Parameters: json.RawMessage(bad)}, {Name: "good"}})
		if len(tools) != 1 || tools[0].OfTool.Name != "good" || len(skipped) != 1 || skipped[0].Name != "bad" {
			t.Errorf("schema %s: %d tools, skipped %+v; want it left out, the other sent", bad, len(tools), skipped)
		}
	}
}

// TestCalls_AsSent: ids, names and input bytes as the model sent them;
// non-tool blocks are skipped.
func TestCalls_AsSent(t *testing.T) {
	var msg sdk.Message
	must(t, json.Unmarshal([]byte(reply("msg_1", "tool_use",
		text("hi"),
		toolUse("toolu_a", "read", `{"path": "a.txt",  "n": 1.50}`),
		`{"type":"thinking","thinking":"hmm","signature":"sig"}`,
		toolUse("toolu_b", "write", `{}`))), &msg))
	got := anthropic.Calls(&msg)
	want := []runtime.TurnCall{{ID: "toolu_a", Name: "read", ArgumentsText: `{"path": "a.txt",  "n": 1.50}`}, {ID: "toolu_b", Name: "write", ArgumentsText: `{}`}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
	if anthropic.Calls(nil) != nil {
		t.Error("nil message gave calls")
	}
}

// randomTurn builds n calls and a TurnResult for them mixing successes
// (text, images, nothing), coded and plain failures, failures whose content
// a finalizer replaced, and contexts.
func randomTurn(r *rand.Rand) ([]runtime.TurnCall, *runtime.TurnResult, []runtime.Code) {
	n := 1 + r.IntN(24)
	calls := make([]runtime.TurnCall, n)
	res := &runtime.TurnResult{Results: make([]*runtime.Result, n)}
	codes := make([]runtime.Code, n)
	codePool := []runtime.Code{runtime.CodeAbortedBeforeDispatch, runtime.CodeUnknownTool, runtime.CodeInvalidArgs, runtime.CodeToolTimeout, "QUOTA_EXCEEDED"}
	for i := range calls {
		calls[i] = runtime.TurnCall{ID: fmt.Sprintf("toolu_%d_%x\"é", i, r.Uint32()), Name: "t"}
		switch r.IntN(6) {
		case 0:
			res.Results[i] = runtime.Success(i).WithContent(runtime.Text(fmt.Sprintf("out %d\n\"q\"", i)))
		case 1:
			res.Results[i] = runtime.Success(nil).WithContent(runtime.Text("pic"), image(`{"media_type":"image/gif","data":"R0lGODlh"}`))
		case 2:
			res.Results[i] = runtime.Success(true)
		case 3:
			codes[i] = codePool[r.IntN(len(codePool))]
			res.Results[i] = runtime.Failure(runtime.NewError("E", codes[i], "failed <&>"))
		case 4:
			res.Results[i] = runtime.Failure(errors.New("plain failure"))
		case 5:
			codes[i] = runtime.CodeInvalidArgs
			res.Results[i] = runtime.Failure(runtime.NewError("E", codes[i], "bad")).WithContent(runtime.Block{Type: "json", Data: json.RawMessage(`{"k":[1,2]}`)})
		}
		if r.IntN(4) == 0 {
			res.Contexts = append(res.Contexts, runtime.ContextMessage{Role: "user", Text: fmt.Sprintf("ctx %d", i)})
		}
	}
	return calls, res, codes
}

// TestToolResults_RoundTripProperty: for random turn results, the message
// encodes through the SDK and decodes back (SDK types) to one tool_result
// per call, in order, with the call's id, is_error exactly on failures,
// the code on coded failures, then the contexts as text.
func TestToolResults_RoundTripProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 1))
	for iter := range 300 {
		calls, res, codes := randomTurn(r)
		m, err := anthropic.ToolResults(calls, res)
		if err != nil {
			t.Fatalf("iteration %d: %v", iter, err)
		}
		var back sdk.MessageParam
		if err := json.Unmarshal([]byte(encode(t, m)), &back); err != nil {
			t.Fatalf("iteration %d: decode: %v", iter, err)
		}
		if back.OfUser == nil {
			t.Fatalf("iteration %d: not a user message: %s", iter, encode(t, back))
		}
		blocks := back.OfUser.Content
		if len(blocks) != len(calls)+len(res.Contexts) {
			t.Fatalf("iteration %d: %d blocks for %d calls and %d contexts", iter, len(blocks), len(calls), len(res.Contexts))
		}
		for i, c := range calls {
			tr := blocks[i].OfToolResult
			if tr == nil || tr.ToolUseID != c.ID {
				t.Fatalf("iteration %d: block %d is not the result of %q: %+v", iter, i, c.ID, blocks[i])
			}
			if tr.IsError.Valid() != res.Results[i].IsError() || (tr.IsError.Valid() && !tr.IsError.Value) {
				t.Fatalf("iteration %d: call %d: is_error %v, result error %v", iter, i, tr.IsError, res.Results[i].IsError())
			}
			if codes[i] != "" {
				last := tr.Content[len(tr.Content)-1].OfText
				if last == nil || last.Text != "[code: "+string(codes[i])+"]" {
					t.Fatalf("iteration %d: call %d: code %s not carried: %+v", iter, i, codes[i], tr.Content)
				}
			}
		}
		for j, ctx := range res.Contexts {
			if tb := blocks[len(calls)+j].OfText; tb == nil || tb.Text != ctx.Text {
				t.Fatalf("iteration %d: context %d: %+v", iter, j, blocks[len(calls)+j])
			}
		}
	}
}
