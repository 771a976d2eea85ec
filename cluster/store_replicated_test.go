package cluster

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// freePorts reserves n loopback ports (closed again before use: a test-only race).
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	ports := make([]int, n)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = l.Addr().(*net.TCPAddr).Port
		defer l.Close()
	}
	return ports
}

// startReplicated starts three NATS servers clustered on loopback with JetStream, and returns
// the client URLs once a store with three replicas can be opened on them.
func startReplicated(t *testing.T) []string {
	t.Helper()
	routes := freePorts(t, 3)
	var routeURLs []string
	for _, p := range routes {
		routeURLs = append(routeURLs, fmt.Sprintf("nats://127.0.0.1:%d", p))
	}
	var urls []string
	for i := range 3 {
		o := &server.Options{
			ServerName: fmt.Sprint("ts-", i),
			Host:       "127.0.0.1",
			Port:       server.RANDOM_PORT,
			JetStream:  true,
			StoreDir:   t.TempDir(),
			NoSigs:     true,
			NoLog:      true,
			Cluster:    server.ClusterOpts{Name: "ts", Host: "127.0.0.1", Port: routes[i]},
			Routes:     server.RoutesFromStr(strings.Join(routeURLs, ",")),
		}
		srv, err := server.NewServer(o)
		if err != nil {
			t.Fatal(err)
		}
		srv.Start()
		t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
		if !srv.ReadyForConnections(waitLimit) {
			t.Fatalf("server %d not ready", i)
		}
		urls = append(urls, srv.ClientURL())
	}
	return urls
}

// On a three-replica stream the fence is checked by the stream's Raft leader, and a fenced
// write racing another on the same lease key may be refused as a conflict in flight
// ("wrong last sequence", code 10164) although the lease is still held: the store re-reads the
// key and tries again, so a live lease is never reported lost. The checker's invariants hold as
// on one server.
func TestStore_Replicated_CheckerHolds(t *testing.T) {
	if testing.Short() {
		t.Skip("three clustered NATS servers")
	}
	urls := startReplicated(t)
	nc, err := nats.Connect(strings.Join(urls, ","))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	clock := newFakeClock()
	var st *JetStreamStore
	deadline := time.Now().Add(waitLimit)
	for { // until the cluster has elected its JetStream meta leader
		st, err = NewJetStreamStore(context.Background(), js, WithReplicas(3), WithMemoryStorage(), WithClock(clock.Now), WithOpTimeout(10*time.Second))
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no replicated store within %s: %v", waitLimit, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	env := storeEnv{st, clock}
	ctx := testCtx(t)

	// Concurrent fenced writes of one live lease all land.
	l := mustAcquire(t, st, "tree", "a", time.Hour)
	ids := make([]string, 16)
	for i := range ids {
		ids[i] = fmt.Sprint("c", i)
	}
	if _, err := st.Claim(ctx, l, ids); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, len(ids))
	for _, id := range ids {
		go func() { errs <- st.Record(ctx, l, id, []byte(id)) }()
	}
	for range ids {
		select {
		case err := <-errs:
			if err != nil {
				t.Fatalf("concurrent record with a live lease: %v", err)
			}
		case <-time.After(waitLimit):
			t.Fatalf("hang: concurrent records\n%s", goroutineDump())
		}
	}
	got, err := st.Claim(ctx, l, ids)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range got {
		if c.State != ClaimDone || string(c.Result) != c.ID {
			t.Fatalf("%s after concurrent records = %v %q", c.ID, c.State, c.Result)
		}
	}
	if err := st.Release(ctx, l); err != nil {
		t.Fatal(err)
	}

	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	checkStore(t, seed, env)
}
