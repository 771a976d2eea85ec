package cluster

import (
	"fmt"

	protocluster "github.com/asynkron/protoactor-go/cluster"
)

// Shutdown shuts a cluster member down (graceful: its grains passivate first,
// so their trees release their leases) and returns instead of panicking when
// protoactor's remote layer does. protoactor-go's endpoint manager
// (v0.0.0-20240822202345, remote/endpoint_manager.go) sends on every endpoint
// reader's disconnect channel at shutdown, and a reader whose stream failed
// while a peer shut down at the same moment has closed its channel without
// leaving the map yet: "send on closed channel". The member is down either
// way; the error says it happened.
func Shutdown(c *protocluster.Cluster, graceful bool) error {
	return shutdownGuard(func() { c.Shutdown(graceful) })
}

// ShutdownClient shuts a client-only member down (protoactor's own
// Cluster.Shutdown panics for one: it has no gossip) with the same guard as
// Shutdown.
func ShutdownClient(c *protocluster.Cluster) error {
	return shutdownGuard(func() {
		c.ActorSystem.Shutdown()
		c.Remote.Shutdown(false)
	})
}

func shutdownGuard(f func()) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("cluster: protoactor panicked while shutting down (the member is down): %v", p)
		}
	}()
	f()
	return nil
}
