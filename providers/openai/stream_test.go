package openai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"

	"github.com/toolscope/toolscope/agent"
	"github.com/toolscope/toolscope/providers/openai"
	"github.com/toolscope/toolscope/providers/openai/internal/wire"
	"github.com/toolscope/toolscope/runtime"
)

// same reports whether two replies are the same: messages as the SDK
// would send them, calls, stop reason and usage.
func same[M any](t *testing.T, a, b agent.Reply[M]) {
	t.Helper()
	ja, err := json.Marshal(a.Messages)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := json.Marshal(b.Messages)
	if err != nil {
		t.Fatal(err)
	}
	if string(ja) != string(jb) {
		t.Errorf("messages differ:\n generate %s\n stream   %s", ja, jb)
	}
	ca, _ := json.Marshal(a.Calls)
	cb, _ := json.Marshal(b.Calls)
	if string(ca) != string(cb) || a.StopReason != b.StopReason || a.Usage != b.Usage {
		t.Errorf("replies differ:\n generate %s %q %+v\n stream   %s %q %+v", ca, a.StopReason, a.Usage, cb, b.StopReason, b.Usage)
	}
}

var (
	chatUsageWant      = agent.Usage{InputTokens: 82, CachedInputTokens: 64, OutputTokens: 17, ReasoningTokens: 5, TotalTokens: 99}
	responsesUsageWant = agent.Usage{InputTokens: 291, CachedInputTokens: 256, OutputTokens: 23, ReasoningTokens: 7, TotalTokens: 314}
)

func TestChat_Item9_UsageInTheOutcome(t *testing.T) {
	_, client := newServer(t,
		wire.Chat("tool_calls", "", wire.Call{ID: "c1", Name: "echo", Arguments: `{"text":"a"}`}),
		wire.Chat("stop", "done"))
	reg := newRegistry(t)
	echoTool(t, reg.Global())
	model := openai.NewChatModel(client, oai.ChatCompletionNewParams{Model: "gpt-test"})
	out, err := agent.Run(testCtx(t), reg.Global(), model, []oai.ChatCompletionMessageParamUnion{oai.UserMessage("hi")})
	if err != nil || out.Stop != agent.Answered {
		t.Fatalf("run: %v %+v", err, out)
	}
	if len(out.StepUsage) != 2 || out.StepUsage[0] != chatUsageWant || out.Usage != chatUsageWant.Add(chatUsageWant) {
		t.Fatalf("usage %+v, steps %+v", out.Usage, out.StepUsage)
	}
}

func TestResponses_Item9_UsageInTheOutcome(t *testing.T) {
	_, client := newServer(t, wire.Response("completed", "", wire.Message("m1", "done")))
	model := openai.NewResponsesModel(client, responses.ResponseNewParams{Model: "gpt-test"})
	out, err := agent.Run(testCtx(t), newRegistry(t).Global(), model,
		[]responses.ResponseInputItemUnionParam{responses.ResponseInputItemParamOfMessage("hi", responses.EasyInputMessageRoleUser)})
	if err != nil || out.Stop != agent.Answered {
		t.Fatalf("run: %v %+v", err, out)
	}
	if out.Usage != responsesUsageWant || len(out.StepUsage) != 1 {
		t.Fatalf("usage %+v, steps %+v", out.Usage, out.StepUsage)
	}
}

// The streamed reply is the reply Generate gives for the same completion;
// the deltas, in order, are its content.
func TestChat_Item9_StreamSameReplyAsGenerate(t *testing.T) {
	calls := []wire.Call{{ID: "c1", Name: "echo", Arguments: `{"text":"a"}`}, {ID: "c2", Name: "echo", Arguments: `{"text":"bb"}`}}
	pieces := []string{"Let me ", "echo ", "twice."}
	_, client := newServer(t, wire.Chat("tool_calls", strings.Join(pieces, ""), calls...), wire.ChatStream("tool_calls", pieces, calls...))
	reg := newRegistry(t)
	echoTool(t, reg.Global())
	tools, _ := reg.Global().Schemas()
	model := openai.NewChatModel(client, oai.ChatCompletionNewParams{Model: "gpt-test"})
	transcript := []oai.ChatCompletionMessageParamUnion{oai.UserMessage("hi")}
	whole, err := model.Generate(testCtx(t), transcript, tools, true)
	if err != nil {
		t.Fatal(err)
	}
	var deltas []string
	streamed, err := model.GenerateStream(testCtx(t), transcript, tools, true, func(d string) { deltas = append(deltas, d) })
	if err != nil {
		t.Fatal(err)
	}
	same(t, whole, streamed)
	if strings.Join(deltas, "|") != strings.Join(pieces, "|") {
		t.Fatalf("deltas %q", deltas)
	}
	if len(streamed.Calls) != 2 || streamed.Calls[1].ArgumentsText != `{"text":"bb"}` || streamed.Usage != chatUsageWant {
		t.Fatalf("streamed %+v", streamed)
	}
}

