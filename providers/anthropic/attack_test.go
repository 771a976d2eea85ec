package anthropic_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/toolscope/toolscope/agent"
	"github.com/toolscope/toolscope/providers/anthropic"
)

const msgStart = `{"type":"message_start","message":{"id":"msg_s","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}}`

// A message whose usage fields are so large that their sum (input plus
// cache writes plus cache reads) would wrap reports the largest count,
// never a negative one.
func TestAttack_StreamUsageSumNeverWraps(t *testing.T) {
	start := strings.Replace(msgStart, `"usage":{"input_tokens":1,"output_tokens":1}`,
		`"usage":{"input_tokens":9223372036854775807,"cache_creation_input_tokens":9223372036854775807,"cache_read_input_tokens":5,"output_tokens":1}`, 1)
	body := sse("message_start", start) +
		sse("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`) +
		sse("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}`) +
		sse("content_block_stop", `{"type":"content_block_stop","index":0}`) +
		sse("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":9223372036854775807}}`) +
		sse("message_stop", `{"type":"message_stop"}`)
	s := newServer(t, body)
	reply, err := newModel(t, s).GenerateStream(context.Background(), []sdk.MessageParam{userText("x")}, nil, false, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	u := reply.Usage
	if u.InputTokens < 0 || u.TotalTokens < 0 || u.OutputTokens < 0 {
		t.Fatalf("usage wrapped: %+v", u)
	}
}

// A stream that never ends, trickling pings and deltas well under the
// size bound, ends with the ctx; nothing is left running.
func TestAttack_TrickleStreamEndsWithTheCtx(t *testing.T) {
	before := goruntime.NumGoroutine()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		fmt.Fprint(w, sse("message_start", msgStart)+sse("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`))
		for {
			fmt.Fprint(w, sse("ping", `{"type":"ping"}`)+sse("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"."}}`))
			f.Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}))
	defer srv.Close()
	client := sdk.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("k"), option.WithMaxRetries(0), option.WithHTTPClient(srv.Client()))
	m, err := anthropic.New(client, sdk.MessageNewParams{Model: "m", MaxTokens: 64})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	n := 0
	var gerr error
	within(t, 20*time.Second, func() {
		_, gerr = m.GenerateStream(ctx, []sdk.MessageParam{userText("x")}, nil, false, func(string) { n++ })
	})
	if !errors.Is(gerr, context.DeadlineExceeded) || n == 0 {
		t.Fatalf("error %v after %d deltas", gerr, n)
	}
	srv.Close()
	srv.Client().CloseIdleConnections()
	deadline := time.Now().Add(10 * time.Second)
	for goruntime.NumGoroutine() > before+2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if g := goruntime.NumGoroutine(); g > before+2 {
		buf := make([]byte, 1<<20)
		t.Fatalf("goroutines %d before, %d after\n%s", before, g, buf[:goruntime.Stack(buf, true)])
	}
}

// A tool input delta for a block never opened, or a text delta into a
// tool_use block, is malformed; thousands of tool_use blocks each come
// back as one call with its own id.
func TestAttack_ToolBlocksHostileAndMany(t *testing.T) {
	tool := func(i int) string {
		return sse("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"tool_use","id":"toolu_%d","name":"read","input":{}}}`, i, i)) +
			sse("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"input_json_delta","partial_json":"{\"path\":\"%d\"}"}}`, i, i)) +
			sse("content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, i))
	}
	end := sse("message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":1}}`) + sse("message_stop", `{"type":"message_stop"}`)
	for name, body := range map[string]string{
		"never opened":   sse("message_start", msgStart) + sse("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{}"}}`) + end,
		"text into tool": sse("message_start", msgStart) + tool(0) + sse("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}`) + end,
	} {
		t.Run(name, func(t *testing.T) {
			s := newServer(t, body)
			_, err := newModel(t, s).GenerateStream(context.Background(), []sdk.MessageParam{userText("x")}, nil, false, func(string) {})
			if !errors.Is(err, agent.ErrStreamMalformed) {
				t.Fatalf("error %v", err)
			}
		})
	}
	const n = 3000
	var b strings.Builder
	b.WriteString(sse("message_start", msgStart))
	for i := range n {
		b.WriteString(tool(i))
	}
	b.WriteString(end)
	s := newServer(t, b.String())
	reply, err := newModel(t, s).GenerateStream(context.Background(), []sdk.MessageParam{userText("x")}, nil, false, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	if err := agent.CheckCalls(reply.Calls); err != nil || len(reply.Calls) != n {
		t.Fatalf("%d calls, %v", len(reply.Calls), err)
	}
}

// One enormous event past the default bound (a single line the SSE
// decoder cannot hold) is ErrReplyTooLarge, as a stream of many events
// past it is.
func TestAttack_EnormousSingleEventIsTooLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("sends 33 MiB")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"`)
		big := strings.Repeat("A", 1<<20)
		for range 33 {
			if _, err := fmt.Fprint(w, big); err != nil {
				return
			}
		}
		fmt.Fprint(w, "\"}}\n\n")
	}))
	defer srv.Close()
	client := sdk.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("k"), option.WithMaxRetries(0), option.WithHTTPClient(srv.Client()))
	m, err := anthropic.New(client, sdk.MessageNewParams{Model: "m", MaxTokens: 64})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.GenerateStream(context.Background(), []sdk.MessageParam{userText("x")}, nil, false, func(string) {})
	if !errors.Is(err, agent.ErrReplyTooLarge) {
		t.Fatalf("error %v", err)
	}
}
