package agent

import (
	"context"
	"errors"
	"math"

	"github.com/toolscope/toolscope/runtime"
)

// Usage counts the tokens of model requests, in the same terms for every
// provider: each adapter fills it from its SDK's usage fields.
type Usage struct {
	// InputTokens counts every token of the request's input, cached and
	// cache-written ones included (Anthropic reports those apart; the
	// adapter adds them in).
	InputTokens int64
	// CachedInputTokens is the part of InputTokens read from the
	// provider's prompt cache.
	CachedInputTokens int64
	// OutputTokens counts every generated token, reasoning included
	// (Gemini reports thoughts apart; the adapter adds them in).
	OutputTokens int64
	// ReasoningTokens is the part of OutputTokens spent on reasoning, where
	// the provider says.
	ReasoningTokens int64
	// TotalTokens is the provider's total where it sends one, otherwise
	// InputTokens + OutputTokens.
	TotalTokens int64
}

// Add returns the field-by-field sum of u and v. A negative field (a
// provider's nonsense: a count cannot be negative) counts as 0, and a sum
// past math.MaxInt64 stays at math.MaxInt64, so a sum never decreases nor
// wraps: a budget checked against it cannot be fooled by a reply's usage.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		InputTokens:       addTokens(u.InputTokens, v.InputTokens),
		CachedInputTokens: addTokens(u.CachedInputTokens, v.CachedInputTokens),
		OutputTokens:      addTokens(u.OutputTokens, v.OutputTokens),
		ReasoningTokens:   addTokens(u.ReasoningTokens, v.ReasoningTokens),
		TotalTokens:       addTokens(u.TotalTokens, v.TotalTokens),
	}
}

// addTokens is a + b with negatives as 0, saturating at math.MaxInt64.
func addTokens(a, b int64) int64 {
	a, b = max(a, 0), max(b, 0)
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// StreamingModel is a Model that can deliver the text of its reply as it is
// generated. Run uses GenerateStream instead of Generate when a Hooks given
// to it has a Text function; a model without it is asked with Generate and
// no delta is delivered.
type StreamingModel[M any] interface {
	Model[M]
	// GenerateStream is Generate, with the reply's text handed to text
	// piece by piece, in order, on the caller's goroutine, before it
	// returns. The reply it returns is the one Generate would have
	// returned for the same answer. A stream that ends before its reply
	// is complete fails with ErrStreamIncomplete, one that cannot be
	// decoded with ErrStreamMalformed, one past the adapter's size bound
	// with ErrReplyTooLarge; deltas already delivered stay delivered.
	GenerateStream(ctx context.Context, transcript []M, tools []runtime.ToolSchema, parallel bool, text func(delta string)) (Reply[M], error)
}

// The failures of a model's reply that an adapter reports in the same terms
// for every provider (errors.Is finds them in the error Run returns).
var (
	// ErrReplyTooLarge: the reply (a response body, or a stream's bytes
	// so far) passed the adapter's size bound; reading stopped there.
	ErrReplyTooLarge = errors.New("agent: model reply too large")
	// ErrStreamIncomplete: the stream ended (the connection closed, or
	// the server stopped sending) before the event that completes the
	// reply.
	ErrStreamIncomplete = errors.New("agent: model stream ended before its reply was complete")
	// ErrStreamMalformed: an event of the stream could not be decoded, or
	// came out of order.
	ErrStreamMalformed = errors.New("agent: model stream is malformed")
)

// DefaultMaxReplyBytes is the adapters' bound on the bytes of one model
// reply — the response body, or everything a stream sends — when their
// WithMaxReplyBytes is not used.
const DefaultMaxReplyBytes int64 = 32 << 20

// ErrStop, returned (or wrapped) by a Hooks function, stops the loop
// cleanly: Run returns the outcome with Stop set to Stopped and no error.
// Any other error from a Hooks function stops it with Failed and that
// error.
var ErrStop = errors.New("agent: stopped by a hook")

// Hooks are functions Run calls around each step, as
// net/http/httptrace.ClientTrace's are called around a request: each is
// optional, runs on Run's goroutine, and gets the step, which it may read
// and steer (Step.Steer). A function that returns an error stops the loop
// there (ErrStop: Stopped, no error; anything else: Failed, with it).
// Several WithHooks compose: each point calls them in the order given, and
// the first error stops the rest.
type Hooks[M any] struct {
	// BeforeModel runs before each model request. Messages it steers are
	// appended before the request, so the model sees them now.
	BeforeModel func(ctx context.Context, s *Step[M]) error
	// Text receives the reply's text as the model streams it (only with
	// a model that implements StreamingModel).
	Text func(s *Step[M], delta string)
	// AfterModel runs after each reply the model gave (s.Reply, s.Usage
	// are set), before its calls are checked or run. Stopping here
	// appends nothing of the reply and runs none of its calls.
	AfterModel func(ctx context.Context, s *Step[M]) error
	// BeforeTurn runs before the reply's calls run as one turn (only for
	// a reply with calls). Stopping here appends nothing of the reply and
	// runs none of its calls.
	BeforeTurn func(ctx context.Context, s *Step[M]) error
	// AfterTurn runs after the turn's results were appended (s.Turn is
	// set). Stopping here keeps them.
	AfterTurn func(ctx context.Context, s *Step[M]) error
}

// Step is one step of the loop as the Hooks see it.
type Step[M any] struct {
	// Number counts the model requests, from 1.
	Number int
	// Transcript is the conversation so far (read it, do not change it).
	Transcript []M
	// Tools are the tools offered to the model in this step.
	Tools []runtime.ToolSchema
	// Reply is the model's reply, from AfterModel on.
	Reply *Reply[M]
	// Usage is the reply's token usage (Reply.Usage), from AfterModel on.
	Usage Usage
	// Turn is the result of the reply's calls, in AfterTurn.
	Turn *runtime.TurnResult

	steer []M
}

// Steer adds messages to the conversation (a user's correction, new
// instructions). From BeforeModel they are appended before this step's
// request. From AfterModel, BeforeTurn and AfterTurn they are appended
// after the step's reply and its tool results — never between a call and
// its result — and the loop asks the model again even when the reply had
// no calls or its turn concluded (R99: steering that arrives overrides the
// conclusion). The step limit still holds. When a hook stops the loop, the
// messages steered in that step and not yet appended are dropped.
func (s *Step[M]) Steer(msgs ...M) { s.steer = append(s.steer, msgs...) }

// WithHooks adds hooks to Run. M must be the model's message type; Run
// refuses hooks of another type with ErrInvalidOption.
func WithHooks[M any](h Hooks[M]) Option {
	return func(o *options) { o.hooks = append(o.hooks, &h) }
}
