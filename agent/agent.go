package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/toolscope/toolscope/runtime"
)

// Model is one provider's side of the loop. M is the provider SDK's own
// message (or content, or input item) type, so a transcript is exactly what
// the SDK sends. The adapters in providers/openai, providers/anthropic and
// providers/gemini satisfy it; any other provider can too.
type Model[M any] interface {
	// Generate asks the model for its next message, given the transcript so
	// far and the tools of this step (the scope's Schemas, read fresh). When
	// parallel is false the provider is told to make at most one tool call
	// per message, where it has such a flag.
	Generate(ctx context.Context, transcript []M, tools []runtime.ToolSchema, parallel bool) (Reply[M], error)
	// ToolResults turns a turn's results into the messages to append: one
	// tool result per call, in model order (res.Results[i] answers
	// calls[i]), then the turn's contexts. It never drops a result.
	ToolResults(calls []runtime.TurnCall, res *runtime.TurnResult) ([]M, error)
}

// Reply is one answer of the model.
type Reply[M any] struct {
	// Messages are appended to the transcript as they are (the assistant
	// message, or the response's output items).
	Messages []M
	// Calls are the reply's tool calls in model order, with ids and argument
	// text as the model sent them. None means the model answered. Each
	// must have an id of its own (CheckCalls); Run refuses a reply where
	// one has none or shares it.
	Calls []runtime.TurnCall
	// StopReason is the provider's own stop or finish reason, as sent.
	StopReason string
	// Usage is the request's token usage, as the provider reported it
	// (zero where it reported none).
	Usage Usage
}

// SkippedTool is a tool a provider adapter left out of a request because
// its provider cannot take it (a parameter schema that is not an object
// schema, a name that cannot be mapped to one the provider accepts): the
// request goes out with the other tools rather than failing as a whole.
type SkippedTool struct {
	// Name is the tool's name in the scope.
	Name string
	// Reason says why the provider cannot take it.
	Reason string
}

// StopReason says why Run stopped.
type StopReason string

// Why a loop stops.
const (
	// Answered: the model replied without tool calls.
	Answered StopReason = "answered"
	// Concluded: a committed result concluded its turn (R99); the results
	// were appended, the model was not asked again.
	Concluded StopReason = "concluded"
	// ContextDone: the ctx ended. A turn it interrupted still gave one
	// result per call, and they were appended.
	ContextDone StopReason = "context_done"
	// Stopped: a Hooks function returned ErrStop. What the step had done
	// before it is kept (see Hooks for each point).
	Stopped StopReason = "stopped"
	// StepLimit: MaxSteps steps ran and the loop would have asked the
	// model again: it asked for tools on every one, or steering (R99)
	// followed its last answer.
	StepLimit StopReason = "step_limit"
	// Failed: the model, the adapter or the turn returned an error, or the
	// model's reply was refused (ErrInvalidReply: nothing of it ran or was
	// appended). Run returns the error too.
	Failed StopReason = "failed"
)

// Outcome is what Run did.
type Outcome[M any] struct {
	// Transcript is the conversation given to Run followed by every message
	// the loop appended.
	Transcript []M
	// Stop says why the loop stopped.
	Stop StopReason
	// Steps counts the steps begun: the model requests made, and a step
	// a BeforeModel hook stopped before its request.
	Steps int
	// Turns holds each step's turn result, in order.
	Turns []*runtime.TurnResult
	// LastStopReason is the provider's stop reason of the last reply.
	LastStopReason string
	// Usage is the token usage of every reply received, summed.
	Usage Usage
	// StepUsage is each reply's token usage, in step order: one per reply
	// received (a step whose request failed has none).
	StepUsage []Usage
}

// Option configures Run.
type Option func(*options)

type options struct {
	maxSteps    int
	parallel    *bool
	turnOptions []runtime.TurnOption
	hooks       []any // *Hooks[M] of the Run's M
}

// DefaultMaxSteps is the step limit when WithMaxSteps is not given.
const DefaultMaxSteps = 16

// WithMaxSteps bounds the number of model requests (n ≥ 1).
func WithMaxSteps(n int) Option { return func(o *options) { o.maxSteps = n } }

// WithParallelToolCalls fixes the provider's parallel-tool-calls flag.
// Without it the flag is on exactly when the scope has at least one tool
// that may run in parallel (see MayRunParallel), read each step.
func WithParallelToolCalls(on bool) Option { return func(o *options) { o.parallel = &on } }

// WithTurnOptions passes options to every ExecuteTurn of the loop.
func WithTurnOptions(opts ...runtime.TurnOption) Option {
	return func(o *options) { o.turnOptions = append(o.turnOptions, opts...) }
}

