package anthropic_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/toolscope/toolscope/agent"
	"github.com/toolscope/toolscope/providers/anthropic"
)

// usageJSON is the usage of the scripted messages below: cache writes
// and reads counted apart from input_tokens, as Anthropic does.
const usageJSON = `{"input_tokens": 40, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 200, "output_tokens": 96, "output_tokens_details": {"thinking_tokens": 30}}`

var usageWant = agent.Usage{InputTokens: 340, CachedInputTokens: 200, OutputTokens: 96, ReasoningTokens: 30, TotalTokens: 436}

// withUsage is reply with usageJSON as its usage.
func withUsage(id, stop string, blocks ...string) string {
	return strings.Replace(reply(id, stop, blocks...), `{"input_tokens": 412, "output_tokens": 96}`, usageJSON, 1)
}

func sse(name, data string) string { return "event: " + name + "\ndata: " + data + "\n\n" }

// streamed is the Messages stream of a message with the given text (in
// pieces) and one tool_use whose input arrives in two halves; the message
// it completes is withUsage("msg_s", stop, text(join(pieces)), toolUse(...)).
func streamed(stop string, pieces []string, toolID, toolName, input string) string {
	var b strings.Builder
	b.WriteString(sse("message_start", `{"type":"message_start","message":{"id":"msg_s","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":40,"cache_creation_input_tokens":100,"cache_read_input_tokens":200,"output_tokens":1}}}`))
	b.WriteString(sse("ping", `{"type":"ping"}`))
	b.WriteString(sse("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`))
	for _, p := range pieces {
		d, _ := json.Marshal(p)
		b.WriteString(sse("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`+string(d)+`}}`))
	}
	b.WriteString(sse("content_block_stop", `{"type":"content_block_stop","index":0}`))
	if toolID != "" {
		b.WriteString(sse("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":%q,"name":%q,"input":{}}}`, toolID, toolName)))
		half := len(input) / 2
		for _, part := range []string{input[:half], input[half:]} {
			d, _ := json.Marshal(part)
			b.WriteString(sse("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":`+string(d)+`}}`))
		}
		b.WriteString(sse("content_block_stop", `{"type":"content_block_stop","index":1}`))
	}
	b.WriteString(sse("message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%q,"stop_sequence":null},"usage":{"output_tokens":96,"output_tokens_details":{"thinking_tokens":30}}}`, stop)))
	b.WriteString(sse("message_stop", `{"type":"message_stop"}`))
	return b.String()
}

func TestModel_Item9_UsageInTheOutcome(t *testing.T) {
	s := newServer(t,
		withUsage("msg_1", "tool_use", toolUse("toolu_01", "read", `{"path":"a.txt"}`)),
		withUsage("msg_2", "end_turn", text("done")))
	f := newFixture(t)
	out := run(t, context.Background(), f, newModel(t, s))
	if out.Stop != agent.Answered || len(out.StepUsage) != 2 || out.StepUsage[1] != usageWant || out.Usage != usageWant.Add(usageWant) {
		t.Fatalf("stop %s, usage %+v, steps %+v", out.Stop, out.Usage, out.StepUsage)
	}
}

// The streamed reply is the reply Generate gives for the same message; the
// deltas, in order, are its text.
func TestModel_Item9_StreamSameReplyAsGenerate(t *testing.T) {
	pieces := []string{"Reading ", "the ", "note."}
	input := `{"path":"a.txt"}`
	s := newServer(t,
		withUsage("msg_s", "tool_use", text(strings.Join(pieces, "")), toolUse("toolu_01", "read", input)),
		streamed("tool_use", pieces, "toolu_01", "read", input))
	f := newFixture(t)
	tools, err := f.scope.Schemas()
	must(t, err)
	m := newModel(t, s)
	transcript := []sdk.MessageParam{userText("read")}
	whole, err := m.Generate(context.Background(), transcript, tools, true)
	must(t, err)
	var deltas []string
	got, err := m.GenerateStream(context.Background(), transcript, tools, true, func(d string) { deltas = append(deltas, d) })
	must(t, err)
	if strings.Join(deltas, "|") != strings.Join(pieces, "|") {
		t.Fatalf("deltas %q", deltas)
	}
	a, _ := json.Marshal(whole.Messages)
	b, _ := json.Marshal(got.Messages)
	if compact(t, a) != compact(t, b) {
		t.Errorf("messages differ:\n generate %s\n stream   %s", a, b)
	}
	ca, _ := json.Marshal(whole.Calls)
	cb, _ := json.Marshal(got.Calls)
	if string(ca) != string(cb) || whole.StopReason != got.StopReason || whole.Usage != got.Usage || got.Usage != usageWant {
		t.Fatalf("replies differ:\n generate %s %q %+v\n stream   %s %q %+v", ca, whole.StopReason, whole.Usage, cb, got.StopReason, got.Usage)
	}
}

func TestModel_Item9_RunStreamsWithATextHook(t *testing.T) {
	s := newServer(t,
		streamed("tool_use", nil, "toolu_01", "read", `{"path":"a.txt"}`),
		streamed("end_turn", []string{"all ", "done"}, "", "", ""))
	f := newFixture(t)
	var got []string
	out := run(t, context.Background(), f, newModel(t, s), agent.WithHooks(agent.Hooks[sdk.MessageParam]{
		Text: func(_ *agent.Step[sdk.MessageParam], d string) { got = append(got, d) },
	}))
	if out.Stop != agent.Answered || out.Steps != 2 || strings.Join(got, "") != "all done" || out.Usage != usageWant.Add(usageWant) {
		t.Fatalf("stop %s steps %d deltas %q usage %+v", out.Stop, out.Steps, got, out.Usage)
	}
	if r := f.ranOrder(); len(r) != 1 || r[0] != "read a.txt" {
		t.Fatalf("ran %q", r)
	}
}

// A hostile stream — huge, malformed, out of order, cut, or ending without
// message_stop — fails with the agent's coded error.
func TestModel_Item9_HostileStreamsFailWithACodedError(t *testing.T) {
	whole := streamed("end_turn", []string{"a", "b"}, "", "", "")
	noStop := strings.TrimSuffix(whole, sse("message_stop", `{"type":"message_stop"}`))
	start := whole[:strings.Index(whole, "event: ping")]
	delta := sse("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"`+strings.Repeat("A", 1000)+`"}}`)
	cases := []struct {
		name, body string
		want       error
	}{
		{"huge", start + sse("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`) + strings.Repeat(delta, 100), agent.ErrReplyTooLarge},
		{"huge line", start + sse("content_block_delta", `{"x":"`+strings.Repeat("A", 50000)+`"}`), agent.ErrReplyTooLarge},
		{"malformed", start + sse("content_block_start", `{"type": nope`), agent.ErrStreamMalformed},
		{"out of order", start + sse("content_block_delta", `{"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"x"}}`), agent.ErrStreamMalformed},
		{"no message_start", sse("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`), agent.ErrStreamMalformed},
		{"cut", start + cutMark, agent.ErrStreamIncomplete},
		{"no message_stop", noStop, agent.ErrStreamIncomplete},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newServer(t, c.body)
			m := newModel(t, s).WithMaxReplyBytes(16 << 10)
			var err error
			within(t, 20*time.Second, func() {
				_, err = m.GenerateStream(context.Background(), []sdk.MessageParam{userText("x")}, nil, false, func(string) {})
			})
			if !errors.Is(err, c.want) {
				t.Fatalf("error %v, want %v", err, c.want)
			}
		})
	}
	// The non-streaming reply is bounded the same way.
	s := newServer(t, reply("msg_big", "end_turn", text(strings.Repeat("A", 64<<10))))
	if _, err := newModel(t, s).WithMaxReplyBytes(16<<10).Generate(context.Background(), []sdk.MessageParam{userText("x")}, nil, false); !errors.Is(err, agent.ErrReplyTooLarge) {
		t.Fatalf("non-streaming: error %v", err)
	}
}

// sseTransport answers every request with body as a text/event-stream,
// in memory.
type sseTransport struct{ body []byte }

func (st sseTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
	}
	return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"text/event-stream"}}, ContentLength: int64(len(st.body)),
		Body: io.NopCloser(bytes.NewReader(st.body)), Request: r}, nil
}

// FuzzGenerateStream feeds a hostile Messages stream to GenerateStream:
// never a panic; it fails with one of the agent's stream errors (or the
// API's own error event), or succeeds with a reply whose text blocks are
// exactly the deltas delivered, in order.
func FuzzGenerateStream(f *testing.F) {
	f.Add([]byte(streamed("end_turn", []string{"a", "b"}, "toolu_1", "read", `{"path":"x"}`)))
	f.Add([]byte(streamed("tool_use", nil, "toolu_1", "read", `{}`)))
	f.Add([]byte(sse("error", `{"type":"error","error":{"type":"overloaded_error","message":"busy"}}`)))
	f.Add([]byte("event: message_start\ndata: {\n\n"))
	f.Add([]byte(""))
	// A text_delta into a tool_use block: text the reply would not hold.
	f.Add([]byte(strings.Replace(streamed("tool_use", nil, "toolu_1", "read", `{"path":"x"}`),
		`{"type":"input_json_delta","partial_json":"{\"path"}`, `{"type":"text_delta","text":"x"}`, 1)))
	f.Fuzz(func(t *testing.T, body []byte) {
		client := sdk.NewClient(option.WithBaseURL("http://model.invalid/"), option.WithAPIKey("k"), option.WithMaxRetries(0),
			option.WithHTTPClient(&http.Client{Transport: sseTransport{body}}))
		m, err := anthropic.New(client, sdk.MessageNewParams{Model: "m", MaxTokens: 64})
		if err != nil {
			t.Fatal(err)
		}
		var deltas strings.Builder
		reply, err := m.WithMaxReplyBytes(1<<16).GenerateStream(context.Background(), []sdk.MessageParam{userText("x")}, nil, false,
			func(d string) { deltas.WriteString(d) })
		var apiErr *sdk.Error
		switch {
		case err == nil:
		case errors.Is(err, agent.ErrStreamIncomplete), errors.Is(err, agent.ErrStreamMalformed),
			errors.Is(err, agent.ErrReplyTooLarge), errors.As(err, &apiErr):
			return
		default:
			t.Fatalf("uncoded error: %v", err)
		}
		var text strings.Builder
		for _, msg := range reply.Messages {
			for _, b := range msg.OfAssistant.Content {
				if b.OfText != nil {
					text.WriteString(b.OfText.Text)
				}
			}
		}
		if text.String() != deltas.String() {
			t.Fatalf("reply text %q, deltas %q", text.String(), deltas.String())
		}
	})
}
