package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"reflect"
	"strings"
	"sync"
	"syscall"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolscope/toolscope/lossless"
	"github.com/toolscope/toolscope/runtime"
)

// contentSchema is the Output.Schema of a tool without an outputSchema: its
// value is the result's content, an array of MCP content objects.
var contentSchema = json.RawMessage(`{"type":"array","items":{"type":"object","properties":{"type":{"type":"string"}},"required":["type"]}}`)

// definition builds the toolscope definition of a listed server tool.
func (im *Imported) definition(tool *sdk.Tool, name string) (runtime.Definition, error) {
	params, err := json.Marshal(tool.InputSchema)
	if err != nil {
		return runtime.Definition{}, fmt.Errorf("the inputSchema cannot be encoded as JSON: %v", err)
	}
	c := &caller{im: im, server: tool.Name, name: name}
	def := runtime.Definition{
		Name:        name,
		Description: tool.Description,
		Parameters:  json.RawMessage(params),
		Execute:     c.execute,
	}
	if tool.OutputSchema == nil {
		def.Output = &runtime.Output{Schema: contentSchema, Render: renderContent}
	} else {
		schema, err := json.Marshal(tool.OutputSchema)
		if err != nil {
			return runtime.Definition{}, fmt.Errorf("the outputSchema cannot be encoded as JSON: %v", err)
		}
		c.structured = true
		// The content is the server's blocks, put where the pipeline
		// renders the value (served), and let go when the call finishes.
		def.FinalizeContent = im.served.finalize
		if _, err := runtime.ValidateValue(json.RawMessage(schema), nil); err == nil {
			// In the subset: the pipeline validates the value (R62).
			def.Output = &runtime.Output{Schema: json.RawMessage(schema), Render: im.served.render}
		} else {
			// Outside it: any value passes the pipeline, the body checks it,
			// within bounds the schema must allow (checkOutputSchema).
			checked, err := checkOutputSchema(schema)
			if err != nil {
				return runtime.Definition{}, err
			}
			c.checked = checked
			var s jsonschema.Schema
			if err := json.Unmarshal(schema, &s); err != nil {
				return runtime.Definition{}, fmt.Errorf("the outputSchema is not a JSON schema: %v", err)
			}
			rs, err := s.Resolve(nil)
			if err != nil {
				return runtime.Definition{}, fmt.Errorf("the outputSchema cannot be used to validate: %v", err)
			}
			c.validator = rs
			def.Output = &runtime.Output{Schema: json.RawMessage(`{}`), Render: im.served.render}
		}
	}
	if im.cfg.timeoutSet {
		d := im.cfg.callTimeout
		def.Timeout = &d
	}
	if f := im.cfg.classifier; f != nil {
		listed := *tool // the classifier's own copy
		def.IsConcurrencySafe = func(_ context.Context, args json.RawMessage) (bool, error) {
			return f(&listed, args), nil
		}
	}
	return def, nil
}

// caller is the body of one imported tool.
type caller struct {
	im         *Imported
	server     string // the name the server knows
	name       string // the scope's name
	structured bool   // the tool declares an outputSchema
	validator  *jsonschema.Resolved
	checked    *checkedSchema // the bounds of validator's work
}

func (c *caller) execute(ctx context.Context, args json.RawMessage, rc *runtime.RunContext) (any, error) {
	im := c.im
	l := im.link.Load()
	if l.gone.Load() {
		return nil, unavailable("the session is closed")
	}
	if l.listing.Load() {
		// The server may no longer have this tool: it is sent nothing
		// until the tools were listed on its new session.
		return nil, unavailable("reconnected: the tools are being listed on the new session")
	}
	var arguments any = args
	if len(args) == 0 || bytes.Equal(args, []byte("null")) {
		arguments = nil // CallTool sends {}
	}
	callCtx := ctx
	if im.cfg.timeoutSet {
		var cancel context.CancelFunc
		callCtx, cancel = context.WithTimeout(ctx, im.cfg.callTimeout)
		defer cancel()
	}
	res, err := l.cs.CallTool(callCtx, &sdk.CallToolParams{Name: c.server, Arguments: arguments})
	if err != nil {
		return nil, c.callError(ctx, callCtx, l, err)
	}
	if l.failures.Load() != 0 {
		l.failures.Store(0) // the server answered
	}
	if res == nil {
		return nil, runtime.NewError(NameError, CodeError, fmt.Sprintf("tools/call %q returned no result", c.server))
	}
	if res.IsError {
		return nil, toolError(res, c.server)
	}
	if c.structured {
		v, err := c.structuredValue(res)
		if err != nil {
			return nil, err
		}
		c.im.served.keep(rc, args, v, res.Content)
		return v, nil
	}
	return contentValue(res.Content)
}

