package gemini_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/toolscope/toolscope/agent"
	"github.com/toolscope/toolscope/codemode"
	"github.com/toolscope/toolscope/runtime"
	"google.golang.org/genai"
)

// A turn whose model emits run_code (issue 23): a code-mode scope offers
// only run_code, the program's inner calls reach the scope's tools, and
// its result goes back as the call's functionResponse.
func TestModel_R107_RunCodeTurn(t *testing.T) {
	prog, _ := json.Marshal(map[string]string{"code": `[shout(text=t) for t in ["a", "b"]]`})
	s := newServer(t,
		reply("STOP", call("run_code", string(prog))),
		reply("STOP", text("done")))
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

	var out *agent.Outcome[*genai.Content]
	within(t, 20*time.Second, func() {
		out, err = agent.Run(context.Background(), scope, newModel(t, s), []*genai.Content{genai.NewContentFromText("go", genai.RoleUser)})
	})
	if err != nil || out.Stop != agent.Answered || out.Steps != 2 {
		t.Fatalf("run: %v stop=%s steps=%d", err, out.Stop, out.Steps)
	}
	reqs := s.requests(t)
	if len(reqs[0].Tools) != 1 || len(reqs[0].Tools[0].FunctionDeclarations) != 1 || reqs[0].Tools[0].FunctionDeclarations[0].Name != "run_code" {
		t.Fatalf("tools sent: %+v, want run_code only", reqs[0].Tools)
	}
	contents := reqs[1].Contents
	last := contents[len(contents)-1]
	if len(last.Parts) != 1 || last.Parts[0].FunctionResponse == nil || last.Parts[0].FunctionResponse.Name != "run_code" {
		t.Fatalf("last content %+v, want run_code's functionResponse", last)
	}
	if got := string(last.Parts[0].FunctionResponse.Response); !strings.Contains(got, `[\"A\",\"B\"]`) || strings.Contains(got, `"error"`) {
		t.Fatalf("run_code response %s", got)
	}
}
