package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"

	"github.com/toolscope/toolscope/agent"
	"github.com/toolscope/toolscope/providers/blocks"
	"github.com/toolscope/toolscope/providers/toolname"
	"github.com/toolscope/toolscope/runtime"
)

// ResponseTools turns a scope's Schemas into Responses API function tools,
// in the same order, with the strict flag and schema of StrictParameters
// (always sent; the API requires it). As in ChatTools the schema travels
// as raw JSON so its key order is kept, and Parameters is left empty; and
// as in ChatTools names are sent as ToolName gives them, and a tool OpenAI
// cannot take is left out and reported in skipped.
func ResponseTools(schemas []runtime.ToolSchema) (tools []responses.ToolUnionParam, skipped []agent.SkippedTool) {
	tools, _, skipped = responseTools(schemas)
	return tools, skipped
}

func responseTools(schemas []runtime.ToolSchema) ([]responses.ToolUnionParam, *toolname.Names, []agent.SkippedTool) {
	if len(schemas) == 0 {
		return nil, nil, nil
	}
	ps, names, skipped := prepareTools(schemas)
	tools := make([]responses.ToolUnionParam, len(ps))
	fns := make([]responses.FunctionToolParam, len(ps))
	for i, p := range ps {
		fn := &fns[i]
		fn.Name, fn.Strict = p.name, param.NewOpt(p.strict)
		if p.description != "" {
			fn.Description = param.NewOpt(p.description)
		}
		fn.SetExtraFields(map[string]any{"parameters": p.params})
		tools[i].OfFunction = fn
	}
	return tools, names, skipped
}

// ResponseCalls returns the function_call items of a response's output as
// turn calls, in output order: the id is the item's call_id (what
// function_call_output answers), name and argument text exactly as sent
// (R91 decides what empty or invalid text means). Other items (messages,
// reasoning, hosted tool calls the API ran itself) are not calls.
func ResponseCalls(output []responses.ResponseOutputItemUnion) []runtime.TurnCall {
	var calls []runtime.TurnCall
	for _, item := range output {
		if item.Type != "function_call" {
			continue
		}
		// The union's own fields: the same values AsFunctionCall decodes,
		// without decoding the item again.
		calls = append(calls, runtime.TurnCall{ID: item.CallID, Name: item.Name, ArgumentsText: item.Arguments.OfString})
	}
	return calls
}

// ResponseInputItems turns a response's output items into the input items
// that carry them into the next request, in order, so the conversation
// does not depend on server-side state (previous_response_id). A
// function_call becomes a typed function_call item (id, call_id, name,
// arguments, status); every other item (message, reasoning, hosted tool
// calls...) is passed on as the exact JSON the API returned, which the API
// accepts as input.
func ResponseInputItems(output []responses.ResponseOutputItemUnion) []responses.ResponseInputItemUnionParam {
	items := make([]responses.ResponseInputItemUnionParam, 0, len(output))
	for _, item := range output {
		if item.Type == "function_call" {
			in := responses.ResponseInputItemParamOfFunctionCall(item.Arguments.OfString, item.CallID, item.Name)
			if item.ID != "" {
				in.OfFunctionCall.ID = param.NewOpt(item.ID)
			}
			in.OfFunctionCall.Status = responses.ResponseFunctionToolCallStatus(item.Status)
			items = append(items, in)
			continue
		}
		items = append(items, param.Override[responses.ResponseInputItemUnionParam](json.RawMessage(item.RawJSON())))
	}
	return items
}

