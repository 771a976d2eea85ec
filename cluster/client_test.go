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
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/toolscope/toolscope/runtime"
)

func TestClient_Item5_ThreeMembersServeTreesThroughTheClient(t *testing.T) {
	store := newMemStore()
	tc := startCluster(t, 3, store, func(int) *member { return newMember(t) })
	ctx := bounded(t)
	cl := NewClient(tc.members[0])
	for _, id := range []string{"agent-1", "agent-2", "agent-3", "agent-4"} {
		root := cl.Tree(id)
		mid, err := root.Mount(ctx, "echo", raw(`{"name":"say","prefix":"`+id+`:"}`))
		if err != nil {
			t.Fatalf("%s: Mount: %v", id, err)
		}
		if r := root.Execute(ctx, runtime.Call{ID: id + "-c1", Name: "say", Arguments: raw(`{"text":"hi"}`)}); r.IsError() || r.Text() != id+":hi" {
			t.Fatalf("%s: Execute: %q %q", id, r.Text(), r.ErrorMessage())
		}
		kid, _, err := root.NewScope(ctx, id+"/kid")
		if err != nil {
			t.Fatalf("%s: NewScope: %v", id, err)
		}
		rid, err := kid.Restrict(ctx, runtime.Restriction{Allow: []string{"say"}})
		if err != nil {
			t.Fatalf("%s: Restrict: %v", id, err)
		}
		schemas, err := kid.Schemas(ctx)
		if err != nil || len(schemas) != 1 || schemas[0].Name != "say" {
			t.Fatalf("%s: the sub-agent's view: %v %v", id, schemas, err)
		}
		if _, err := root.AddGuard(ctx, "deny", raw(`{"tool":"say","reason":"muted"}`)); err != nil {
			t.Fatal(err)
		}
		if r := kid.Execute(ctx, runtime.Call{Name: "say", Arguments: raw(`{"text":"x"}`)}); r.ErrorMessage() != "muted" {
			t.Fatalf("%s: the root's guard in the sub-agent: %q", id, r.ErrorMessage())
		}
		if err := kid.Unmount(ctx, rid); !hasCode(err, CodeInvalid) {
			t.Fatalf("%s: Unmount with a restriction's id: %v", id, err)
		}
		if err := kid.Unrestrict(ctx, rid); err != nil {
			t.Fatal(err)
		}
		if err := root.Unmount(ctx, mid); err != nil {
			t.Fatal(err)
		}
		if _, found, err := root.Get(ctx, "say"); found || err != nil {
			t.Fatalf("%s: Get after Unmount: %v %v", id, found, err)
		}
	}
	// Any member, or a client-only member, reaches the same trees.
	other := NewClient(tc.clientOnly())
	if r := other.Tree("agent-2").Execute(ctx, runtime.Call{ID: "agent-2-c1", Name: "say"}); r.IsError() || r.Text() != "agent-2:hi" {
		t.Fatalf("a repeated call id from another client must get the recorded result: %q %q", r.Text(), r.ErrorMessage())
	}
	mode, err := other.Tree("agent-1").ExecutionMode(ctx, runtime.Call{Name: "par", Arguments: raw(`{}`)})
	if err != nil || mode != runtime.Parallel {
		t.Fatalf("ExecutionMode: %v %v", mode, err)
	}
	tr, err := other.Tree("agent-3").ExecuteTurn(ctx, []runtime.TurnCall{{ID: "1", Name: "g1"}, {ID: "2", Name: "nosuch"}}, TurnID("t"))
	if err != nil || len(tr.Results) != 2 || tr.Results[0].IsError() || tr.Results[1].Code() != runtime.CodeUnknownTool {
		t.Fatalf("turn: %v %+v", err, tr)
	}
	if err := other.Tree("agent-4").Dispose(ctx); err != nil {
		t.Fatal(err)
	}
	if store.state("agent-4") != nil {
		t.Fatal("a disposed tree's state is still stored")
	}
}

func hasCode(err error, c runtime.Code) bool {
	var e *Error
	return errors.As(err, &e) && e.Code() == string(c)
}

