package cluster

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The embedded server listens on loopback, keeps its streams in its dir across a restart, and
// Close returns once it has stopped (idempotent).
func TestEmbedded_LoopbackRestartKeepsState(t *testing.T) {
	dir := t.TempDir()
	var lease *Lease
	for round := range 2 {
		srv, err := StartEmbedded(dir)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(srv.URL(), "nats://127.0.0.1:") {
			t.Fatalf("URL %q is not loopback", srv.URL())
		}
		nc, err := nats.Connect(srv.URL())
		if err != nil {
			t.Fatal(err)
		}
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		s, err := NewJetStreamStore(testCtx(t), js) // file storage
		if err != nil {
			t.Fatal(err)
		}
		ctx := testCtx(t)
		if round == 0 {
			lease = mustAcquire(t, s, "tree", "a", time.Hour)
			if err := s.Save(ctx, lease, []byte("kept")); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Claim(ctx, lease, []string{"c1"}); err != nil {
				t.Fatal(err)
			}
		} else {
			// Same holder re-acquires (the lease is unexpired); state and claims survived.
			l := mustAcquire(t, s, "tree", "a", time.Hour)
			if l.Epoch != 2 {
				t.Fatalf("epoch after restart = %d, want 2", l.Epoch)
			}
			if st, err := s.Load(ctx, l); err != nil || string(st) != "kept" {
				t.Fatalf("state after restart = %q, %v", st, err)
			}
			if got, err := s.Claim(ctx, l, []string{"c1"}); err != nil || got[0].State != ClaimUnknown {
				t.Fatalf("claim after restart = %+v, %v; want unknown", got, err)
			}
		}
		nc.Close()
		within(t, "embedded Close", func() { srv.Close(); srv.Close() })
	}
	if _, err := StartEmbedded(""); err == nil {
		t.Fatal("StartEmbedded with no dir succeeded")
	}
}

// Example shows a call claimed, run once, recorded, and a repeated request answered from the
// record — by another activation after the first one's member died.
func ExampleNewJetStreamStore() {
	dir, _ := os.MkdirTemp("", "toolscope-example")
	defer os.RemoveAll(dir)
	srv, err := StartEmbedded(dir)
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	nc, _ := nats.Connect(srv.URL())
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	store, err := NewJetStreamStore(ctx, js, WithMemoryStorage())
	if err != nil {
		panic(err)
	}

	lease, _ := store.Acquire(ctx, "agent-42", "member-1/act-1", 200*time.Millisecond)
	claims, _ := store.Claim(ctx, lease, []string{"call-1", "call-2"})
	for _, c := range claims {
		fmt.Println(c.ID, c.State == ClaimNew)
	}
	_ = store.Record(ctx, lease, "call-1", []byte(`"sunny"`)) // call-1 ran; member-1 dies in call-2

	_, err = store.Acquire(ctx, "agent-42", "member-2/act-1", time.Minute)
	fmt.Println("while held:", err != nil)
	time.Sleep(250 * time.Millisecond) // member-1's lease runs out
	lease2, _ := store.Acquire(ctx, "agent-42", "member-2/act-1", time.Minute)
	claims, _ = store.Claim(ctx, lease2, []string{"call-1", "call-2"})
	fmt.Println(claims[0].State == ClaimDone, string(claims[0].Result))
	fmt.Println(claims[1].State == ClaimUnknown)
	fmt.Println("member-1 fenced:", store.Save(ctx, lease, nil) != nil)
	// Output:
	// call-1 true
	// call-2 true
	// while held: true
	// true "sunny"
	// true
	// member-1 fenced: true
}