// ResponseToolOutputs turns a turn's results into Responses input items:
// one function_call_output per call, in model order (call_id is
// calls[i].ID), then one message per context, in order (roles as
// contextRole maps them). A result whose content is text only is sent as
// the output string (ResultText: errors keep their message and code); a
// result with an image block is sent as a list of input_text and
// input_image parts (the image by URL, or as a data URL), with the error
// marker and code as text parts. Other non-text blocks become text
// ("[<type>] <data>").
//
// It fails, without output, when res does not hold exactly one non-nil
// result per call or a call has no id.
func ResponseToolOutputs(calls []runtime.TurnCall, res *runtime.TurnResult) ([]responses.ResponseInputItemUnionParam, error) {
	if err := checkTurn(calls, res); err != nil {
		return nil, err
	}
	items := make([]responses.ResponseInputItemUnionParam, 0, len(calls)+len(res.Contexts))
	for i, r := range res.Results {
		var item responses.ResponseInputItemUnionParam
		if parts, ok := outputParts(r); ok {
			item = responses.ResponseInputItemParamOfFunctionCallOutput(parts)
		} else {
			item = responses.ResponseInputItemParamOfFunctionCallOutput(ResultText(r))
		}
		item.OfFunctionCallOutput.CallID = param.NewOpt(calls[i].ID)
		items = append(items, item)
	}
	for _, m := range res.Contexts {
		role, text := contextRole(m)
		item := responses.ResponseInputItemParamOfMessage(text, responses.EasyInputMessageRole(role))
		item.OfMessage.Type = responses.EasyInputMessageTypeMessage // explicit: "message" items have three shapes
		items = append(items, item)
	}
	return items, nil
}

// outputParts renders a result with at least one usable image block as
// content parts; ok is false when text alone carries it.
func outputParts(r *runtime.Result) (responses.ResponseFunctionCallOutputItemListParam, bool) {
	blocks := r.Content()
	images := 0
	for _, b := range blocks {
		if b.Type == "image" {
			if _, ok := parseImage(b.Data); ok {
				images++
			}
		}
	}
	if images == 0 {
		return nil, false
	}
	parts := make(responses.ResponseFunctionCallOutputItemListParam, 0, len(blocks)+1)
	text := func(s string) {
		parts = append(parts, responses.ResponseFunctionCallOutputItemUnionParam{
			OfInputText: &responses.ResponseInputTextContentParam{Text: s},
		})
	}
	if r.IsError() && (len(blocks) == 0 || blocks[0].Type != "text" || !hasErrorPrefix(blocks[0].Text)) {
		text("Error: " + r.ErrorMessage())
	}
	for _, b := range blocks {
		if b.Type == "image" {
			if img, ok := parseImage(b.Data); ok {
				parts = append(parts, responses.ResponseFunctionCallOutputItemUnionParam{
					OfInputImage: &responses.ResponseInputImageContentParam{ImageURL: param.NewOpt(img.imageURL())},
				})
				continue
			}
		}
		text(blockText(b))
	}
	if r.IsError() && r.Code() != "" {
		text("[code: " + string(r.Code()) + "]")
	}
	return parts, true
}

// ResponsesModel is an agent.Model on the Responses API, through the
// official client. Every step sends Params with the transcript as its
// input items, the scope's tools (ResponseTools) and parallel_tool_calls
// set to the loop's flag; with no tools, neither is sent. The transcript
// carries every output item back (ResponseInputItems), so the loop works
// with store: false as well as with stored responses.
type ResponsesModel struct {
	client   *oai.Client
	params   responses.ResponseNewParams
	options  []option.RequestOption
	logger   *slog.Logger
	maxReply int64
}

var _ agent.Model[responses.ResponseInputItemUnionParam] = (*ResponsesModel)(nil)

// NewResponsesModel returns a ResponsesModel that asks client with params
// (model, instructions, reasoning, ...). params.Input, Tools and
// ParallelToolCalls are set per step; whatever they hold is replaced, and
// PreviousResponseID should stay unset (the transcript is the state). opts
// are passed to every request.
func NewResponsesModel(client *oai.Client, params responses.ResponseNewParams, opts ...option.RequestOption) *ResponsesModel {
	return &ResponsesModel{client: client, params: params, options: opts}
}

// WithLogger returns a copy of m that reports its warnings (a tool left
// out of a request, see ResponseTools) to l; without it they go to
// slog.Default().
func (m *ResponsesModel) WithLogger(l *slog.Logger) *ResponsesModel {
	c := *m
	c.logger = l
	return &c
}

