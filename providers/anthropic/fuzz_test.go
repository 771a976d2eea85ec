package anthropic_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"runtime/pprof"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/toolscope/toolscope/agent"
	"github.com/toolscope/toolscope/providers/anthropic"
	"github.com/toolscope/toolscope/runtime"
)

// replayTransport answers the first two requests with the hostile body
// (so it also travels back in the transcript of the second request) and
// every later one with answer, all with status 200, in memory: the
// official client decodes what a server would have sent.
type replayTransport struct {
	hostile, answer []byte
	n               atomic.Int32
}

func (rt *replayTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
	}
	body := rt.answer
	if rt.n.Add(1) <= 2 {
		body = rt.hostile
	}
	return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"application/json"}}, ContentLength: int64(len(body)),
		Body: io.NopCloser(bytes.NewReader(body)), Request: r}, nil
}

// fuzzScope is a scope with a parallel tool, an exclusive one, a tool
// whose name Anthropic refuses (sent mapped) and one whose schema is not
// an object (left out); runs counts the bodies that ran.
func fuzzScope(f *testing.F, runs *atomic.Int64) *runtime.Scope {
	reg, err := runtime.New()
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = reg.Close(ctx)
	})
	echo, err := runtime.NewTool("echo", "Echo", func(_ context.Context, in struct {
		Text string `json:"text"`
	}, _ *runtime.RunContext) (string, error) {
		runs.Add(1)
		return in.Text, nil
	}, runtime.WithParallel())
	if err != nil {
		f.Fatal(err)
	}
	pay, err := runtime.NewTool("pay", "Pay", func(_ context.Context, in struct {
		Amount int `json:"amount"`
	}, _ *runtime.RunContext) (string, error) {
		runs.Add(1)
		return "paid", nil
	})
	if err != nil {
		f.Fatal(err)
	}
	dotted := namedTool("fs.read_file", `{"type":"object","properties":{"path":{"type":"string"}}}`)
	inner := dotted.Execute
	dotted.Execute = func(ctx context.Context, a json.RawMessage, rc *runtime.RunContext) (any, error) {
		runs.Add(1)
		return inner(ctx, a, rc)
	}
	for _, d := range []runtime.Definition{echo, pay, dotted, namedTool("scalar", `{"type":"string"}`)} {
		if _, err := reg.Global().Register(d); err != nil {
			f.Fatal(err)
		}
	}
	return reg.Global()
}

const messagesAnswer = `{"id":"msg_a","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"done"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`

// FuzzModelReply feeds a hostile Messages body to Model through agent.Run:
// never a panic or a hang; every result of every turn is answered by one
// tool_result with its own non-empty id, and no body ran without its call
// being answered.
func FuzzModelReply(f *testing.F) {
	mapped := anthropic.ToolName("fs.read_file")
	for _, s := range []string{
		messagesAnswer,
		reply("msg_1", "tool_use", toolUse("toolu_1", "echo", `{"text":"x"}`), toolUse("toolu_2", "pay", `{"amount":1}`)),
		reply("msg_1", "tool_use", toolUse("", "pay", `{}`)),
		reply("msg_1", "tool_use", toolUse("t", "pay", `{}`), toolUse("t", mapped, `"x"`)),
		reply("msg_1", "max_tokens", text("hi"), toolUse("t", "nope.x", `[]`), `{"type":"thinking","thinking":"x","signature":"s"}`),
		reply("msg_1", "end_turn"),
		`{"content":[{"type":"tool_use"}]}`, `{}`, `null`, `[`, ``,
	} {
		f.Add([]byte(s))
	}
	var runs atomic.Int64
	scope := fuzzScope(f, &runs)
	discard := slog.New(slog.NewTextHandler(io.Discard, nil))
	f.Fuzz(func(t *testing.T, body []byte) {
		client := sdk.NewClient(option.WithBaseURL("http://model.invalid/"), option.WithAPIKey("k"), option.WithMaxRetries(0),
			option.WithHTTPClient(&http.Client{Transport: &replayTransport{hostile: body, answer: []byte(messagesAnswer)}}))
		m, err := anthropic.New(client, sdk.MessageNewParams{Model: "m", MaxTokens: 64})
		if err != nil {
			t.Fatal(err)
		}
		before := runs.Load()
		type ret struct {
			out *agent.Outcome[sdk.MessageParam]
			err error
		}
		done := make(chan ret, 1)
		go func() {
			out, err := agent.Run(context.Background(), scope, m.WithLogger(discard), []sdk.MessageParam{userText("go")}, agent.WithMaxSteps(3))
			done <- ret{out, err}
		}()
		timer := time.NewTimer(60 * time.Second)
		defer timer.Stop()
		var out *agent.Outcome[sdk.MessageParam]
		select {
		case r := <-done:
			out = r.out
		case <-timer.C:
			_ = pprof.Lookup("goroutine").WriteTo(os.Stderr, 2)
			t.Fatal("agent.Run did not return for a hostile reply")
		}
		results := 0
		for _, tr := range out.Turns {
			results += len(tr.Results)
		}
		answers := 0
		for _, msg := range out.Transcript {
			if msg.OfUser == nil {
				continue
			}
			seen := map[string]bool{}
			for _, b := range msg.OfUser.Content {
				if b.OfToolResult == nil {
					continue
				}
				id := b.OfToolResult.ToolUseID
				if id == "" || seen[id] {
					t.Fatalf("tool_result id %q empty or repeated in one message", id)
				}
				seen[id] = true
				answers++
			}
		}
		if answers != results {
			t.Fatalf("%d results in %d turns, %d tool_result blocks (stop %s)", results, len(out.Turns), answers, out.Stop)
		}
		if ran := runs.Load() - before; ran > int64(results) {
			t.Fatalf("%d bodies ran, %d results", ran, results)
		}
	})
}