func TestResponses_Item9_StreamSameReplyAsGenerate(t *testing.T) {
	items := []wire.Item{wire.Reasoning("rs_1", "think"), wire.Message("msg_1", "Let me echo."),
		wire.FunctionCall("fc_1", wire.Call{ID: "call_1", Name: "echo", Arguments: `{"text":"a"}`})}
	pieces := []string{"Let me ", "echo."}
	_, client := newServer(t, wire.Response("completed", "", items...), wire.ResponseStream("completed", "", pieces, items...))
	reg := newRegistry(t)
	echoTool(t, reg.Global())
	tools, _ := reg.Global().Schemas()
	model := openai.NewResponsesModel(client, responses.ResponseNewParams{Model: "gpt-test"})
	transcript := []responses.ResponseInputItemUnionParam{responses.ResponseInputItemParamOfMessage("hi", responses.EasyInputMessageRoleUser)}
	whole, err := model.Generate(testCtx(t), transcript, tools, true)
	if err != nil {
		t.Fatal(err)
	}
	var deltas []string
	streamed, err := model.GenerateStream(testCtx(t), transcript, tools, true, func(d string) { deltas = append(deltas, d) })
	if err != nil {
		t.Fatal(err)
	}
	same(t, whole, streamed)
	if strings.Join(deltas, "") != "Let me echo." || streamed.Usage != responsesUsageWant || len(streamed.Calls) != 1 {
		t.Fatalf("deltas %q, reply %+v", deltas, streamed)
	}
}

// Through Run: a Text hook makes the loop stream; the transcript is the
// one the loop builds without streaming.
func TestChat_Item9_RunStreamsWithATextHook(t *testing.T) {
	_, client := newServer(t,
		wire.ChatStream("tool_calls", nil, wire.Call{ID: "c1", Name: "echo", Arguments: `{"text":"a"}`}),
		wire.ChatStream("stop", []string{"all ", "done"}))
	reg := newRegistry(t)
	echoTool(t, reg.Global())
	model := openai.NewChatModel(client, oai.ChatCompletionNewParams{Model: "gpt-test"})
	var got []string
	out, err := agent.Run(testCtx(t), reg.Global(), model, []oai.ChatCompletionMessageParamUnion{oai.UserMessage("hi")},
		agent.WithHooks(agent.Hooks[oai.ChatCompletionMessageParamUnion]{
			Text: func(s *agent.Step[oai.ChatCompletionMessageParamUnion], d string) { got = append(got, d) },
		}))
	if err != nil || out.Stop != agent.Answered || out.Steps != 2 {
		t.Fatalf("run: %v %+v", err, out)
	}
	if strings.Join(got, "") != "all done" || out.Usage != chatUsageWant.Add(chatUsageWant) || len(out.Transcript) != 4 {
		t.Fatalf("deltas %q, usage %+v, transcript %d", got, out.Usage, len(out.Transcript))
	}
}

// A hostile stream — huge, malformed, cut, or ending without its final
// event — fails with the agent's coded error, and nothing hangs.
func TestStream_Item9_HostileStreamsFailWithACodedError(t *testing.T) {
	huge := make([]wire.Event, 0, 400)
	for range 400 {
		huge = append(huge, wire.Event{Data: map[string]any{"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "m",
			"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": strings.Repeat("A", 100)}}}}})
	}
	chunk := func(content string) wire.Event {
		return wire.Event{Data: map[string]any{"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "m",
			"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": content}}}}}
	}
	respEvent := wire.Event{Name: "response.output_text.delta", Data: map[string]any{"type": "response.output_text.delta", "item_id": "m", "output_index": 0, "content_index": 0, "delta": "hi", "sequence_number": 1}}
	cases := []struct {
		name      string
		responses bool
		reply     wire.Reply
		want      error
	}{
		{"chat huge", false, events(wire.Events{Events: huge}), agent.ErrReplyTooLarge},
		{"chat huge line", false, events(wire.Events{Events: []wire.Event{{Data: `{"id":"` + strings.Repeat("x", 50000) + `"}`}}}), agent.ErrReplyTooLarge},
		{"chat malformed", false, events(wire.Events{Events: []wire.Event{chunk("a"), {Data: `{"id": nope`}}}), agent.ErrStreamMalformed},
		{"chat cut", false, events(wire.Events{Events: []wire.Event{chunk("a"), chunk("b")}, Cut: true}), agent.ErrStreamIncomplete},
		{"chat no finish", false, events(wire.Events{Events: []wire.Event{chunk("a"), {Data: "[DONE]"}}}), agent.ErrStreamIncomplete},
		{"chat bad index", false, events(wire.Events{Events: []wire.Event{{Data: map[string]any{"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "m",
			"choices": []any{map[string]any{"index": 100000, "delta": map[string]any{"content": "a"}}}}}}}), agent.ErrStreamMalformed},
		{"responses cut", true, events(wire.Events{Events: []wire.Event{respEvent}, Cut: true}), agent.ErrStreamIncomplete},
		{"responses no final", true, events(wire.Events{Events: []wire.Event{respEvent}}), agent.ErrStreamIncomplete},
		{"responses malformed", true, events(wire.Events{Events: []wire.Event{respEvent, {Name: "response.output_text.delta", Data: `[[[`}}}), agent.ErrStreamMalformed},
		{"responses huge", true, events(wire.Events{Events: repeat(respEvent, 400)}), agent.ErrReplyTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, client := newServer(t, c.reply)
			var err error
			n := 0
			count := func(string) { n++ }
			if c.responses {
				m := openai.NewResponsesModel(client, responses.ResponseNewParams{Model: "m"}).WithMaxReplyBytes(16 << 10)
				_, err = m.GenerateStream(testCtx(t), nil, nil, false, count)
			} else {
				m := openai.NewChatModel(client, oai.ChatCompletionNewParams{Model: "m"}).WithMaxReplyBytes(16 << 10)
				_, err = m.GenerateStream(testCtx(t), nil, nil, false, count)
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("error %v, want %v", err, c.want)
			}
		})
	}
}

