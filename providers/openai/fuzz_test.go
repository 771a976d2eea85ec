package openai_test

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

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/toolscope/toolscope/agent"
	"github.com/toolscope/toolscope/providers/openai"
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
// whose name OpenAI refuses (sent mapped) and one whose schema is not an
// object (left out); runs counts the bodies that ran.
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
	type args struct {
		Text string `json:"text"`
	}
	echo, err := runtime.NewTool("echo", "Echo", func(_ context.Context, in args, _ *runtime.RunContext) (string, error) {
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
	dotted := rawTool("fs.read_file", `{"type":"object","properties":{"path":{"type":"string"}}}`)
	inner := dotted.Execute
	dotted.Execute = func(ctx context.Context, a json.RawMessage, rc *runtime.RunContext) (any, error) {
		runs.Add(1)
		return inner(ctx, a, rc)
	}
	for _, d := range []runtime.Definition{echo, pay, dotted, rawTool("scalar", `{"type":"string"}`)} {
		if _, err := reg.Global().Register(d); err != nil {
			f.Fatal(err)
		}
	}
	return reg.Global()
}

// runBounded runs the loop, failing with every goroutine's stack if it
// does not return (a hostile reply must never hang it).
func runBounded[M any](t *testing.T, scope *runtime.Scope, model agent.Model[M], transcript []M) (*agent.Outcome[M], error) {
	type ret struct {
		out *agent.Outcome[M]
		err error
	}
	done := make(chan ret, 1)
	go func() {
		out, err := agent.Run(context.Background(), scope, model, transcript, agent.WithMaxSteps(3))
		done <- ret{out, err}
	}()
	timer := time.NewTimer(60 * time.Second)
	defer timer.Stop()
	select {
	case r := <-done:
		return r.out, r.err
	case <-timer.C:
		_ = pprof.Lookup("goroutine").WriteTo(os.Stderr, 2)
		t.Fatal("agent.Run did not return for a hostile reply")
		return nil, nil
	}
}

// checkAnswered: every result of every turn reached the transcript as one
// answer, each answer's id distinct within its turn and non-empty, and no
// body ran without its call being answered.
func checkAnswered[M any](t *testing.T, out *agent.Outcome[M], answers [][]string, ran int64) {
	t.Helper()
	results := 0
	for _, tr := range out.Turns {
		results += len(tr.Results)
	}
	got := 0
	for _, ids := range answers {
		got += len(ids)
		seen := map[string]bool{}
		for _, id := range ids {
			if id == "" || seen[id] {
				t.Fatalf("answer ids %q: empty or repeated", ids)
			}
			seen[id] = true
		}
	}
	if got != results {
		t.Fatalf("%d results in %d turns, %d answers in the transcript (stop %s)", results, len(out.Turns), got, out.Stop)
	}
	if ran > int64(results) {
		t.Fatalf("%d bodies ran, %d results", ran, results)
	}
}

const chatAnswer = `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"done"},"finish_reason":"stop"}]}`

func chatReply(calls string) string {
	return `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[` + calls + `]},"finish_reason":"tool_calls"}]}`
}

// FuzzChatModelReply feeds a hostile Chat Completions body to ChatModel
// through agent.Run: never a panic or a hang, and every call that ran is
// answered in the transcript.
func FuzzChatModelReply(f *testing.F) {
	mapped := openai.ToolName("fs.read_file")
	for _, s := range []string{
		chatAnswer,
		chatReply(`{"id":"a","type":"function","function":{"name":"echo","arguments":"{\"text\":\"x\"}"}},{"id":"b","type":"function","function":{"name":"pay","arguments":"{}"}}`),
		chatReply(`{"id":"","type":"function","function":{"name":"pay","arguments":"{}"}}`),
		chatReply(`{"id":"a","type":"function","function":{"name":"pay","arguments":""}},{"id":"a","type":"function","function":{"name":"echo","arguments":"nope"}}`),
		chatReply(`{"id":"m","type":"function","function":{"name":"` + mapped + `","arguments":"{\"path\":1}"}},{"id":"u","type":"custom","custom":{"name":"scalar","input":"x"}}`),
		chatReply(`{"id":"z","type":"function","function":{"name":"nope.x","arguments":"[]"}}`),
		`{"choices":[]}`, `{}`, `null`, `[`, ``,
	} {
		f.Add([]byte(s))
	}
	var runs atomic.Int64
	scope := fuzzScope(f, &runs)
	f.Fuzz(func(t *testing.T, body []byte) {
		client := oai.NewClient(option.WithBaseURL("http://model.invalid/v1/"), option.WithAPIKey("k"), option.WithMaxRetries(0),
			option.WithHTTPClient(&http.Client{Transport: &replayTransport{hostile: body, answer: []byte(chatAnswer)}}))
		model := openai.NewChatModel(&client, oai.ChatCompletionNewParams{Model: "m"}).WithLogger(discard)
		before := runs.Load()
		out, _ := runBounded(t, scope, model, []oai.ChatCompletionMessageParamUnion{oai.UserMessage("go")})
		var answers [][]string
		var turn []string
		for _, m := range out.Transcript {
			if m.OfTool != nil {
				turn = append(turn, m.OfTool.ToolCallID)
			} else if turn != nil {
				answers, turn = append(answers, turn), nil
			}
		}
		answers = append(answers, turn)
		checkAnswered(t, out, answers, runs.Load()-before)
	})
}

const responsesAnswer = `{"id":"r","object":"response","created_at":1,"status":"completed","model":"m","output":[{"type":"message","id":"m1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"done","annotations":[]}]}],"parallel_tool_calls":true,"tool_choice":"auto","tools":[]}`

func responsesReply(items string) string {
	return `{"id":"r","object":"response","created_at":1,"status":"completed","model":"m","output":[` + items + `],"parallel_tool_calls":true,"tool_choice":"auto","tools":[]}`
}

// FuzzResponsesModelReply feeds a hostile Responses body to ResponsesModel
// through agent.Run, with the invariants of FuzzChatModelReply.
func FuzzResponsesModelReply(f *testing.F) {
	mapped := openai.ToolName("fs.read_file")
	for _, s := range []string{
		responsesAnswer,
		responsesReply(`{"type":"function_call","id":"fc1","call_id":"a","name":"echo","arguments":"{\"text\":\"x\"}","status":"completed"},{"type":"function_call","id":"fc2","call_id":"b","name":"pay","arguments":"{}","status":"completed"}`),
		responsesReply(`{"type":"function_call","id":"fc1","call_id":"","name":"pay","arguments":"{}","status":"completed"}`),
		responsesReply(`{"type":"function_call","call_id":"a","name":"pay","arguments":"{}"},{"type":"function_call","call_id":"a","name":"` + mapped + `","arguments":"x"}`),
		responsesReply(`{"type":"reasoning","id":"rs","summary":[]},{"type":"web_search_call","id":"ws","status":"completed"}`),
		`{"status":"failed","error":{"code":"x","message":"y"}}`, `{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"}}`, `{}`, `null`, ``,
	} {
		f.Add([]byte(s))
	}
	var runs atomic.Int64
	scope := fuzzScope(f, &runs)
	f.Fuzz(func(t *testing.T, body []byte) {
		client := oai.NewClient(option.WithBaseURL("http://model.invalid/v1/"), option.WithAPIKey("k"), option.WithMaxRetries(0),
			option.WithHTTPClient(&http.Client{Transport: &replayTransport{hostile: body, answer: []byte(responsesAnswer)}}))
		model := openai.NewResponsesModel(&client, responses.ResponseNewParams{Model: "m"}).WithLogger(discard)
		before := runs.Load()
		out, _ := runBounded(t, scope, model, []responses.ResponseInputItemUnionParam{userItem("go")})
		var answers [][]string
		var turn []string
		for _, it := range out.Transcript {
			if it.OfFunctionCallOutput != nil {
				turn = append(turn, it.OfFunctionCallOutput.CallID.Value)
			} else if turn != nil {
				answers, turn = append(answers, turn), nil
			}
		}
		answers = append(answers, turn)
		checkAnswered(t, out, answers, runs.Load()-before)
	})
}

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))
