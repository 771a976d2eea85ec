// Package member is one member of a toolscope cluster on one machine, as
// cmd/toolscope-member and the cluster demo's member processes run it: the
// fixture code (cluster/internal/fixture) hosted as grains (cluster.Kind),
// state in the JetStream store at a NATS URL, membership by protoactor's
// automanaged provider on loopback, gRPC on 127.0.0.1 at a port of the
// system's choosing.
package member

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
	"github.com/toolscope/toolscope/cluster/loadtarget"
)

// Main runs one member with the command-line arguments args (without the
// program name): see cmd/toolscope-member for the flags. It prints
// "ready <actor system address>" on stdout once it serves and returns after
// SIGTERM or SIGINT, once the member has shut down gracefully (its trees
// passivated, their leases released). Bad flags are an error naming the
// flag.
func Main(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("toolscope-member", flag.ContinueOnError)
	var (
		name     = fs.String("name", "toolscope", "the cluster's name (the same on every member)")
		health   = fs.String("health", "", "this member's health endpoint, a loopback host:port (one of -peers)")
		healthFD = fs.Int("health-fd", 0, "serve the health endpoint on this inherited listening socket instead of binding -health")
		peers    = fs.String("peers", "", "comma-separated health endpoints of every member, this one included")
		natsURL  = fs.String("nats", "", "the NATS URL of the store (JetStream)")
		bucket   = fs.String("bucket", cluster.DefaultBucket, "the store's bucket (the same on every member)")
		calls    = fs.String("calls", "", "the file every tool body appends its call id to (required)")
		lease    = fs.Duration("lease", 10*time.Second, "a tree activation's lease TTL")
		refresh  = fs.Duration("refresh", 200*time.Millisecond, "how often membership is polled")
		verbose  = fs.Bool("v", false, "protoactor's logs on stderr")
	)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
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
	if err := loadtarget.AddTo(catalog); err != nil { // load scenarios: toolscope-load-cluster -peers
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
	fmt.Fprintf(stdout, "ready %s\n", sys.Address())
	<-sig
	signal.Stop(sig)
	// Graceful: its trees passivate and release their leases. A panic in
	// protoactor's remote shutdown is caught (cluster.Shutdown) and logged:
	// the member is down either way.
	if err := cluster.Shutdown(c, true); err != nil {
		fmt.Fprintln(os.Stderr, "toolscope-member:", err)
	}
	return nil
}
