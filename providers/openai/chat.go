package openai

import (
	"context"
	"errors"
	"log/slog"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"

	"github.com/toolscope/toolscope/agent"
	"github.com/toolscope/toolscope/providers/blocks"
	"github.com/toolscope/toolscope/providers/toolname"
	"github.com/toolscope/toolscope/runtime"
)

// ChatTools turns a scope's Schemas into Chat Completions function tools,
// in the same order. Each tool's strict flag follows StrictParameters: true
// (with the closed schema) where the schema lies in OpenAI's strict
// subset, false otherwise; it is always sent explicitly.
//
// A tool's name is sent as ToolName gives it: as it is when OpenAI accepts
// it (^[a-zA-Z0-9_-]{1,64}$), mapped otherwise. A tool OpenAI cannot take
// (a parameter schema that is not an object schema, a mapped name that is
// another tool's name) is left out and reported in skipped, so one such
// tool never fails the request.
//
// The parameter schema travels as raw JSON (an extra field of the function
// definition), so its key order reaches the API; the definition's
// Parameters map is left empty.
func ChatTools(schemas []runtime.ToolSchema) (tools []oai.ChatCompletionToolUnionParam, skipped []agent.SkippedTool) {
	tools, _, skipped = chatTools(schemas)
	return tools, skipped
}

func chatTools(schemas []runtime.ToolSchema) ([]oai.ChatCompletionToolUnionParam, *toolname.Names, []agent.SkippedTool) {
	if len(schemas) == 0 {
		return nil, nil, nil
	}
	ps, names, skipped := prepareTools(schemas)
	tools := make([]oai.ChatCompletionToolUnionParam, len(ps))
	fns := make([]oai.ChatCompletionFunctionToolParam, len(ps))
	for i, p := range ps {
		fn := shared.FunctionDefinitionParam{Name: p.name, Strict: param.NewOpt(p.strict)}
		if p.description != "" {
			fn.Description = param.NewOpt(p.description)
		}
		fn.SetExtraFields(map[string]any{"parameters": p.params})
		fns[i].Function = fn
		tools[i].OfFunction = &fns[i]
	}
	return tools, names, skipped
}

// ChatCalls returns the tool calls of an assistant message as turn calls,
// in the message's order, with ids, names and argument text exactly as the
// model sent them: empty or invalid argument text is the turn's business
// (R91: empty means {}, invalid JSON reaches the tool as the raw string).
// A custom tool call is a call too (its input is its argument text): every
// call must be answered by a tool message, so none is skipped.
func ChatCalls(msg oai.ChatCompletionMessage) []runtime.TurnCall {
	if len(msg.ToolCalls) == 0 {
		return nil
	}
	calls := make([]runtime.TurnCall, 0, len(msg.ToolCalls))
	for _, tc := range msg.ToolCalls {
		c := runtime.TurnCall{ID: tc.ID, Name: tc.Function.Name, ArgumentsText: tc.Function.Arguments}
		if tc.Type == "custom" {
			c.Name, c.ArgumentsText = tc.Custom.Name, tc.Custom.Input
		}
		calls = append(calls, c)
	}
	return calls
}

// ChatToolMessages turns a turn's results into Chat Completions messages:
// one tool message per call, in model order (res.Results[i] answers
// calls[i], with tool_call_id calls[i].ID), then one message per context
// of the turn, in order. Tool messages carry text only, so each result is
// rendered by ResultText (images become placeholders; error results keep
// their message and code). A context's role maps as contextRole says:
// system, developer, user and assistant as they are, anything else as a
// user message.
//
// It fails, without output, when res does not hold exactly one non-nil
// result per call or a call has no id; it never drops or invents one.
func ChatToolMessages(calls []runtime.TurnCall, res *runtime.TurnResult) ([]oai.ChatCompletionMessageParamUnion, error) {
	if err := checkTurn(calls, res); err != nil {
		return nil, err
	}
	msgs := make([]oai.ChatCompletionMessageParamUnion, 0, len(calls)+len(res.Contexts))
	for i, r := range res.Results {
		msgs = append(msgs, oai.ToolMessage(ResultText(r), calls[i].ID))
	}
	for _, m := range res.Contexts {
		msgs = append(msgs, chatContext(m))
	}
	return msgs, nil
}

func chatContext(m runtime.ContextMessage) oai.ChatCompletionMessageParamUnion {
	role, text := contextRole(m)
	switch role {
	case "system":
		return oai.SystemMessage(text)
	case "developer":
		return oai.DeveloperMessage(text)
	case "assistant":
		return oai.AssistantMessage(text)
	}
	return oai.UserMessage(text)
}

