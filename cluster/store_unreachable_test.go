package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
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
