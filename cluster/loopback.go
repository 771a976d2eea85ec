package cluster

import (
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	protocluster "github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/clusterproviders/automanaged"
	"github.com/labstack/echo"
)

// AutoManaged returns protoactor's automanaged cluster provider for sys
// whose health endpoint listens on healthAddr only (e.g. "127.0.0.1:6330";
// the provider's own server binds every interface), and the listener, which
// the provider closes at Shutdown. hosts are the health addresses of every
// member, this one included. The endpoint answers what the provider's own
// does: this member's node (id, address, ports, kinds). It is for one
// machine and tests; production uses consul, etcd or Kubernetes providers.
func AutoManaged(sys *actor.ActorSystem, healthAddr string, refresh time.Duration, hosts ...string) (*automanaged.AutoManagedProvider, net.Listener, error) {
	ln, err := net.Listen("tcp", healthAddr)
	if err != nil {
		return nil, nil, fmt.Errorf("cluster: health endpoint %s: %w", healthAddr, err)
	}
	return autoManaged(sys, ln, refresh, hosts...), ln, nil
}

// autoManaged is AutoManaged on a listener already bound.
func autoManaged(sys *actor.ActorSystem, ln net.Listener, refresh time.Duration, hosts ...string) *automanaged.AutoManagedProvider {
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	var healthPort int
	_, _ = fmt.Sscan(port, &healthPort)
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.Listener = ln
	e.GET("/_health", func(c echo.Context) error {
		cl := protocluster.GetCluster(sys)
		if cl == nil {
			return c.NoContent(http.StatusServiceUnavailable)
		}
		host, memberPort, err := sys.GetHostPort()
		if err != nil {
			return c.NoContent(http.StatusServiceUnavailable)
		}
		return c.JSON(http.StatusOK, automanaged.NewNode(cl.Config.Name, sys.ID, host, memberPort, healthPort, cl.GetClusterKinds()))
	})
	return automanaged.NewWithTesting(refresh, healthPort, e, hosts...)
}

// AutoManagedListener is AutoManaged on a health listener already bound
// (for example one inherited from a parent process, so no other process
// can take the port between choosing and binding it). The provider closes
// ln at Shutdown.
func AutoManagedListener(sys *actor.ActorSystem, ln net.Listener, refresh time.Duration, hosts ...string) *automanaged.AutoManagedProvider {
	return autoManaged(sys, ln, refresh, hosts...)
}
