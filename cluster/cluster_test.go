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
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	protocluster "github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/identitylookup/disthash"
	"github.com/asynkron/protoactor-go/remote"
)

// listen binds a loopback port and keeps it (no window for another
// process to take it between choosing and binding).
func listen(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// testCluster is N members (and optionally client-only members) in one
// process: separate actor systems on loopback, the automanaged provider
// with distinct ports, disthash placement, one shared store.
type testCluster struct {
	t       testing.TB
	name    string
	store   Store
	hosts   []string
	members []*protocluster.Cluster
	code    []*member
	stops   []func()
}

var quiet = actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
})

func startCluster(t testing.TB, n int, store Store, code func(i int) *member) *testCluster {
	t.Helper()
	tc := &testCluster{t: t, name: "ts" + activationID(), store: store}
	t.Cleanup(tc.stop)
	health := make([]net.Listener, n)
	for i := range health {
		health[i] = listen(t)
		tc.hosts = append(tc.hosts, health[i].Addr().String())
	}
	for i := range n {
		m := code(i)
		tc.code = append(tc.code, m)
		tc.members = append(tc.members, tc.start(health[i], m, false))
	}
	tc.waitMembers(n)
	return tc
}

// startWith starts one member with the tree kind and extra kinds.
func (tc *testCluster) startWith(health net.Listener, m *member, extra ...*protocluster.Kind) *protocluster.Cluster {
	return tc.start(health, m, false, extra...)
}

// start starts one member (or a client-only one when m is nil) whose
// health endpoint serves on the listener given; its gRPC remote binds a
// loopback port of the system's choosing.
func (tc *testCluster) start(ln net.Listener, m *member, clientOnly bool, extra ...*protocluster.Kind) *protocluster.Cluster {
	t := tc.t
	t.Helper()
	sys := actor.NewActorSystem(quiet)
	prov := autoManaged(sys, ln, 100*time.Millisecond, tc.hosts...)
	var opts []protocluster.ConfigOption
	if m != nil {
		k, err := Kind(m.config(tc.store))
		if err != nil {
			t.Fatal(err)
		}
		opts = append(opts, protocluster.WithKinds(append(extra, k)...))
	}
	cfg := protocluster.Configure(tc.name, prov, disthash.New(), remote.Configure("127.0.0.1", 0), opts...)
	c := protocluster.New(sys, cfg)
	if clientOnly {
		c.StartClient()
		tc.stops = append(tc.stops, func() {
			_ = ShutdownClient(c)
			_ = prov.Shutdown(true)
			_ = ln.Close()
		})
	} else {
		c.StartMember()
		tc.stops = append(tc.stops, func() { _ = Shutdown(c, true) }) // passivates its trees
	}
	return c
}

// stop shuts every member down, concurrently (a graceful shutdown waits
// two seconds for ownership to move).
func (tc *testCluster) stop() {
	var wg sync.WaitGroup
	for _, f := range tc.stops {
		wg.Add(1)
		go func() { defer wg.Done(); f() }()
	}
	wg.Wait()
}

// waitMembers waits until every member sees n members.
func (tc *testCluster) waitMembers(n int) {
	tc.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for _, c := range tc.members {
		for c.MemberList.Members().Len() != n {
			if time.Now().After(deadline) {
				failHung(tc.t, fmt.Sprintf("membership: a member sees %d of %d members", c.MemberList.Members().Len(), n))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// clientOnly returns a new client-only member.
func (tc *testCluster) clientOnly() *protocluster.Cluster {
	return tc.start(listen(tc.t), nil, true)
}
