package mcp_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolscope/toolscope/mcp"
	"github.com/toolscope/toolscope/runtime"
)

// BenchmarkImport_CallVsSession measures the pipeline's added cost on an
// imported tool: one scope.Execute of the imported tool (A) against one
// CallTool on the same go-sdk session (B), same tool, same arguments,
// in-memory transport. A and B alternate in one goroutine (the order
// flips every iteration), so both see the same machine load. Reported:
// import-ns/call, session-ns/call and ratio = A/B.
func BenchmarkImport_CallVsSession(b *testing.B) {
	server := newServer(nil)
	server.AddTool(&sdk.Tool{Name: "echo", InputSchema: objectSchema},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(req.Params.Arguments)}}}, nil
		})
	ctx := context.Background()
	st, ct := sdk.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer ss.Close()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench"}, &sdk.ClientOptions{ToolListChangedHandler: mcp.ToolListChangedHandler}).Connect(ctx, ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	reg, err := runtime.New()
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = reg.Close(ctx) }()
	im, err := mcp.Import(ctx, reg.Global(), cs)
	if err != nil {
		b.Fatal(err)
	}
	defer im.Close()

	args := json.RawMessage(`{"path":"a.txt","n":3}`)
	call := runtime.Call{ID: "c", Name: "echo", Arguments: args}
	viaImport := func() {
		if res := reg.Global().Execute(ctx, call); res.IsError() {
			b.Fatal(res.ErrorMessage())
		}
	}
	viaSession := func() {
		if res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: args}); err != nil || res.IsError {
			b.Fatal(err)
		}
	}
	var ta, tb time.Duration
	n := 0
	b.ResetTimer()
	for b.Loop() {
		first, second := viaImport, viaSession
		if n%2 == 1 {
			first, second = viaSession, viaImport
		}
		t0 := time.Now()
		first()
		t1 := time.Now()
		second()
		t2 := time.Now()
		if n%2 == 0 {
			ta, tb = ta+t1.Sub(t0), tb+t2.Sub(t1)
		} else {
			tb, ta = tb+t1.Sub(t0), ta+t2.Sub(t1)
		}
		n++
	}
	b.ReportMetric(float64(ta.Nanoseconds())/float64(n), "import-ns/call")
	b.ReportMetric(float64(tb.Nanoseconds())/float64(n), "session-ns/call")
	b.ReportMetric(float64(ta)/float64(tb), "ratio")
}
