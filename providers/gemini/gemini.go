package gemini

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/toolscope/toolscope/agent"
	"github.com/toolscope/toolscope/providers/blocks"
	"github.com/toolscope/toolscope/providers/toolname"
	"github.com/toolscope/toolscope/runtime"
	"google.golang.org/genai"
)

// ErrInvalid is wrapped by every error of this package about bad input: a
// turn result that does not answer its calls, a response without a
// candidate, a reply the SDK cannot read, a bad Model configuration.
var ErrInvalid = errors.New("gemini: invalid input")

// Tools turns a scope's Schemas into one Gemini tool holding a function
// declaration per schema, in the same order, the name as ToolName gives it
// and the parameter schema passed as ParametersJsonSchema exactly as
// Schemas gave it (JSON Schema; Gemini reads it as such, not as its
// OpenAPI-subset Schema type). A tool Gemini cannot take (a parameter
// schema that is not an object schema, a mapped name that is another
// tool's own name) is left out and reported in skipped, so one such tool
// never fails the request. No schemas (or none left) give no tool.
func Tools(schemas []runtime.ToolSchema) (tools []*genai.Tool, skipped []agent.SkippedTool) {
	tools, _, skipped = buildTools(schemas)
	return tools, skipped
}

// ToolName returns the name a tool named name is declared under: name
// itself when Gemini accepts it (a letter or "_", then letters, digits,
// "_", ".", ":" and "-", at most 128 in all); otherwise name with every
// other character replaced by "_" (and "_" in front where it may not
// start a name), cut to fit, followed by "_" and ten hex digits of its
// SHA-256. It depends on name alone, so it is the same on every request.
// Model maps the calls the model makes by such a name back to the tool's
// name, and ToolResults answers a call under ToolName of its name: the
// name the model called.
func ToolName(name string) string { return toolname.Gemini.Wire(name) }

func buildTools(schemas []runtime.ToolSchema) ([]*genai.Tool, *toolname.Names, []agent.SkippedTool) {
	if len(schemas) == 0 {
		return nil, nil, nil
	}
	names := make([]string, len(schemas))
	for i, s := range schemas {
		names[i] = s.Name
	}
	wire, m := toolname.Gemini.Assign(names)
	decls := make([]*genai.FunctionDeclaration, 0, len(schemas))
	var skipped []agent.SkippedTool
	for i, s := range schemas {
		if wire[i] == "" {
			skipped = append(skipped, agent.SkippedTool{Name: s.Name, Reason: toolname.ErrNameTaken(toolname.Gemini, s.Name).Error()})
			continue
		}
		if err := toolname.ObjectSchema(s.Parameters); err != nil {
			skipped = append(skipped, agent.SkippedTool{Name: s.Name, Reason: err.Error()})
			continue
		}
		d := &genai.FunctionDeclaration{Name: wire[i], Description: s.Description}
		if len(s.Parameters) > 0 {
			d.ParametersJsonSchema = s.Parameters
		}
		decls = append(decls, d)
	}
	if len(decls) == 0 {
		return nil, m, skipped
	}
	return []*genai.Tool{{FunctionDeclarations: decls}}, m, skipped
}

// CallID is the id Calls gives the i-th function call (0-based) of the
// model's step-th content (1-based) when the model sent none:
// "call_<step>_<i>", or, when the content already holds that id, the same
// with the next index no call of the content has. Ids the model sends are
// kept.
func CallID(step, i int) string {
	return "call_" + strconv.Itoa(step) + "_" + strconv.Itoa(i)
}

