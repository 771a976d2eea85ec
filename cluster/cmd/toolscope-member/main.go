// Command toolscope-member is one member of a toolscope cluster on one
// machine: it hosts agent trees as grains (cluster.Kind) with the fixture
// code of the multi-process tests (cluster/internal/fixture: global tools
// record, g2, g3; catalog entries echo and deny; every body appends its call
// id to -calls), its state in the JetStream store at -nats, membership by
// protoactor's automanaged provider on loopback, gRPC on 127.0.0.1 at a
// port of the system's choosing.
//
// It prints "ready <actor system address>" on stdout once it serves, and
// on SIGTERM or SIGINT shuts down gracefully (its trees passivate and
// release their leases) and exits 0.
//
//	toolscope-member -nats nats://127.0.0.1:4222 -health 127.0.0.1:6331 \
//	    -peers 127.0.0.1:6331,127.0.0.1:6332,127.0.0.1:6333 -calls calls-1.txt
//
// -health-fd N serves the health endpoint on an inherited listening socket
// (file descriptor N) instead of binding -health: the tests bind every
// member's port first, so no other process can take one in between.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	protocluster "github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/identitylookup/disthash"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolscope/toolscope/cluster"
	"github.com/toolscope/toolscope/cluster/internal/fixture"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "toolscope-member:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		name     = flag.String("name", "toolscope", "the cluster's name (the same on every member)")
		health   = flag.String("health", "", "this member's health endpoint, a loopback host:port (one of -peers)")
		healthFD = flag.Int("health-fd", 0, "serve the health endpoint on this inherited listening socket instead of binding -health")
		peers    = flag.String("peers", "", "comma-separated health endpoints of every member, this one included")
		natsURL  = flag.String("nats", "", "the NATS URL of the store (JetStream)")
		bucket   = flag.String("bucket", cluster.DefaultBucket, "the store's bucket (the same on every member)")
		calls    = flag.String("calls", "", "the file every tool body appends its call id to (required)")
		lease    = flag.Duration("lease", 10*time.Second, "a tree activation's lease TTL")
		refresh  = flag.Duration("refresh", 200*time.Millisecond, "how often membership is polled")
		verbose  = flag.Bool("v", false, "protoactor's logs on stderr")
	)
	flag.Parse()
	switch {
	case *natsURL == "":
		return errors.New("-nats is required")
	case *calls == "":
		return errors.New("-calls is required")
	case *peers == "":
		return errors.New("-peers is required")
	case (*health == "") == (*healthFD == 0):
		return errors.New("exactly one of -health and -health-fd is required")
	case *lease <= 0:
		return errors.New("-lease must be positive")
	}

	rec, err := fixture.OpenCalls(*calls)
	if err != nil {
		return err
	}
	defer rec.Close()
	catalog, err := fixture.NewCatalog(rec)
	if err != nil {
		return err
	}

	nc, err := nats.Connect(*natsURL, nats.Name("toolscope-member"), nats.MaxReconnects(-1))
	if err != nil {
		return fmt.Errorf("NATS %s: %w", *natsURL, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	store, err := cluster.NewJetStreamStore(ctx, js, cluster.WithBucket(*bucket))
	cancel()
	if err != nil {
		return err
	}

	var sysOpts []actor.ConfigOption
	if !*verbose {
		sysOpts = append(sysOpts, actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
			return slog.New(slog.NewTextHandler(io.Discard, nil))
		}))
	}
	sys := actor.NewActorSystem(sysOpts...)
	hosts := strings.Split(*peers, ",")
	var prov protocluster.ClusterProvider
	if *healthFD != 0 {
		ln, err := net.FileListener(os.NewFile(uintptr(*healthFD), "health"))
		if err != nil {
			return fmt.Errorf("-health-fd %d: %w", *healthFD, err)
		}
		prov = cluster.AutoManagedListener(sys, ln, *refresh, hosts...)
	} else {
		p, _, err := cluster.AutoManaged(sys, *health, *refresh, hosts...)
		if err != nil {
			return err
		}
		prov = p
	}
	kind, err := cluster.Kind(cluster.Config{Store: store, Catalog: catalog, NewRegistry: fixture.NewRegistry(rec), LeaseTTL: *lease})
	if err != nil {
		return err
	}
	cfg := protocluster.Configure(*name, prov, disthash.New(), remote.Configure("127.0.0.1", 0), protocluster.WithKinds(kind))
	c := protocluster.New(sys, cfg)

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	c.StartMember()
	fmt.Printf("ready %s\n", sys.Address())
	<-sig
	c.Shutdown(true) // passivates its trees: they release their leases
	return nil
}