// servedContent keeps the server's content blocks of the structured calls
// in flight, so the pipeline's renderer, which gets the arguments and the
// value only, can give each its server's blocks (an image stays an image)
// while structuredContent is the value. An entry is found by the
// arguments and the canonical value (what the renderer gets) and removed
// by the call's finalizer, which runs once for every call (contract R73).
// Two calls in flight with the same arguments and value but different
// content, or a value rendered again without an entry (contract R65, a
// wrapper's result), are rendered as the value's JSON text.
type servedContent struct {
	mu      sync.Mutex
	byToken map[runtime.Token]string
	byKey   map[string][]servedEntry
}

type servedEntry struct {
	token  runtime.Token
	blocks []runtime.Block
	json   string // the blocks as MCP content, to compare
}

// maxServed bounds the entries kept (a call whose finalizer is another
// definition's, when the name was replaced between its entry and its
// dispatch, leaves one behind until Close): past it, values are rendered as
// their JSON text.
const maxServed = 1 << 14

func servedKey(args, canonical []byte) string {
	return string(args) + "\x00" + string(canonical)
}

// keep records content as the content of rc's call, whose value is v.
func (sc *servedContent) keep(rc *runtime.RunContext, args []byte, v any, content []sdk.Content) {
	raw, ok := v.(json.RawMessage)
	if !ok || rc == nil {
		return
	}
	canonical, err := lossless.Canonical(raw)
	if err != nil {
		return // success creation refuses the value
	}
	b, err := json.Marshal(content)
	if err != nil || content == nil {
		b = []byte(`[]`)
	}
	blocks, err := ContentBlocks(b)
	if err != nil || len(blocks) == 0 {
		return // no content: the value's JSON text is rendered
	}
	key := servedKey(args, canonical)
	tok := rc.Token()
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.byToken == nil {
		sc.byToken = make(map[runtime.Token]string)
		sc.byKey = make(map[string][]servedEntry)
	}
	if len(sc.byToken) >= maxServed {
		return
	}
	if _, dup := sc.byToken[tok]; dup {
		return
	}
	sc.byToken[tok] = key
	sc.byKey[key] = append(sc.byKey[key], servedEntry{token: tok, blocks: blocks, json: string(b)})
}

// render is the renderer of an imported tool with an outputSchema: the
// server's content of the call in flight with these arguments and value,
// else the value as one JSON text block.
func (sc *servedContent) render(ctx context.Context, args, value json.RawMessage) ([]runtime.Block, error) {
	sc.mu.Lock()
	entries := sc.byKey[servedKey(args, value)]
	var blocks []runtime.Block
	if len(entries) > 0 {
		blocks = entries[0].blocks
		for _, e := range entries[1:] {
			if e.json != entries[0].json {
				blocks = nil // ambiguous: two contents for one value
				break
			}
		}
	}
	sc.mu.Unlock()
	if blocks == nil {
		return renderJSONText(ctx, args, value)
	}
	return blocks, nil // the pipeline copies them
}

