// Command toolscope-member is one member of a toolscope cluster on one
// machine: it hosts agent trees as grains (cluster.Kind) with the fixture
// code of the multi-process tests (cluster/internal/fixture: global tools
// record, g2, g3, slow; catalog entries echo and deny; every body appends
// its call id to -calls and fsyncs) and the load tool's simulated tools
// (cluster/loadtarget: toolscope-load-cluster -peers runs scenarios on it), its state in the JetStream store at
// -nats, membership by protoactor's automanaged provider on loopback, gRPC
// on 127.0.0.1 at a port of the system's choosing.
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
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/toolscope/toolscope/cluster/internal/member"
)

func main() {
	if err := member.Main(os.Args[1:], os.Stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(2)
		}
		fmt.Fprintln(os.Stderr, "toolscope-member:", err)
		os.Exit(1)
	}
}