// ErrInvalidOption reports a bad Run option.
var ErrInvalidOption = errors.New("agent: invalid option")

// ErrInvalidReply reports a model reply whose calls cannot all be answered:
// a call without an id, or two calls with one id. Run refuses such a reply
// before any of its calls runs (see CheckCalls).
var ErrInvalidReply = errors.New("agent: invalid model reply")

// Run drives the conversation: ask the model with the scope's tools, run
// its tool calls as one ExecuteTurn, append the results, and repeat until
// the model answers without tool calls, a turn concludes, ctx ends, a hook
// stops it, or the step limit is reached. A reply whose calls cannot all be
// answered (see CheckCalls) is refused before any of them runs. The Outcome
// is returned in every case, with the transcript so far and the token usage
// of every reply received; the error is non-nil only when Stop is Failed
// (or the options are invalid).
func Run[M any](ctx context.Context, scope *runtime.Scope, model Model[M], transcript []M, opts ...Option) (*Outcome[M], error) {
	o := options{maxSteps: DefaultMaxSteps}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	out := &Outcome[M]{Transcript: append([]M(nil), transcript...)}
	if o.maxSteps < 1 {
		out.Stop = Failed
		return out, fmt.Errorf("%w: max steps %d, want at least 1", ErrInvalidOption, o.maxSteps)
	}
	if ctx == nil || scope == nil || model == nil {
		out.Stop = Failed
		return out, fmt.Errorf("%w: Run needs a ctx, a scope and a model", ErrInvalidOption)
	}
	hooks := make([]*Hooks[M], 0, len(o.hooks))
	for _, h := range o.hooks {
		hm, ok := h.(*Hooks[M])
		if !ok {
			out.Stop = Failed
			var m M
			return out, fmt.Errorf("%w: WithHooks for messages of type %s, but the model's are %T", ErrInvalidOption, hookType(h), m)
		}
		hooks = append(hooks, hm)
	}
	var text func(string)
	streamer, _ := model.(StreamingModel[M])
	r := runner[M]{ctx: ctx, out: out, hooks: hooks}
	for {
		if ctx.Err() != nil {
			out.Stop = ContextDone
			return out, nil
		}
		if out.Steps == o.maxSteps {
			out.Stop = StepLimit
			return out, nil
		}
		tools, err := scope.Schemas()
		if err != nil {
			out.Stop = Failed
			return out, fmt.Errorf("agent: reading the scope's tools: %w", err)
		}
		tools = modelTools(scope, tools)
		parallel := MayRunParallel(scope)
		if o.parallel != nil {
			parallel = *o.parallel
		}
		out.Steps++
		st := &Step[M]{Number: out.Steps, Transcript: out.Transcript, Tools: tools}
		if r.call(st, "BeforeModel", func(h *Hooks[M]) hookFunc[M] { return h.BeforeModel }) {
			return out, r.err
		}
		r.steered(st)
		st.Transcript = out.Transcript
		var reply Reply[M]
		if streamer != nil && r.streams() {
			if text == nil {
				text = func(delta string) {
					for _, h := range hooks {
						if h.Text != nil {
							h.Text(r.step, delta)
						}
					}
				}
			}
			r.step = st
			reply, err = streamer.GenerateStream(ctx, out.Transcript, tools, parallel, text)
		} else {
			reply, err = model.Generate(ctx, out.Transcript, tools, parallel)
		}
		if err != nil {
			if ctx.Err() != nil {
				out.Stop = ContextDone
				return out, nil
			}
			out.Stop = Failed
			return out, fmt.Errorf("agent: step %d: model: %w", out.Steps, err)
		}
		out.LastStopReason = reply.StopReason
		out.StepUsage = append(out.StepUsage, reply.Usage)
		out.Usage = out.Usage.Add(reply.Usage)
		st.Reply, st.Usage = &reply, reply.Usage
		if r.call(st, "AfterModel", func(h *Hooks[M]) hookFunc[M] { return h.AfterModel }) {
			return out, r.err
		}
		if err := CheckCalls(reply.Calls); err != nil {
			// Refused before anything runs: no call has a side effect,
			// and the reply's messages, whose calls would stay
			// unanswered, are not appended.
			out.Stop = Failed
			return out, fmt.Errorf("agent: step %d: %w", out.Steps, err)
		}
		if len(reply.Calls) == 0 {
			out.Transcript = append(out.Transcript, reply.Messages...)
			if r.steered(st) {
				continue
			}
			out.Stop = Answered
			return out, nil
		}
		if r.call(st, "BeforeTurn", func(h *Hooks[M]) hookFunc[M] { return h.BeforeTurn }) {
			return out, r.err
		}
		out.Transcript = append(out.Transcript, reply.Messages...)
		res, err := scope.ExecuteTurn(ctx, reply.Calls, o.turnOptions...)
		if err != nil {
			// A configuration error or an internal scheduler failure (R98):
			// calls without a committed result cannot be answered honestly,
			// so nothing is appended; a partial result is kept in Turns.
			if res != nil {
				out.Turns = append(out.Turns, res)
			}
			out.Stop = Failed
			return out, fmt.Errorf("agent: step %d: turn: %w", out.Steps, err)
		}
		out.Turns = append(out.Turns, res)
		msgs, err := model.ToolResults(reply.Calls, res)
		if err != nil {
			out.Stop = Failed
			return out, fmt.Errorf("agent: step %d: tool results: %w", out.Steps, err)
		}
		out.Transcript = append(out.Transcript, msgs...)
		st.Transcript, st.Turn = out.Transcript, res
		if r.call(st, "AfterTurn", func(h *Hooks[M]) hookFunc[M] { return h.AfterTurn }) {
			return out, r.err
		}
		switch {
		case ctx.Err() != nil:
			r.steered(st)
			out.Stop = ContextDone
			return out, nil
		case r.steered(st):
			continue
		case res.Concluded:
			out.Stop = Concluded
			return out, nil
		}
	}
}

