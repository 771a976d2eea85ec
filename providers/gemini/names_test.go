package gemini_test

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

	"github.com/toolscope/toolscope/agent"
	"github.com/toolscope/toolscope/providers/gemini"
	"github.com/toolscope/toolscope/runtime"
	"google.golang.org/genai"
)

// Gemini's rule for function declaration names (genai's
// FunctionDeclaration.Name).
var geminiName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_.:-]{0,127}$`)

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

// Names Gemini refuses (150 characters, a leading digit, a space) are sent
// mapped and the calls by a mapped name run the tool it stands for, each
// answered under the name the model called; a tool whose parameter schema
// is not an object schema is left out with a warning; the run proceeds.
func TestModel_ToolsGeminiCannotTakeAreMappedOrLeftOut_RunProceeds(t *testing.T) {
	long := "srv." + strings.Repeat("x", 146)
	s := newServer(t,
		reply("STOP",
			call(gemini.ToolName(long), `{}`),
			call(gemini.ToolName("9lives"), `{}`),
			call(gemini.ToolName("two words"), `{}`),
			call("fs.read_file", `{"path":"a"}`)),
		reply("STOP", text("done")),
	)
	reg, err := runtime.New()
	must(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = reg.Close(ctx)
	})
	for _, d := range []runtime.Definition{
		namedTool(long, `{"type":"object"}`),
		namedTool("9lives", `{"type":"object"}`),
		namedTool("two words", `{"type":"object"}`),
		namedTool("fs.read_file", `{"type":"object","properties":{"path":{"type":"string"}}}`),
		namedTool("scalar", `{"type":"string"}`),
	} {
		_, err := reg.Global().Register(d)
		must(t, err)
	}
	var logs logBuffer
	m := newModel(t, s).WithLogger(slog.New(slog.NewTextHandler(&logs, nil)))
	var out *agent.Outcome[*genai.Content]
	within(t, 20*time.Second, func() {
		out, err = agent.Run(context.Background(), reg.Global(), m, []*genai.Content{genai.NewContentFromText("go", genai.RoleUser)})
	})
	if err != nil || out.Stop != agent.Answered || len(out.Turns) != 1 {
		t.Fatalf("run: %v (%+v)", err, out)
	}
	for i, name := range []string{long, "9lives", "two words", "fs.read_file"} {
		if r := out.Turns[0].Results[i]; r.IsError() || r.Text() != name+" ok" {
			t.Fatalf("call %d (%s): %s", i, name, r.Text())
		}
	}
	reqs := s.requests(t)
	seen := map[string]bool{}
	for _, d := range reqs[0].Tools[0].FunctionDeclarations {
		if !geminiName.MatchString(d.Name) || seen[d.Name] {
			t.Fatalf("declaration name %q sent", d.Name)
		}
		seen[d.Name] = true
	}
	if len(seen) != 4 || seen["scalar"] || !seen["fs.read_file"] {
		t.Fatalf("declared %v, want every tool but scalar, fs.read_file as it is", seen)
	}
	if !strings.Contains(logs.String(), "tool=scalar") {
		t.Fatalf("no warning for the tool left out: %q", logs.String())
	}
	calls, resps := reqs[1].Contents[1].Parts, reqs[1].Contents[2].Parts
	for i := range calls {
		if fc, fr := calls[i].FunctionCall, resps[i].FunctionResponse; fr.Name != fc.Name || fr.ID != fc.ID {
			t.Fatalf("response %d (%s %s) does not answer call (%s %s)", i, fr.ID, fr.Name, fc.ID, fc.Name)
		}
	}
}

// Replies the SDK cannot read (a body of null; a null candidate, on which
// genai v1.77 panics) are errors, never a crash of the host.
func TestModel_UnreadableReplyIsAnErrorNotACrash(t *testing.T) {
	for _, body := range []string{"null", `{"candidates":[null]}`} {
		s := newServer(t, body)
		f := newFixture(t)
		var out *agent.Outcome[*genai.Content]
		var err error
		within(t, 20*time.Second, func() {
			out, err = agent.Run(context.Background(), f.scope, newModel(t, s), []*genai.Content{genai.NewContentFromText("go", genai.RoleUser)})
		})
		if !errors.Is(err, gemini.ErrInvalid) || out.Stop != agent.Failed {
			t.Fatalf("%s: %v, stop %v", body, err, out.Stop)
		}
	}
}