// ErrNoResponse reports a reply whose body holds no response (null).
var ErrNoResponse = errors.New("openai: the reply holds no response")

// ResponseFailedError reports a response whose status is "failed".
type ResponseFailedError struct {
	Code, Message string
}

// Error reports the failed response's code and message.
func (e *ResponseFailedError) Error() string {
	return fmt.Sprintf("openai: response failed: %s: %s", e.Code, e.Message)
}

// Generate asks for the next response. It returns the response's output as
// input items, its function calls (ResponseCalls, each mapped name back to
// its tool's name) and, as the stop reason,
// the response status ("completed"), or for an incomplete response the
// reason it gives ("max_output_tokens", "content_filter", ...), and the
// response's token usage. A failed response is a *ResponseFailedError. The
// response body is bounded (WithMaxReplyBytes).
func (m *ResponsesModel) Generate(ctx context.Context, transcript []responses.ResponseInputItemUnionParam, tools []runtime.ToolSchema, parallel bool) (agent.Reply[responses.ResponseInputItemUnionParam], error) {
	var reply agent.Reply[responses.ResponseInputItemUnionParam]
	if m == nil || m.client == nil {
		return reply, errors.New("openai: ResponsesModel has no client")
	}
	p, names := m.request(transcript, tools, parallel)
	limit := blocks.NewReplyLimit(m.maxReply)
	resp, err := m.client.Responses.New(ctx, p, append(m.options[:len(m.options):len(m.options)], limitOption(limit))...)
	if err != nil {
		return reply, limit.Err(err)
	}
	return m.reply(resp, names)
}

// request is the step's request: Params with the transcript as input, the
// tools and the parallel flag.
func (m *ResponsesModel) request(transcript []responses.ResponseInputItemUnionParam, tools []runtime.ToolSchema, parallel bool) (responses.ResponseNewParams, *toolname.Names) {
	p := m.params
	p.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: transcript}
	p.Tools, p.ParallelToolCalls = nil, param.Opt[bool]{}
	var names *toolname.Names
	if len(tools) > 0 {
		t, n, skipped := responseTools(tools)
		warnSkipped(m.logger, skipped)
		names = n
		if len(t) > 0 {
			p.Tools, p.ParallelToolCalls = t, param.NewOpt(parallel)
		}
	}
	return p, names
}

// reply is the agent's reply for a response, streamed or not.
func (m *ResponsesModel) reply(resp *responses.Response, names *toolname.Names) (agent.Reply[responses.ResponseInputItemUnionParam], error) {
	var reply agent.Reply[responses.ResponseInputItemUnionParam]
	if resp == nil {
		return reply, ErrNoResponse // a body of null decodes to no response at all
	}
	if resp.Status == responses.ResponseStatusFailed {
		return reply, &ResponseFailedError{Code: string(resp.Error.Code), Message: resp.Error.Message}
	}
	reply.Messages = ResponseInputItems(resp.Output)
	reply.Calls = toolNames(names, ResponseCalls(resp.Output))
	reply.StopReason = string(resp.Status)
	if resp.Status == responses.ResponseStatusIncomplete && resp.IncompleteDetails.Reason != "" {
		reply.StopReason = resp.IncompleteDetails.Reason
	}
	reply.Usage = responseUsage(resp.Usage)
	return reply, nil
}

// WithMaxReplyBytes returns a copy of m whose replies are bounded to n
// bytes (the response body, or all a stream sends); past it the request
// fails with agent.ErrReplyTooLarge. n ≤ 0 means
// agent.DefaultMaxReplyBytes, the bound without it.
func (m *ResponsesModel) WithMaxReplyBytes(n int64) *ResponsesModel {
	c := *m
	c.maxReply = n
	return &c
}

// ToolResults is ResponseToolOutputs.
func (m *ResponsesModel) ToolResults(calls []runtime.TurnCall, res *runtime.TurnResult) ([]responses.ResponseInputItemUnionParam, error) {
	return ResponseToolOutputs(calls, res)
}
