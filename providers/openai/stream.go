package openai

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"

	"github.com/toolscope/toolscope/agent"
	"github.com/toolscope/toolscope/providers/blocks"
	"github.com/toolscope/toolscope/runtime"
)

var (
	_ agent.StreamingModel[oai.ChatCompletionMessageParamUnion]   = (*ChatModel)(nil)
	_ agent.StreamingModel[responses.ResponseInputItemUnionParam] = (*ResponsesModel)(nil)
)

// chatUsage is the usage of a chat completion in agent terms (prompt
// tokens include the cached ones, completion tokens the reasoning ones).
func chatUsage(u oai.CompletionUsage) agent.Usage {
	return agent.Usage{
		InputTokens: u.PromptTokens, CachedInputTokens: u.PromptTokensDetails.CachedTokens,
		OutputTokens: u.CompletionTokens, ReasoningTokens: u.CompletionTokensDetails.ReasoningTokens,
		TotalTokens: total(u.TotalTokens, u.PromptTokens, u.CompletionTokens),
	}
}

// responseUsage is the usage of a response in agent terms.
func responseUsage(u responses.ResponseUsage) agent.Usage {
	return agent.Usage{
		InputTokens: u.InputTokens, CachedInputTokens: u.InputTokensDetails.CachedTokens,
		OutputTokens: u.OutputTokens, ReasoningTokens: u.OutputTokensDetails.ReasoningTokens,
		TotalTokens: total(u.TotalTokens, u.InputTokens, u.OutputTokens),
	}
}

func total(sent, in, out int64) int64 {
	if sent != 0 {
		return sent
	}
	return in + out
}

// limitOption bounds the reply's body with limit (WithMaxReplyBytes), in
// the SDK's middleware.
func limitOption(limit *blocks.ReplyLimit) option.RequestOption {
	return option.WithMiddleware(func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		resp, err := next(req)
		return limit.Wrap(resp), err
	})
}

// streamErr classifies the error that ended a stream: the provider's own
// error event as it is, a connection cut mid-stream as
// agent.ErrStreamIncomplete, anything else the decoder refused as
// agent.ErrStreamMalformed. ctx's end is returned as it is.
func streamErr(ctx context.Context, err error) error {
	var se *ssestream.StreamError
	var apiErr *oai.Error
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return err
	case errors.As(err, &se), errors.As(err, &apiErr):
		return err
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return fmt.Errorf("%w: %v", agent.ErrStreamIncomplete, err)
	case errors.Is(err, bufio.ErrTooLong):
		// One line past the SDK's decoder (32 MiB): too large, whatever
		// the bound, which the line may not have passed yet.
		return fmt.Errorf("%w: one event past the SSE decoder's line bound: %v", agent.ErrReplyTooLarge, err)
	}
	return fmt.Errorf("%w: %v", agent.ErrStreamMalformed, err)
}

// GenerateStream is Generate over a streamed completion: the content of
// the first choice reaches text as it arrives, and the reply — message,
// calls, finish reason, usage (stream_options.include_usage is set) — is
// the one Generate returns for the same completion. A stream that ends
// without a finish reason is agent.ErrStreamIncomplete; its size is
// bounded as Generate's reply is (WithMaxReplyBytes).
func (m *ChatModel) GenerateStream(ctx context.Context, transcript []oai.ChatCompletionMessageParamUnion, tools []runtime.ToolSchema, parallel bool, text func(delta string)) (agent.Reply[oai.ChatCompletionMessageParamUnion], error) {
	var reply agent.Reply[oai.ChatCompletionMessageParamUnion]
	if m == nil || m.client == nil {
		return reply, errors.New("openai: ChatModel has no client")
	}
	p, names := m.request(transcript, tools, parallel)
	p.StreamOptions = oai.ChatCompletionStreamOptionsParam{IncludeUsage: param.NewOpt(true)}
	limit := blocks.NewReplyLimit(m.maxReply)
	stream := m.client.Chat.Completions.NewStreaming(ctx, p, append(m.options[:len(m.options):len(m.options)], limitOption(limit))...)
	defer stream.Close()
	var acc oai.ChatCompletionAccumulator
	for stream.Next() {
		chunk := stream.Current()
		if !acc.AddChunk(chunk) {
			return reply, limit.Err(fmt.Errorf("%w: a chunk the stream cannot accumulate (choice index or tool call index out of range, or a changed id)", agent.ErrStreamMalformed))
		}
		for _, c := range chunk.Choices {
			if c.Index == 0 && c.Delta.Content != "" && text != nil {
				text(c.Delta.Content)
			}
		}
	}
	if err := stream.Err(); err != nil {
		return reply, limit.Err(streamErr(ctx, err))
	}
	if len(acc.Choices) == 0 || acc.Choices[0].FinishReason == "" {
		return reply, fmt.Errorf("%w: no finish reason for the first choice", agent.ErrStreamIncomplete)
	}
	choice := acc.Choices[0]
	reply.Messages = []oai.ChatCompletionMessageParamUnion{choice.Message.ToParam()}
	reply.Calls = toolNames(names, ChatCalls(choice.Message))
	reply.StopReason = choice.FinishReason
	reply.Usage = chatUsage(acc.Usage)
	return reply, nil
}

