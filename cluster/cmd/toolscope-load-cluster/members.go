package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	protocluster "github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/identitylookup/disthash"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolscope/toolscope/cluster"
	"github.com/toolscope/toolscope/cluster/loadtarget"
	"github.com/toolscope/toolscope/runtime"
)

// joinWait bounds the wait for the client to see every member.
const joinWait = 60 * time.Second

// conn is the client-only member the load runs through, and what close
// shuts down: the client, and the in-process members and store if this
// process started them.
type conn struct {
	client *protocluster.Cluster
	where  string // for the report (Report.Target)
	name   string // the cluster's name
	hosts  []string
	stops  []func()
}

// close shuts everything down in reverse order of starting: the client
// first, then the members (concurrently: a graceful shutdown waits for
// ownership to move), then the store.
func (c *conn) close() {
	for i := len(c.stops) - 1; i >= 0; i-- {
		c.stops[i]()
	}
}

var quiet = actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
})

// startClient starts a client-only member of cluster name whose members'
// health endpoints are hosts, and waits until it sees want members (any
// number ≥ 1 when want is 0), for joinWait at most, or until ctx ends
// (Ctrl-C).
func (c *conn) startClient(ctx context.Context, name string, hosts []string, want int) error {
	sys := actor.NewActorSystem(quiet)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	prov := cluster.AutoManagedListener(sys, ln, 100*time.Millisecond, hosts...)
	cl := protocluster.New(sys, protocluster.Configure(name, prov, disthash.New(), remote.Configure("127.0.0.1", 0)))
	cl.StartClient()
	c.client = cl
	c.stops = append(c.stops, func() {
		_ = cluster.ShutdownClient(cl)
		_ = prov.Shutdown(true)
		_ = ln.Close()
	})
	deadline := time.Now().Add(joinWait)
	for {
		n := cl.MemberList.Members().Len()
		if (want == 0 && n > 0) || (want > 0 && n == want) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("membership: the client sees %d members of cluster %q after %s (want %d)", n, name, joinWait, want)
		}
		select {
		case <-ctx.Done(): // Ctrl-C while waiting for members
			return fmt.Errorf("membership: interrupted while waiting for the members of cluster %q (the client sees %d, want %d): %w", name, n, max(want, 1), context.Cause(ctx))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// peerList splits -peers into its host:port endpoints, each trimmed of
// spaces ("h1:1, h2:2" is two endpoints); an empty one, or one that is not
// a host:port or has a space inside, is refused, naming it.
func peerList(s string) ([]string, error) {
	var hosts []string
	for i, h := range strings.Split(s, ",") {
		h = strings.TrimSpace(h)
		if h == "" {
			return nil, fmt.Errorf("-peers: endpoint %d of %q is empty", i+1, s)
		}
		if strings.ContainsAny(h, " \t") {
			return nil, fmt.Errorf("-peers: %q has a space inside", h)
		}
		if _, _, err := net.SplitHostPort(h); err != nil {
			return nil, fmt.Errorf("-peers: %q is not a host:port: %v", h, err)
		}
		hosts = append(hosts, h)
	}
	return hosts, nil
}

// join joins a running cluster as a client-only member.
func join(ctx context.Context, name string, hosts []string) (*conn, error) {
	for _, h := range hosts {
		if _, _, err := net.SplitHostPort(h); err != nil {
			return nil, fmt.Errorf("-peers: %q is not a host:port: %v", h, err)
		}
	}
	c := &conn{where: fmt.Sprintf("cluster %q (%d members given)", name, len(hosts))}
	if err := c.startClient(ctx, name, hosts, 0); err != nil {
		c.close()
		return nil, err
	}
	c.where = fmt.Sprintf("cluster %q (%d members)", name, c.client.MemberList.Members().Len())
	return c, nil
}

// startLocal starts n members in this process on an embedded NATS
// JetStream store (in a temporary directory removed by close), each with
// the load tool's catalog entry, and joins them as a client-only member.
func startLocal(ctx context.Context, n int, lease time.Duration) (c *conn, err error) {
	c = &conn{where: fmt.Sprintf("cluster of %d in-process member(s), embedded NATS JetStream store", n)}
	defer func() {
		if err != nil {
			c.close()
			c = nil
		}
	}()
	dir, err := os.MkdirTemp("", "toolscope-load-cluster-")
	if err != nil {
		return c, err
	}
	c.stops = append(c.stops, func() { _ = os.RemoveAll(dir) })
	emb, err := cluster.StartEmbedded(filepath.Join(dir, "nats"))
	if err != nil {
		return c, err
	}
	c.stops = append(c.stops, emb.Close)

	health := make([]net.Listener, n)
	hosts := make([]string, n)
	for i := range health {
		ln, err := net.Listen("tcp", "127.0.0.1:0") // bound and kept: no window for another process
		if err != nil {
			for _, l := range health[:i] {
				_ = l.Close()
			}
			return c, err
		}
		health[i], hosts[i] = ln, ln.Addr().String()
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := "load" + hex.EncodeToString(b[:])
	c.name, c.hosts = name, hosts
	var members []func()
	c.stops = append(c.stops, func() { // the members, concurrently
		var wg sync.WaitGroup
		for _, stop := range members {
			wg.Add(1)
			go func() { defer wg.Done(); stop() }()
		}
		wg.Wait()
	})
	for i := range n {
		stop, err := startMember(name, emb.URL(), health[i], hosts, lease)
		if err != nil {
			for _, l := range health[i:] {
				_ = l.Close()
			}
			return c, fmt.Errorf("member %d: %w", i, err)
		}
		members = append(members, stop)
	}
	if err := c.startClient(ctx, name, hosts, n); err != nil {
		return c, err
	}
	return c, nil
}

// startMember starts one member: its own NATS connection and store, a
// catalog with the load tool's entry, a registry with no global tools
// (declared timeouts apply, as in process), the tree kind.
func startMember(name, natsURL string, health net.Listener, hosts []string, lease time.Duration) (stop func(), err error) {
	nc, err := nats.Connect(natsURL, nats.Name("toolscope-load-cluster member"), nats.MaxReconnects(-1))
	if err != nil {
		_ = health.Close()
		return nil, err
	}
	fail := func(err error) (func(), error) {
		nc.Close()
		_ = health.Close()
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return fail(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	store, err := cluster.NewJetStreamStore(ctx, js)
	cancel()
	if err != nil {
		return fail(err)
	}
	cat := cluster.NewCatalog()
	if err := loadtarget.AddTo(cat); err != nil {
		return fail(err)
	}
	kind, err := cluster.Kind(cluster.Config{Store: store, Catalog: cat, LeaseTTL: lease,
		NewRegistry: func() (*runtime.Registry, error) { return runtime.New() }})
	if err != nil {
		return fail(err)
	}
	sys := actor.NewActorSystem(quiet)
	prov := cluster.AutoManagedListener(sys, health, 100*time.Millisecond, hosts...)
	m := protocluster.New(sys, protocluster.Configure(name, prov, disthash.New(), remote.Configure("127.0.0.1", 0), protocluster.WithKinds(kind)))
	m.StartMember()
	return func() {
		if err := cluster.Shutdown(m, true); err != nil && !errors.Is(err, context.Canceled) {
			fmt.Fprintln(os.Stderr, "toolscope-load-cluster: member shutdown:", err)
		}
		nc.Close()
	}, nil
}
