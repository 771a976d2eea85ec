//go:build !race

// The tests in this file run protoactor's cluster in process. They are
// left out of -race builds: protoactor-go's cluster (v0.0.0-20240822202345)
// has data races of its own that any use of it triggers — disthash's
// Manager.Get against onClusterTopology, MemberList.Members and MemberSet
// against UpdateClusterTopology, remote.BlockList.Block against
// BlockedMembers, the Informer's gossip state — none in this package's code.
// The grain's own concurrency (tree.go, mutate.go) runs under -race in the
// tests that drive a tree directly (tree_test.go, checker_test.go).

package cluster

import (
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toolscope/toolscope/otelscope"
	"github.com/toolscope/toolscope/runtime"
)

func TestTrace_Item4_RemoteCallSpanIsTheCallersChild(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(bounded(t)) })
	store := newMemStore()
	tc := startCluster(t, 2, store, func(int) *member {
		m := newMember(t)
		m.hooks = otelscope.Hooks(otelscope.WithTracerProvider(tp))
		return m
	})
	cl := NewClient(tc.members[0])
	ctx, caller := tp.Tracer("test").Start(bounded(t), "caller")
	for _, tree := range []string{"tr-a", "tr-b", "tr-c"} { // some are hosted by the other member
		if r := cl.Tree(tree).Execute(ctx, runtime.Call{ID: tree + "-1", Name: "g1", Arguments: raw(`{}`)}); r.IsError() {
			t.Fatalf("%s: %q", tree, r.ErrorMessage())
		}
	}
	caller.End()
	var children int
	for _, s := range rec.Ended() {
		if s.Name() != "execute_tool g1" {
			continue
		}
		if s.Parent().SpanID() != caller.SpanContext().SpanID() || s.SpanContext().TraceID() != caller.SpanContext().TraceID() {
			t.Fatalf("span %s: parent %s in trace %s, want the caller %s in trace %s", s.Name(), s.Parent().SpanID(), s.SpanContext().TraceID(), caller.SpanContext().SpanID(), caller.SpanContext().TraceID())
		}
		if !s.Parent().IsRemote() {
			t.Fatal("the remote call's parent is not marked remote")
		}
		children++
	}
	if children != 3 {
		t.Fatalf("%d execute_tool spans, want 3", children)
	}
}