// finalize is the finalizer of an imported tool with an outputSchema: it
// lets go of the call's entry and keeps the result's content as it is.
func (sc *servedContent) finalize(_ context.Context, e runtime.Execution, _ *runtime.Result) ([]runtime.Block, error) {
	tok := e.Token()
	sc.mu.Lock()
	defer sc.mu.Unlock()
	key, ok := sc.byToken[tok]
	if !ok {
		return nil, nil
	}
	delete(sc.byToken, tok)
	list := sc.byKey[key]
	for i, x := range list {
		if x.token == tok {
			list = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(sc.byKey, key)
	} else {
		sc.byKey[key] = list
	}
	return nil, nil
}

// clear forgets every entry (Close).
func (sc *servedContent) clear() {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.byToken, sc.byKey = nil, nil
}

// callError classifies a failed tools/call.
func (c *caller) callError(ctx, callCtx context.Context, l *link, err error) error {
	switch {
	case ctx.Err() != nil:
		return runtime.NewError(runtime.NameAbort, runtime.CodeAborted, "tool call aborted")
	case callCtx.Err() != nil:
		return runtime.NewError(runtime.NameToolTimeout, runtime.CodeToolTimeout,
			fmt.Sprintf("tool call timed out after %dms", c.im.cfg.callTimeout.Milliseconds()))
	case isGone(err):
		if closedForGood(err) {
			c.im.lost(l, err)
		} else {
			c.im.unreachable(l, err)
		}
		return unavailable(err.Error())
	}
	l.failures.Store(0) // the server answered, with an error
	var rpc *jsonrpc.Error
	if errors.As(err, &rpc) {
		if rpc.Code == jsonrpc.CodeMethodNotFound {
			// What a server answers for a tool that requires task
			// augmentation: every call will fail alike.
			c.im.refuseCalls(c.server)
		}
		return runtime.NewError(NameError, CodeError, fmt.Sprintf("tools/call %q failed: %s (JSON-RPC error %d)", c.server, trimText(rpc.Message), rpc.Code))
	}
	return runtime.NewError(NameError, CodeError, fmt.Sprintf("tools/call %q failed: %v", c.server, err))
}

// structuredValue is the value of a success of a tool with an outputSchema.
func (c *caller) structuredValue(res *sdk.CallToolResult) (any, error) {
	if res.StructuredContent == nil {
		return nil, invalidOutput(c.name, "the result has no structuredContent, but the tool declares an outputSchema")
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return nil, invalidOutput(c.name, "structuredContent cannot be encoded as JSON: "+err.Error())
	}
	if text, ok := sameAsText(res); ok {
		// The server's JSON text of the same value (as MCP asks it to
		// send): its bytes keep the server's key order and number literals,
		// which the SDK's decoding into Go maps loses.
		b = []byte(text)
	}
	if c.validator != nil {
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			return nil, invalidOutput(c.name, "structuredContent is not JSON: "+err.Error())
		}
		if err := c.checked.validationCost(v); err != nil {
			return nil, invalidOutput(c.name, "structuredContent is refused: "+err.Error())
		}
		if err := c.validator.Validate(v); err != nil {
			return nil, invalidOutput(c.name, "structuredContent does not match the outputSchema: "+trimText(err.Error()))
		}
	}
	return json.RawMessage(b), nil
}

