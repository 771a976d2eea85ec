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

import "testing"

// TestRules_Item6_RemoteScope runs the same table as TestRules_Item6_LocalScope
// against remote handles: a tree per rule, hosted by one of two members,
// reached through the client on the first.
func TestRules_Item6_RemoteScope(t *testing.T) {
	m := newMember(t)
	tc := startCluster(t, 2, newMemStore(), func(int) *member { return m })
	cl := NewClient(tc.members[0])
	for i, rule := range contractRules {
		t.Run(rule.name, func(t *testing.T) {
			root := cl.Tree("rules-" + string(rune('a'+i)))
			rule.run(t, m, remoteScope{s: root, ctx: bounded(t)})
		})
	}
}
