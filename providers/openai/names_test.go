package openai_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/toolscope/toolscope/agent"
	"github.com/toolscope/toolscope/providers/openai"
	"github.com/toolscope/toolscope/providers/openai/internal/wire"
	"github.com/toolscope/toolscope/runtime"
)

// OpenAI's rule for function names.
var openAIName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// unsendableScope registers tools OpenAI cannot take as they are: an MCP
// style name with dots, a 100-character name, a name with a space, and a
// tool whose parameter schema is not an object schema; next to a plain
// tool.
func unsendableScope(t *testing.T) (*runtime.Scope, string) {
	reg := newRegistry(t)
	long := "srv." + strings.Repeat("x", 96)
	for _, d := range []runtime.Definition{
		rawTool("fs.read_file", `{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`),
		rawTool(long, `{"type":"object","properties":{}}`),
		rawTool("two words", `{"type":"object","properties":{}}`),
		rawTool("scalar", `{"type":"string"}`),
		rawTool("plain", `{"type":"object","properties":{}}`),
	} {
		register(t, reg.Global(), d, nil)
	}
	return reg.Global(), long
}

// logBuffer is a logger writing to a buffer.
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

// callEverySentTool is a Chat reply calling every tool of the request by
// the name it was sent under; sent records those names.
func callEverySentTool(sent *[]string) wire.Reply {
	return func(req map[string]any) any {
		var calls []wire.Call
		tools, _ := req["tools"].([]any)
		for i, tool := range tools {
			var name string
			if fn, ok := tool.(map[string]any)["function"].(map[string]any); ok {
				name, _ = fn["name"].(string)
			} else {
				name, _ = tool.(map[string]any)["name"].(string)
			}
			*sent = append(*sent, name)
			calls = append(calls, wire.Call{ID: "call_" + string(rune('a'+i)), Name: name, Arguments: `{"path":"a"}`})
		}
		if _, chat := req["messages"]; chat {
			return wire.Chat("tool_calls", "", calls...)(req)
		}
		items := make([]wire.Item, len(calls))
		for i, c := range calls {
			items[i] = wire.FunctionCall("fc_"+c.ID, c)
		}
		return wire.Response("completed", "", items...)(req)
	}
}

// checkSentNames: every name sent is valid for OpenAI and distinct; the
// tool with a non-object schema was left out; the others were sent.
func checkSentNames(t *testing.T, sent []string, long string) {
	t.Helper()
	if len(sent) != 4 {
		t.Fatalf("sent %q, want 4 tools (scalar left out)", sent)
	}
	seen := map[string]bool{}
	for _, n := range sent {
		if !openAIName.MatchString(n) || seen[n] {
			t.Fatalf("sent name %q is not a valid OpenAI function name or is sent twice (%q)", n, sent)
		}
		seen[n] = true
	}
	for _, name := range []string{"fs.read_file", long, "two words", "plain"} {
		if !seen[openai.ToolName(name)] {
			t.Fatalf("%q not sent as %q (sent %q)", name, openai.ToolName(name), sent)
		}
	}
}

// checkRanUnderToolNames: each call ran the tool the mapped name stands
// for, and was answered.
func checkRanUnderToolNames(t *testing.T, out *agent.Outcome[oai.ChatCompletionMessageParamUnion], err error) {
	t.Helper()
	if err != nil || out.Stop != agent.Answered || len(out.Turns) != 1 {
		t.Fatalf("run: %v %+v", err, out)
	}
	res := out.Turns[0].Results
	want := map[string]bool{"fs.read_file ok": true, "two words ok": true, "plain ok": true}
	for _, r := range res {
		if r.IsError() {
			t.Fatalf("a call failed: %s", r.Text())
		}
		delete(want, r.Text())
	}
	if len(res) != 4 || len(want) != 0 {
		t.Fatalf("%d results, missing %v", len(res), want)
	}
}

