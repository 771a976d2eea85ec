package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolscope/toolscope/mcp"
	"github.com/toolscope/toolscope/runtime"
)

type chainCodedErr struct{}

func (chainCodedErr) Error() string { return "disk quota exceeded" }
func (chainCodedErr) Code() string  { return "QUOTA" }
func (chainCodedErr) Name() string  { return "QuotaError" }

type chainPath struct {
	Path string `json:"path"`
}

type chainStat struct {
	Path string `json:"path"`
	Size int    `json:"size"`
}

// TestChain_ExportImportTurn serves one registry's scope over MCP, imports
// it into another registry's scope, and runs a turn there: every result
// arrives unchanged (the same text, value and code as a direct call on the
// exporting side), in model order, and the importing side's parallel
// classification makes the two reads overlap on the exporting side.
func TestChain_ExportImportTurn(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()

	// The exporting registry: two reads that prove they overlapped (each
	// waits, bounded, for the other), a write, a coded failure, a typed
	// tool with an object output.
	src := newRegistry(t)
	var mu sync.Mutex
	inFlight := 0
	both := make(chan struct{})
	read, err := runtime.NewTool("read", "Read a file", func(ctx context.Context, in chainPath, rc *runtime.RunContext) (string, error) {
		mu.Lock()
		inFlight++
		if inFlight == 2 {
			close(both)
		}
		mu.Unlock()
		select {
		case <-both:
			return "contents of " + in.Path + " (overlapped)", nil
		case <-time.After(3 * time.Second):
			return "contents of " + in.Path + " (alone)", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}, runtime.WithParallel())
	must(t, err)
	write, err := runtime.NewTool("write", "Write a file", func(ctx context.Context, in chainPath, rc *runtime.RunContext) (string, error) {
		return "wrote " + in.Path, nil
	})
	must(t, err)
	quota, err := runtime.NewTool("quota", "Fails with a code", func(ctx context.Context, in struct{}, rc *runtime.RunContext) (string, error) {
		return "", chainCodedErr{}
	})
	must(t, err)
	stat, err := runtime.NewTool("stat", "Size of a file", func(ctx context.Context, in chainPath, rc *runtime.RunContext) (chainStat, error) {
		return chainStat{Path: in.Path, Size: len(in.Path)}, nil
	})
	must(t, err)
	for _, d := range []runtime.Definition{read, write, quota, stat} {
		_, err := src.Global().Register(d)
		must(t, err)
	}
	srv, err := mcp.NewServer(src.Global())
	must(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	st, ct := sdk.NewInMemoryTransports()
	_, err = srv.Connect(ctx, st, nil)
	must(t, err)
	cs, err := newClient().Connect(ctx, ct, nil)
	must(t, err)
	t.Cleanup(func() { _ = cs.Close() })

	// The importing registry: reads are parallel there, by its own policy.
	dst := newRegistry(t)
	scope, err := dst.NewScope("agent")
	must(t, err)
	im, err := mcp.Import(ctx, scope, cs, mcp.WithPrefix("remote_"),
		mcp.WithClassifier(func(tool *sdk.Tool, _ json.RawMessage) bool { return tool.Name == "read" }))
	must(t, err)
	t.Cleanup(im.Close)

	calls := []runtime.TurnCall{
		{ID: "1", Name: "remote_read", ArgumentsText: `{"path":"a.go"}`},
		{ID: "2", Name: "remote_read", ArgumentsText: `{"path":"b.go"}`},
		{ID: "3", Name: "remote_write", ArgumentsText: `{"path":"c.go"}`},
		{ID: "4", Name: "remote_quota"},
		{ID: "5", Name: "remote_stat", ArgumentsText: `{"path":"d.go"}`},
	}
	if m := scope.ExecutionMode(runtime.Call{Name: "remote_read", Arguments: json.RawMessage(`{"path":"a.go"}`)}); m != runtime.Parallel {
		t.Fatalf("imported read is %v, want parallel", m)
	}
	if m := scope.ExecutionMode(runtime.Call{Name: "remote_write", Arguments: json.RawMessage(`{"path":"a.go"}`)}); m != runtime.Exclusive {
		t.Fatalf("imported write is %v, want exclusive", m)
	}
	res, err := scope.ExecuteTurn(ctx, calls)
	must(t, err)
	if len(res.Results) != len(calls) {
		t.Fatalf("%d results for %d calls", len(res.Results), len(calls))
	}

	// What a direct call on the exporting side gives, for comparison (the
	// reads are not compared: their text says whether they overlapped).
	direct := func(name, args string) *runtime.Result {
		return src.Global().Execute(ctx, runtime.Call{ID: "direct-" + name, Name: name, Arguments: json.RawMessage(args)})
	}
	want := []struct {
		text    string
		isError bool
		code    runtime.Code
		value   string
	}{
		// A tool without an object output declares no outputSchema over
		// MCP, so on the importing side its value is its content blocks.
		{text: "contents of a.go (overlapped)", value: `[{"type":"text","text":"contents of a.go (overlapped)"}]`},
		{text: "contents of b.go (overlapped)", value: `[{"type":"text","text":"contents of b.go (overlapped)"}]`},
		{text: direct("write", `{"path":"c.go"}`).Text()},
		{text: "Error: " + direct("quota", `{}`).ErrorMessage(), isError: true, code: direct("quota", `{}`).Code()},
		{text: direct("stat", `{"path":"d.go"}`).Text(), value: `{"path":"d.go","size":4}`},
	}
	for i, w := range want {
		r := res.Results[i]
		if r.Text() != w.text || r.IsError() != w.isError || r.Code() != w.code {
			t.Errorf("result %d (%s): text %q error %v code %q, want text %q error %v code %q",
				i, calls[i].ID, r.Text(), r.IsError(), r.Code(), w.text, w.isError, w.code)
		}
		if w.value != "" {
			if v, ok := r.Value(); !ok || string(v) != w.value {
				t.Errorf("result %d value %s, want %s", i, v, w.value)
			}
		}
	}
	if got := want[3].code; got != "QUOTA" {
		t.Errorf("direct quota code %q, want QUOTA", got)
	}
	// Model order in the turn's record: results commit in call order.
	var order []string
	for _, e := range res.Events {
		if e.Kind == runtime.ResultRecorded {
			order = append(order, e.CallID)
		}
	}
	if fmt.Sprint(order) != "[1 2 3 4 5]" {
		t.Errorf("results recorded in order %v, want [1 2 3 4 5]", order)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		dumpGoroutines(t)
		t.Fatal(errors.Unwrap(err), err)
	}
}
