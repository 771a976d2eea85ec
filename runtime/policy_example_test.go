package runtime_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolscope/toolscope/runtime"
)

// WithMaxInFlight caps the calls dispatching at once across every scope of
// the registry; the rest wait in one first-come-first-served line. Here
// twenty agents call a tool at once under a cap of 4.
func ExampleWithMaxInFlight() {
	reg, err := runtime.New(runtime.WithMaxInFlight(4))
	if err != nil {
		panic(err)
	}
	defer reg.Close(context.Background())
	var now, most atomic.Int32
	work, err := runtime.NewTool("work", "does some work",
		func(ctx context.Context, _ struct{}, _ *runtime.RunContext) (string, error) {
			n := now.Add(1)
			defer now.Add(-1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			time.Sleep(time.Millisecond)
			return "done", nil
		}, runtime.WithParallel())
	if err != nil {
		panic(err)
	}
	if _, err := reg.Global().Register(work); err != nil {
		panic(err)
	}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reg.Execute(context.Background(), runtime.Call{ID: "1", Name: "work", Agent: fmt.Sprintf("agent-%d", i)})
		}()
	}
	wg.Wait()
	fmt.Println("at most 4 at once:", most.Load() <= 4)
	// Output: at most 4 at once: true
}

// A declared timeout applies by default, counted from dispatch (the body's
// start); WithoutTimeouts makes it metadata.
func ExampleWithoutTimeouts() {
	slow, err := runtime.NewTool("slow", "takes 50 ms",
		func(ctx context.Context, _ struct{}, _ *runtime.RunContext) (string, error) {
			select {
			case <-ctx.Done():
				return "", ctx.Err()
			case <-time.After(50 * time.Millisecond):
				return "done", nil
			}
		}, runtime.WithTimeout(10*time.Millisecond))
	if err != nil {
		panic(err)
	}
	for _, opts := range [][]runtime.Option{nil, {runtime.WithoutTimeouts()}} {
		reg, err := runtime.New(opts...)
		if err != nil {
			panic(err)
		}
		if _, err := reg.Global().Register(slow); err != nil {
			panic(err)
		}
		res := reg.Execute(context.Background(), runtime.Call{ID: "1", Name: "slow"})
		if res.IsError() {
			fmt.Println(res.Code(), res.ErrorMessage())
		} else {
			fmt.Println("ok:", res.Text())
		}
		reg.Close(context.Background())
	}
	// Output:
	// TOOL_TIMEOUT tool call timed out after 10ms
	// ok: done
}
