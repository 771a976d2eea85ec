package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolscope/toolscope/mcp"
	"github.com/toolscope/toolscope/runtime"
)

// Import lists every page: the server returns two tools a page.
func TestImport_ListsAllPages(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			server := newServer(&sdk.ServerOptions{PageSize: 2})
			var want []string
			for i := range 5 {
				name := fmt.Sprintf("t%d", i)
				textTool(server, name, name)
				want = append(want, name)
			}
			c := tr.connect(t, server)
			reg := newRegistry(t)
			im := mustImport(t, reg.Global(), c.session)
			if got := im.Tools(); !reflect.DeepEqual(got, want) {
				t.Fatalf("Tools() = %v, want %v", got, want)
			}
			if got := reg.Global().Tools(); !reflect.DeepEqual(got, want) {
				t.Fatalf("scope tools = %v, want %v", got, want)
			}
			schemas, err := reg.Global().Schemas()
			if err != nil {
				t.Fatal(err)
			}
			if schemas[3].Description != "says t3" || string(schemas[3].Parameters) != `{"type":"object"}` {
				t.Fatalf("schema of t3 = %+v", schemas[3])
			}
			if res := execute(t, reg.Global(), "t4", `{}`); res.IsError() || res.Text() != "t4" {
				t.Fatalf("t4: %v %q", res.IsError(), res.Text())
			}
		})
	}
}

// The server's inputSchema is the tool's Parameters as it is, even one
// toolscope's output-schema subset would refuse (R33: not validated).
func TestImport_R33_InputSchemaAsIs(t *testing.T) {
	server := newServer(nil)
	in := `{"type":"object","properties":{"n":{"type":"integer","minimum":3}},"$defs":{"x":{"type":"string"}}}`
	server.AddTool(&sdk.Tool{Name: "n", InputSchema: json.RawMessage(in)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{}, nil
		})
	c := connectInMemory(t, server)
	reg := newRegistry(t)
	mustImport(t, reg.Global(), c.session)
	def, ok := reg.Global().Get("n")
	if !ok {
		t.Fatal("n not registered")
	}
	got, _ := json.Marshal(def.Parameters)
	var a, b any
	_ = json.Unmarshal(got, &a)
	_ = json.Unmarshal([]byte(in), &b)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("Parameters = %s, want %s", got, in)
	}
}

// The arguments reach the server as the model sent them.
func TestImport_R45_ArgumentsUnchanged(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			server := newServer(nil)
			server.AddTool(&sdk.Tool{Name: "echo", InputSchema: objectSchema},
				func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
					return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(req.Params.Arguments)}}}, nil
				})
			c := tr.connect(t, server)
			reg := newRegistry(t)
			mustImport(t, reg.Global(), c.session)
			args := `{"z":1,"a":[true,null,"x"],"m":{"k":1.5e3}}`
			res := execute(t, reg.Global(), "echo", args)
			if res.IsError() {
				t.Fatal(res.ErrorMessage())
			}
			if res.Text() != args {
				t.Fatalf("server saw %s, want %s", res.Text(), args)
			}
			// No arguments at all: MCP wants an object, so {} is sent.
			if res := execute(t, reg.Global(), "echo", ""); res.Text() != `{}` {
				t.Fatalf("server saw %s for absent arguments, want {}", res.Text())
			}
		})
	}
}

// An isError result is a failure whose message is the content's text.
func TestImport_IsErrorResult(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			server := newServer(nil)
			server.AddTool(&sdk.Tool{Name: "fail", InputSchema: objectSchema},
				func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
					return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{
						&sdk.TextContent{Text: "disk full"},
						&sdk.ImageContent{MIMEType: "image/png", Data: []byte{1}},
					}}, nil
				})
			c := tr.connect(t, server)
			reg := newRegistry(t)
			mustImport(t, reg.Global(), c.session)
			res := execute(t, reg.Global(), "fail", `{}`)
			if !res.IsError() || res.ErrorMessage() != "disk full\n[image content]" || res.Code() != "" {
				t.Fatalf("result: error=%v message=%q code=%q", res.IsError(), res.ErrorMessage(), res.Code())
			}
			if res.Text() != "Error: disk full\n[image content]" {
				t.Fatalf("content %q", res.Text())
			}
		})
	}
}

// toolscope's own failure content ("Error: <message>", as NewServer sends
// it) comes back as the same content, not "Error: Error: …", and a code
// under _meta["toolscope/code"] comes back as the failure's code
// (namespaced when it is one of the registry's own).
func TestImport_IsErrorRoundTrip(t *testing.T) {
	server := newServer(nil)
	add := func(name string, meta sdk.Meta) {
		server.AddTool(&sdk.Tool{Name: name, InputSchema: objectSchema},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return &sdk.CallToolResult{IsError: true, Meta: meta,
					Content: []sdk.Content{&sdk.TextContent{Text: "Error: invalid arguments: missing required property \"path\""}}}, nil
			})
	}
	add("plain", nil)
	add("coded", sdk.Meta{"toolscope/code": "INVALID_ARGS"})
	add("own", sdk.Meta{"toolscope/code": "QUOTA"})
	c := connectInMemory(t, server)
	reg := newRegistry(t)
	mustImport(t, reg.Global(), c.session)
	for name, want := range map[string][2]string{
		"plain": {"", ""},
		"coded": {"MCPToolError", "REMOTE_INVALID_ARGS"}, // the registry's own code, from a remote peer

		"own": {"MCPToolError", "QUOTA"},
	} {
		res := execute(t, reg.Global(), name, `{}`)
		errName, code, _ := res.ErrorInfo()
		if !res.IsError() || res.ErrorMessage() != `invalid arguments: missing required property "path"` ||
			res.Text() != `Error: invalid arguments: missing required property "path"` || errName != want[0] || string(code) != want[1] {
			t.Errorf("%s: message %q content %q name %q code %q, want name %q code %q", name, res.ErrorMessage(), res.Text(), errName, code, want[0], want[1])
		}
	}
}

