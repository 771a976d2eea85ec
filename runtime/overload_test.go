package runtime_test

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"

	"github.com/toolscope/toolscope/runtime"
)

func TestWithMaxQueued_RejectsNegative(t *testing.T) {
	if _, err := runtime.New(runtime.WithMaxQueued(-1)); !errors.Is(err, runtime.ErrInvalidConfig) {
		t.Fatalf("err = %v, want ErrInvalidConfig", err)
	}
}

// Flooding one scope whose exclusive tool is held: beyond the bound calls
// fail at once with OVERLOADED, the queue stays bounded, every admitted
// call runs alone and every caller gets exactly one result.
func TestOverload_FloodOneScope(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	const maxQueued = 8
	reg := mustNew(t, runtime.WithMaxQueued(maxQueued))
	defer closeNow(t, reg)
	s, _ := reg.NewScope("a")
	other, _ := reg.NewScope("b")
	hold := make(chan struct{})
	entered := make(chan struct{}, 1)
	var running, overlaps atomic.Int32
	mustRegister(t, reg.Global(), hdef("x", false, func(context.Context) (any, error) {
		if running.Add(1) != 1 {
			overlaps.Add(1)
		}
		defer running.Add(-1)
		select {
		case entered <- struct{}{}:
		default:
		}
		<-hold
		return "ok", nil
	}))
	holder := make(chan *runtime.Result, 1)
	go func() { holder <- s.Execute(context.Background(), runtime.Call{ID: "holder", Name: "x"}) }()
	<-entered

	const flood = 1000
	var overloaded, other1 atomic.Int32
	results := make(chan *runtime.Result, flood)
	var wg sync.WaitGroup
	for i := range flood {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := s.Execute(context.Background(), runtime.Call{ID: fmt.Sprint(i), Name: "x"})
			if r.Code() == runtime.CodeOverloaded {
				name, _, _ := r.ErrorInfo()
				if name != runtime.NameOverloaded {
					t.Errorf("name = %q", name)
				}
				overloaded.Add(1)
			}
			results <- r
		}()
	}
	// Every flooding call is either rejected (returned) or waiting.
	waitFor(t, "flood to settle", func() bool {
		return int(overloaded.Load())+reg.InFlight()-1 == flood
	})
	waiting := reg.InFlight() - 1
	slack := 4 * goruntime.GOMAXPROCS(0)
	if waiting > maxQueued+slack {
		t.Fatalf("%d calls waiting, bound %d (+%d entering concurrently)", waiting, maxQueued, slack)
	}
	if waiting < 1 {
		t.Fatalf("no call queued at all")
	}
	// Another scope is not affected by this scope's queue.
	go func() {
		r := other.Execute(context.Background(), runtime.Call{ID: "b", Name: "quick-missing"})
		if r.Code() == runtime.CodeOverloaded {
			other1.Add(1)
		}
	}()
	close(hold)
	wg.Wait()
	close(results)
	n := 0
	for r := range results {
		n++
		if r.IsError() && r.Code() != runtime.CodeOverloaded {
			t.Fatalf("unexpected failure %q: %s", r.Code(), r.ErrorMessage())
		}
	}
	if n != flood {
		t.Fatalf("%d results for %d calls", n, flood)
	}
	if r := <-holder; r.IsError() {
		t.Fatal(r.ErrorMessage())
	}
	if overlaps.Load() != 0 {
		t.Fatalf("%d exclusive overlaps", overlaps.Load())
	}
	if other1.Load() != 0 {
		t.Fatal("another scope was overloaded")
	}
	t.Logf("flood %d: %d rejected OVERLOADED, %d queued at most", flood, overloaded.Load(), waiting)
	// The queue count returns to zero: a later call is admitted.
	if r := s.Execute(context.Background(), runtime.Call{ID: "after", Name: "x"}); r.IsError() {
		t.Fatalf("after the flood: %q %s", r.Code(), r.ErrorMessage())
	}
}

// Parallel calls that overlap freely never wait, so the bound never
// rejects them.
func TestOverload_ParallelCallsAreNotQueued(t *testing.T) {
	reg := mustNew(t, runtime.WithMaxQueued(1))
	defer closeNow(t, reg)
	s, _ := reg.NewScope("a")
	hold := make(chan struct{})
	mustRegister(t, reg.Global(), hdef("p", true, func(context.Context) (any, error) { <-hold; return 1, nil }))
	const n = 100
	results := make(chan *runtime.Result, n)
	for i := range n {
		go func() { results <- s.Execute(context.Background(), runtime.Call{ID: fmt.Sprint(i), Name: "p"}) }()
	}
	waitFor(t, "all in flight", func() bool { return reg.InFlight() == n })
	close(hold)
	for range n {
		if r := <-results; r.IsError() {
			t.Fatalf("%q %s", r.Code(), r.ErrorMessage())
		}
	}
}
