package anthropic

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/toolscope/toolscope/agent"
	"github.com/toolscope/toolscope/providers/blocks"
	"github.com/toolscope/toolscope/providers/toolname"
	"github.com/toolscope/toolscope/runtime"
)

// ErrInvalid is wrapped by every error of this package about bad input: a
// turn result that does not answer its calls, a reply without a message, a
// bad Model configuration.
var ErrInvalid = errors.New("anthropic: invalid input")

// Tools turns a scope's Schemas into Anthropic custom tools, in the same
// order: the name (as ToolName gives it), the description, and the
// parameter schema as input_schema. Anthropic requires an object schema: a
// schema without "type" is sent as an object schema; a tool whose schema
// has a "type" other than "object" (or is not a JSON object at all), or
// whose mapped name is another tool's own name, is left out and reported
// in skipped, so one tool Anthropic cannot take never fails the request.
// "properties" is sent as the exact bytes Schemas gave (so its key order is
// kept), "required" as a list, every other keyword as an extra field.
func Tools(schemas []runtime.ToolSchema) (tools []sdk.ToolUnionParam, skipped []agent.SkippedTool) {
	tools, _, skipped = buildTools(schemas)
	return tools, skipped
}

// ToolName returns the name a tool named name is sent under: name itself
// when Anthropic accepts it (^[a-zA-Z0-9_-]{1,64}$); otherwise name with
// every other character replaced by "_", cut to fit, followed by "_" and
// ten hex digits of its SHA-256 (an MCP tool "fs.read_file" is sent as
// "fs_read_file_<hash>"). It depends on name alone, so it is the same on
// every request. Model maps the calls the model makes by such a name back
// to the tool's name; a loop of one's own does the same with the tools it
// sent.
func ToolName(name string) string { return toolname.Anthropic.Wire(name) }

func buildTools(schemas []runtime.ToolSchema) ([]sdk.ToolUnionParam, *toolname.Names, []agent.SkippedTool) {
	names := make([]string, len(schemas))
	for i, s := range schemas {
		names[i] = s.Name
	}
	wire, m := toolname.Anthropic.Assign(names)
	tools := make([]sdk.ToolUnionParam, 0, len(schemas))
	var skipped []agent.SkippedTool
	for i, s := range schemas {
		if wire[i] == "" {
			skipped = append(skipped, agent.SkippedTool{Name: s.Name, Reason: toolname.ErrNameTaken(toolname.Anthropic, s.Name).Error()})
			continue
		}
		in, err := inputSchema(s.Parameters)
		if err != nil {
			skipped = append(skipped, agent.SkippedTool{Name: s.Name, Reason: err.Error()})
			continue
		}
		t := &sdk.ToolParam{Name: wire[i], InputSchema: in}
		if s.Description != "" {
			t.Description = sdk.String(s.Description)
		}
		tools = append(tools, sdk.ToolUnionParam{OfTool: t})
	}
	return tools, m, skipped
}

