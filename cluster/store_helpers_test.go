package cluster

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// waitLimit and goroutineDump are in helpers_test.go.

// within runs fn and fails t with a goroutine dump if it has not returned within waitLimit.
func within(t testing.TB, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(waitLimit):
		t.Fatalf("hang: %s\n--- goroutines ---\n%s", what, goroutineDump())
	}
}

// fakeClock is a settable clock for lease expiry.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Unix(1_800_000_000, 0)} }

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *fakeClock) Advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

type testEnv struct {
	srv   *Embedded
	nc    *nats.Conn
	js    jetstream.JetStream
	store *JetStreamStore
	clock *fakeClock
}

// startStore starts an embedded server in a temp dir, connects to it, and opens a store on it
// with a fake clock (memory storage unless opts say otherwise). Everything stops at cleanup.
func startStore(t testing.TB, opts ...StoreOption) *testEnv {
	t.Helper()
	srv, err := StartEmbedded(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	nc, err := nats.Connect(srv.URL(), nats.Name("cluster-test"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	clock := newFakeClock()
	opts = append([]StoreOption{WithMemoryStorage(), WithClock(clock.Now), WithOpTimeout(10 * time.Second)}, opts...)
	st, err := NewJetStreamStore(context.Background(), js, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return &testEnv{srv: srv, nc: nc, js: js, store: st, clock: clock}
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	t.Cleanup(cancel)
	return ctx
}

func mustAcquire(t testing.TB, s Store, tree, holder string, ttl time.Duration) *Lease {
	t.Helper()
	l, err := s.Acquire(testCtx(t), tree, holder, ttl)
	if err != nil {
		t.Fatalf("Acquire(%q, %q): %v", tree, holder, err)
	}
	return l
}

func states(cs []Claim) []ClaimState {
	out := make([]ClaimState, len(cs))
	for i, c := range cs {
		out[i] = c.State
	}
	return out
}

// storeEnv is a store under test and the fake clock it judges leases by.
type storeEnv struct {
	store Store
	clock *fakeClock
}

// forEachStore runs a rule test against each Store implementation: the JetStream store on an
// embedded server, and the MemoryStore.
func forEachStore(t *testing.T, opts []StoreOption, test func(t *testing.T, env storeEnv)) {
	t.Run("jetstream", func(t *testing.T) {
		env := startStore(t, opts...)
		test(t, storeEnv{env.store, env.clock})
	})
	t.Run("memory", func(t *testing.T) {
		clock := newFakeClock()
		test(t, storeEnv{NewMemoryStore(append([]StoreOption{WithClock(clock.Now)}, opts...)...), clock})
	})
}