func TestClient_Item5_CancellationReachesTheRemoteBody(t *testing.T) {
	store := newMemStore()
	m := newMember(t)
	tc := startCluster(t, 1, store, func(int) *member { return m })
	cl := NewClient(tc.members[0])
	ctx, cancel := context.WithCancel(bounded(t))
	done := make(chan *runtime.Result, 1)
	go func() { done <- cl.Tree("t").Execute(ctx, runtime.Call{ID: "blk", Name: "block"}) }()
	awaitClosed(t, m.startedCh("blk"), "the remote body to start")
	cancel()
	select {
	case r := <-done:
		if !r.IsError() || !strings.Contains(r.ErrorMessage(), "context canceled") && r.Code() != runtime.CodeAborted {
			t.Fatalf("cancelled remote call: %v %q %q", r.IsError(), r.Code(), r.ErrorMessage())
		}
	case <-bounded(t).Done():
		failHung(t, "the cancelled remote call to end")
	}
}

func TestClient_Item4_IdleTreePassivatesAndReactivates(t *testing.T) {
	store := newMemStore()
	m := newMember(t)
	m.idle = 200 * time.Millisecond
	tc := startCluster(t, 1, store, func(int) *member { return m })
	cl := NewClient(tc.members[0])
	ctx := bounded(t)
	if _, err := cl.Tree("idle").Mount(ctx, "echo", raw(`{"name":"say"}`)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the idle tree to passivate and release its lease", func() bool { return store.holderOf("idle") == "" })
	if r := cl.Tree("idle").Execute(ctx, runtime.Call{Name: "say", Arguments: raw(`{"text":"back"}`)}); r.Text() != "back" {
		t.Fatalf("after re-activation: %q %q", r.Text(), r.ErrorMessage())
	}
}

func TestClient_Item5_MovingTreeIsRetriedUntilServed(t *testing.T) {
	store := newMemStore()
	m := newMember(t)
	tc := startCluster(t, 1, store, func(int) *member { return m })
	// Another member holds the tree for a while (it is moving here).
	if _, err := store.Acquire(bounded(t), "moving", "elsewhere", 500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	cl := NewClient(tc.members[0], WithResend(100*time.Millisecond), WithDefaultTimeout(waitLimit))
	r := cl.Tree("moving").Execute(context.Background(), runtime.Call{ID: "m1", Name: "count", Arguments: raw(`{}`)})
	if r.IsError() || m.runs("m1") != 1 {
		t.Fatalf("a call to a moving tree: %q %q (ran %d)", r.Code(), r.ErrorMessage(), m.runs("m1"))
	}
}

// A client caches the PID of a tree's grain (one round trip per call, as
// protoactor's own grain calls): when the grain passivated on another
// member, the cached PID reaches nothing (a dead letter) and the client
// looks the tree up again at once, well before its next resend.
func TestClient_Item5_StalePIDAfterPassivationIsLookedUpAgain(t *testing.T) {
	store := newMemStore()
	m := newMember(t)
	m.idle = 200 * time.Millisecond
	tc := startCluster(t, 2, store, func(int) *member { return m })
	// No resend within the call's deadline: only the dead-letter path can
	// serve the call after the passivation.
	cl := NewClient(tc.members[0], WithResend(time.Hour))
	other := tc.members[1].ActorSystem.Address()
	ctx := bounded(t)
	tree := ""
	for i := 0; tree == ""; i++ {
		if i > 200 {
			t.Fatal("no tree placed on the second member")
		}
		id := fmt.Sprint("stale", i)
		if r := cl.Tree(id).Execute(ctx, runtime.Call{Name: "g1", Arguments: raw(`{}`)}); r.IsError() {
			t.Fatal(r.ErrorMessage())
		}
		if store.holderOf(id) == other {
			tree = id
		}
	}
	eventually(t, "the idle tree to passivate and release its lease", func() bool { return store.holderOf(tree) == "" })
	cctx, cancel := context.WithTimeout(ctx, waitLimit/2)
	defer cancel()
	if r := cl.Tree(tree).Execute(cctx, runtime.Call{Name: "g1", Arguments: raw(`{}`)}); r.IsError() {
		t.Fatalf("after the passivation, through a stale PID: %q %q", r.Code(), r.ErrorMessage())
	}
}