func inputSchema(params json.RawMessage) (in sdk.ToolInputSchemaParam, err error) {
	// input_schema is required and the SDK omits a zero one: a schema
	// without properties gets an empty properties object.
	defer func() {
		if in.Properties == nil {
			in.Properties = json.RawMessage(`{}`)
		}
	}()
	if len(bytes.TrimSpace(params)) == 0 || string(bytes.TrimSpace(params)) == "null" {
		return in, nil // no parameters: an empty object schema
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(params, &top); err != nil || top == nil {
		return in, errors.New("input_schema must be a JSON object schema")
	}
	for k, v := range top {
		switch k {
		case "type":
			var typ string
			if err := json.Unmarshal(v, &typ); err != nil || typ != "object" {
				return in, fmt.Errorf("input_schema type must be \"object\", got %.64s", v)
			}
		case "properties":
			in.Properties = v
		case "required":
			if err := json.Unmarshal(v, &in.Required); err != nil {
				return in, fmt.Errorf("input_schema required must be a list of names: %v", err)
			}
		default:
			if in.ExtraFields == nil {
				in.ExtraFields = make(map[string]any, len(top))
			}
			in.ExtraFields[k] = v
		}
	}
	return in, nil
}

// Calls returns the tool_use blocks of an assistant message as turn calls,
// in the order the model wrote them: the block's id and name as sent, and
// its input as ArgumentsText, byte for byte as the SDK decoded it. Other
// blocks (text, thinking, server tool use) are not calls.
func Calls(msg *sdk.Message) []runtime.TurnCall {
	if msg == nil {
		return nil
	}
	var calls []runtime.TurnCall
	for i := range msg.Content {
		b := &msg.Content[i]
		if b.Type != "tool_use" {
			continue
		}
		calls = append(calls, runtime.TurnCall{ID: b.ID, Name: b.Name, ArgumentsText: string(b.Input)})
	}
	return calls
}

// ToolResults turns a turn's results into the one user message Anthropic
// expects after an assistant message with tool_use blocks: one tool_result
// block per call, in model order (res.Results[i] answers calls[i]),
// carrying the call's id, then the turn's contexts as text blocks (the API
// requires the tool_result blocks first; text may follow in the same
// message).
//
// A failure sets is_error; its content is the result's content (the
// runtime's "Error: <message>", or what a finalizer or post-execute
// feedback put there), followed by a text block "[code: <CODE>]" when the
// failure is coded (the notation of the OpenAI adapter), so
// ABORTED_BEFORE_DISPATCH and the other codes reach the model. Content
// blocks map as described in the package doc. It is an error when res
// does not hold exactly one non-nil result per call.
func ToolResults(calls []runtime.TurnCall, res *runtime.TurnResult) (sdk.MessageParam, error) {
	if res == nil {
		return sdk.MessageParam{}, fmt.Errorf("%w: nil turn result", ErrInvalid)
	}
	if len(res.Results) != len(calls) {
		return sdk.MessageParam{}, fmt.Errorf("%w: %d results for %d calls", ErrInvalid, len(res.Results), len(calls))
	}
	blocks := make([]sdk.ContentBlockParamUnion, 0, len(calls)+len(res.Contexts))
	for i, c := range calls {
		r := res.Results[i]
		if r == nil {
			return sdk.MessageParam{}, fmt.Errorf("%w: no result for call %q (position %d)", ErrInvalid, c.ID, i)
		}
		tr := &sdk.ToolResultBlockParam{ToolUseID: c.ID, Content: resultContent(r)}
		if r.IsError() {
			tr.IsError = sdk.Bool(true)
		}
		blocks = append(blocks, sdk.ContentBlockParamUnion{OfToolResult: tr})
	}
	for _, m := range res.Contexts {
		if t := contextText(m); t != "" {
			blocks = append(blocks, sdk.ContentBlockParamUnion{OfText: &sdk.TextBlockParam{Text: t}})
		}
	}
	return sdk.MessageParam{OfUser: &sdk.UserMessageParam{Content: blocks}}, nil
}

// contextText renders a context message: its text, prefixed with its role
// in brackets when that role is not "user" (a user message has no room for
// another role).
func contextText(m runtime.ContextMessage) string {
	if m.Text == "" {
		return ""
	}
	if m.Role == "" || m.Role == "user" {
		return m.Text
	}
	return "[" + m.Role + "] " + m.Text
}

func resultContent(r *runtime.Result) []sdk.ToolResultBlockParamContentUnion {
	var out []sdk.ToolResultBlockParamContentUnion
	for _, b := range r.Content() {
		switch b.Type {
		case "text":
			if b.Text == "" {
				continue // the API rejects empty text blocks
			}
			out = append(out, textContent(b.Text))
		case "image":
			out = append(out, imageBlock(b.Data))
		default:
			out = append(out, textContent(blocks.OtherText(b)))
		}
	}
	if r.IsError() {
		if len(out) == 0 {
			out = append(out, textContent("Error: "+r.ErrorMessage()))
		}
		if code := r.Code(); code != "" {
			out = append(out, textContent("[code: "+string(code)+"]"))
		}
	}
	return out
}

func textContent(s string) sdk.ToolResultBlockParamContentUnion {
	return sdk.ToolResultBlockParamContentUnion{OfText: &sdk.TextBlockParam{Text: s}}
}

// ImageData is the Data of a runtime.Block of Type "image" that the adapter
// accepts: either base64 bytes with their media type (image/jpeg,
// image/png, image/gif or image/webp), or a URL. The media type may also be
// spelled "mimeType" (MCP's image content) or "mime_type". The type is the
// adapters' shared one (package providers/blocks).
//
//	{"media_type": "image/png", "data": "<base64>"}
//	{"url": "https://example.com/cat.png"}
type ImageData = blocks.ImageData

// Media types Anthropic accepts for base64 images.
var imageTypes = map[string]sdk.Base64ImageSourceMediaType{
	"image/jpeg": sdk.Base64ImageSourceMediaTypeImageJPEG,
	"image/png":  sdk.Base64ImageSourceMediaTypeImagePNG,
	"image/gif":  sdk.Base64ImageSourceMediaTypeImageGIF,
	"image/webp": sdk.Base64ImageSourceMediaTypeImageWebP,
}

// imageBlock maps an image block to an image source. An image Anthropic
// cannot take (malformed Data, an unsupported media type) becomes a text
// block saying so: one bad block must not cost the turn its results.
func imageBlock(data json.RawMessage) sdk.ToolResultBlockParamContentUnion {
	var d ImageData
	if err := json.Unmarshal(data, &d); err != nil {
		return textContent(`[image omitted: its data is not {"media_type","data"} or {"url"}]`)
	}
	switch {
	case d.URL != "" && d.Data == "":
		return sdk.ToolResultBlockParamContentUnion{OfImage: &sdk.ImageBlockParam{
			Source: sdk.ImageBlockParamSourceUnion{OfURL: &sdk.URLImageSourceParam{URL: d.URL}}}}
	case d.Data != "" && d.URL == "":
		if _, err := base64.StdEncoding.DecodeString(d.Data); err != nil {
			return textContent("[image omitted: its data is not standard base64]")
		}
		mt, ok := imageTypes[d.Type()]
		if !ok {
			return textContent(fmt.Sprintf("[image of type %q omitted: Anthropic accepts image/jpeg, image/png, image/gif and image/webp]", d.Type()))
		}
		return sdk.ToolResultBlockParamContentUnion{OfImage: &sdk.ImageBlockParam{
			Source: sdk.ImageBlockParamSourceUnion{OfBase64: &sdk.Base64ImageSourceParam{Data: d.Data, MediaType: mt}}}}
	}
	return textContent(`[image omitted: its data must hold exactly one of "data" and "url"]`)
}

// Model is an Anthropic model behind the Messages API, as an
// agent.Model[sdk.MessageParam]. Each Generate sends Params with the
// transcript as Messages, the step's tools after any tools Params already
// holds, and the parallel flag in tool_choice.
type Model struct {
	client   sdk.Client
	params   sdk.MessageNewParams
	options  []option.RequestOption
	logger   *slog.Logger
	maxReply int64
}

// WithLogger returns a copy of m that reports its warnings (a tool left
// out of a request, see Tools) to l; without it they go to slog.Default().
func (m *Model) WithLogger(l *slog.Logger) *Model {
	c := *m
	c.logger = l
	return &c
}

var _ agent.Model[sdk.MessageParam] = (*Model)(nil)

// New returns a Model sending params (at least Model; MaxTokens, System,
// Temperature and the rest as wanted) through client, with opts added to
// every request. params.Messages must be empty: the transcript given to
// agent.Run carries the conversation.
func New(client sdk.Client, params sdk.MessageNewParams, opts ...option.RequestOption) (*Model, error) {
	if params.Model == "" {
		return nil, fmt.Errorf("%w: params.Model is empty", ErrInvalid)
	}
	if len(params.Messages) != 0 {
		return nil, fmt.Errorf("%w: params.Messages must be empty (the transcript carries the conversation)", ErrInvalid)
	}
	return &Model{client: client, params: params, options: opts}, nil
}

// Request builds the request Generate sends: params with the transcript,
// the tools (Tools: names as ToolName gives them, a tool Anthropic cannot
// take left out and logged), and, when there is at least one tool,
// tool_choice's disable_parallel_tool_use set to !parallel (on the
// tool_choice params already holds, or on {"type":"auto"}; "none" has no
// such flag and is kept). Without tools, tool_choice is left as params
// has it. The error is always nil: no tool fails the request.
func (m *Model) Request(transcript []sdk.MessageParam, tools []runtime.ToolSchema, parallel bool) (sdk.MessageNewParams, error) {
	p, _ := m.request(transcript, tools, parallel)
	return p, nil
}

func (m *Model) request(transcript []sdk.MessageParam, tools []runtime.ToolSchema, parallel bool) (sdk.MessageNewParams, *toolname.Names) {
	p := m.params
	p.Messages = transcript
	if len(tools) == 0 {
		return p, nil
	}
	ts, names, skipped := buildTools(tools)
	m.warnSkipped(skipped)
	if len(ts) == 0 {
		return p, names
	}
	p.Tools = append(append(make([]sdk.ToolUnionParam, 0, len(m.params.Tools)+len(ts)), m.params.Tools...), ts...)
	disable := sdk.Bool(!parallel)
	switch tc := p.ToolChoice; {
	case tc.OfAny != nil:
		v := *tc.OfAny
		v.DisableParallelToolUse = disable
		p.ToolChoice = sdk.ToolChoiceUnionParam{OfAny: &v}
	case tc.OfTool != nil:
		v := *tc.OfTool
		v.DisableParallelToolUse = disable
		p.ToolChoice = sdk.ToolChoiceUnionParam{OfTool: &v}
	case tc.OfNone != nil:
	case tc.OfAuto != nil:
		v := *tc.OfAuto
		v.DisableParallelToolUse = disable
		p.ToolChoice = sdk.ToolChoiceUnionParam{OfAuto: &v}
	default:
		p.ToolChoice = sdk.ToolChoiceUnionParam{OfAuto: &sdk.ToolChoiceAutoParam{DisableParallelToolUse: disable}}
	}
	return p, names
}

func (m *Model) warnSkipped(skipped []agent.SkippedTool) {
	if len(skipped) == 0 {
		return
	}
	l := m.logger
	if l == nil {
		l = slog.Default()
	}
	for _, s := range skipped {
		l.LogAttrs(context.Background(), slog.LevelWarn, "anthropic: tool left out of the request", slog.String("tool", s.Name), slog.String("reason", s.Reason))
	}
}

// Generate sends one Messages request and returns the assistant message
// (as its param, ready to send back, names as the model wrote them), its
// tool_use blocks as calls (each mapped name back to its tool's name), and
// the stop reason as sent ("tool_use", "end_turn", "max_tokens", …). Calls
// are returned whatever the stop reason: every tool_use block needs a
// tool_result in the next message. The reply carries the message's token
// usage; the response body is bounded (WithMaxReplyBytes).
func (m *Model) Generate(ctx context.Context, transcript []sdk.MessageParam, tools []runtime.ToolSchema, parallel bool) (agent.Reply[sdk.MessageParam], error) {
	p, names := m.request(transcript, tools, parallel)
	limit := blocks.NewReplyLimit(m.maxReply)
	msg, err := m.client.Messages.New(ctx, p, append(m.options[:len(m.options):len(m.options)], limitOption(limit))...)
	if err != nil {
		return agent.Reply[sdk.MessageParam]{}, limit.Err(err)
	}
	if msg == nil { // a body of null decodes to no message at all
		return agent.Reply[sdk.MessageParam]{}, fmt.Errorf("%w: the reply holds no message", ErrInvalid)
	}
	return messageReply(msg, names), nil
}

// messageReply is the agent's reply for a message, streamed or not.
func messageReply(msg *sdk.Message, names *toolname.Names) agent.Reply[sdk.MessageParam] {
	calls := Calls(msg)
	if names.Mapped() {
		for i := range calls {
			calls[i].Name = names.Tool(calls[i].Name)
		}
	}
	reply := agent.Reply[sdk.MessageParam]{Calls: calls, StopReason: string(msg.StopReason), Usage: usage(msg.Usage)}
	if len(msg.Content) > 0 {
		// An empty assistant message cannot be sent back; there is nothing
		// to keep.
		reply.Messages = []sdk.MessageParam{msg.ToParam()}
	}
	return reply
}

// WithMaxReplyBytes returns a copy of m whose replies are bounded to n
// bytes (the response body, or all a stream sends); past it the request
// fails with agent.ErrReplyTooLarge. n ≤ 0 means
// agent.DefaultMaxReplyBytes, the bound without it.
func (m *Model) WithMaxReplyBytes(n int64) *Model {
	c := *m
	c.maxReply = n
	return &c
}

// ToolResults returns the one user message of ToolResults.
func (m *Model) ToolResults(calls []runtime.TurnCall, res *runtime.TurnResult) ([]sdk.MessageParam, error) {
	msg, err := ToolResults(calls, res)
	if err != nil {
		return nil, err
	}
	return []sdk.MessageParam{msg}, nil
}