func TestChat_ToolNamesOpenAICannotTakeAreMappedAndBack_UnsendableToolLeftOut(t *testing.T) {
	var sent []string
	_, client := newServer(t, callEverySentTool(&sent), wire.Chat("stop", "done"))
	scope, long := unsendableScope(t)
	var logs logBuffer
	model := openai.NewChatModel(client, oai.ChatCompletionNewParams{Model: "gpt-test"}).
		WithLogger(slog.New(slog.NewTextHandler(&logs, nil)))
	out, err := agent.Run(testCtx(t), scope, model, []oai.ChatCompletionMessageParamUnion{oai.UserMessage("hi")})
	checkRanUnderToolNames(t, out, err)
	checkSentNames(t, sent, long)
	if !strings.Contains(logs.String(), "tool=scalar") {
		t.Fatalf("no warning for the tool left out: %q", logs.String())
	}
}

func TestResponses_ToolNamesOpenAICannotTakeAreMappedAndBack_UnsendableToolLeftOut(t *testing.T) {
	var sent []string
	_, client := newServer(t, callEverySentTool(&sent), wire.Response("completed", "", wire.Message("msg_1", "done")))
	scope, long := unsendableScope(t)
	var logs logBuffer
	model := openai.NewResponsesModel(client, responses.ResponseNewParams{Model: "gpt-test"}).
		WithLogger(slog.New(slog.NewTextHandler(&logs, nil)))
	out, err := agent.Run(testCtx(t), scope, model, []responses.ResponseInputItemUnionParam{userItem("hi")})
	if err != nil || out.Stop != agent.Answered || len(out.Turns) != 1 {
		t.Fatalf("run: %v %+v", err, out)
	}
	for _, r := range out.Turns[0].Results {
		if r.IsError() {
			t.Fatalf("a call failed: %s", r.Text())
		}
	}
	checkSentNames(t, sent, long)
	if !strings.Contains(logs.String(), "tool=scalar") {
		t.Fatalf("no warning for the tool left out: %q", logs.String())
	}
	// The transcript keeps the names as the model sent them.
	b, _ := json.Marshal(out.Transcript)
	if !strings.Contains(string(b), openai.ToolName("fs.read_file")) {
		t.Fatal("the transcript lost the name the model called")
	}
}

// ToolName is deterministic, valid, and leaves a valid name alone.
func TestToolName_ValidDeterministicAndDistinct(t *testing.T) {
	names := []string{"plain", "fs.read_file", "fs:read_file", "fs read file", "", "é", strings.Repeat("a", 65), strings.Repeat("a", 128), strings.Repeat("a", 64) + "b"}
	seen := map[string]string{}
	for _, n := range names {
		w := openai.ToolName(n)
		if !openAIName.MatchString(w) || w != openai.ToolName(n) {
			t.Fatalf("ToolName(%q) = %q", n, w)
		}
		if other, dup := seen[w]; dup {
			t.Fatalf("%q and %q both map to %q", n, other, w)
		}
		seen[w] = n
	}
	if openai.ToolName("plain") != "plain" || openai.ToolName(strings.Repeat("a", 64)) != strings.Repeat("a", 64) {
		t.Fatal("a valid name was mapped")
	}
}

// A tool whose mapped name is another tool's own name is left out (never
// two tools under one name), whatever the order of the schemas.
func TestChatTools_MappedNameTakenByAnotherToolIsLeftOut(t *testing.T) {
	taken := openai.ToolName("a.b")
	for _, schemas := range [][]runtime.ToolSchema{
		{{Name: "a.b"}, {Name: taken}},
		{{Name: taken}, {Name: "a.b"}},
	} {
		tools, skipped := openai.ChatTools(schemas)
		if len(tools) != 1 || tools[0].OfFunction.Function.Name != taken || len(skipped) != 1 || skipped[0].Name != "a.b" {
			t.Fatalf("tools %d, skipped %+v", len(tools), skipped)
		}
	}
}
