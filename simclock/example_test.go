package simclock_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/toolscope/toolscope/simclock"
)

// Two tasks sleep an hour and a day of clock time; the run takes no time
// on the wall, and each wakes exactly at its deadline.
func Example() {
	c := simclock.New()
	var wg sync.WaitGroup
	release := c.Hold() // set up before anything moves
	for _, d := range []time.Duration{time.Hour, 24 * time.Hour} {
		wg.Add(1)
		c.Go(func() {
			defer wg.Done()
			_ = c.Sleep(context.Background(), d)
			fmt.Println("woke after", c.Since(simclock.Epoch))
		})
	}
	release()
	wg.Wait()
	// Output:
	// woke after 1h0m0s
	// woke after 24h0m0s
}
