package openai_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	oai "github.com/openai/openai-go/v3"

	"github.com/toolscope/toolscope/agent"
	"github.com/toolscope/toolscope/codemode"
	"github.com/toolscope/toolscope/providers/openai"
	"github.com/toolscope/toolscope/providers/openai/internal/wire"
	"github.com/toolscope/toolscope/runtime"
)

// A turn whose model emits run_code (issue 23): a code-mode scope offers
// only run_code, whose program's inner calls reach the scope's tools, and
// its result goes back as the call's tool message.
func TestChat_R107_RunCodeTurn(t *testing.T) {
	prog, _ := json.Marshal(map[string]string{"code": `print(echo(text="one"))
[echo(text=t) for t in ["a", "b"]]`})
	srv, client := newServer(t,
		wire.Chat("tool_calls", "", wire.Call{ID: "call_1", Name: "run_code", Arguments: string(prog)}),
		wire.Chat("stop", "done"))
	reg, err := runtime.New(codemode.Option(codemode.Config{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = reg.Close(ctx)
	})
	echoTool(t, reg.Global())
	s, err := reg.NewScope("agent")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetPresentation(runtime.PresentationCode); err != nil {
		t.Fatal(err)
	}
	model := openai.NewChatModel(client, oai.ChatCompletionNewParams{Model: "gpt-test"})
	out, err := agent.Run(testCtx(t), s, model, []oai.ChatCompletionMessageParamUnion{oai.UserMessage("go")})
	if err != nil || out.Stop != agent.Answered || out.Steps != 2 {
		t.Fatalf("run: %v stop=%s steps=%d", err, out.Stop, out.Steps)
	}
	reqs := srv.Requests()
	first, second := decodeSent(t, reqs[0]), decodeSent(t, reqs[1])
	if len(first.Tools) != 1 || first.Tools[0].Function.Name != "run_code" {
		t.Fatalf("tools sent: %+v, want run_code only", first.Tools)
	}
	msgs := second.Messages
	last := msgs[len(msgs)-1]
	if last.Role != "tool" || last.ToolCallID != "call_1" {
		t.Fatalf("last message %+v, want call_1's tool message", last)
	}
	if got, want := text(last.Content), "echo:one\n[\"echo:a\",\"echo:b\"]"; got != want {
		t.Fatalf("run_code result %q, want %q", got, want)
	}
}
