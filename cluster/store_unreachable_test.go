package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// NATS going away mid-operation: every operation in flight, and every one after, ends with
// ErrStoreUnavailable within the store's op timeout — nothing hangs on a dead store. The ctx
// given has no deadline, so the store's own bound is what is tested.
func TestStore_Unreachable_FailsPromptly(t *testing.T) {
	env := startStore(t, WithOpTimeout(2*time.Second))
	s, ctx := env.store, context.Background()
	a := mustAcquire(t, s, "tree", "a", ttl)

	const workers = 4
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	running := make(chan struct{}, workers)
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				ids := []string{fmt.Sprint(g, "-", i, "a"), fmt.Sprint(g, "-", i, "b")}
				_, err := s.Claim(ctx, a, ids)
				if err == nil {
					err = s.Record(ctx, a, ids[0], []byte("r"))
				}
				if err != nil {
					errs <- err
					return
				}
				if i == 3 {
					running <- struct{}{}
				}
			}
		}()
	}
	for range workers {
		select {
		case <-running:
		case err := <-errs:
			t.Fatalf("store failed before NATS went away: %v", err)
		case <-time.After(waitLimit):
			t.Fatalf("hang: workers did not start\n%s", goroutineDump())
		}
	}
	env.srv.Close()
	within(t, "operations in flight when NATS went away", wg.Wait)
	close(errs)
	for err := range errs {
		if !errors.Is(err, ErrStoreUnavailable) {
			t.Errorf("in-flight op ended with %v, want ErrStoreUnavailable", err)
		}
	}

	ops := map[string]func() error{
		"Acquire": func() error { _, err := s.Acquire(ctx, "tree2", "b", ttl); return err },
		"Renew":   func() error { return s.Renew(ctx, a) },
		"Load":    func() error { _, err := s.Load(ctx, a); return err },
		"Save":    func() error { return s.Save(ctx, a, []byte("x")) },
		"Claim":   func() error { _, err := s.Claim(ctx, a, []string{"late"}); return err },
		"Record":  func() error { return s.Record(ctx, a, "late", nil) },
		"Forget":  func() error { return s.Forget(ctx, a) },
		"Release": func() error { return s.Release(ctx, a) },
	}
	for name, op := range ops {
		within(t, name+" on a dead store", func() {
			if err := op(); !errors.Is(err, ErrStoreUnavailable) {
				t.Errorf("%s on a dead store = %v, want ErrStoreUnavailable", name, err)
			}
		})
	}
	// A cancelled ctx ends an operation at once, whatever the store's state.
	cctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Save(cctx, a, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("save with a cancelled ctx = %v, want context.Canceled", err)
	}
}

// A Renew that landed but whose answer was lost (a timeout) leaves the lease key at a revision
// the lease does not know. The next write finds the key still holding this acquisition (same
// holder and epoch), adopts the revision and goes on; the lease is not falsely lost. A key
// moved by anyone else still fences it.
func TestStore_Renew_LostAnswerAdopted(t *testing.T) {
	env := startStore(t)
	s, ctx := env.store, testCtx(t)
	l := mustAcquire(t, s, "tree", "a", ttl)
	f := l.fence
	renewBehindItsBack := func(holder string, epoch uint64) {
		t.Helper()
		data, _ := json.Marshal(leaseValue{Holder: holder, Epoch: epoch, Expires: env.clock.Now().Add(ttl).UnixNano()})
		if _, err := env.js.PublishMsg(ctx, &nats.Msg{Subject: f.subj, Data: data}, jetstream.WithExpectLastSequencePerSubject(f.rev.Load())); err != nil {
			t.Fatal(err)
		}
	}
	renewBehindItsBack("a", l.Epoch) // as Renew writes it
	if err := s.Save(ctx, l, []byte("after a lost renew answer")); err != nil {
		t.Fatalf("save after a renewal whose answer was lost = %v, want nil", err)
	}
	if err := s.Renew(ctx, l); err != nil {
		t.Fatalf("renew after adopting = %v", err)
	}
	renewBehindItsBack("a", l.Epoch+1) // a newer acquisition by the same holder
	if err := s.Save(ctx, l, []byte("stale")); !errors.Is(err, ErrFenced) {
		t.Fatalf("save after a newer epoch of the same holder = %v, want ErrFenced", err)
	}
}
