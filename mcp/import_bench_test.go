package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolscope/toolscope/mcp"
	"github.com/toolscope/toolscope/runtime"
)

// benchSetup imports an echo tool over an in-memory session and returns
// the two ways to call it: through the scope, and on the session directly.
func benchSetup(b *testing.B) (viaImport, viaSession func() error) {
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
	b.Cleanup(func() { _ = ss.Close() })
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench"}, &sdk.ClientOptions{ToolListChangedHandler: mcp.ToolListChangedHandler}).Connect(ctx, ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cs.Close() })
	reg, err := runtime.New()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = reg.Close(ctx) })
	im, err := mcp.Import(ctx, reg.Global(), cs)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(im.Close)

	args := json.RawMessage(`{"path":"a.txt","n":3}`)
	call := runtime.Call{ID: "c", Name: "echo", Arguments: args}
	viaImport = func() error {
		if res := reg.Global().Execute(ctx, call); res.IsError() {
			return errors.New(res.ErrorMessage())
		}
		return nil
	}
	viaSession = func() error {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: args})
		if err == nil && res.IsError {
			err = errors.New("isError")
		}
		return err
	}
	return viaImport, viaSession
}

// BenchmarkImport_CallVsSession measures the pipeline's added cost on an
// imported tool: one scope.Execute of the imported tool (A) against one
// CallTool on the same go-sdk session (B), same tool, same arguments,
// in-memory transport. A and B alternate in one goroutine (the order
// flips every iteration), so both see the same machine load. Reported:
// import-ns/call, session-ns/call and ratio = A/B.
func BenchmarkImport_CallVsSession(b *testing.B) {
	viaImport, viaSession := benchSetup(b)
	var ta, tb time.Duration
	n := 0
	b.ResetTimer()
	for b.Loop() {
		first, second := viaImport, viaSession
		if n%2 == 1 {
			first, second = viaSession, viaImport
		}
		t0 := time.Now()
		err1 := first()
		t1 := time.Now()
		err2 := second()
		t2 := time.Now()
		if err := errors.Join(err1, err2); err != nil {
			b.Fatal(err)
		}
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

// BenchmarkImport_Allocs runs each path on its own, for its allocations
// (its times are not comparable: see BenchmarkImport_CallVsSession).
func BenchmarkImport_Allocs(b *testing.B) {
	viaImport, viaSession := benchSetup(b)
	b.Run("import", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := viaImport(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("session", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := viaSession(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
