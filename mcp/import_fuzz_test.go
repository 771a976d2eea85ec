package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolscope/toolscope/mcp"
	"github.com/toolscope/toolscope/runtime"
)

// oneLine makes s one JSON value on one line of a newline-delimited JSON
// stream: compacted when it is JSON, else as a JSON string (an answer of
// the wrong type). A line that is not JSON at all is dropped by the go-sdk
// and leaves the request waiting for its ctx — the bound Import and the
// calls already have (WithSyncTimeout, WithCallTimeout), too slow to fuzz.
// A leading "!" (an error answer) is kept.
func oneLine(s string) string {
	bang := strings.HasPrefix(s, "!")
	if bang {
		s = s[1:]
	}
	var b bytes.Buffer
	if json.Compact(&b, []byte(s)) != nil {
		q, _ := json.Marshal(s)
		b.Reset()
		b.Write(q)
	}
	if bang {
		return "!" + b.String()
	}
	return b.String()
}

// FuzzImport feeds hostile MCP server answers to Import and to the calls
// of what it imported: list is every tools/list answer (its nextCursor, if
// any, comes back on every page), result every tools/call answer, args
// the calls' arguments. Nothing may panic, crash or hang: Import and each
// call end within the test's bound, each call with one result.
func FuzzImport(f *testing.F) {
	seeds := []struct{ list, result, args string }{
		{`{"tools":[{"name":"a","inputSchema":{"type":"object"}}]}`, `{"content":[{"type":"text","text":"hi"}]}`, `{}`},
		{`{"tools":[{"name":"self","inputSchema":{"type":"object"},"outputSchema":{"$ref":"#"}}]}`, `{"content":[],"structuredContent":{}}`, `{}`},
		{`{"tools":[{"name":"dag","inputSchema":{"type":"object"},"outputSchema":{"$defs":{"a":{"allOf":[{"$ref":"#/$defs/b"},{"$ref":"#/$defs/b"}]},"b":{"allOf":[{"$ref":"#/$defs/c"},{"$ref":"#/$defs/c"}]},"c":{"type":"object","minProperties":0}},"$ref":"#/$defs/a"}}]}`, `{"content":[{"type":"text","text":"{}"}],"structuredContent":{}}`, `{}`},
		{`{"tools":[{"name":"rec","inputSchema":{"type":"object"},"outputSchema":{"type":"object","properties":{"v":{"$ref":"#/$defs/n"}},"$defs":{"n":{"type":"array","anyOf":[{"items":{"$ref":"#/$defs/n"}},{"items":{"$ref":"#/$defs/n"}}]}}}}]}`, `{"content":[],"structuredContent":{"v":[[[[[[[[[[]]]]]]]]]]}}`, `{}`},
		{`{"tools":[{"name":"img","inputSchema":{"type":"object"},"outputSchema":{"type":"object"}}]}`, `{"content":[{"type":"image","mimeType":"image/png","data":"cG5nIQ=="},{"type":"text","text":"x"}],"structuredContent":{"content":"cG5nIQ=="}}`, `{"path":"a.png"}`},
		{`{"tools":[{"name":"e","inputSchema":{"type":"object"}}]}`, `{"isError":true,"content":[{"type":"text","text":"Error: no"}],"_meta":{"toolscope/code":"ABORTED_BEFORE_DISPATCH"}}`, `null`},
		{`{"tools":[{"name":"t","inputSchema":{"type":"object"},"execution":{"taskSupport":"required"}}]}`, `!{"code":-32601,"message":"needs a task"}`, `{}`},
		{`{"tools":[{"name":"p","inputSchema":{"type":"object"}}],"nextCursor":"again"}`, `{"content":[{"type":"text","text":"x"}]}`, `{}`},
		{`{"tools":[{"name":"","inputSchema":{}},{"name":"run_code","inputSchema":{"type":"object"}},{"name":"a","inputSchema":{"type":"object"}},{"name":"a","inputSchema":{"type":"object"}}]}`, `{"content":[{"type":"tool_use","id":"1","name":"x","input":{}}]}`, `[1,2]`},
		{`{"tools":[{"name":"w","inputSchema":{"type":"object"},"outputSchema":{"type":"object","properties":{"a":{"type":"string","pattern":"^a+$"}},"not":{"required":["b"]}}}]}`, `{"content":[{"type":"text","text":"{\"a\":\"aaa\"}"}],"structuredContent":{"a":"aaa"}}`, `{}`},
		{`not json`, `{"content":"not an array"}`, `{`},
		{`{"tools":null}`, `{}`, ``},
	}
	for _, s := range seeds {
		f.Add(s.list, s.result, s.args)
	}
	reg, err := runtime.New()
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		defer cancel()
		_ = reg.Close(ctx)
	})
	var n atomic.Int64
	f.Fuzz(func(t *testing.T, list, result, args string) {
		list, result = oneLine(list), oneLine(result)
		cs := connectHostile(t, hostile{
			list: func(string) string { return list },
			call: func(string, json.RawMessage) string { return result },
		})
		scope, err := reg.NewScope(fmt.Sprintf("fuzz%d", n.Add(1)))
		if err != nil {
			t.Fatal(err)
		}
		defer scope.Dispose()
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		defer cancel()
		done := make(chan struct{})
		var im *mcp.Imported
		go func() {
			defer close(done)
			im, err = mcp.Import(ctx, scope, cs, mcp.WithCallTimeout(bound/2), mcp.WithSyncTimeout(bound/2), mcp.WithListLimits(20, 200))
		}()
		select {
		case <-done:
		case <-time.After(bound + time.Second):
			dumpGoroutines(t)
			t.Fatal("Import did not return")
		}
		if err != nil {
			return // a listing the import refused: fine, as long as it said so
		}
		defer im.Close()
		for _, name := range im.Tools() {
			res := scope.Execute(ctx, runtime.Call{ID: "f", Name: name, Arguments: json.RawMessage(args)})
			if res == nil {
				t.Fatalf("%s: no result", name)
			}
			if ctx.Err() != nil {
				dumpGoroutines(t)
				t.Fatalf("%s: the call took the whole bound", name)
			}
			_ = res.Content()
			_, _ = res.Value()
		}
		_ = im.Skipped()
	})
}
