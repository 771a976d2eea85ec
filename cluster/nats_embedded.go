package cluster

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Embedded is a NATS server with JetStream running inside this process, for tests and
// single-machine use. It listens on 127.0.0.1 only. Production members point at a NATS
// cluster's URL instead (see docs/cluster.md, "The store").
type Embedded struct {
	srv  *server.Server
	once sync.Once
}

// EmbeddedOption configures StartEmbedded.
type EmbeddedOption func(*server.Options)

// WithEmbeddedPort makes the server listen on port (on 127.0.0.1) instead of a random free one.
func WithEmbeddedPort(port int) EmbeddedOption {
	return func(o *server.Options) { o.Port = port }
}

// WithEmbeddedLimits bounds JetStream's memory and file storage, in bytes (0 leaves the
// server's default: a share of the machine's memory and disk).
func WithEmbeddedLimits(maxMemory, maxStore int64) EmbeddedOption {
	return func(o *server.Options) {
		if maxMemory > 0 {
			o.JetStreamMaxMemory = maxMemory
		}
		if maxStore > 0 {
			o.JetStreamMaxStore = maxStore
		}
	}
}

// embeddedStartTimeout bounds how long StartEmbedded waits for the server to accept clients.
const embeddedStartTimeout = 10 * time.Second

// StartEmbedded starts a NATS server with JetStream on, keeping its streams under dir (created
// if missing; a restart on the same dir finds the same state), listening on 127.0.0.1 at a
// random free port unless WithEmbeddedPort says otherwise. It returns once the server accepts
// clients, or an error naming what failed (bad dir, port taken, not ready in 10s).
func StartEmbedded(dir string, opts ...EmbeddedOption) (*Embedded, error) {
	if dir == "" {
		return nil, errors.New("cluster: StartEmbedded: empty store dir")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cluster: StartEmbedded: store dir: %w", err)
	}
	o := &server.Options{
		ServerName: "toolscope-embedded",
		Host:       "127.0.0.1",
		Port:       server.RANDOM_PORT,
		JetStream:  true,
		StoreDir:   dir,
		NoSigs:     true,
		NoLog:      true,
		// No HTTP monitoring, no cluster, no leafnodes: a loopback client port only.
	}
	for _, opt := range opts {
		opt(o)
	}
	srv, err := server.NewServer(o)
	if err != nil {
		return nil, fmt.Errorf("cluster: StartEmbedded: %w", err)
	}
	srv.Start()
	if !srv.ReadyForConnections(embeddedStartTimeout) {
		srv.Shutdown()
		srv.WaitForShutdown()
		return nil, fmt.Errorf("cluster: StartEmbedded: server not ready within %s (port in use?)", embeddedStartTimeout)
	}
	if !srv.JetStreamEnabled() {
		srv.Shutdown()
		srv.WaitForShutdown()
		return nil, errors.New("cluster: StartEmbedded: JetStream did not start (store dir unusable?)")
	}
	return &Embedded{srv: srv}, nil
}

// URL is the client URL, nats://127.0.0.1:<port>.
func (e *Embedded) URL() string { return e.srv.ClientURL() }

// Close shuts the server down and returns once it has stopped (its port closed, its store
// flushed). Clients see their connection drop. Close may be called more than once.
func (e *Embedded) Close() {
	e.once.Do(func() {
		e.srv.Shutdown()
		e.srv.WaitForShutdown()
	})
}
