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
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/toolscope/toolscope/runtime"
)

func TestMove_Item4_TreesOfALeavingMemberReactivateWithTheirRules(t *testing.T) {
	store := newMemStore()
	tc := startCluster(t, 3, store, func(int) *member { return newMember(t) })
	ctx := bounded(t)
	cl := NewClient(tc.members[0], WithResend(200*time.Millisecond))
	var trees []string
	for i := range 9 {
		id := fmt.Sprintf("mv-%d", i)
		trees = append(trees, id)
		root := cl.Tree(id)
		if _, err := root.Mount(ctx, "echo", raw(`{"name":"say","prefix":"`+id+`:"}`)); err != nil {
			t.Fatal(err)
		}
		if _, err := root.AddGuard(ctx, "deny", raw(`{"tool":"g1","reason":"no g1"}`)); err != nil {
			t.Fatal(err)
		}
		kid, _, err := root.NewScope(ctx, id+"-kid")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kid.Restrict(ctx, runtime.Restriction{Deny: []string{"g2"}}); err != nil {
			t.Fatal(err)
		}
	}
	// The member (other than the client's) hosting the most trees leaves.
	byHost := map[string][]string{}
	for _, id := range trees {
		byHost[store.holderOf(id)] = append(byHost[store.holderOf(id)], id)
	}
	leave := 1
	if len(byHost[tc.members[2].ActorSystem.Address()]) > len(byHost[tc.members[1].ActorSystem.Address()]) {
		leave = 2
	}
	gone := tc.members[leave].ActorSystem.Address()
	moved := byHost[gone]
	if len(moved) == 0 {
		t.Skipf("placement put no tree on members 1 and 2: %v", byHost)
	}
	stop := tc.stops[leave]
	tc.stops[leave] = func() {}
	stop() // graceful: its trees passivate and release their leases
	for _, id := range moved {
		root := cl.Tree(id)
		if r := root.Execute(ctx, runtime.Call{Name: "say", Arguments: raw(`{"text":"x"}`)}); r.IsError() || r.Text() != id+":x" {
			t.Fatalf("%s after the move: mounted tool: %q %q", id, r.Text(), r.ErrorMessage())
		}
		if r := root.Execute(ctx, runtime.Call{Name: "g1", Arguments: raw(`{}`)}); r.ErrorMessage() != "no g1" {
			t.Fatalf("%s after the move: guard: %q", id, r.ErrorMessage())
		}
		names, err := root.Scope(id + "-kid").Schemas(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(names, func(s runtime.ToolSchema) bool { return s.Name == "g2" }) {
			t.Fatalf("%s after the move: the sub-agent's restriction does not hold", id)
		}
		if h := store.holderOf(id); h == gone || h == "" {
			t.Fatalf("%s is still held by the member that left (%q)", id, h)
		}
	}
}

// A member joining takes the trees disthash now places on it, although
// their activations on the other member hold their leases (no idle
// timeout): that member's placement actor stops the activations no longer
// placed on it at the topology change, which releases their leases, and
// the joining member's activations take them. Every call to those trees is
// served (nothing answers SCOPE_UNAVAILABLE for good), each with its rules.
func TestMove_Item22_JoiningMemberTakesItsTreesFromTheHolder(t *testing.T) {
	store := newMemStore()
	m := newMember(t)
	tc := &testCluster{t: t, name: "join" + activationID(), store: store}
	t.Cleanup(tc.stop)
	health := []net.Listener{listen(t), listen(t)}
	for _, h := range health {
		tc.hosts = append(tc.hosts, h.Addr().String())
	}
	tc.members = append(tc.members, tc.startWith(health[0], m))
	tc.waitMembers(1)
	first := tc.members[0].ActorSystem.Address()
	cl := NewClient(tc.members[0], WithResend(200*time.Millisecond))
	ctx := bounded(t)
	var trees []string
	for i := range 24 {
		id := fmt.Sprint("join", i)
		trees = append(trees, id)
		if _, err := cl.Tree(id).Mount(ctx, "echo", raw(`{"name":"say"}`)); err != nil {
			t.Fatal(err)
		}
		if h := store.holderOf(id); h != first {
			t.Fatalf("tree %s held by %q before the second member joined", id, h)
		}
	}
	tc.members = append(tc.members, tc.startWith(health[1], m))
	tc.waitMembers(2)
	second := tc.members[1].ActorSystem.Address()
	moved := 0
	for _, id := range trees {
		cctx, cancel := context.WithTimeout(ctx, waitLimit/2)
		r := cl.Tree(id).Execute(cctx, runtime.Call{Name: "say", Arguments: raw(`{"text":"hi"}`)})
		cancel()
		if r.Text() != "hi" {
			t.Fatalf("tree %s after the join: %q %q %q", id, r.Code(), r.Text(), r.ErrorMessage())
		}
		if store.holderOf(id) == second {
			moved++
		}
	}
	if moved == 0 {
		t.Fatalf("none of %d trees moved to the joining member", len(trees))
	}
	t.Logf("%d of %d trees moved to the joining member and were served there", moved, len(trees))
}
