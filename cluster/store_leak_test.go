package cluster

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Nothing leaks: a store used for claims (some cut short by a cancelled ctx) and an embedded
// server leave no goroutine behind once the connection and the server are closed.
func TestStore_NoGoroutineLeft(t *testing.T) {
	before := runtime.NumGoroutine()
	func() {
		srv, err := StartEmbedded(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		nc, err := nats.Connect(srv.URL())
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		js, _ := jetstream.New(nc)
		s, err := NewJetStreamStore(testCtx(t), js, WithMemoryStorage())
		if err != nil {
			t.Fatal(err)
		}
		l := mustAcquire(t, s, "tree", "a", time.Hour)
		for i := range 20 {
			ids := make([]string, 16)
			for j := range ids {
				ids[j] = fmt.Sprint(i, ".", j)
			}
			ctx, cancel := context.WithCancel(context.Background())
			if i%2 == 1 {
				go cancel() // cut some batches short
			}
			_, _ = s.Claim(ctx, l, ids)
			cancel()
		}
		if err := s.Release(testCtx(t), l); err != nil {
			t.Fatal(err)
		}
	}()
	deadline := time.Now().Add(waitLimit)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines left (%d before)\n%s", runtime.NumGoroutine(), before, goroutineDump())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