func events(e wire.Events) wire.Reply { return func(map[string]any) any { return e } }

func repeat(e wire.Event, n int) []wire.Event {
	out := make([]wire.Event, n)
	for i := range out {
		out[i] = e
	}
	return out
}

// The non-streaming reply is bounded the same way.
func TestChat_Item9_HugeReplyBodyTooLarge(t *testing.T) {
	_, client := newServer(t, wire.Chat("stop", strings.Repeat("A", 64<<10)))
	m := openai.NewChatModel(client, oai.ChatCompletionNewParams{Model: "m"}).WithMaxReplyBytes(16 << 10)
	_, err := m.Generate(testCtx(t), nil, []runtime.ToolSchema(nil), false)
	if !errors.Is(err, agent.ErrReplyTooLarge) {
		t.Fatalf("error %v", err)
	}
	// Under the default bound a reply is read whole.
	_, client = newServer(t, wire.Chat("stop", "small"))
	if _, err := openai.NewChatModel(client, oai.ChatCompletionNewParams{Model: "m"}).Generate(context.Background(), nil, nil, false); err != nil {
		t.Fatal(err)
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

// sseBody renders a scripted reply's events as the wire carries them.
func sseBody(reply wire.Reply) []byte {
	var b bytes.Buffer
	for _, ev := range reply(map[string]any{"model": "m"}).(wire.Events).Events {
		data, ok := ev.Data.(string)
		if !ok {
			j, _ := json.Marshal(ev.Data)
			data = string(j)
		}
		if ev.Name != "" {
			b.WriteString("event: " + ev.Name + "\n")
		}
		b.WriteString("data: " + data + "\n\n")
	}
	return b.Bytes()
}

// FuzzChatGenerateStream feeds a hostile Chat Completions stream to
// GenerateStream: never a panic; it fails with one of the agent's stream
// errors (or the API's error event), or succeeds with a reply whose
// content is exactly the deltas delivered, in order.
func FuzzChatGenerateStream(f *testing.F) {
	f.Add(sseBody(wire.ChatStream("stop", []string{"a", "b"}, wire.Call{ID: "c", Name: "echo", Arguments: `{"text":"x"}`})))
	f.Add(sseBody(wire.ChatStream("tool_calls", nil)))
	f.Add([]byte("data: {\"error\":{\"message\":\"busy\"}}\n\n"))
	f.Add([]byte("data: {\n\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, body []byte) {
		client := oai.NewClient(option.WithBaseURL("http://model.invalid/"), option.WithAPIKey("k"), option.WithMaxRetries(0),
			option.WithHTTPClient(&http.Client{Transport: sseTransport{body}}))
		m := openai.NewChatModel(&client, oai.ChatCompletionNewParams{Model: "m"}).WithMaxReplyBytes(1 << 16)
		var deltas strings.Builder
		reply, err := m.GenerateStream(context.Background(), nil, nil, false, func(d string) { deltas.WriteString(d) })
		var se *ssestream.StreamError
		switch {
		case err == nil:
		case errors.Is(err, agent.ErrStreamIncomplete), errors.Is(err, agent.ErrStreamMalformed),
			errors.Is(err, agent.ErrReplyTooLarge), errors.As(err, &se):
			return
		default:
			t.Fatalf("uncoded error: %v", err)
		}
		if len(reply.Messages) != 1 || reply.Messages[0].OfAssistant == nil {
			t.Fatalf("reply %+v", reply)
		}
		if got := reply.Messages[0].OfAssistant.Content.OfString.Value; got != deltas.String() {
			t.Fatalf("reply content %q, deltas %q", got, deltas.String())
		}
	})
}
