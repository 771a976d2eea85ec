package gemini_test

import (
	"context"
	"testing"

	"github.com/toolscope/toolscope/agent"
	"github.com/toolscope/toolscope/providers/gemini"
	"google.golang.org/genai"
)

// A generated id never takes an id the model sent in the same content
// (call_1_1 sent by the model, the next call without an id would have got
// call_1_1 too), and a call whose id an earlier call of the content already
// has gets a generated one: every call of a content has an id of its own,
// so every result answers exactly one call.
func TestCalls_GeneratedIDsSkipIDsPresent(t *testing.T) {
	content := &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{
		{FunctionCall: &genai.FunctionCall{ID: "call_1_1", Name: "read"}},
		{FunctionCall: &genai.FunctionCall{Name: "read"}}, // would be call_1_1
		{FunctionCall: &genai.FunctionCall{ID: "call_1_3", Name: "read"}},
		{FunctionCall: &genai.FunctionCall{Name: "read"}},                 // would be call_1_3
		{FunctionCall: &genai.FunctionCall{ID: "call_1_1", Name: "read"}}, // the model's duplicate
	}}
	calls, kept, err := gemini.Calls(content, 1)
	must(t, err)
	seen := map[string]bool{}
	for i, c := range calls {
		if c.ID == "" || seen[c.ID] {
			t.Fatalf("call %d has id %q; ids %+v", i, c.ID, calls)
		}
		seen[c.ID] = true
		if fc := kept.Parts[i].FunctionCall; fc.ID != c.ID {
			t.Fatalf("call %d: transcript id %q, call id %q", i, fc.ID, c.ID)
		}
	}
	if calls[0].ID != "call_1_1" || calls[2].ID != "call_1_3" {
		t.Fatalf("the model's own ids changed: %+v", calls)
	}
	if content.Parts[1].FunctionCall.ID != "" || content.Parts[4].FunctionCall.ID != "call_1_1" {
		t.Fatal("the model's content was modified")
	}
	if err := agent.CheckCalls(calls); err != nil {
		t.Fatal(err)
	}
}

// Through the loop: the same reply runs every call and answers each by
// its own id.
func TestModel_GeneratedIDCollidingWithModelIDAnswersEveryCall(t *testing.T) {
	s := newServer(t,
		reply("STOP", callID("call_1_1", "read", `{"path":"a.txt"}`), call("read", `{"path":"b.txt"}`)),
		reply("STOP", text("done")),
	)
	f := newFixture(t)
	out := run(t, context.Background(), f, newModel(t, s))
	if out.Stop != agent.Answered {
		t.Fatalf("stop %s", out.Stop)
	}
	reqs := s.requests(t)
	resps := reqs[1].Contents[2].Parts
	calls := reqs[1].Contents[1].Parts
	if len(resps) != 2 || len(calls) != 2 {
		t.Fatalf("%d calls, %d responses", len(calls), len(resps))
	}
	if calls[0].FunctionCall.ID == calls[1].FunctionCall.ID {
		t.Fatalf("two calls with id %q", calls[0].FunctionCall.ID)
	}
	for i := range calls {
		if resps[i].FunctionResponse.ID != calls[i].FunctionCall.ID {
			t.Fatalf("response %d id %q answers call id %q", i, resps[i].FunctionResponse.ID, calls[i].FunctionCall.ID)
		}
	}
}
