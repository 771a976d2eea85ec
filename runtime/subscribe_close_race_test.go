package runtime_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/toolscope/toolscope/runtime"
)

// N5, Close: a Subscribe racing with Close is either refused (ErrClosed) or
// accepted and then ended by Close's teardown — never accepted after the
// teardown ended the subscriptions, which left its delivery goroutine and
// its 4,096-event buffer behind forever. Every goroutine is back to the
// baseline once the registries are closed.
func TestSubscribe_N5_RacingCloseIsRefusedOrEnded(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	const registries, perRegistry = 100, 6
	accepted := 0
	for range registries {
		reg := mustNew(t)
		var wg sync.WaitGroup
		var mu sync.Mutex
		start := make(chan struct{})
		for range perRegistry {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, err := reg.Subscribe(func(runtime.Event) {})
				switch {
				case err == nil:
					mu.Lock()
					accepted++
					mu.Unlock()
				case !errors.Is(err, runtime.ErrClosed):
					t.Errorf("Subscribe racing Close: %v, want nil or ErrClosed", err)
				}
			}()
		}
		closed := make(chan struct{})
		go func() {
			defer close(closed)
			<-start
			ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
			defer cancel()
			if err := reg.Close(ctx); err != nil {
				t.Errorf("Close: %v", err)
			}
		}()
		close(start)
		boundedWait(t, waitLimit, "racing Subscribe calls", wg.Wait)
		boundedWait(t, waitLimit, "Close", func() { <-closed })
	}
	t.Logf("%d of %d racing subscriptions were accepted", accepted, registries*perRegistry)
	if _, err := mustNewClosed(t).Subscribe(func(runtime.Event) {}); !errors.Is(err, runtime.ErrClosed) {
		t.Errorf("Subscribe after Close: %v, want ErrClosed", err)
	}
}

// mustNewClosed returns a registry that is already closed.
func mustNewClosed(t *testing.T) *runtime.Registry {
	t.Helper()
	reg := mustNew(t)
	closeNow(t, reg)
	return reg
}