// structuredContent is the value, validated against the outputSchema —
// by the pipeline when the schema fits toolscope's subset, by the body
// otherwise — and the server's content is the content.
func TestImport_StructuredContent(t *testing.T) {
	subset := json.RawMessage(`{"type":"object","properties":{"temp":{"type":"number"}},"required":["temp"]}`)
	full := json.RawMessage(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"temp":{"type":"number","minimum":-273.15}},"required":["temp"]}`)
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			server := newServer(nil)
			add := func(name string, schema json.RawMessage, structured any) {
				server.AddTool(&sdk.Tool{Name: name, InputSchema: objectSchema, OutputSchema: schema},
					func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
						return &sdk.CallToolResult{StructuredContent: structured,
							Content: []sdk.Content{&sdk.TextContent{Text: "server text"}}}, nil
					})
			}
			add("subset_ok", subset, map[string]any{"temp": 21.5})
			add("subset_bad", subset, map[string]any{"temp": "warm"})
			add("full_ok", full, map[string]any{"temp": 21.5})
			add("full_bad", full, map[string]any{"temp": -300})
			add("missing", subset, nil)
			server.AddTool(&sdk.Tool{Name: "ordered", InputSchema: objectSchema, OutputSchema: subset},
				func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
					return &sdk.CallToolResult{StructuredContent: map[string]any{"temp": 21.5, "city": "Paris"},
						Content: []sdk.Content{&sdk.TextContent{Text: `{"temp":21.50,"city":"Paris"}`}}}, nil
				})
			c := tr.connect(t, server)
			reg := newRegistry(t)
			mustImport(t, reg.Global(), c.session)

			if def, _ := reg.Global().Get("subset_ok"); !sameJSON(def.Output.Schema.(json.RawMessage), subset) {
				t.Fatalf("subset schema mapped to %s", def.Output.Schema)
			}
			if def, _ := reg.Global().Get("full_ok"); string(def.Output.Schema.(json.RawMessage)) != `{}` {
				t.Fatalf("a schema outside the subset mapped to %s, want {} (checked in the body)", def.Output.Schema)
			}
			for _, name := range []string{"subset_ok", "full_ok"} {
				res := execute(t, reg.Global(), name, `{}`)
				v, ok := res.Value()
				if res.IsError() || !ok || string(v) != `{"temp":21.5}` {
					t.Fatalf("%s: error=%v %q value=%s", name, res.IsError(), res.ErrorMessage(), v)
				}
				if res.Text() != "server text" { // the server's content, beside the value
					t.Fatalf("%s: content %q", name, res.Text())
				}
			}
			// The server's JSON text of the value keeps its order and literals.
			if res := execute(t, reg.Global(), "ordered", `{}`); res.Text() != `{"temp":21.50,"city":"Paris"}` {
				v, _ := res.Value()
				t.Fatalf("ordered: value %s content %q", v, res.Text())
			}
			for name, want := range map[string]string{
				"subset_bad": `tool "subset_bad" returned invalid output: "value.temp" must be a number`,
				"full_bad":   `tool "full_bad" returned invalid output: structuredContent does not match the outputSchema`,
				"missing":    `tool "missing" returned invalid output: the result has no structuredContent, but the tool declares an outputSchema`,
			} {
				res := execute(t, reg.Global(), name, `{}`)
				if !res.IsError() || res.Code() != runtime.CodeInvalidToolOutput || !strings.HasPrefix(res.ErrorMessage(), want) {
					t.Fatalf("%s: error=%v code=%q message=%q, want prefix %q", name, res.IsError(), res.Code(), res.ErrorMessage(), want)
				}
			}
		})
	}
}

// Every kind of content block is kept: text as text, the others as data.
func TestImport_ContentBlocks(t *testing.T) {
	size := int64(42)
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			server := newServer(nil)
			server.AddTool(&sdk.Tool{Name: "all", InputSchema: objectSchema},
				func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
					return &sdk.CallToolResult{Content: []sdk.Content{
						&sdk.TextContent{Text: "hello"},
						&sdk.ImageContent{MIMEType: "image/png", Data: []byte("png!")},
						&sdk.AudioContent{MIMEType: "audio/wav", Data: []byte("wav!")},
						&sdk.ResourceLink{URI: "file:///a.txt", Name: "a.txt", MIMEType: "text/plain", Size: &size},
						&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///b.txt", MIMEType: "text/plain", Text: "bee"}},
						//lint:ignore SA1019 a kind the importer has no mapping for: it must be kept as data
						&sdk.ToolUseContent{ID: "u1", Name: "other", Input: map[string]any{"q": "x"}},
					}}, nil
				})
			c := tr.connect(t, server)
			reg := newRegistry(t)
			mustImport(t, reg.Global(), c.session)
			res := execute(t, reg.Global(), "all", `{}`)
			if res.IsError() {
				t.Fatal(res.ErrorMessage())
			}
			got := res.Content()
			want := []runtime.Block{
				runtime.Text("hello"),
				{Type: "image", Data: json.RawMessage(`{"type":"image","mimeType":"image/png","data":"cG5nIQ=="}`)},
				{Type: "audio", Data: json.RawMessage(`{"type":"audio","mimeType":"audio/wav","data":"d2F2IQ=="}`)},
				{Type: "resource_link", Data: json.RawMessage(`{"type":"resource_link","mimeType":"text/plain","uri":"file:///a.txt","name":"a.txt","size":42}`)},
				{Type: "resource", Data: json.RawMessage(`{"type":"resource","resource":{"uri":"file:///b.txt","mimeType":"text/plain","text":"bee"}}`)},
				{Type: "tool_use", Data: json.RawMessage(`{"type":"tool_use","name":"other","id":"u1","input":{"q":"x"}}`)},
			}
			if len(got) != len(want) {
				t.Fatalf("%d blocks, want %d: %+v", len(got), len(want), got)
			}
			for i := range want {
				if got[i].Type != want[i].Type || got[i].Text != want[i].Text || !sameJSON(got[i].Data, want[i].Data) {
					t.Errorf("block %d = {%s %q %s}, want {%s %q %s}", i, got[i].Type, got[i].Text, got[i].Data, want[i].Type, want[i].Text, want[i].Data)
				}
			}
			// The value is the same content as MCP content objects.
			v, _ := res.Value()
			var items []map[string]any
			if err := json.Unmarshal(v, &items); err != nil || len(items) != 6 || items[0]["text"] != "hello" {
				t.Fatalf("value %s", v)
			}
		})
	}
}

func sameJSON(a, b json.RawMessage) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

// Cancelling the caller's ctx reaches the server's handler as a cancelled
// ctx (notifications/cancelled), and the call ends ABORTED.
func TestImport_R80_CancellationReachesServer(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			server := newServer(nil)
			started := make(chan struct{}, 1)
			cancelled := make(chan error, 1)
			server.AddTool(&sdk.Tool{Name: "slow", InputSchema: objectSchema},
				func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
					started <- struct{}{}
					select {
					case <-ctx.Done():
						cancelled <- ctx.Err()
						return nil, ctx.Err()
					case <-time.After(bound):
						cancelled <- errors.New("never cancelled")
						return &sdk.CallToolResult{}, nil
					}
				})
			c := tr.connect(t, server)
			reg := newRegistry(t)
			mustImport(t, reg.Global(), c.session)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan *runtime.Result, 1)
			go func() {
				done <- reg.Global().Execute(ctx, runtime.Call{ID: "c", Name: "slow", Arguments: json.RawMessage(`{}`)})
			}()
			recv(t, started, "the server handler to start")
			cancel()
			res := recv(t, done, "the call to end")
			if res.Code() != runtime.CodeAborted {
				t.Fatalf("code %q (%s), want ABORTED", res.Code(), res.ErrorMessage())
			}
			if err := recv(t, cancelled, "the server handler's ctx to end"); !errors.Is(err, context.Canceled) {
				t.Fatalf("server handler: %v", err)
			}
		})
	}
}

// WithCallTimeout bounds a call: TOOL_TIMEOUT, and the server hears it.
func TestImport_CallTimeout(t *testing.T) {
	server := newServer(nil)
	cancelled := make(chan struct{}, 1)
	server.AddTool(&sdk.Tool{Name: "hang", InputSchema: objectSchema},
		func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			select {
			case <-ctx.Done():
				cancelled <- struct{}{}
			case <-time.After(bound):
			}
			return &sdk.CallToolResult{}, nil
		})
	c := connectInMemory(t, server)
	reg := newRegistry(t)
	mustImport(t, reg.Global(), c.session, mcp.WithCallTimeout(50*time.Millisecond))
	res := execute(t, reg.Global(), "hang", `{}`)
	if res.Code() != runtime.CodeToolTimeout || res.ErrorMessage() != "tool call timed out after 50ms" {
		t.Fatalf("code %q message %q", res.Code(), res.ErrorMessage())
	}
	recv(t, cancelled, "the server handler's ctx to end")
	if def, _ := reg.Global().Get("hang"); def.Timeout == nil || *def.Timeout != 50*time.Millisecond {
		t.Fatalf("declared timeout %v", def.Timeout)
	}
	for _, bad := range []time.Duration{0, -time.Second} {
		if _, err := mcp.Import(context.Background(), reg.Global(), c.session, mcp.WithCallTimeout(bad)); err == nil {
			t.Fatalf("WithCallTimeout(%v) accepted", bad)
		}
	}
}

// notifications/tools/list_changed re-syncs: an added tool is registered,
// a removed one disposed, a changed one replaced, and an OnChange
// subscriber hears each.
func TestImport_R87_ListChangedResyncs(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			server := newServer(nil)
			textTool(server, "keep", "keep")
			textTool(server, "drop", "drop")
			textTool(server, "change", "v1")
			c := tr.connect(t, server)
			reg := newRegistry(t)
			scope, err := reg.NewScope("agent")
			if err != nil {
				t.Fatal(err)
			}
			im := mustImport(t, scope, c.session)
			heard := subscribe(t, reg.Global())

			textTool(server, "added", "new")
			// A reader may see a change before its notification is delivered
			// (R88 promises delivery before the changing call returns), so
			// wait for both.
			eventually(t, "the added tool", func() bool { return slices.Contains(scope.Tools(), "added") && heard.count() >= 1 })
			if heard.count() != 1 {
				t.Fatalf("%d notifications after an addition, want 1", heard.count())
			}
			if res := execute(t, scope, "added", `{}`); res.Text() != "new" {
				t.Fatalf("added: %q", res.Text())
			}

			server.RemoveTools("drop")
			eventually(t, "the dropped tool to go", func() bool { return !slices.Contains(scope.Tools(), "drop") && heard.count() >= 2 })
			if heard.count() != 2 {
				t.Fatalf("%d notifications after a removal, want 2", heard.count())
			}

			textTool(server, "change", "v2") // same name, new description
			eventually(t, "the changed tool", func() bool {
				d, ok := scope.Get("change")
				return ok && d.Description == "says v2" && heard.count() >= 4
			})
			if heard.count() != 4 { // its removal and its registration
				t.Fatalf("%d notifications after a change, want 4", heard.count())
			}
			if res := execute(t, scope, "change", `{}`); res.Text() != "v2" {
				t.Fatalf("change: %q", res.Text())
			}
			// The go-sdk server lists its tools by name.
			if got := im.Tools(); !reflect.DeepEqual(got, []string{"added", "change", "keep"}) {
				t.Fatalf("Tools() = %v", got)
			}
		})
	}
}

// A changed annotation is a change too: the classification follows it.
func TestImport_R36_AnnotationChangeReclassifies(t *testing.T) {
	server := newServer(nil)
	add := func(readOnly bool) {
		server.AddTool(&sdk.Tool{Name: "read", InputSchema: objectSchema, Annotations: &sdk.ToolAnnotations{ReadOnlyHint: readOnly}},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return &sdk.CallToolResult{}, nil
			})
	}
	add(false)
	c := connectInMemory(t, server)
	reg := newRegistry(t)
	mustImport(t, reg.Global(), c.session, mcp.WithReadOnlyParallel())
	call := runtime.Call{Name: "read", Arguments: json.RawMessage(`{}`)}
	if m := reg.Global().ExecutionMode(call); m != runtime.Exclusive {
		t.Fatalf("mode %v before the change", m)
	}
	add(true)
	eventually(t, "the tool to turn parallel", func() bool { return reg.Global().ExecutionMode(call) == runtime.Parallel })
}

// Prefix, allow-list and the read-only classification.
func TestImport_R36_PrefixAllowReadOnly(t *testing.T) {
	server := newServer(nil)
	for _, tool := range []*sdk.Tool{
		{Name: "read", InputSchema: objectSchema, Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		{Name: "write", InputSchema: objectSchema, Annotations: &sdk.ToolAnnotations{ReadOnlyHint: false}},
		{Name: "stat", InputSchema: objectSchema},
		{Name: "secret", InputSchema: objectSchema, Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
	} {
		server.AddTool(tool, func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: req.Params.Name}}}, nil
		})
	}
	c := connectInMemory(t, server)
	reg := newRegistry(t)
	a, _ := reg.NewScope("a")
	b, _ := reg.NewScope("b")
	mustImport(t, a, c.session, mcp.WithPrefix("fs_"), mcp.WithAllow("read", "write", "stat", "absent"))
	mustImport(t, b, c.session, mcp.WithPrefix("fs_"), mcp.WithAllow("read", "write", "stat"), mcp.WithReadOnlyParallel())
	want := []string{"fs_read", "fs_stat", "fs_write"} // the server lists by name
	for _, s := range []*runtime.Scope{a, b} {
		if got := s.Tools(); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: tools %v, want %v", s.Key(), got, want)
		}
	}
	if res := execute(t, a, "fs_read", `{}`); res.Text() != "read" {
		t.Fatalf("fs_read called %q on the server", res.Text())
	}
	for name, wantB := range map[string]runtime.Mode{"fs_read": runtime.Parallel, "fs_write": runtime.Exclusive, "fs_stat": runtime.Exclusive} {
		call := runtime.Call{Name: name, Arguments: json.RawMessage(`{}`)}
		if m := a.ExecutionMode(call); m != runtime.Exclusive {
			t.Errorf("%s without WithReadOnlyParallel: %v, want exclusive", name, m)
		}
		if m := b.ExecutionMode(call); m != wantB {
			t.Errorf("%s with WithReadOnlyParallel: %v, want %v", name, m, wantB)
		}
	}
}

// A tool toolscope cannot register is skipped with its reason; the rest
// are imported.
func TestImport_R11_InvalidNamesSkipped(t *testing.T) {
	server := newServer(nil)
	textTool(server, "", "empty")
	textTool(server, "run_code", "reserved")
	textTool(server, "taken", "taken")
	textTool(server, "ok", "ok")
	c := connectInMemory(t, server)
	reg := newRegistry(t)
	if _, err := reg.Global().Register(runtime.Definition{Name: "taken", Output: &runtime.Output{Schema: json.RawMessage(`{}`), Render: func(_ context.Context, _, _ json.RawMessage) ([]runtime.Block, error) { return nil, nil }},
		Execute: func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) { return nil, nil }}); err != nil {
		t.Fatal(err)
	}
	im := mustImport(t, reg.Global(), c.session)
	if got := im.Tools(); !reflect.DeepEqual(got, []string{"ok"}) {
		t.Fatalf("Tools() = %v", got)
	}
	skipped := map[string]string{}
	for _, s := range im.Skipped() {
		skipped[s.Tool] = s.Reason
	}
	for name, want := range map[string]string{
		"":         "empty name",
		"run_code": "reserved",
		"taken":    "already registered",
	} {
		if !strings.Contains(skipped[name], want) {
			t.Errorf("skipped[%q] = %q, want it to contain %q", name, skipped[name], want)
		}
	}
	// With a prefix, run_code is a fine name.
	scope, _ := reg.NewScope("p")
	im2 := mustImport(t, scope, c.session, mcp.WithPrefix("x_"), mcp.WithAllow("run_code"))
	if got := im2.Tools(); !reflect.DeepEqual(got, []string{"x_run_code"}) {
		t.Fatalf("prefixed Tools() = %v", got)
	}
}

// A server that goes away mid-call: that call is MCP_UNAVAILABLE, within
// the test's bound; once the session is seen ended the import ends
// (issue 25 item 10a): its tools are disposed, Done is closed, Err says
// why. A later call is MCP_UNAVAILABLE before that and UNKNOWN_TOOL after.
func TestImport_ServerDiesMidCall(t *testing.T) {
	for _, tr := range []transport{{"pipe", connectPipe}, {"http", connectHTTP}} {
		t.Run(tr.name, func(t *testing.T) {
			server := newServer(nil)
			started := make(chan struct{}, 1)
			release := make(chan struct{})
			server.AddTool(&sdk.Tool{Name: "block", InputSchema: objectSchema},
				func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
					started <- struct{}{}
					select {
					case <-release:
					case <-ctx.Done():
					}
					return &sdk.CallToolResult{}, nil
				})
			textTool(server, "fine", "fine")
			c := tr.connect(t, server)
			defer close(release)
			reg := newRegistry(t)
			im := mustImport(t, reg.Global(), c.session)
			done := make(chan *runtime.Result, 1)
			go func() { done <- execute(t, reg.Global(), "block", `{}`) }()
			recv(t, started, "the server handler to start")
			c.kill()
			res := recv(t, done, "the call to end after the server died")
			if res.Code() != mcp.CodeUnavailable {
				t.Fatalf("code %q (%s), want MCP_UNAVAILABLE", res.Code(), res.ErrorMessage())
			}
			t.Logf("the call in flight: %s", res.ErrorMessage())
			for range 2 {
				later := make(chan *runtime.Result, 1)
				go func() { later <- execute(t, reg.Global(), "fine", `{}`) }()
				res := recv(t, later, "a later call")
				if res.Code() != mcp.CodeUnavailable && res.Code() != runtime.CodeUnknownTool {
					t.Fatalf("later call: code %q (%s), want MCP_UNAVAILABLE or UNKNOWN_TOOL", res.Code(), res.ErrorMessage())
				}
			}
			// Over HTTP the session stays open on the client's side: the
			// calls that cannot reach the server end it
			// (WithUnreachableAfter's default, three in a row).
			recv(t, im.Done(), "the import to end")
			requireGone(t, reg.Global(), im)
		})
	}
}

// requireGone checks an import that ended because its server went away.
func requireGone(t *testing.T, scope *runtime.Scope, im *mcp.Imported) {
	t.Helper()
	if err := im.Err(); !errors.Is(err, mcp.ErrServerGone) {
		t.Fatalf("Err() = %v, want ErrServerGone", err)
	}
	if got := im.Tools(); len(got) != 0 {
		t.Fatalf("Tools() = %v after the end", got)
	}
	for _, name := range scope.Tools() {
		if name == "fine" || name == "block" {
			t.Fatalf("tool %q still registered after the end", name)
		}
	}
	if res := execute(t, scope, "fine", `{}`); res.Code() != runtime.CodeUnknownTool {
		t.Fatalf("call after the end: code %q (%s), want UNKNOWN_TOOL", res.Code(), res.ErrorMessage())
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	if err := im.Sync(ctx); !errors.Is(err, mcp.ErrServerGone) {
		t.Fatalf("Sync after the end: %v", err)
	}
	im.Close() // returns, and Err keeps the reason
	if err := im.Err(); !errors.Is(err, mcp.ErrServerGone) {
		t.Fatalf("Err() after Close = %v", err)
	}
}

// A session the client closed: the import ends, and says so.
func TestImport_SessionClosed(t *testing.T) {
	server := newServer(nil)
	textTool(server, "fine", "fine")
	c := connectInMemory(t, server)
	reg := newRegistry(t)
	ended := make(chan error, 1)
	im := mustImport(t, reg.Global(), c.session, mcp.WithEndHandler(func(err error) { ended <- err }))
	_ = c.session.Close()
	if res := execute(t, reg.Global(), "fine", `{}`); res.Code() != mcp.CodeUnavailable && res.Code() != runtime.CodeUnknownTool {
		t.Fatalf("code %q (%s)", res.Code(), res.ErrorMessage())
	}
	if err := recv(t, ended, "the end handler"); !errors.Is(err, mcp.ErrServerGone) {
		t.Fatalf("end handler: %v", err)
	}
	recv(t, im.Done(), "Done")
	requireGone(t, reg.Global(), im)
}

// A session the server closed (no call in flight): the import ends.
func TestImport_SessionClosedByServer(t *testing.T) {
	server := newServer(nil)
	textTool(server, "fine", "fine")
	c := connectInMemory(t, server)
	reg := newRegistry(t)
	im := mustImport(t, reg.Global(), c.session)
	c.kill() // ServerSession.Close
	recv(t, im.Done(), "the import to end")
	requireGone(t, reg.Global(), im)
}

// A JSON-RPC error (the server no longer has the tool, and no re-sync has
// happened) is MCP_ERROR.
func TestImport_ProtocolError(t *testing.T) {
	server := newServer(nil)
	textTool(server, "gone", "gone")
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	st, ct := sdk.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	// A client without the handler: no re-sync.
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "c"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	reg := newRegistry(t)
	mustImport(t, reg.Global(), cs)
	server.RemoveTools("gone")
	res := execute(t, reg.Global(), "gone", `{}`)
	if res.Code() != mcp.CodeError || !strings.Contains(res.ErrorMessage(), `tools/call "gone" failed`) {
		t.Fatalf("code %q message %q", res.Code(), res.ErrorMessage())
	}
}

// Close disposes every imported tool (a notification each), stops the
// re-syncs, and is idempotent.
func TestImport_R7_CloseDisposesEverything(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			server := newServer(nil)
			for i := range 4 {
				textTool(server, fmt.Sprintf("t%d", i), "x")
			}
			c := tr.connect(t, server)
			reg := newRegistry(t)
			ctx, cancel := context.WithTimeout(context.Background(), bound)
			defer cancel()
			im, err := mcp.Import(ctx, reg.Global(), c.session, mcp.WithPrefix("p_"))
			if err != nil {
				t.Fatal(err)
			}
			heard := subscribe(t, reg.Global())
			im.Close()
			if got := reg.Global().Tools(); len(got) != 0 {
				t.Fatalf("tools after Close: %v", got)
			}
			if heard.count() != 4 {
				t.Fatalf("%d removals heard, want 4", heard.count())
			}
			im.Close()
			if err := im.Sync(ctx); !errors.Is(err, mcp.ErrImportClosed) {
				t.Fatalf("Sync after Close: %v", err)
			}
			textTool(server, "late", "x")
			// A tools/list round trip after the notification had time to be
			// handled: nothing was registered.
			if _, err := c.session.ListTools(ctx, nil); err != nil {
				t.Fatal(err)
			}
			time.Sleep(50 * time.Millisecond) // give a wrongly live re-sync the chance to show
			if got := reg.Global().Tools(); len(got) != 0 {
				t.Fatalf("tools registered after Close: %v", got)
			}
			if res := execute(t, reg.Global(), "p_t0", `{}`); res.Code() != runtime.CodeUnknownTool {
				t.Fatalf("call after Close: %q", res.Code())
			}
		})
	}
}

// A change subscriber may Close the import while a re-sync announces one
// of its changes: no deadlock, everything disposed.
func TestImport_R86_CloseFromSubscriberDuringResync(t *testing.T) {
	server := newServer(nil)
	textTool(server, "a", "a")
	c := connectInMemory(t, server)
	reg := newRegistry(t)
	im := mustImport(t, reg.Global(), c.session)
	closed := make(chan struct{})
	if _, err := reg.Global().OnChange(func(context.Context) error {
		if slices.Contains(reg.Global().Tools(), "b") {
			im.Close()
			select {
			case <-closed:
			default:
				close(closed)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	textTool(server, "b", "b")
	textTool(server, "c", "c")
	recv(t, closed, "the subscriber's Close")
	eventually(t, "every tool disposed", func() bool { return len(reg.Global().Tools()) == 0 })
	eventually(t, "the import to forget its tools", func() bool { return len(im.Tools()) == 0 })
}

// Import refuses bad input and registers nothing when the listing fails.
func TestImport_Errors(t *testing.T) {
	server := newServer(nil)
	textTool(server, "a", "a")
	c := connectInMemory(t, server)
	reg := newRegistry(t)
	if _, err := mcp.Import(context.Background(), nil, c.session); err == nil {
		t.Fatal("nil scope accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := mcp.Import(ctx, reg.Global(), c.session); err == nil {
		t.Fatal("Import with a cancelled ctx succeeded")
	}
	if got := reg.Global().Tools(); len(got) != 0 {
		t.Fatalf("tools after a failed Import: %v", got)
	}
	scope, _ := reg.NewScope("s")
	scope.Dispose()
	if _, err := mcp.Import(context.Background(), scope, c.session); !errors.Is(err, runtime.ErrScopeDisposed) {
		t.Fatalf("Import into a disposed scope: %v", err)
	}
	// Into a scope of a closed registry: ErrClosed, as the runtime says
	// after Close (N5, issue 25).
	live, _ := reg.NewScope("live")
	if err := reg.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := mcp.Import(context.Background(), live, c.session); !errors.Is(err, runtime.ErrClosed) {
		t.Fatalf("Import into a scope of a closed registry: %v", err)
	}
}

// hangingList makes the server's tools/list hang until its ctx ends while
// hang is set.
func hangingList(server *sdk.Server, hang *atomic.Bool, entered chan<- struct{}) {
	server.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if method == "tools/list" && hang.Load() {
				select {
				case entered <- struct{}{}:
				default:
				}
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return next(ctx, method, req)
		}
	})
}

// A re-sync is bounded by WithSyncTimeout (its failure goes to the error
// handler and the tools stay), Sync by its ctx, and Close does not wait
// for a listing that hangs.
func TestImport_ResyncBounded(t *testing.T) {
	server := newServer(nil)
	var hang atomic.Bool
	entered := make(chan struct{}, 1)
	hangingList(server, &hang, entered)
	textTool(server, "a", "a")
	c := connectInMemory(t, server)
	reg := newRegistry(t)
	errs := make(chan error, 4)
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	// The timeout bounds Import's own listing too, so it is long enough for
	// a loaded machine; the hanging re-sync below waits it out.
	im, err := mcp.Import(ctx, reg.Global(), c.session,
		mcp.WithSyncTimeout(time.Second), mcp.WithSyncErrorHandler(func(err error) { errs <- err }))
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	hang.Store(true)
	textTool(server, "b", "b") // list_changed; the re-sync's listing hangs
	err = recv(t, errs, "the re-sync's failure")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("re-sync error %v, want a deadline", err)
	}
	if got := reg.Global().Tools(); !reflect.DeepEqual(got, []string{"a"}) {
		t.Fatalf("tools after a failed re-sync: %v", got)
	}
	sctx, scancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer scancel()
	if err := im.Sync(sctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Sync: %v", err)
	}

	// Close while a listing hangs: it returns, and everything is disposed.
	go func() { _ = im.Sync(context.Background()) }()
	recv(t, entered, "a hanging listing")
	closed := make(chan struct{})
	go func() { im.Close(); close(closed) }()
	recv(t, closed, "Close during a hanging listing")
	if got := reg.Global().Tools(); len(got) != 0 {
		t.Fatalf("tools after Close: %v", got)
	}
}

// Syncs never overlap: many concurrent Syncs and notifications leave the
// scope exactly as the server lists, with nothing refused as a duplicate.
func TestImport_ResyncSerialized(t *testing.T) {
	server := newServer(nil)
	c := connectInMemory(t, server)
	reg := newRegistry(t)
	im := mustImport(t, reg.Global(), c.session)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 10 {
				textTool(server, fmt.Sprintf("g%d_%d", g, i), "x")
				ctx, cancel := context.WithTimeout(context.Background(), bound)
				if err := im.Sync(ctx); err != nil {
					t.Error(err)
				}
				cancel()
				// Overlapping syncs would race to register the same new
				// tool, and the loser would skip it as a duplicate.
				if s := im.Skipped(); len(s) != 0 {
					t.Errorf("skipped: %v", s)
				}
			}
		}()
	}
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	if err := im.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got := len(reg.Global().Tools()); got != 40 {
		t.Fatalf("%d tools, want 40", got)
	}
	if s := im.Skipped(); len(s) != 0 {
		t.Fatalf("skipped: %v", s)
	}
}

// A turn overlaps imported read-only calls when WithReadOnlyParallel
// classifies them parallel: both handlers run on the server at once (each
// waits for the other), and results come back in model order.
func TestImport_R93_TurnOverlapsReadOnlyCalls(t *testing.T) {
	server := newServer(nil)
	var mu sync.Mutex
	in := 0
	both := make(chan struct{})
	server.AddTool(&sdk.Tool{Name: "read", InputSchema: objectSchema, Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			mu.Lock()
			in++
			if in == 2 {
				close(both)
			}
			mu.Unlock()
			select {
			case <-both:
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(bound):
				return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "the calls did not overlap"}}}, nil
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(req.Params.Arguments)}}}, nil
		})
	c := connectInMemory(t, server)
	reg := newRegistry(t)
	mustImport(t, reg.Global(), c.session, mcp.WithReadOnlyParallel())
	ctx, cancel := context.WithTimeout(context.Background(), 2*bound)
	defer cancel()
	turn, err := reg.Global().ExecuteTurn(ctx, []runtime.TurnCall{
		{ID: "1", Name: "read", ArgumentsText: `{"n":1}`},
		{ID: "2", Name: "read", ArgumentsText: `{"n":2}`},
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, res := range turn.Results {
		if want := fmt.Sprintf(`{"n":%d}`, i+1); res.IsError() || res.Text() != want {
			t.Fatalf("result %d: error=%v %q, want %s", i, res.IsError(), res.Text(), want)
		}
	}
}

// A Sync made with the ctx of a change subscriber hearing a sync's own
// change (here derived from it, with a deadline) returns an error at once
// instead of waiting for the sync it is inside.
func TestImport_R86_SyncFromSubscriberDoesNotWait(t *testing.T) {
	// A server declares the tools capability, and so sends
	// list_changed, only if it has tools when the client connects.
	server := newServer(nil)
	textTool(server, "first", "first")
	c := connectInMemory(t, server)
	reg := newRegistry(t)
	im := mustImport(t, reg.Global(), c.session)
	got := make(chan error, 1)
	if _, err := reg.Global().OnChange(func(sub context.Context) error {
		ctx, cancel := context.WithTimeout(sub, bound)
		defer cancel()
		select {
		case got <- im.Sync(ctx):
		default:
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	textTool(server, "a", "a")
	if err := recv(t, got, "the subscriber's Sync"); err == nil || !strings.Contains(err.Error(), "change subscriber's ctx while a sync is under way") {
		t.Fatalf("Sync from a subscriber: %v", err)
	}
}

// Re-entrancy never deadlocks: a subscriber hearing a change of a re-sync,
// or of a Sync, calls Sync with the very ctx it was given (never
// cancelled), then Close. Each call returns (the Sync fails at once, R86),
// the sync it was called from stops, and every tool is disposed. With a
// Close or Sync that waited for the sync it is inside, the bounded waits
// below fail with a goroutine dump.
func TestImport_R86_ReentrantSyncAndCloseNeverDeadlock(t *testing.T) {
	for _, from := range []string{"re-sync", "Sync"} {
		t.Run(from, func(t *testing.T) {
			server := newServer(nil)
			textTool(server, "a", "a")
			session := connectInMemory(t, server).session
			if from == "Sync" {
				// A client without ToolListChangedHandler: no re-sync
				// starts, so the Sync below is the one that announces b.
				session = connectWithoutResync(t, server)
			}
			reg := newRegistry(t)
			im := mustImport(t, reg.Global(), session)
			syncErr := make(chan error, 1)
			closed := make(chan struct{})
			var once sync.Once
			if _, err := reg.Global().OnChange(func(ctx context.Context) error {
				if !slices.Contains(reg.Global().Tools(), "b") {
					return nil
				}
				once.Do(func() {
					syncErr <- im.Sync(ctx)
					im.Close()
					close(closed)
				})
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			textTool(server, "b", "b")
			textTool(server, "c", "c")
			if from == "Sync" {
				done := make(chan error, 1)
				go func() { done <- im.Sync(context.Background()) }()
				if err := recv(t, done, "the Sync the subscriber closed the import from"); !errors.Is(err, mcp.ErrImportClosed) {
					t.Fatalf("the Sync the subscriber closed the import from: %v, want ErrImportClosed", err)
				}
			}
			recv(t, closed, "the subscriber's Sync and Close")
			if err := recv(t, syncErr, "the subscriber's Sync"); err == nil || errors.Is(err, mcp.ErrImportClosed) {
				t.Fatalf("a Sync made with a subscriber's ctx inside a sync: %v, want its refusal", err)
			}
			eventually(t, "every tool disposed", func() bool { return len(reg.Global().Tools()) == 0 })
			eventually(t, "the import to forget its tools", func() bool { return len(im.Tools()) == 0 })
		})
	}
}

// connectWithoutResync connects a client that has no
// ToolListChangedHandler, so its imports never re-sync on their own.
func connectWithoutResync(t *testing.T, server *sdk.Server) *sdk.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	st, ct := sdk.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		t.Fatalf("server connect: %v", err)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "toolscope-test", Version: "v0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatalf("client connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close(); _ = ss.Close() })
	return cs
}

// Close does not wait for a sync while it announces a change (the sync may
// be the caller): from another goroutine it returns while a subscriber
// still holds the announcement, with every tool disposed; the sync then
// stops without registering anything more.
func TestImport_R86_CloseDoesNotWaitForAnAnnouncement(t *testing.T) {
	server := newServer(nil)
	textTool(server, "a", "a")
	c := connectInMemory(t, server)
	reg := newRegistry(t)
	im := mustImport(t, reg.Global(), c.session)
	entered := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	if _, err := reg.Global().OnChange(func(context.Context) error {
		if slices.Contains(reg.Global().Tools(), "b") {
			once.Do(func() { close(entered); <-release })
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	textTool(server, "b", "b")
	textTool(server, "z", "z")
	recv(t, entered, "the announcement of b")
	closed := make(chan struct{})
	go func() { im.Close(); close(closed) }()
	recv(t, closed, "Close while a subscriber holds an announcement")
	if got := reg.Global().Tools(); len(got) != 0 {
		t.Fatalf("tools after Close: %v", got)
	}
	close(release)
	if _, err := c.session.ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the import to forget its tools", func() bool { return len(im.Tools()) == 0 })
	if got := reg.Global().Tools(); len(got) != 0 {
		t.Fatalf("tools registered after Close: %v", got)
	}
}

// A Sync made from a subscriber with an unrelated ctx waits like any
// other: for the sync announcing the change, until that ctx ends. The sync
// then goes on.
func TestImport_R86_SyncFromSubscriberWithOtherCtxWaitsForIt(t *testing.T) {
	server := newServer(nil)
	textTool(server, "a", "a")
	c := connectInMemory(t, server)
	reg := newRegistry(t)
	im := mustImport(t, reg.Global(), c.session)
	got := make(chan error, 1)
	var once sync.Once
	if _, err := reg.Global().OnChange(func(context.Context) error {
		if slices.Contains(reg.Global().Tools(), "b") {
			once.Do(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
				defer cancel()
				got <- im.Sync(ctx)
			})
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	textTool(server, "b", "b")
	if err := recv(t, got, "the subscriber's Sync"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Sync with an unrelated ctx from a subscriber: %v", err)
	}
	textTool(server, "c", "c")
	eventually(t, "the re-syncs to go on", func() bool { return slices.Contains(reg.Global().Tools(), "c") })
}

// A re-sync that waits behind a slow sync longer than WithSyncTimeout still
// runs once that sync ends: giving up while waiting would miss the change
// it is for.
func TestImport_ResyncWaitsOutASlowSync(t *testing.T) {
	server := newServer(nil)
	var hangOnce atomic.Bool
	entered := make(chan struct{}, 1)
	server.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if method == "tools/list" && hangOnce.CompareAndSwap(true, false) {
				entered <- struct{}{}
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return next(ctx, method, req)
		}
	})
	textTool(server, "a", "a")
	c := connectInMemory(t, server)
	reg := newRegistry(t)
	// The sync timeout bounds Import's listing and the waiting re-sync's, so
	// it is long enough for a loaded machine; the slow Sync outlasts it.
	im := mustImport(t, reg.Global(), c.session, mcp.WithSyncTimeout(time.Second))
	hangOnce.Store(true)
	slow := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		defer cancel()
		slow <- im.Sync(ctx)
	}()
	recv(t, entered, "the slow sync's listing")
	textTool(server, "b", "b") // its re-sync waits for the slow Sync
	if err := recv(t, slow, "the slow Sync"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("slow Sync: %v", err)
	}
	eventually(t, "the waiting re-sync to register b", func() bool { return slices.Contains(reg.Global().Tools(), "b") })
}