// Calls returns the FunctionCall parts of a model content as turn calls, in
// the order the model wrote them, and the content to keep in the
// transcript: content itself when every call carries an id of its own,
// otherwise a copy whose calls without one carry CallID(step, i), so the
// transcript's call and the FunctionResponse that answers it carry the
// same id and name (Gemini matches them by id when present, by order
// otherwise; both hold). A generated id skips every id the content holds,
// and a call whose id an earlier call of the content has gets a generated
// one too: each result answers exactly one call (agent.CheckCalls). The
// copy keeps every other part and field (thought signatures included); the
// content given is never modified.
//
// Gemini sends arguments as a JSON object the SDK decodes into a map, so
// ArgumentsText is that map re-encoded: keys sorted, numbers as float64
// (an integer beyond 2^53 loses precision); no arguments give "{}".
func Calls(content *genai.Content, step int) ([]runtime.TurnCall, *genai.Content, error) {
	if content == nil {
		return nil, nil, nil
	}
	var calls []runtime.TurnCall
	var parts []*genai.Part       // the copied parts, once an id had to be made
	var present map[string]bool   // the ids the model sent, once one is needed
	used := make(map[string]bool) // the ids given to calls so far
	next := 0                     // the lowest index a generated id may take
	for i, p := range content.Parts {
		if p == nil || p.FunctionCall == nil {
			continue
		}
		fc := p.FunctionCall
		args := "{}"
		if fc.Args != nil {
			b, err := json.Marshal(fc.Args)
			if err != nil {
				return nil, nil, fmt.Errorf("%w: function call %q: arguments: %v", ErrInvalid, fc.Name, err)
			}
			args = string(b)
		}
		id := fc.ID
		if id == "" || used[id] {
			if present == nil {
				present = make(map[string]bool)
				for _, q := range content.Parts {
					if q != nil && q.FunctionCall != nil && q.FunctionCall.ID != "" {
						present[q.FunctionCall.ID] = true
					}
				}
			}
			next = max(next, len(calls))
			for id = CallID(step, next); present[id] || used[id]; id = CallID(step, next) {
				next++
			}
			if parts == nil {
				parts = append([]*genai.Part(nil), content.Parts...)
			}
			np, nfc := *p, *fc
			nfc.ID = id
			np.FunctionCall = &nfc
			parts[i] = &np
		}
		used[id] = true
		calls = append(calls, runtime.TurnCall{ID: id, Name: fc.Name, ArgumentsText: args})
	}
	if parts == nil {
		return calls, content, nil
	}
	return calls, &genai.Content{Role: content.Role, Parts: parts}, nil
}

// ToolResults turns a turn's results into the contents to append: one
// user-role content holding one FunctionResponse part per call, in model
// order (res.Results[i] answers calls[i]), with the call's id and the name
// it was called by (ToolName of the call's name: the name the tool was
// declared under), then, when the turn has contexts, a second user-role content with one
// text part per context. Gemini requires the function-response content to
// hold only the responses to the preceding call turn, so the contexts
// cannot share it.
//
// A success's response is {"output": <its text>}; a failure's is
// {"error": {"message": <message>, "code": <CODE>}} (code only when the
// failure is coded), plus "details" with its text when its content says
// more than the runtime's "Error: <message>". Image blocks travel as the
// response's parts (Gemini's multimodal function responses); other blocks
// are rendered into the text as the package doc says. It is an error when
// res does not hold exactly one non-nil result per call.
func ToolResults(calls []runtime.TurnCall, res *runtime.TurnResult) ([]*genai.Content, error) {
	if res == nil {
		return nil, fmt.Errorf("%w: nil turn result", ErrInvalid)
	}
	if len(res.Results) != len(calls) {
		return nil, fmt.Errorf("%w: %d results for %d calls", ErrInvalid, len(res.Results), len(calls))
	}
	parts := make([]*genai.Part, len(calls))
	for i, c := range calls {
		r := res.Results[i]
		if r == nil {
			return nil, fmt.Errorf("%w: no result for call %q (position %d)", ErrInvalid, c.ID, i)
		}
		parts[i] = &genai.Part{FunctionResponse: response(c, r)}
	}
	out := []*genai.Content{{Role: genai.RoleUser, Parts: parts}}
	var ctxParts []*genai.Part
	for _, m := range res.Contexts {
		if t := contextText(m); t != "" {
			ctxParts = append(ctxParts, &genai.Part{Text: t})
		}
	}
	if len(ctxParts) > 0 {
		out = append(out, &genai.Content{Role: genai.RoleUser, Parts: ctxParts})
	}
	return out, nil
}

// contextText renders a context message: its text, prefixed with its role
// in brackets when that role is not "user".
func contextText(m runtime.ContextMessage) string {
	if m.Text == "" {
		return ""
	}
	if m.Role == "" || m.Role == genai.RoleUser {
		return m.Text
	}
	return "[" + m.Role + "] " + m.Text
}

func response(c runtime.TurnCall, r *runtime.Result) *genai.FunctionResponse {
	var texts []string
	var media []*genai.FunctionResponsePart
	for _, b := range r.Content() {
		switch b.Type {
		case "text":
			if b.Text != "" {
				texts = append(texts, b.Text)
			}
		case "image":
			if p, omitted := imagePart(b.Data); p != nil {
				media = append(media, p)
			} else {
				texts = append(texts, omitted)
			}
		default:
			texts = append(texts, blocks.OtherText(b))
		}
	}
	text := strings.Join(texts, "\n")
	fr := &genai.FunctionResponse{ID: c.ID, Name: ToolName(c.Name), Parts: media}
	if !r.IsError() {
		fr.Response = map[string]any{"output": text}
		return fr
	}
	e := map[string]any{"message": r.ErrorMessage()}
	if code := r.Code(); code != "" {
		e["code"] = string(code)
	}
	if text != "" && text != "Error: "+r.ErrorMessage() {
		e["details"] = text
	}
	fr.Response = map[string]any{"error": e}
	return fr
}