// GenerateStream is Generate over a streamed response: the
// response.output_text.delta events reach text as they arrive, and the
// reply is built from the response the final event carries
// (response.completed, response.incomplete or response.failed), so it is
// the one Generate returns for the same response; deltas that are not
// the final response's text make the stream agent.ErrStreamMalformed. A
// stream that ends without a final event is agent.ErrStreamIncomplete; an
// error event is returned as a *ResponseFailedError; the size is bounded
// as Generate's reply is (WithMaxReplyBytes).
func (m *ResponsesModel) GenerateStream(ctx context.Context, transcript []responses.ResponseInputItemUnionParam, tools []runtime.ToolSchema, parallel bool, text func(delta string)) (agent.Reply[responses.ResponseInputItemUnionParam], error) {
	var reply agent.Reply[responses.ResponseInputItemUnionParam]
	if m == nil || m.client == nil {
		return reply, errors.New("openai: ResponsesModel has no client")
	}
	p, names := m.request(transcript, tools, parallel)
	limit := blocks.NewReplyLimit(m.maxReply)
	stream := m.client.Responses.NewStreaming(ctx, p, append(m.options[:len(m.options):len(m.options)], limitOption(limit))...)
	defer stream.Close()
	var final *responses.Response
	var streamed strings.Builder // the deltas, checked against the final text
	for final == nil && stream.Next() {
		ev := stream.Current()
		switch ev.Type {
		case "response.output_text.delta":
			if ev.Delta != "" {
				streamed.WriteString(ev.Delta)
				if text != nil {
					text(ev.Delta)
				}
			}
		case "response.completed", "response.incomplete", "response.failed":
			var r struct {
				Response *responses.Response `json:"response"`
			}
			if err := json.Unmarshal([]byte(ev.RawJSON()), &r); err != nil || r.Response == nil {
				return reply, limit.Err(fmt.Errorf("%w: a %s event without its response", agent.ErrStreamMalformed, ev.Type))
			}
			final = r.Response
		case "error":
			return reply, &ResponseFailedError{Code: ev.Code, Message: ev.Message}
		}
	}
	if err := stream.Err(); err != nil {
		return reply, limit.Err(streamErr(ctx, err))
	}
	if final == nil {
		return reply, fmt.Errorf("%w: no response.completed, response.incomplete or response.failed event", agent.ErrStreamIncomplete)
	}
	if final.Status != responses.ResponseStatusFailed && streamed.Len() > 0 && streamed.String() != outputText(final) {
		// The reply is the final response's; text streamed that it does
		// not hold must not pass for it.
		return reply, fmt.Errorf("%w: the text streamed (%d bytes) is not the text of the final response", agent.ErrStreamMalformed, streamed.Len())
	}
	return m.reply(final, names)
}

// outputText is the text of a response's output_text parts, in order.
func outputText(r *responses.Response) string {
	var b strings.Builder
	for _, item := range r.Output {
		if item.Type != "message" {
			continue
		}
		for _, c := range item.Content {
			if c.Type == "output_text" {
				b.WriteString(c.Text)
			}
		}
	}
	return b.String()
}
