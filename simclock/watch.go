package simclock

import "time"

// Watch is a watchdog for a simulation on c: it calls onStall once, on a
// goroutine of its own, when c has stood still — no hold taken or given
// up, no move of time (Activity) — for after of wall time, with what
// Pending reported then. The caller knows whether its simulation should
// still be running: while it is, a clock that stands still is stuck
// outside itself — a task waiting, with its hold, for something no task
// will do (holds > 0), or work gone waiting without a hold while nothing
// is due (holds == 0) — since a clock whose tasks all sleep moves at once.
// stop ends the watch and waits for its goroutine (onStall included, if it
// runs); call it once the simulation is over.
func (c *Clock) Watch(after time.Duration, onStall func(holds, timers int)) (stop func()) {
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(max(after/20, time.Millisecond))
		defer tick.Stop()
		last, since := c.Activity(), time.Now()
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
			}
			if a := c.Activity(); a != last {
				last, since = a, time.Now()
				continue
			}
			if time.Since(since) >= after {
				onStall(c.Pending())
				return
			}
		}
	}()
	return func() { close(quit); <-done }
}