// ImageData is the Data of a runtime.Block of Type "image" that the adapter
// accepts: base64 bytes with their media type, or a URL (for Gemini a file
// URI, with its media type). The media type may also be spelled "mimeType"
// (MCP's image content) or "mime_type". The type is the adapters' shared
// one (package providers/blocks).
//
//	{"media_type": "image/png", "data": "<base64>"}
//	{"url": "gs://bucket/cat.png", "media_type": "image/png"}
type ImageData = blocks.ImageData

// imagePart maps an image block to a function response part, or, when
// Gemini cannot take it (malformed Data, no media type), to the text that
// says so: one bad block must not cost the turn its results.
func imagePart(data json.RawMessage) (*genai.FunctionResponsePart, string) {
	var d ImageData
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, `[image omitted: its data is not {"media_type","data"} or {"url","media_type"}]`
	}
	if d.Type() == "" {
		return nil, "[image omitted: it has no media type, which Gemini requires]"
	}
	switch {
	case d.URL != "" && d.Data == "":
		return &genai.FunctionResponsePart{FileData: &genai.FunctionResponseFileData{FileURI: d.URL, MIMEType: d.Type()}}, ""
	case d.Data != "" && d.URL == "":
		raw, err := base64.StdEncoding.DecodeString(d.Data)
		if err != nil {
			return nil, "[image omitted: its data is not standard base64]"
		}
		return &genai.FunctionResponsePart{InlineData: &genai.FunctionResponseBlob{MIMEType: d.Type(), Data: raw}}, ""
	}
	return nil, `[image omitted: its data must hold exactly one of "data" and "url"]`
}