// sameAsText returns the text of a result whose content is one text block
// holding JSON equal to its structuredContent.
func sameAsText(res *sdk.CallToolResult) (string, bool) {
	if len(res.Content) != 1 {
		return "", false
	}
	t, ok := res.Content[0].(*sdk.TextContent)
	if !ok {
		return "", false
	}
	var fromText, structured any
	if json.Unmarshal([]byte(t.Text), &fromText) != nil {
		return "", false
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil || json.Unmarshal(b, &structured) != nil || !reflect.DeepEqual(fromText, structured) {
		return "", false
	}
	return t.Text, true
}

// contentValue is the value of a success of a tool without an outputSchema:
// the content blocks as a JSON array of MCP content objects.
func contentValue(content []sdk.Content) (any, error) {
	if content == nil {
		return json.RawMessage(`[]`), nil
	}
	b, err := json.Marshal(content)
	if err != nil {
		return nil, runtime.NewError(NameError, CodeError, "the result's content cannot be encoded as JSON: "+err.Error())
	}
	return json.RawMessage(b), nil
}

// ContentBlocks maps MCP content, as the JSON array of MCP content objects
// an imported tool without an outputSchema returns as its value, to
// toolscope content blocks. It is that tool's renderer.
//
//   - text: runtime.Text(text) (the block's annotations and _meta are not
//     kept);
//   - every other kind — "image", "audio", "resource_link", "resource"
//     (an embedded resource), and kinds toolscope does not know, such as
//     "tool_use" and "tool_result" — becomes a runtime.Block whose Type is
//     the MCP type and whose Data is the whole MCP content object, exactly
//     as it came: {"type":"image","mimeType":"image/png","data":"<base64>"},
//     {"type":"resource_link","uri":…,"name":…}, {"type":"resource",
//     "resource":{"uri":…,"text":…}}, and so on.
func ContentBlocks(content json.RawMessage) ([]runtime.Block, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(content, &items); err != nil {
		return nil, fmt.Errorf("MCP content must be a JSON array of content objects: %v", err)
	}
	out := make([]runtime.Block, 0, len(items))
	for i, item := range items {
		var head struct {
			Type string  `json:"type"`
			Text *string `json:"text"`
		}
		if err := json.Unmarshal(item, &head); err != nil || head.Type == "" {
			return nil, fmt.Errorf("MCP content block %d has no type", i)
		}
		if head.Type == "text" && head.Text != nil {
			out = append(out, runtime.Text(*head.Text))
			continue
		}
		out = append(out, runtime.Block{Type: head.Type, Data: append(json.RawMessage(nil), item...)})
	}
	return out, nil
}

func renderContent(_ context.Context, _, value json.RawMessage) ([]runtime.Block, error) {
	return ContentBlocks(value)
}

// renderJSONText renders a structured value as one text block of its JSON.
func renderJSONText(_ context.Context, _, value json.RawMessage) ([]runtime.Block, error) {
	return []runtime.Block{runtime.Text(string(value))}, nil
}

// toolError is the failure of an isError result: a plain error with the
// text of its content, or, when the result's _meta carries a code under
// "toolscope/code" (a toolscope scope exported by NewServer, say), a
// coded error named NameToolError with the code as remoteCode maps it.
func toolError(res *sdk.CallToolResult, server string) error {
	msg := errorText(res.Content, server)
	raw, _ := res.Meta[MetaCode].(string)
	code := remoteCode(raw)
	if code == "" {
		return errors.New(msg)
	}
	return runtime.NewError(NameToolError, code, msg)
}

// NameToolError is the error name of an isError result whose _meta
// carries a code.
const NameToolError = "MCPToolError"

// RemotePrefix namespaces a code from a remote server that is one of the
// registry's own (runtime's codes, CodeUnavailable, CodeError): the
// server's ABORTED_BEFORE_DISPATCH is REMOTE_ABORTED_BEFORE_DISPATCH.
const RemotePrefix = "REMOTE_"

// remoteCode is the code a failure gets for the code a remote server sent:
// "" for none or for one that is not a code (more than 64 bytes, or a
// byte other than a letter, digit, '_', '.', ':' or '-'); the code with
// RemotePrefix for one the registry gives itself; otherwise the code.
func remoteCode(code string) runtime.Code {
	if code == "" || len(code) > 64 {
		return ""
	}
	for i := 0; i < len(code); i++ {
		c := code[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == ':' || c == '-') {
			return ""
		}
	}
	if ownCodes[runtime.Code(code)] {
		return runtime.Code(RemotePrefix + code)
	}
	return runtime.Code(code)
}

// ownCodes are the registry's own codes (the runtime's and this
// package's): a remote server's code that is one of them is namespaced
// (remoteCode).
var ownCodes = map[runtime.Code]bool{
	runtime.CodeUnknownTool:           true,
	runtime.CodeInvalidArgs:           true,
	runtime.CodeInvalidToolOutput:     true,
	runtime.CodeAborted:               true,
	runtime.CodeAbortedBeforeDispatch: true,
	runtime.CodeToolTimeout:           true,
	runtime.CodeUnsupportedSchema:     true,
	runtime.CodeOverloaded:            true,
	runtime.CodeClosed:                true,
	runtime.CodeWouldDeadlock:         true,
	CodeUnavailable:                   true,
	CodeError:                         true,
}

// errorText is the message of an isError result: the text of its text
// blocks and "[<type> content]" for the others, joined with "\n", less a
// leading "Error: " — the prefix toolscope puts before a failure's
// message in its content, so the failure's content is the server's text
// as it was, not "Error: Error: …".
func errorText(content []sdk.Content, server string) string {
	var parts []string
	for _, c := range content {
		if t, ok := c.(*sdk.TextContent); ok {
			parts = append(parts, t.Text)
			continue
		}
		parts = append(parts, "["+contentType(c)+" content]")
	}
	if msg := strings.TrimPrefix(strings.Join(parts, "\n"), "Error: "); msg != "" {
		return msg
	}
	return fmt.Sprintf("MCP tool %q reported an error without content", server)
}

// contentType is the MCP type of a content block.
func contentType(c sdk.Content) string {
	b, err := c.MarshalJSON()
	if err != nil {
		return "unknown"
	}
	var head struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(b, &head) != nil || head.Type == "" {
		return "unknown"
	}
	return head.Type
}

func invalidOutput(name, violation string) error {
	return runtime.NewError(runtime.NameToolOutput, runtime.CodeInvalidToolOutput,
		fmt.Sprintf("tool %q returned invalid output: %s", name, violation))
}

func unavailable(detail string) error {
	return runtime.NewError(NameUnavailable, CodeUnavailable, "MCP server unavailable: "+trimText(detail))
}

// closedForGood reports whether err says the session is closed: no later
// request on it can succeed.
func closedForGood(err error) bool {
	return errors.Is(err, sdk.ErrConnectionClosed) || errors.Is(err, sdk.ErrSessionMissing)
}

// noTools reports whether err is a server without the tools capability
// refusing tools/list (JSON-RPC "method not found"): it has no tools.
func noTools(cs *sdk.ClientSession, err error) bool {
	var rpc *jsonrpc.Error
	if !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeMethodNotFound {
		return false
	}
	init := cs.InitializeResult()
	return init == nil || init.Capabilities == nil || init.Capabilities.Tools == nil
}

// isGone reports whether err says the session or its transport is gone.
func isGone(err error) bool {
	var ne net.Error
	return errors.Is(err, sdk.ErrConnectionClosed) || errors.Is(err, sdk.ErrSessionMissing) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.ErrClosedPipe) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.As(err, &ne)
}
