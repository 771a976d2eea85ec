package anthropic_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/toolscope/toolscope/agent"
	"github.com/toolscope/toolscope/codemode"
	"github.com/toolscope/toolscope/runtime"
)

// A turn whose model emits run_code (issue 23): a code-mode scope offers
// only run_code, the program's inner calls reach the scope's tools, and
// its result goes back as the call's tool_result.
func TestModel_R107_RunCodeTurn(t *testing.T) {
	prog, _ := json.Marshal(map[string]string{"code": `[shout(text=t) for t in ["a", "b"]]`})
	s := newServer(t,
		reply("msg_1", "tool_use", toolUse("toolu_01", "run_code", string(prog))),
		reply("msg_2", "end_turn", text("done")))
	reg, err := runtime.New(codemode.Option(codemode.Config{}))
	must(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = reg.Close(ctx)
	})
	shout, err := runtime.NewTool("shout", "Upper-case the text", func(ctx context.Context, in struct {
		Text string `json:"text"`
	}, rc *runtime.RunContext) (string, error) {
		return strings.ToUpper(in.Text), nil
	})
	must(t, err)
	_, err = reg.Global().Register(shout)
	must(t, err)
	scope, err := reg.NewScope("agent")
	must(t, err)
	must(t, scope.SetPresentation(runtime.PresentationCode))

	var out *agent.Outcome[sdk.MessageParam]
	within(t, 20*time.Second, func() {
		out, err = agent.Run(context.Background(), scope, newModel(t, s), []sdk.MessageParam{userText("go")})
	})
	if err != nil || out.Stop != agent.Answered || out.Steps != 2 {
		t.Fatalf("run: %v stop=%s steps=%d", err, out.Stop, out.Steps)
	}
	reqs := s.requests(t)
	if len(reqs[0].Tools) != 1 || reqs[0].Tools[0].Name != "run_code" {
		t.Fatalf("tools sent: %+v, want run_code only", reqs[0].Tools)
	}
	msgs := reqs[1].Messages
	last := msgs[len(msgs)-1]
	if len(last.Content) != 1 || last.Content[0].Type != "tool_result" || last.Content[0].ToolUseID != "toolu_01" {
		t.Fatalf("last message %+v, want toolu_01's tool_result", last)
	}
	res := last.Content[0]
	if res.IsError != nil && *res.IsError {
		t.Fatalf("run_code failed: %+v", res)
	}
	if len(res.Content) != 1 || res.Content[0].Text != `["A","B"]` {
		t.Fatalf("run_code result %+v, want [\"A\",\"B\"]", res.Content)
	}
}