// Model is a Gemini model behind GenerateContent, as an
// agent.Model[*genai.Content]. Each Generate sends the transcript as the
// contents and the step's tools after any tools the config already holds.
//
// Gemini has no parallel-tool-calls flag, so Generate ignores the loop's
// parallel argument: the model may always ask for several calls at once,
// and toolscope's scheduler still runs an exclusive tool alone (R36, R92),
// so nothing unsafe overlaps; it only queues.
type Model struct {
	models   *genai.Models
	name     string
	config   *genai.GenerateContentConfig
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

// WithMaxReplyBytes returns a copy of m whose replies are bounded to n
// bytes of response body; a reply that passes the bound fails with
// agent.ErrReplyTooLarge. n ≤ 0 means agent.DefaultMaxReplyBytes, the bound
// without it. The bound applies on a client made with BoundedHTTPClient
// (the SDK reads the body itself; nothing else can bound it).
func (m *Model) WithMaxReplyBytes(n int64) *Model {
	c := *m
	c.maxReply = n
	return &c
}

var _ agent.Model[*genai.Content] = (*Model)(nil)

// New returns a Model asking the model name through client, with config
// (system instruction, temperature, tool config, …; may be nil) on every
// request. It is never modified.
func New(client *genai.Client, name string, config *genai.GenerateContentConfig) (*Model, error) {
	if client == nil || client.Models == nil {
		return nil, fmt.Errorf("%w: nil client", ErrInvalid)
	}
	if name == "" {
		return nil, fmt.Errorf("%w: empty model name", ErrInvalid)
	}
	if config != nil {
		c := *config
		if si := c.SystemInstruction; si != nil && si.Role == "" {
			// The SDK sets a missing role on the config it is given: give
			// it a copy, so the caller's config stays as it was and
			// concurrent Generates share nothing it writes to.
			c.SystemInstruction = &genai.Content{Role: genai.RoleUser, Parts: si.Parts}
		}
		config = &c
	}
	return &Model{models: client.Models, name: name, config: config}, nil
}

// Config returns the config Generate sends with tools: a shallow copy of
// the Model's config whose Tools are its own followed by Tools(tools) (a
// tool Gemini cannot take left out and logged).
func (m *Model) Config(tools []runtime.ToolSchema) *genai.GenerateContentConfig {
	c, _ := m.configWith(tools)
	return c
}

func (m *Model) configWith(tools []runtime.ToolSchema) (*genai.GenerateContentConfig, *toolname.Names) {
	var c genai.GenerateContentConfig
	if m.config != nil {
		c = *m.config
	}
	ts, names, skipped := buildTools(tools)
	if len(skipped) > 0 {
		l := m.logger
		if l == nil {
			l = slog.Default()
		}
		for _, s := range skipped {
			l.LogAttrs(context.Background(), slog.LevelWarn, "gemini: tool left out of the request", slog.String("tool", s.Name), slog.String("reason", s.Reason))
		}
	}
	if ts != nil {
		c.Tools = append(append(make([]*genai.Tool, 0, len(c.Tools)+1), c.Tools...), ts...)
	}
	return &c, names
}

// Generate sends one GenerateContent request and returns the first
// candidate's content (with generated call ids, see Calls; names as the
// model wrote them), its function calls (each mapped name back to its
// tool's name), and its finish reason as sent ("STOP", "MAX_TOKENS",
// "MALFORMED_FUNCTION_CALL", …). A response without candidates (a blocked
// prompt) is an error naming the block reason. The step for generated ids
// is one more than the number of model contents in the transcript. The
// reply carries the response's token usage (usageMetadata).
//
// Model does not stream (it is no agent.StreamingModel): the SDK's stream
// reader accepts lines up to 256 MiB before the adapter sees them and
// offers no per-request hook on the response body, so a streamed reply
// could not be bounded as the adapters bound theirs.
func (m *Model) Generate(ctx context.Context, transcript []*genai.Content, tools []runtime.ToolSchema, _ bool) (agent.Reply[*genai.Content], error) {
	config, names := m.configWith(tools)
	resp, err := m.generate(ctx, transcript, config)
	if err != nil {
		return agent.Reply[*genai.Content]{}, err
	}
	if resp == nil || len(resp.Candidates) == 0 || resp.Candidates[0] == nil {
		reason := "none given"
		if resp == nil {
			reason = "the reply holds no response"
		} else if pf := resp.PromptFeedback; pf != nil && pf.BlockReason != "" {
			reason = string(pf.BlockReason)
			if pf.BlockReasonMessage != "" {
				reason += ": " + pf.BlockReasonMessage
			}
		}
		return agent.Reply[*genai.Content]{}, fmt.Errorf("%w: response without candidates (block reason: %s)", ErrInvalid, reason)
	}
	cand := resp.Candidates[0]
	step := 1
	for _, c := range transcript {
		if c != nil && c.Role == genai.RoleModel {
			step++
		}
	}
	calls, content, err := Calls(cand.Content, step)
	if err != nil {
		return agent.Reply[*genai.Content]{}, err
	}
	if names.Mapped() {
		for i := range calls {
			calls[i].Name = names.Tool(calls[i].Name)
		}
	}
	reply := agent.Reply[*genai.Content]{Calls: calls, StopReason: string(cand.FinishReason), Usage: usage(resp.UsageMetadata)}
	if content != nil && len(content.Parts) > 0 {
		if content.Role == "" {
			content = &genai.Content{Role: genai.RoleModel, Parts: content.Parts}
		}
		reply.Messages = []*genai.Content{content}
	}
	return reply, nil
}

// generate is the SDK's GenerateContent, with a panic of the SDK turned
// into an error: the SDK converts the reply's JSON with type assertions
// that panic on shapes it does not expect ({"candidates":[null]} panics in
// genai v1.77), and a model's reply is untrusted input that must not crash
// the host.
func (m *Model) generate(ctx context.Context, transcript []*genai.Content, config *genai.GenerateContentConfig) (resp *genai.GenerateContentResponse, err error) {
	defer func() {
		if p := recover(); p != nil {
			resp, err = nil, fmt.Errorf("%w: the SDK could not read the reply: %v", ErrInvalid, p)
		}
	}()
	limit := blocks.NewReplyLimit(m.maxReply)
	resp, err = m.models.GenerateContent(withReplyLimit(ctx, limit), m.name, transcript, config)
	if err != nil {
		err = limit.Err(err)
	}
	return resp, err
}

// ToolResults returns the contents of ToolResults.
func (m *Model) ToolResults(calls []runtime.TurnCall, res *runtime.TurnResult) ([]*genai.Content, error) {
	return ToolResults(calls, res)
}

// usage is a response's token usage in agent terms: Gemini counts the
// prompt of tool use and the thoughts apart, so they are added to input
// and output.
func usage(u *genai.GenerateContentResponseUsageMetadata) agent.Usage {
	if u == nil {
		return agent.Usage{}
	}
	in := int64(u.PromptTokenCount) + int64(u.ToolUsePromptTokenCount)
	out := int64(u.CandidatesTokenCount) + int64(u.ThoughtsTokenCount)
	total := int64(u.TotalTokenCount)
	if total == 0 {
		total = in + out
	}
	return agent.Usage{
		InputTokens: in, CachedInputTokens: int64(u.CachedContentTokenCount),
		OutputTokens: out, ReasoningTokens: int64(u.ThoughtsTokenCount),
		TotalTokens: total,
	}
}