// ChatModel is an agent.Model on the Chat Completions API, through the
// official client. Every step sends Params with the transcript as its
// messages, the scope's tools (ChatTools) and parallel_tool_calls set to
// the loop's flag; with no tools, neither tools nor parallel_tool_calls
// is sent.
type ChatModel struct {
	client   *oai.Client
	params   oai.ChatCompletionNewParams
	options  []option.RequestOption
	logger   *slog.Logger
	maxReply int64
}

var _ agent.Model[oai.ChatCompletionMessageParamUnion] = (*ChatModel)(nil)

// NewChatModel returns a ChatModel that asks client with params (the
// model name, temperature, ...). params.Messages, Tools and
// ParallelToolCalls are set per step; whatever they hold is replaced. opts
// are passed to every request.
func NewChatModel(client *oai.Client, params oai.ChatCompletionNewParams, opts ...option.RequestOption) *ChatModel {
	return &ChatModel{client: client, params: params, options: opts}
}

// WithLogger returns a copy of m that reports its warnings (a tool left
// out of a request, see ChatTools) to l; without it they go to
// slog.Default().
func (m *ChatModel) WithLogger(l *slog.Logger) *ChatModel {
	c := *m
	c.logger = l
	return &c
}

// ErrNoChoice reports a chat completion without a choice.
var ErrNoChoice = errors.New("openai: chat completion has no choices")

// Generate asks for the next assistant message. It returns that message
// (as the param the next request sends, names as the model wrote them),
// its tool calls (ChatCalls, each mapped name back to its tool's name) and
// the finish reason as sent ("stop", "tool_calls", "length", ...), and the
// completion's token usage. With n > 1 only the first choice is used. The
// response body is bounded (WithMaxReplyBytes).
func (m *ChatModel) Generate(ctx context.Context, transcript []oai.ChatCompletionMessageParamUnion, tools []runtime.ToolSchema, parallel bool) (agent.Reply[oai.ChatCompletionMessageParamUnion], error) {
	var reply agent.Reply[oai.ChatCompletionMessageParamUnion]
	if m == nil || m.client == nil {
		return reply, errors.New("openai: ChatModel has no client")
	}
	p, names := m.request(transcript, tools, parallel)
	limit := blocks.NewReplyLimit(m.maxReply)
	resp, err := m.client.Chat.Completions.New(ctx, p, append(m.options[:len(m.options):len(m.options)], limitOption(limit))...)
	if err != nil {
		return reply, limit.Err(err)
	}
	if resp == nil || len(resp.Choices) == 0 {
		return reply, ErrNoChoice // a body of null decodes to no completion at all
	}
	choice := resp.Choices[0]
	reply.Messages = []oai.ChatCompletionMessageParamUnion{choice.Message.ToParam()}
	reply.Calls = toolNames(names, ChatCalls(choice.Message))
	reply.StopReason = choice.FinishReason
	reply.Usage = chatUsage(resp.Usage)
	return reply, nil
}

// request is the step's request: Params with the transcript, the tools
// and the parallel flag.
func (m *ChatModel) request(transcript []oai.ChatCompletionMessageParamUnion, tools []runtime.ToolSchema, parallel bool) (oai.ChatCompletionNewParams, *toolname.Names) {
	p := m.params
	p.Messages = transcript
	p.Tools, p.ParallelToolCalls = nil, param.Opt[bool]{}
	var names *toolname.Names
	if len(tools) > 0 {
		t, n, skipped := chatTools(tools)
		warnSkipped(m.logger, skipped)
		names = n
		if len(t) > 0 {
			p.Tools, p.ParallelToolCalls = t, param.NewOpt(parallel)
		}
	}
	return p, names
}

// WithMaxReplyBytes returns a copy of m whose replies are bounded to n
// bytes (the response body, or all a stream sends); past it the request
// fails with agent.ErrReplyTooLarge. n ≤ 0 means
// agent.DefaultMaxReplyBytes, the bound without it.
func (m *ChatModel) WithMaxReplyBytes(n int64) *ChatModel {
	c := *m
	c.maxReply = n
	return &c
}

// ToolResults is ChatToolMessages.
func (m *ChatModel) ToolResults(calls []runtime.TurnCall, res *runtime.TurnResult) ([]oai.ChatCompletionMessageParamUnion, error) {
	return ChatToolMessages(calls, res)
}
