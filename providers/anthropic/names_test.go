package anthropic_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/toolscope/toolscope/agent"
	"github.com/toolscope/toolscope/providers/anthropic"
	"github.com/toolscope/toolscope/runtime"
)

// Anthropic's rule for custom tool names.
var anthropicName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// namedTool is a tool with a raw parameter schema answering "<name> ok".
func namedTool(name, params string) runtime.Definition {
	return runtime.Definition{
		Name: name, Description: "the " + name + " tool", Parameters: json.RawMessage(params),
		Output: &runtime.Output{Schema: json.RawMessage(`{"type":"string"}`), Render: func(_ context.Context, _, v json.RawMessage) ([]runtime.Block, error) {
			var s string
			err := json.Unmarshal(v, &s)
			return []runtime.Block{runtime.Text(s)}, err
		}},
		Execute: func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) { return name + " ok", nil },
	}
}

// One imported tool whose input schema is not an object, and names
// Anthropic refuses (dots, 100 characters), no longer fail the run: the
// tool with the scalar schema is left out with a warning, the names are
// sent mapped, and the model's calls by a mapped name run the tool it
// stands for.
func TestModel_ToolsAnthropicCannotTakeAreMappedOrLeftOut_RunProceeds(t *testing.T) {
	long := "srv." + strings.Repeat("x", 96)
	s := newServer(t,
		reply("msg_1", "tool_use",
			toolUse("toolu_1", anthropic.ToolName("fs.read_file"), `{"path":"a"}`),
			toolUse("toolu_2", anthropic.ToolName(long), `{}`),
			toolUse("toolu_3", "plain", `{}`)),
		reply("msg_2", "end_turn", text("done")),
	)
	reg, err := runtime.New()
	must(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = reg.Close(ctx)
	})
	for _, d := range []runtime.Definition{
		namedTool("fs.read_file", `{"type":"object","properties":{"path":{"type":"string"}}}`),
		namedTool(long, `{"type":"object"}`),
		namedTool("scalar", `{"type":"string"}`),
		namedTool("plain", `{"type":"object"}`),
	} {
		_, err := reg.Global().Register(d)
		must(t, err)
	}
	var logs logBuffer
	m := newModel(t, s).WithLogger(slog.New(slog.NewTextHandler(&logs, nil)))
	var out *agent.Outcome[sdk.MessageParam]
	within(t, 20*time.Second, func() {
		out, err = agent.Run(context.Background(), reg.Global(), m, []sdk.MessageParam{userText("go")})
	})
	if err != nil || out.Stop != agent.Answered || len(out.Turns) != 1 {
		t.Fatalf("run: %v (%+v)", err, out)
	}
	got := map[string]bool{}
	for _, r := range out.Turns[0].Results {
		got[r.Text()] = !r.IsError()
	}
	for _, name := range []string{"fs.read_file", long, "plain"} {
		if !got[name+" ok"] {
			t.Fatalf("%s did not run: %v", name, got)
		}
	}
	reqs := s.requests(t)
	seen := map[string]bool{}
	for _, tool := range reqs[0].Tools {
		if !anthropicName.MatchString(tool.Name) || seen[tool.Name] {
			t.Fatalf("tool name %q sent", tool.Name)
		}
		seen[tool.Name] = true
	}
	if len(reqs[0].Tools) != 3 || seen["scalar"] {
		t.Fatalf("sent %v, want every tool but scalar", seen)
	}
	if !strings.Contains(logs.String(), "tool=scalar") {
		t.Fatalf("no warning for the tool left out: %q", logs.String())
	}
	// The transcript keeps the names the model wrote.
	if u := reqs[1].Messages[1].Content[0]; u.Name != anthropic.ToolName("fs.read_file") {
		t.Fatalf("transcript call name %q", u.Name)
	}
}

// A reply whose body is null decodes to no message at all: Generate
// reports it instead of dereferencing it (it crashed the host).
func TestModel_NullReplyIsAnErrorNotACrash(t *testing.T) {
	s := newServer(t, "null")
	f := newFixture(t)
	var out *agent.Outcome[sdk.MessageParam]
	var err error
	within(t, 20*time.Second, func() {
		out, err = agent.Run(context.Background(), f.scope, newModel(t, s), []sdk.MessageParam{userText("go")})
	})
	if !errors.Is(err, anthropic.ErrInvalid) || out.Stop != agent.Failed {
		t.Fatalf("%v, stop %v", err, out.Stop)
	}
}
