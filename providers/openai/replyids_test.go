package openai_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/toolscope/toolscope/agent"
	"github.com/toolscope/toolscope/providers/openai"
	"github.com/toolscope/toolscope/providers/openai/internal/wire"
	"github.com/toolscope/toolscope/runtime"
)

// payTool is a tool with a side effect: it counts its runs.
func payTool(t *testing.T, s *runtime.Scope, runs *atomic.Int32) {
	d, err := runtime.NewTool("pay", "Pay", func(ctx context.Context, in struct {
		Amount int `json:"amount"`
	}, rc *runtime.RunContext) (string, error) {
		runs.Add(1)
		return "paid", nil
	}, runtime.WithParallel())
	register(t, s, d, err)
}

// A reply whose calls cannot all be answered (a call without an id, two
// calls with one id) is refused before any call runs: no side effect, and
// the transcript holds no call without its result.
func TestChat_ReplyWithUnanswerableCallRefusedBeforeAnythingRuns(t *testing.T) {
	for name, calls := range map[string][]wire.Call{
		"empty id":     {{ID: "call_a", Name: "pay", Arguments: `{"amount":1}`}, {ID: "", Name: "pay", Arguments: `{"amount":2}`}},
		"duplicate id": {{ID: "call_a", Name: "pay", Arguments: `{"amount":1}`}, {ID: "call_a", Name: "pay", Arguments: `{"amount":2}`}},
	} {
		t.Run(name, func(t *testing.T) {
			_, client := newServer(t, wire.Chat("tool_calls", "", calls...))
			reg := newRegistry(t)
			var runs atomic.Int32
			payTool(t, reg.Global(), &runs)
			model := openai.NewChatModel(client, oai.ChatCompletionNewParams{Model: "gpt-test"})
			out, err := agent.Run(testCtx(t), reg.Global(), model,
				[]oai.ChatCompletionMessageParamUnion{oai.UserMessage("pay")})
			if err == nil || !errors.Is(err, agent.ErrInvalidReply) || out.Stop != agent.Failed {
				t.Fatalf("run: %v, stop %v; want ErrInvalidReply", err, out.Stop)
			}
			if n := runs.Load(); n != 0 {
				t.Fatalf("pay ran %d times for a refused reply", n)
			}
			if len(out.Turns) != 0 || len(out.Transcript) != 1 {
				t.Fatalf("%d turns, transcript of %d messages; want the refused reply left out", len(out.Turns), len(out.Transcript))
			}
		})
	}
}

func TestResponses_ReplyWithUnanswerableCallRefusedBeforeAnythingRuns(t *testing.T) {
	_, client := newServer(t, wire.Response("completed", "",
		wire.FunctionCall("fc_1", wire.Call{ID: "call_a", Name: "pay", Arguments: `{"amount":1}`}),
		wire.FunctionCall("fc_2", wire.Call{ID: "", Name: "pay", Arguments: `{"amount":2}`})))
	reg := newRegistry(t)
	var runs atomic.Int32
	payTool(t, reg.Global(), &runs)
	model := openai.NewResponsesModel(client, responses.ResponseNewParams{Model: "gpt-test"})
	out, err := agent.Run(testCtx(t), reg.Global(), model, []responses.ResponseInputItemUnionParam{userItem("pay")})
	if !errors.Is(err, agent.ErrInvalidReply) || out.Stop != agent.Failed {
		t.Fatalf("run: %v, stop %v; want ErrInvalidReply", err, out.Stop)
	}
	if n := runs.Load(); n != 0 {
		t.Fatalf("pay ran %d times for a refused reply", n)
	}
	if len(out.Turns) != 0 || len(out.Transcript) != 1 {
		t.Fatalf("%d turns, transcript of %d items; want the refused reply left out", len(out.Turns), len(out.Transcript))
	}
}

// A reply whose body is null decodes to no completion or response at all:
// Generate reports it instead of dereferencing it (it crashed the host).
func TestModel_NullReplyIsAnErrorNotACrash(t *testing.T) {
	null := func(map[string]any) any { return nil }
	_, client := newServer(t, null, null)
	reg := newRegistry(t)
	var runs atomic.Int32
	payTool(t, reg.Global(), &runs)
	out, err := agent.Run(testCtx(t), reg.Global(), openai.NewChatModel(client, oai.ChatCompletionNewParams{Model: "m"}),
		[]oai.ChatCompletionMessageParamUnion{oai.UserMessage("pay")})
	if !errors.Is(err, openai.ErrNoChoice) || out.Stop != agent.Failed {
		t.Fatalf("chat: %v, stop %v", err, out.Stop)
	}
	out2, err := agent.Run(testCtx(t), reg.Global(), openai.NewResponsesModel(client, responses.ResponseNewParams{Model: "m"}),
		[]responses.ResponseInputItemUnionParam{userItem("pay")})
	if !errors.Is(err, openai.ErrNoResponse) || out2.Stop != agent.Failed {
		t.Fatalf("responses: %v, stop %v", err, out2.Stop)
	}
}