type hookFunc[M any] func(ctx context.Context, s *Step[M]) error

// runner holds what the hook calls of one Run share.
type runner[M any] struct {
	ctx   context.Context
	out   *Outcome[M]
	hooks []*Hooks[M]
	step  *Step[M] // the step whose text is streaming
	err   error
}

func (r *runner[M]) streams() bool {
	for _, h := range r.hooks {
		if h.Text != nil {
			return true
		}
	}
	return false
}

// call runs one point's hooks in order; true means the loop stops (Stop
// and r.err are set). The messages of a stopping hook are dropped.
func (r *runner[M]) call(st *Step[M], point string, pick func(*Hooks[M]) hookFunc[M]) bool {
	for _, h := range r.hooks {
		f := pick(h)
		if f == nil {
			continue
		}
		before := len(st.steer)
		err := f(r.ctx, st)
		if err == nil {
			continue
		}
		st.steer = st.steer[:before]
		if errors.Is(err, ErrStop) {
			r.out.Stop, r.err = Stopped, nil
			return true
		}
		r.out.Stop = Failed
		r.err = fmt.Errorf("agent: step %d: %s: %w", st.Number, point, err)
		return true
	}
	return false
}

// steered appends the step's steering messages, if any, and reports
// whether there were some.
func (r *runner[M]) steered(st *Step[M]) bool {
	if len(st.steer) == 0 {
		return false
	}
	r.out.Transcript = append(r.out.Transcript, st.steer...)
	st.steer = nil
	return true
}

func hookType(h any) string {
	s := fmt.Sprintf("%T", h)
	if i := strings.IndexByte(s, '['); i >= 0 && strings.HasSuffix(s, "]") {
		return s[i+1 : len(s)-1]
	}
	return s
}

// CheckCalls reports (wrapping ErrInvalidReply) calls that cannot all be
// answered: a call without an id, or an id used by two calls. A tool
// result is matched to its call by id on every provider, so such a reply
// would leave a call that ran without its result, or a result that
// answers two calls. Run checks every reply before running any of its
// calls; a loop of one's own should too. An adapter whose provider sends
// no ids makes them up, unique within the reply (as the Gemini adapter
// does).
func CheckCalls(calls []runtime.TurnCall) error {
	var seen map[string]struct{}
	if len(calls) > 8 {
		seen = make(map[string]struct{}, len(calls))
	}
	for i, c := range calls {
		if c.ID == "" {
			return fmt.Errorf("%w: call %d (%.64q) has no id", ErrInvalidReply, i, c.Name)
		}
		dup := false
		if seen != nil {
			_, dup = seen[c.ID]
			seen[c.ID] = struct{}{}
		} else {
			for _, p := range calls[:i] {
				dup = dup || p.ID == c.ID
			}
		}
		if dup {
			return fmt.Errorf("%w: call %d (%.64q) has the id %.64q of an earlier call", ErrInvalidReply, i, c.Name, c.ID)
		}
	}
	return nil
}

// MayRunParallel reports whether the scope sees at least one tool that may
// be classified parallel: one with an IsConcurrencySafe classifier (typed tools
// made WithParallel or WithClassifier have one). A tool without one always
// runs exclusive (R36), so telling the model it may call tools in parallel
// would only queue them.
func MayRunParallel(scope *runtime.Scope) bool {
	for _, name := range scope.Tools() {
		if def, ok := scope.Get(name); ok && def.IsConcurrencySafe != nil {
			return true
		}
	}
	return false
}
