package mcp_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolscope/toolscope/mcp"
	"github.com/toolscope/toolscope/runtime"
)

// With structuredContent, the server's content blocks are the result's
// content (an image stays an image, a text stays its text) and
// structuredContent is its value — also for a schema outside the subset —
// and post-execute hooks see the content the model gets.
func TestImport_ContentIsServersBlocksBesideStructuredContent(t *testing.T) {
	subset := json.RawMessage(`{"type":"object","properties":{"content":{"type":"string"}}}`)
	full := json.RawMessage(`{"type":"object","properties":{"content":{"type":"string","minLength":1}}}`)
	png := []byte("png!")
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			server := newServer(nil)
			for name, schema := range map[string]json.RawMessage{"media": subset, "media_full": full} {
				server.AddTool(&sdk.Tool{Name: name, InputSchema: objectSchema, OutputSchema: schema},
					func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
						return &sdk.CallToolResult{
							Content:           []sdk.Content{&sdk.ImageContent{MIMEType: "image/png", Data: png}, &sdk.TextContent{Text: "a picture"}},
							StructuredContent: map[string]any{"content": "cG5nIQ=="},
						}, nil
					})
			}
			server.AddTool(&sdk.Tool{Name: "read_text", InputSchema: objectSchema, OutputSchema: subset},
				func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
					return &sdk.CallToolResult{
						Content:           []sdk.Content{&sdk.TextContent{Text: "hello world"}},
						StructuredContent: map[string]any{"content": "hello world"},
					}, nil
				})
			server.AddTool(&sdk.Tool{Name: "bad", InputSchema: objectSchema, OutputSchema: subset},
				func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
					return &sdk.CallToolResult{
						Content:           []sdk.Content{&sdk.TextContent{Text: "five"}},
						StructuredContent: map[string]any{"content": 5},
					}, nil
				})
			c := tr.connect(t, server)
			reg := newRegistry(t)
			var mu sync.Mutex
			seen := map[string][]runtime.Block{}
			_, err := reg.Global().OnPostExecute(func(ctx context.Context, e runtime.Execution, r *runtime.Result, next func() (runtime.PostDecision, error)) (runtime.PostDecision, error) {
				mu.Lock()
				seen[e.Name()] = r.Content()
				mu.Unlock()
				return next()
			})
			must(t, err)
			im := mustImport(t, reg.Global(), c.session)

			wantImage := runtime.Block{Type: "image", Data: json.RawMessage(`{"type":"image","mimeType":"image/png","data":"cG5nIQ=="}`)}
			for _, name := range []string{"media", "media_full"} {
				res := execute(t, reg.Global(), name, `{}`)
				if res.IsError() {
					t.Fatalf("%s: %s", name, res.ErrorMessage())
				}
				if v, _ := res.Value(); string(v) != `{"content":"cG5nIQ=="}` {
					t.Errorf("%s: value %s, want the structuredContent", name, v)
				}
				for what, got := range map[string][]runtime.Block{"result": res.Content(), "post-execute": seen[name]} {
					if len(got) != 2 || got[0].Type != "image" || !sameJSON(got[0].Data, wantImage.Data) || got[1].Type != "text" || got[1].Text != "a picture" {
						t.Errorf("%s: %s content %+v, want the server's image and text blocks", name, what, got)
					}
				}
			}
			res := execute(t, reg.Global(), "read_text", `{}`)
			if res.IsError() || res.Text() != "hello world" {
				t.Fatalf("read_text: error=%v content %q, want the server's text", res.IsError(), res.Text())
			}
			if v, _ := res.Value(); string(v) != `{"content":"hello world"}` {
				t.Errorf("read_text: value %s", v)
			}
			if res := execute(t, reg.Global(), "bad", `{}`); res.Code() != runtime.CodeInvalidToolOutput {
				t.Errorf("bad: code %q, want INVALID_TOOL_OUTPUT", res.Code())
			}
			// Every finished call let go of its content, valid or not.
			if n := mcp.ServedInFlight(im); n != 0 {
				t.Errorf("%d calls' content still kept after they finished", n)
			}
		})
	}
}
