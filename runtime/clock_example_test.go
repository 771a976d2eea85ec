package runtime_test

import (
	"context"
	"fmt"
	"time"

	"github.com/toolscope/toolscope/runtime"
	"github.com/toolscope/toolscope/simclock"
)

// A registry on a virtual clock: a tool that takes three hours of clock
// time runs at once on the wall, its declared timeout of an hour fires at
// +1h on the clock, and the hook reads the clock's time.
func ExampleWithClock() {
	clk := simclock.New()
	reg, _ := runtime.New(runtime.WithClock(clk), runtime.WithTimeouts(),
		runtime.WithHooks(runtime.Hooks{CallEnd: func(_ runtime.Execution, d runtime.CallDone) {
			fmt.Println("ended after", d.Now().Sub(d.EnteredAt))
		}}))
	defer reg.Close(context.Background())
	slow, _ := runtime.NewTool("slow", "takes three hours", func(ctx context.Context, _ struct{}, _ *runtime.RunContext) (string, error) {
		if err := clk.Sleep(ctx, 3*time.Hour); err != nil {
			return "", err
		}
		return "done", nil
	}, runtime.WithTimeout(time.Hour))
	_, _ = reg.Global().Register(slow)

	done := make(chan *runtime.Result)
	clk.Go(func() { done <- reg.Global().Execute(context.Background(), runtime.Call{ID: "c1", Name: "slow"}) })
	res := <-done
	fmt.Println(res.Code(), "at", clk.Since(simclock.Epoch))
	// Output:
	// ended after 1h0m0s
	// TOOL_TIMEOUT at 1h0m0s
}
