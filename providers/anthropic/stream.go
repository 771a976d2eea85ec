package anthropic

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/toolscope/toolscope/agent"
	"github.com/toolscope/toolscope/providers/blocks"
	"github.com/toolscope/toolscope/runtime"
)

var _ agent.StreamingModel[sdk.MessageParam] = (*Model)(nil)

// usage is a message's token usage in agent terms: Anthropic counts the
// tokens written to and read from the cache apart from input_tokens, so
// they are added in.
func usage(u sdk.Usage) agent.Usage {
	// Summed as agent.Usage.Add sums (a negative count as 0, saturating),
	// so a hostile count cannot wrap the total negative.
	in := agent.Usage{InputTokens: u.InputTokens}.
		Add(agent.Usage{InputTokens: u.CacheCreationInputTokens}).
		Add(agent.Usage{InputTokens: u.CacheReadInputTokens}).InputTokens
	return agent.Usage{
		InputTokens: in, CachedInputTokens: u.CacheReadInputTokens,
		OutputTokens: u.OutputTokens, ReasoningTokens: u.OutputTokensDetails.ThinkingTokens,
		TotalTokens: agent.Usage{TotalTokens: in}.Add(agent.Usage{TotalTokens: u.OutputTokens}).TotalTokens,
	}
}

// GenerateStream is Generate over a streamed message: the text_delta
// events reach text as they arrive, the events are accumulated as the SDK
// does (Message.Accumulate), and the reply is the one Generate returns for
// the same message, usage included. A stream that ends before
// message_stop is agent.ErrStreamIncomplete, an event out of order or
// undecodable agent.ErrStreamMalformed; an error event is returned as the
// SDK reports it; the size is bounded as Generate's reply is
// (WithMaxReplyBytes).
func (m *Model) GenerateStream(ctx context.Context, transcript []sdk.MessageParam, tools []runtime.ToolSchema, parallel bool, text func(delta string)) (agent.Reply[sdk.MessageParam], error) {
	p, names := m.request(transcript, tools, parallel)
	limit := blocks.NewReplyLimit(m.maxReply)
	stream := m.client.Messages.NewStreaming(ctx, p, append(m.options[:len(m.options):len(m.options)], limitOption(limit))...)
	defer stream.Close()
	var msg sdk.Message
	started, stopped := false, false
	for !stopped && stream.Next() {
		ev := stream.Current()
		if !started && ev.Type != "message_start" {
			return agent.Reply[sdk.MessageParam]{}, limit.Err(fmt.Errorf("%w: %q before message_start", agent.ErrStreamMalformed, ev.Type))
		}
		if ev.Type == "content_block_delta" && ev.Delta.Type == "text_delta" &&
			(ev.Index < 0 || ev.Index >= int64(len(msg.Content)) || msg.Content[ev.Index].Type != "text") {
			// Accumulate would add it to a block that is not text (where
			// the reply shows none of it): text the reply does not have
			// must not reach the Text hook either.
			return agent.Reply[sdk.MessageParam]{}, limit.Err(fmt.Errorf("%w: a text_delta for content block %d, which is not an open text block", agent.ErrStreamMalformed, ev.Index))
		}
		if err := msg.Accumulate(ev); err != nil {
			return agent.Reply[sdk.MessageParam]{}, limit.Err(fmt.Errorf("%w: %v", agent.ErrStreamMalformed, err))
		}
		switch ev.Type {
		case "message_start":
			started = true
		case "content_block_delta":
			if ev.Delta.Type == "text_delta" && ev.Delta.Text != "" && text != nil {
				text(ev.Delta.Text)
			}
		case "message_stop":
			stopped = true
		}
	}
	if err := stream.Err(); err != nil {
		return agent.Reply[sdk.MessageParam]{}, limit.Err(streamErr(ctx, err))
	}
	if !stopped {
		return agent.Reply[sdk.MessageParam]{}, fmt.Errorf("%w: no message_stop event", agent.ErrStreamIncomplete)
	}
	return messageReply(&msg, names), nil
}

// streamErr classifies the error that ended a stream: the provider's own
// error event as it is, a connection cut mid-stream as
// agent.ErrStreamIncomplete, anything else the decoder refused as
// agent.ErrStreamMalformed. ctx's end is returned as it is.
func streamErr(ctx context.Context, err error) error {
	var apiErr *sdk.Error
	switch {
	case ctx.Err() != nil, errors.As(err, &apiErr):
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

// limitOption bounds the reply's body with limit (WithMaxReplyBytes), in
// the SDK's middleware.
func limitOption(limit *blocks.ReplyLimit) option.RequestOption {
	return option.WithMiddleware(func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		resp, err := next(req)
		return limit.Wrap(resp), err
	})
}
