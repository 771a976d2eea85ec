package simclock_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/toolscope/toolscope/simclock"
)

// manySleepers runs n tasks, task i asleep on a ctx of its own until
// +(i+1)ms. Every 8th task, once awake, cancels the ctx of the task 4
// places after it (if that one has not woken yet) and sleeps once more;
// the ctx of every timerEvery-th task is cancelled by a timer's function
// at +i ms +1µs. It returns what broke the clock's rules: a sleep that
// returned nil off its deadline, or its ctx's error after it; a sleep a
// timer's function cancelled that did not end at that instant.
func manySleepers(c *simclock.Clock, n, timerEvery int) (problems []string) {
	ctxs := make([]context.Context, n)
	cancels := make([]context.CancelFunc, n)
	for i := range n {
		ctxs[i], cancels[i] = context.WithCancel(context.Background())
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	fail := func(format string, args ...any) {
		mu.Lock()
		problems = append(problems, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	release := c.Hold()
	for i := range n {
		byTimer := i%timerEvery == timerEvery-1
		if byTimer {
			c.AfterFunc(time.Duration(i)*time.Millisecond+time.Microsecond, cancels[i])
		}
		wg.Add(1)
		c.Go(func() {
			defer wg.Done()
			d := time.Duration(i+1) * time.Millisecond
			err := c.Sleep(ctxs[i], d)
			at := c.Since(simclock.Epoch)
			switch {
			case byTimer && (err != context.Canceled || at != d-time.Millisecond+time.Microsecond):
				fail("task %d: cancelled by a timer's function at +%v, woke at +%v with %v", i, d-time.Millisecond+time.Microsecond, at, err)
			case err == nil && at != d, err != nil && at > d:
				fail("task %d: a sleep until +%v woke at +%v with %v", i, d, at, err)
			}
			if i%8 == 0 && i+4 < n {
				cancels[i+4]()
				_ = c.Sleep(ctxs[i], time.Duration(n)*time.Millisecond)
			}
		})
	}
	release()
	wg.Wait()
	for _, cancel := range cancels {
		cancel()
	}
	return problems
}

// TestClock_ManySleepers_AMoveDoesNotScanTheSleepers: 20,000 tasks asleep
// on ctxs of their own, with distinct deadlines, some cancelled by tasks
// and some by timers' functions. A move costs a heap operation, not a look
// at every sleeper: only after a timer's function ran does the clock check
// the ctxs (each distinct one once, and the sleepers of an ended one), so
// the looks add up to at most twice the sleepers per timer's function —
// where a check at every move, as before, made it about n²/2 (200 million).
func TestClock_ManySleepers_AMoveDoesNotScanTheSleepers(t *testing.T) {
	const n, timerEvery = 20000, 2000
	c := simclock.New()
	done := make(chan struct{})
	var problems []string
	go func() { defer close(done); problems = manySleepers(c, n, timerEvery) }()
	if !await(t, done, "20,000 sleepers") {
		return
	}
	for _, p := range problems[:min(len(problems), 10)] {
		t.Error(p)
	}
	if got, limit := simclock.Examined(c), uint64(n/timerEvery+1)*2*n; got > limit {
		t.Fatalf("the clock looked at %d ctxs and sleepers over %d sleeps, want at most %d (2n per timer's function)", got, n, limit)
	}
	if holds, timers := c.Pending(); holds != 0 || timers != 0 {
		t.Fatalf("left %d holds and %d deadlines", holds, timers)
	}
}

// BenchmarkClock_ManySleepers: the wall time of a simulation of n tasks
// asleep on distinct ctxs and deadlines, some cancelled by tasks and every
// 64th by a timer's function.
func BenchmarkClock_ManySleepers(b *testing.B) {
	for _, n := range []int{1000, 4000, 16000, 64000} {
		b.Run(fmt.Sprint(n/1000, "k"), func(b *testing.B) {
			for range b.N {
				if p := manySleepers(simclock.New(), n, 64); len(p) > 0 {
					b.Fatal(p[0])
				}
			}
		})
	}
}
