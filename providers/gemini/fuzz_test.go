package gemini_test

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

	"github.com/toolscope/toolscope/agent"
	"github.com/toolscope/toolscope/providers/gemini"
	"github.com/toolscope/toolscope/runtime"
	"google.golang.org/genai"
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
// whose name Gemini refuses (declared mapped) and one whose schema is not
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
	odd := namedTool("9 lives", `{"type":"object","properties":{"path":{"type":"string"}}}`)
	inner := odd.Execute
	odd.Execute = func(ctx context.Context, a json.RawMessage, rc *runtime.RunContext) (any, error) {
		runs.Add(1)
		return inner(ctx, a, rc)
	}
	for _, d := range []runtime.Definition{echo, pay, odd, namedTool("scalar", `{"type":"string"}`)} {
		if _, err := reg.Global().Register(d); err != nil {
			f.Fatal(err)
		}
	}
	return reg.Global()
}

// FuzzModelReply feeds a hostile generateContent body to Model through
// agent.Run: never a panic or a hang; every result of every turn is
// answered by one FunctionResponse with its own non-empty id, and no body
// ran without its call being answered.
func FuzzModelReply(f *testing.F) {
	answer := reply("STOP", text("done"))
	for _, s := range []string{
		answer,
		reply("STOP", call("echo", `{"text":"x"}`), call("pay", `{"amount":1}`)),
		reply("STOP", callID("call_1_1", "pay", `{}`), call("pay", `{}`), callID("call_1_1", "echo", `{}`)),
		reply("STOP", call(gemini.ToolName("9 lives"), `{"path":1}`), call("nope x", `{}`), `{"text":"t","thought":true}`),
		reply("MALFORMED_FUNCTION_CALL"),
		`{"candidates":[null]}`, `{"candidates":[{"content":{"parts":[null,{"functionCall":null}]}}]}`,
		`{"promptFeedback":{"blockReason":"SAFETY"}}`, `{}`, `null`, `[`, ``,
	} {
		f.Add([]byte(s))
	}
	var runs atomic.Int64
	scope := fuzzScope(f, &runs)
	discard := slog.New(slog.NewTextHandler(io.Discard, nil))
	f.Fuzz(func(t *testing.T, body []byte) {
		client, err := genai.NewClient(context.Background(), &genai.ClientConfig{
			APIKey: "k", Backend: genai.BackendGeminiAPI,
			HTTPClient:  &http.Client{Transport: &replayTransport{hostile: body, answer: []byte(answer)}},
			HTTPOptions: genai.HTTPOptions{BaseURL: "http://model.invalid/"},
		})
		if err != nil {
			t.Fatal(err)
		}
		m, err := gemini.New(client, testModel, nil)
		if err != nil {
			t.Fatal(err)
		}
		before := runs.Load()
		type ret struct {
			out *agent.Outcome[*genai.Content]
			err error
		}
		done := make(chan ret, 1)
		go func() {
			out, err := agent.Run(context.Background(), scope, m.WithLogger(discard),
				[]*genai.Content{genai.NewContentFromText("go", genai.RoleUser)}, agent.WithMaxSteps(3))
			done <- ret{out, err}
		}()
		timer := time.NewTimer(60 * time.Second)
		defer timer.Stop()
		var out *agent.Outcome[*genai.Content]
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
		for _, c := range out.Transcript {
			seen := map[string]bool{}
			for _, p := range c.Parts {
				if p == nil || p.FunctionResponse == nil {
					continue
				}
				id := p.FunctionResponse.ID
				if id == "" || seen[id] {
					t.Fatalf("function response id %q empty or repeated in one content", id)
				}
				seen[id] = true
				answers++
			}
		}
		if answers != results {
			t.Fatalf("%d results in %d turns, %d function responses (stop %s)", results, len(out.Turns), answers, out.Stop)
		}
		if ran := runs.Load() - before; ran > int64(results) {
			t.Fatalf("%d bodies ran, %d results", ran, results)
		}
	})
}
