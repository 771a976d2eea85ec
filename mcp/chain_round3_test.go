package mcp_test

import (
	"context"
	"encoding/json"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolscope/toolscope/mcp"
	"github.com/toolscope/toolscope/runtime"
)

// TestChain_ParallelToolStaysParallelThroughExportImport: the exporter
// declares a tool that is always parallel with readOnlyHint, so importing
// it with WithReadOnlyParallel keeps it parallel; an exclusive tool, or
// one whose classifier decides per call, stays exclusive (issue 20,
// item 19).
func TestChain_ParallelToolStaysParallelThroughExportImport(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	src := newRegistry(t)
	body := func(context.Context, chainPath, *runtime.RunContext) (string, error) { return "ok", nil }
	read, err := runtime.NewTool("read", "Read a file", body, runtime.WithParallel())
	must(t, err)
	write, err := runtime.NewTool("write", "Write a file", body)
	must(t, err)
	shell, err := runtime.NewTool("shell", "Run a command", body, runtime.WithClassifier(func(_ context.Context, args json.RawMessage) (bool, error) {
		return string(args) == `{"path":"ls"}`, nil
	}))
	must(t, err)
	for _, d := range []runtime.Definition{read, write, shell} {
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

	dst := newRegistry(t)
	scope, err := dst.NewScope("agent")
	must(t, err)
	im, err := mcp.Import(ctx, scope, cs, mcp.WithReadOnlyParallel())
	must(t, err)
	t.Cleanup(im.Close)
	args := json.RawMessage(`{"path":"ls"}`)
	for name, want := range map[string]runtime.Mode{"read": runtime.Parallel, "write": runtime.Exclusive, "shell": runtime.Exclusive} {
		if m := scope.ExecutionMode(runtime.Call{Name: name, Arguments: args}); m != want {
			t.Errorf("imported %s is %v, want %v", name, m, want)
		}
	}
}
