package simclock_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/toolscope/toolscope/simclock"
)

// TestAttack_Clock_StopRacesAndOutsideCancel: many tasks arm timers and
// stop them while the clock fires them, sleep on ctxs that a goroutine
// outside the clock (Ctrl-C, a wall-clock deadline) cancels at random
// wall moments, and sleep on a ctx a timer cancels. Invariants: a timer's
// function runs exactly when its Stop returned false (never both, never
// neither), and at its deadline; an outside cancel ends its sleepers with
// the ctx's error, never before the time they were asleep at nor after
// their deadline; every task ends (no stall, no hang); nothing is left
// pending on the clock and no goroutine is left.
func TestAttack_Clock_StopRacesAndOutsideCancel(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	for seed := range uint64(6) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			c := simclock.New()
			r := rand.New(rand.NewPCG(seed, 29))
			var mu sync.Mutex
			var problems []string
			fail := func(format string, args ...any) {
				mu.Lock()
				problems = append(problems, fmt.Sprintf(format, args...))
				mu.Unlock()
			}
			outside, cancelOutside := context.WithCancel(context.Background())
			defer cancelOutside()
			type armed struct {
				at      time.Time
				fired   atomic.Int32
				when    atomic.Int64
				stopped atomic.Int32
				stop    func() bool
			}
			var timers []*armed
			var tmu sync.Mutex
			var wg sync.WaitGroup
			task := func(rs uint64) {
				defer wg.Done()
				r := rand.New(rand.NewPCG(rs, 3))
				for range 30 {
					switch r.IntN(4) {
					case 0: // arm a timer; stop it at once, later, or never
						a := &armed{}
						d := time.Duration(r.IntN(50)) * time.Millisecond
						a.at = c.Now().Add(d)
						a.stop = c.AfterFunc(d, func() { a.when.Store(c.Now().UnixNano()); a.fired.Add(1) })
						tmu.Lock()
						timers = append(timers, a)
						tmu.Unlock()
						if r.IntN(3) == 0 {
							_ = c.Sleep(context.Background(), time.Duration(r.IntN(60))*time.Millisecond)
						}
					case 1: // sleep on the outside ctx
						d := time.Duration(1+r.IntN(100)) * time.Millisecond
						before := c.Now()
						err := c.Sleep(outside, d)
						after := c.Since(before)
						if err == nil && after != d || err != nil && (err != context.Canceled || after > d || after < 0) {
							fail("a sleep of %v on the outside ctx lasted %v with %v", d, after, err)
						}
					case 2: // a ctx a timer cancels
						ctx, cancel := context.WithCancel(context.Background())
						at := time.Duration(r.IntN(30)) * time.Millisecond
						before := c.Now()
						c.AfterFunc(at, cancel)
						err := c.Sleep(ctx, simclock.Forever)
						if err != context.Canceled || c.Since(before) != at {
							fail("a cancel %v ahead woke after %v with %v", at, c.Since(before), err)
						}
					case 3:
						_ = c.Sleep(context.Background(), time.Duration(r.IntN(20))*time.Millisecond)
					}
				}
			}
			release := c.Hold()
			for range 40 {
				wg.Add(1)
				s := r.Uint64()
				c.Go(func() { task(s) })
			}
			release()
			// Stop the armed timers from outside the clock while it runs,
			// and cancel the outside ctx at a random wall moment.
			stopperDone := make(chan struct{})
			cancelAfter := r.IntN(200)
			go func() {
				defer close(stopperDone)
				for i := 0; ; i++ {
					if i == cancelAfter {
						cancelOutside()
					}
					tmu.Lock()
					n := len(timers)
					var a *armed
					if n > 0 {
						a = timers[(i*7919)%n]
					}
					tmu.Unlock()
					if a != nil && a.stop() {
						a.stopped.Add(1)
					}
					select {
					case <-outside.Done():
						if i > cancelAfter+500 {
							return
						}
					default:
					}
					if i%16 == 0 {
						time.Sleep(10 * time.Microsecond) // let the clock run between stops
					}
				}
			}()
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			if !await(t, done, "tasks") {
				return
			}
			<-stopperDone
			// Whatever is still armed is past every task: let it fire or stop it.
			release = c.Hold()
			tmu.Lock()
			for _, a := range timers {
				if a.stop() {
					a.stopped.Add(1)
				}
			}
			tmu.Unlock()
			release()
			// A timer popped as the hold went is a task until its function
			// returns: wait (bounded) for the clock to be idle.
			for deadline := time.Now().Add(waitLimit); ; time.Sleep(time.Millisecond) {
				if holds, pending := c.Pending(); holds == 0 && pending == 0 {
					break
				} else if time.Now().After(deadline) {
					t.Fatalf("the clock never went idle: %d holds, %d deadlines", holds, pending)
				}
			}
			for i, a := range timers {
				fired := a.fired.Load()
				if fired+a.stopped.Load() != 1 {
					fail("timer %d fired %d times, and its Stop returned true %d times: want one of the two, once", i, fired, a.stopped.Load())
				}
				if fired == 1 && a.when.Load() != a.at.UnixNano() {
					fail("timer %d fired at %v, armed for %v", i, time.Unix(0, a.when.Load()).Sub(a.at), a.at)
				}
			}
			for _, p := range problems {
				t.Error(p)
			}
		})
	}
}
