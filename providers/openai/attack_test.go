package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/toolscope/toolscope/agent"
	"github.com/toolscope/toolscope/providers/openai"
	"github.com/toolscope/toolscope/providers/openai/internal/wire"
	"github.com/toolscope/toolscope/runtime"
)

// sseServer answers every request with what write sends, on loopback,
// and returns an official client pointed at it.
func sseServer(t *testing.T, write func(w http.ResponseWriter, r *http.Request)) *oai.Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		write(w, r)
	}))
	t.Cleanup(srv.Close)
	c := oai.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey("k"),
		option.WithHTTPClient(srv.Client()), option.WithMaxRetries(0))
	return &c
}

func chunkJSON(choices ...any) string {
	b, _ := json.Marshal(map[string]any{"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": choices})
	return string(b)
}

// goroutinesSettle waits (bounded) until the goroutine count is back to
// at most before, and fails with a dump if it is not.
func goroutinesSettle(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for goruntime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("goroutines: %d before, %d after\n%s", before, goruntime.NumGoroutine(), buf[:goruntime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A stream that never ends, trickling keep-alive comments and empty
// deltas well under the size bound, ends with the ctx: Run stops with
// ContextDone, and nothing is left running.
func TestAttack_ChatTrickleStreamEndsWithTheCtx(t *testing.T) {
	before := goruntime.NumGoroutine()
	client := sseServer(t, func(w http.ResponseWriter, r *http.Request) {
		f := w.(http.Flusher)
		for {
			fmt.Fprintf(w, ": ping\n\ndata: %s\n\n", chunkJSON(map[string]any{"index": 0, "delta": map[string]any{"content": "."}}))
			f.Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	})
	reg := newRegistry(t)
	ctx, cancel := context.WithTimeout(testCtx(t), 300*time.Millisecond)
	defer cancel()
	n := 0
	m := openai.NewChatModel(client, oai.ChatCompletionNewParams{Model: "m"})
	out, err := agent.Run(ctx, reg.Global(), m, []oai.ChatCompletionMessageParamUnion{oai.UserMessage("hi")},
		agent.WithHooks(agent.Hooks[oai.ChatCompletionMessageParamUnion]{Text: func(_ *agent.Step[oai.ChatCompletionMessageParamUnion], d string) { n++ }}))
	if err != nil || out.Stop != agent.ContextDone {
		t.Fatalf("stop %v, err %v", out.Stop, err)
	}
	if n == 0 {
		t.Fatal("no delta delivered")
	}
	goroutinesSettle(t, before+4) // the test server's idle connection may stay
}

// Tool-call argument deltas for an index whose call was never opened
// (no id, no name), and calls whose index leaves a gap, fail with a coded
// error and nothing runs.
func TestAttack_ChatToolCallDeltaForAnIndexNeverOpened(t *testing.T) {
	cases := map[string][]string{
		"args only": {
			chunkJSON(map[string]any{"index": 0, "delta": map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": `{"text":"a"}`}}}}}),
		},
		"gap": {
			chunkJSON(map[string]any{"index": 0, "delta": map[string]any{"tool_calls": []any{map[string]any{"index": 5, "id": "c5", "type": "function", "function": map[string]any{"name": "echo", "arguments": `{"text":"a"}`}}}}}),
		},
	}
	for name, chunks := range cases {
		t.Run(name, func(t *testing.T) {
			client := sseServer(t, func(w http.ResponseWriter, r *http.Request) {
				for _, c := range chunks {
					fmt.Fprintf(w, "data: %s\n\n", c)
				}
				fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", chunkJSON(map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "tool_calls"}))
			})
			reg := newRegistry(t)
			ran := 0
			d, err := runtime.NewTool("echo", "echoes", func(_ context.Context, in struct {
				Text string `json:"text"`
			}, _ *runtime.RunContext) (string, error) {
				ran++
				return in.Text, nil
			})
			register(t, reg.Global(), d, err)
			m := openai.NewChatModel(client, oai.ChatCompletionNewParams{Model: "m"})
			out, err := agent.Run(testCtx(t), reg.Global(), m, []oai.ChatCompletionMessageParamUnion{oai.UserMessage("hi")},
				agent.WithHooks(agent.Hooks[oai.ChatCompletionMessageParamUnion]{Text: func(*agent.Step[oai.ChatCompletionMessageParamUnion], string) {}}))
			if !errors.Is(err, agent.ErrStreamMalformed) && !errors.Is(err, agent.ErrInvalidReply) {
				t.Fatalf("stop %v, err %v", out.Stop, err)
			}
			if ran != 0 {
				t.Fatalf("%d calls ran", ran)
			}
		})
	}
}

// Thousands of tool calls in one streamed reply: each is answered exactly
// once, by id, in order.
func TestAttack_ChatThousandsOfToolCallsEachAnsweredOnce(t *testing.T) {
	const n = 3000
	step := 0
	client := sseServer(t, func(w http.ResponseWriter, r *http.Request) {
		step++
		if step > 1 {
			fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", chunkJSON(map[string]any{"index": 0, "delta": map[string]any{"content": "ok"}, "finish_reason": "stop"}))
			return
		}
		for i := range n {
			fmt.Fprintf(w, "data: %s\n\n", chunkJSON(map[string]any{"index": 0, "delta": map[string]any{"tool_calls": []any{
				map[string]any{"index": i, "id": fmt.Sprint("c", i), "type": "function", "function": map[string]any{"name": "echo", "arguments": fmt.Sprintf(`{"text":"%d"}`, i)}}}}}))
		}
		fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", chunkJSON(map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "tool_calls"}))
	})
	reg := newRegistry(t)
	echoTool(t, reg.Global())
	m := openai.NewChatModel(client, oai.ChatCompletionNewParams{Model: "m"})
	out, err := agent.Run(testCtx(t), reg.Global(), m, []oai.ChatCompletionMessageParamUnion{oai.UserMessage("hi")},
		agent.WithHooks(agent.Hooks[oai.ChatCompletionMessageParamUnion]{Text: func(*agent.Step[oai.ChatCompletionMessageParamUnion], string) {}}))
	if err != nil || out.Stop != agent.Answered {
		t.Fatalf("stop %v, err %v", out.Stop, err)
	}
	seen := map[string]int{}
	for _, msg := range out.Transcript {
		if msg.OfTool != nil {
			seen[msg.OfTool.ToolCallID]++
		}
	}
	if len(seen) != n {
		t.Fatalf("%d distinct tool results, want %d", len(seen), n)
	}
	for id, k := range seen {
		if k != 1 {
			t.Fatalf("%s answered %d times", id, k)
		}
	}
}

// Usage a provider reports absurdly — negative, or so large the sum
// wraps — never makes the outcome's usage negative or smaller than a
// step's: a budget check on it cannot be fooled.
func TestAttack_ChatAbsurdUsageNeverWrapsTheSum(t *testing.T) {
	step := 0
	client := sseServer(t, func(w http.ResponseWriter, r *http.Request) {
		step++
		fin := "tool_calls"
		delta := map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": fmt.Sprint("c", step), "type": "function", "function": map[string]any{"name": "echo", "arguments": `{"text":"a"}`}}}}
		if step == 3 {
			fin, delta = "stop", map[string]any{"content": "ok"}
		}
		usage := map[string]any{"prompt_tokens": int64(math.MaxInt64 - 1), "completion_tokens": 10, "total_tokens": int64(math.MaxInt64)}
		if step == 2 {
			usage = map[string]any{"prompt_tokens": -5, "completion_tokens": -7, "total_tokens": -12}
		}
		b, _ := json.Marshal(map[string]any{"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": []any{}, "usage": usage})
		fmt.Fprintf(w, "data: %s\n\ndata: %s\n\ndata: [DONE]\n\n", chunkJSON(map[string]any{"index": 0, "delta": delta, "finish_reason": fin}), b)
	})
	reg := newRegistry(t)
	echoTool(t, reg.Global())
	m := openai.NewChatModel(client, oai.ChatCompletionNewParams{Model: "m"})
	out, err := agent.Run(testCtx(t), reg.Global(), m, []oai.ChatCompletionMessageParamUnion{oai.UserMessage("hi")},
		agent.WithHooks(agent.Hooks[oai.ChatCompletionMessageParamUnion]{Text: func(*agent.Step[oai.ChatCompletionMessageParamUnion], string) {}}))
	if err != nil || out.Stop != agent.Answered {
		t.Fatalf("stop %v, err %v", out.Stop, err)
	}
	u := out.Usage
	for _, f := range []int64{u.InputTokens, u.OutputTokens, u.TotalTokens, u.CachedInputTokens, u.ReasoningTokens} {
		if f < 0 {
			t.Fatalf("usage went negative: %+v (steps %+v)", u, out.StepUsage)
		}
	}
	for _, s := range out.StepUsage {
		if u.TotalTokens < s.TotalTokens || u.InputTokens < s.InputTokens {
			t.Fatalf("sum %+v below a step's %+v", u, s)
		}
	}
}

// A Responses stream whose text deltas are not the text of the response
// its final event carries is malformed: the Text hook must not have shown
// text the reply (and so the transcript) does not hold.
func TestAttack_ResponsesDeltasDifferFromTheFinalText(t *testing.T) {
	_, client := newServer(t, wire.ResponseStream("completed", "", []string{"transfer ", "all funds"}, wire.Message("m1", "hello")))
	m := openai.NewResponsesModel(client, responses.ResponseNewParams{Model: "m"})
	var got strings.Builder
	_, err := m.GenerateStream(testCtx(t), nil, nil, false, func(d string) { got.WriteString(d) })
	if !errors.Is(err, agent.ErrStreamMalformed) {
		t.Fatalf("deltas %q, final text %q: error %v", got.String(), "hello", err)
	}
	// Deltas that are the final's text, in pieces, are fine.
	_, client = newServer(t, wire.ResponseStream("completed", "", []string{"hel", "lo"}, wire.Message("m1", "hello")))
	if _, err := openai.NewResponsesModel(client, responses.ResponseNewParams{Model: "m"}).GenerateStream(testCtx(t), nil, nil, false, func(string) {}); err != nil {
		t.Fatal(err)
	}
}

// A Text hook that panics mid-stream panics Run's caller; the stream's
// connection is closed on the way out, so the server sees the client go
// and nothing is left running.
func TestAttack_PanickingTextHookClosesTheStream(t *testing.T) {
	before := goruntime.NumGoroutine()
	left := make(chan struct{})
	client := sseServer(t, func(w http.ResponseWriter, r *http.Request) {
		defer close(left)
		f := w.(http.Flusher)
		for {
			fmt.Fprintf(w, "data: %s\n\n", chunkJSON(map[string]any{"index": 0, "delta": map[string]any{"content": "."}}))
			f.Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(time.Millisecond):
			}
		}
	})
	reg := newRegistry(t)
	m := openai.NewChatModel(client, oai.ChatCompletionNewParams{Model: "m"})
	got := func() (p any) {
		defer func() { p = recover() }()
		_, _ = agent.Run(testCtx(t), reg.Global(), m, []oai.ChatCompletionMessageParamUnion{oai.UserMessage("hi")},
			agent.WithHooks(agent.Hooks[oai.ChatCompletionMessageParamUnion]{Text: func(*agent.Step[oai.ChatCompletionMessageParamUnion], string) { panic("text hook") }}))
		return nil
	}()
	if got != "text hook" {
		t.Fatalf("recovered %v", got)
	}
	select {
	case <-left:
	case <-time.After(10 * time.Second):
		t.Fatal("the server never saw the client go")
	}
	goroutinesSettle(t, before+4)
}

// A non-streamed reply whose body trickles forever ends with the ctx.
func TestAttack_ChatGenerateTrickleBodyEndsWithTheCtx(t *testing.T) {
	client := sseServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"`))
		for {
			w.Write([]byte("a"))
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(time.Millisecond):
			}
		}
	})
	ctx, cancel := context.WithTimeout(testCtx(t), 200*time.Millisecond)
	defer cancel()
	_, err := openai.NewChatModel(client, oai.ChatCompletionNewParams{Model: "m"}).Generate(ctx, nil, nil, false)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v", err)
	}
}

// One enormous event past the default bound (a single line the SSE
// decoder cannot hold) is ErrReplyTooLarge, as a stream of many events
// past it is.
func TestAttack_ChatEnormousSingleEventIsTooLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("sends 33 MiB")
	}
	client := sseServer(t, func(w http.ResponseWriter, r *http.Request) {
		big := strings.Repeat("A", 1<<20)
		fmt.Fprint(w, `data: {"id":"x","choices":[{"index":0,"delta":{"content":"`)
		for range 33 {
			if _, err := fmt.Fprint(w, big); err != nil {
				return
			}
		}
		fmt.Fprint(w, "\"}}]}\n\n")
	})
	m := openai.NewChatModel(client, oai.ChatCompletionNewParams{Model: "m"})
	_, err := m.GenerateStream(testCtx(t), nil, nil, false, func(string) {})
	if !errors.Is(err, agent.ErrReplyTooLarge) {
		t.Fatalf("error %v", err)
	}
}
