package mcp

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolscope/toolscope/runtime"
)

func echoBody(in textIn) string { return "echo: " + in.Text }

// BenchmarkExportCallTool measures one tools/call through the in-memory
// transport: toolscope's export (a per-session scope, the full pipeline)
// against a plain go-sdk server whose handler runs the same body. The two
// alternate in one goroutine, so both see the same machine; the figure is
// export/plain, reported as the "ratio" metric.
func BenchmarkExportCallTool(b *testing.B) {
	ctx := context.Background()
	reg, err := runtime.New()
	if err != nil {
		b.Fatal(err)
	}
	defer reg.Close(ctx)
	echo, err := runtime.NewTool("echo", "Echo the text", func(ctx context.Context, in textIn, rc *runtime.RunContext) (string, error) {
		return echoBody(in), nil
	}, runtime.WithParallel())
	if err != nil {
		b.Fatal(err)
	}
	if _, err := reg.Global().Register(echo); err != nil {
		b.Fatal(err)
	}
	srv, err := NewServer(reg.Global())
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()

	plain := sdk.NewServer(&sdk.Implementation{Name: "plain", Version: "0"}, nil)
	plain.AddTool(&sdk.Tool{Name: "echo", Description: "Echo the text", InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var in textIn
			if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
				return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: err.Error()}}}, nil
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: echoBody(in)}}}, nil
		})

	connect := func(connectServer func(sdk.Transport) error) *sdk.ClientSession {
		ct, st := sdk.NewInMemoryTransports()
		if err := connectServer(st); err != nil {
			b.Fatal(err)
		}
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "0"}, nil).Connect(ctx, ct, legacy)
		if err != nil {
			b.Fatal(err)
		}
		return cs
	}
	ours := connect(func(t sdk.Transport) error { _, err := srv.Connect(ctx, t, nil); return err })
	defer ours.Close()
	theirs := connect(func(t sdk.Transport) error { _, err := plain.Connect(ctx, t, nil); return err })
	defer theirs.Close()

	params := &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}}
	call := func(cs *sdk.ClientSession) time.Duration {
		start := time.Now()
		res, err := cs.CallTool(ctx, params)
		d := time.Since(start)
		if err != nil || res.IsError || len(res.Content) != 1 || res.Content[0].(*sdk.TextContent).Text != "echo: hi" {
			b.Fatalf("call: %v %+v", err, res)
		}
		return d
	}
	call(ours)
	call(theirs)
	var tOurs, tTheirs time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%2 == 0 {
			tOurs += call(ours)
			tTheirs += call(theirs)
		} else {
			tTheirs += call(theirs)
			tOurs += call(ours)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(tOurs.Nanoseconds())/float64(b.N), "export-ns/call")
	b.ReportMetric(float64(tTheirs.Nanoseconds())/float64(b.N), "plain-ns/call")
	b.ReportMetric(float64(tOurs)/float64(tTheirs), "ratio")
}
