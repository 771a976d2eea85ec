package runtime_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolscope/toolscope/runtime"
)

// R7, R86: two concurrent Disposes of scopes a and b, with a change
// subscriber that disposes both. Each teardown announces a removal, and its
// subscriber then waits for the other teardown, which waits for the first:
// a cycle. The Dispose that would close the cycle returns at once (the
// teardown it would wait for completes when its callbacks return); nothing
// hangs, and both scopes end up disposed.
func TestDispose_R86_ConcurrentDisposesWithCrossDisposingSubscriber(t *testing.T) {
	reg := mustNew(t, runtime.WithEvents(false))
	defer closeNow(t, reg)
	var a, b atomic.Pointer[runtime.Scope]
	if _, err := reg.Global().OnChange(func(context.Context) error {
		if s := a.Load(); s != nil {
			s.Dispose()
		}
		if s := b.Load(); s != nil {
			s.Dispose()
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	const rounds = 300
	for round := range rounds {
		sa, err := reg.NewScope(fmt.Sprint("a", round))
		if err != nil {
			t.Fatal(err)
		}
		sb, err := reg.NewScope(fmt.Sprint("b", round))
		if err != nil {
			t.Fatal(err)
		}
		mustRegister(t, sa, hdef("ta", true, nil))
		mustRegister(t, sb, hdef("tb", true, nil))
		a.Store(sa)
		b.Store(sb)
		boundedWait(t, 10*time.Second, fmt.Sprintf("round %d: concurrent Disposes of a and b", round), func() {
			var wg sync.WaitGroup
			wg.Add(2)
			go func() { defer wg.Done(); sa.Dispose() }()
			go func() { defer wg.Done(); sb.Dispose() }()
			wg.Wait()
		})
		a.Store(nil)
		b.Store(nil)
		for _, s := range []*runtime.Scope{sa, sb} {
			if _, err := s.Register(hdef("late", true, nil)); err == nil {
				t.Fatalf("round %d: scope %q still takes registrations after Dispose", round, s.Key())
			}
		}
	}
}
