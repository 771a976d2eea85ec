package simclock_test

import (
	"context"
	"math/rand/v2"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolscope/toolscope/simclock"
)

const waitLimit = time.Minute

// await waits for ch, bounded, failing with every goroutine's stack.
func await(t *testing.T, ch <-chan struct{}, what string) bool {
	t.Helper()
	select {
	case <-ch:
		return true
	case <-time.After(waitLimit):
		var b strings.Builder
		_ = pprof.Lookup("goroutine").WriteTo(&b, 2)
		t.Errorf("hang: %s\n%s", what, b.String())
		return false
	}
}

// allDone runs fs as tasks of c and waits for them, bounded.
func allDone(t *testing.T, c *simclock.Clock, fs ...func()) bool {
	t.Helper()
	var wg sync.WaitGroup
	release := c.Hold() // set up under a hold: nothing moves before every task exists
	for _, f := range fs {
		wg.Add(1)
		c.Go(func() { defer wg.Done(); f() })
	}
	release()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	return await(t, done, "tasks")
}

func TestClock_NoPrematureAdvanceWhileATaskRuns(t *testing.T) {
	c := simclock.New()
	gate := make(chan struct{})
	var woke time.Time
	var during []time.Time
	allDone(t, c,
		func() { // asleep from the start
			_ = c.Sleep(context.Background(), 10*time.Second)
			woke = c.Now()
		},
		func() { // a body doing work between sleeps: blocked on a channel, not on the clock
			for range 1000 {
				during = append(during, c.Now())
			}
			<-gate
			during = append(during, c.Now())
			_ = c.Sleep(context.Background(), time.Second)
		},
		func() {
			// Let the worker's wait on gate last a while of wall time; the
			// clock must still not move.
			time.Sleep(20 * time.Millisecond)
			close(gate)
		},
	)
	for i, at := range during {
		if !at.Equal(simclock.Epoch) {
			t.Fatalf("read %d while a task ran: %v, want %v (the clock moved early)", i, at, simclock.Epoch)
		}
	}
	if want := simclock.Epoch.Add(10 * time.Second); !woke.Equal(want) {
		t.Fatalf("sleeper woke at %v, want %v", woke, want)
	}
	if got, want := c.Now(), simclock.Epoch.Add(10*time.Second); !got.Equal(want) {
		t.Fatalf("clock ends at %v, want %v", got, want)
	}
}

func TestClock_NoStallWhenAllAsleep(t *testing.T) {
	c := simclock.New()
	const tasks, sleeps = 50, 40
	var fs []func()
	var mu sync.Mutex
	bad := 0
	total := make([]time.Duration, tasks)
	for i := range tasks {
		r := rand.New(rand.NewPCG(uint64(i), 7))
		fs = append(fs, func() {
			for range sleeps {
				d := time.Duration(1+r.IntN(3600)) * time.Second
				before := c.Now()
				_ = c.Sleep(context.Background(), d)
				if c.Now().Sub(before) != d {
					mu.Lock()
					bad++
					mu.Unlock()
				}
				total[i] += d
			}
		})
	}
	if !allDone(t, c, fs...) {
		return
	}
	if bad > 0 {
		t.Fatalf("%d sleeps did not last exactly their duration on the clock", bad)
	}
	var longest time.Duration
	for _, d := range total {
		longest = max(longest, d)
	}
	if got := c.Since(simclock.Epoch); got != longest {
		t.Fatalf("clock elapsed %v, want the longest task's total sleep %v", got, longest)
	}
}

func TestClock_SameInstantWakesInOrderSet(t *testing.T) {
	c := simclock.New()
	var order []int
	var mu sync.Mutex
	start := make(chan struct{})
	var fs []func()
	for i := range 8 {
		fs = append(fs, func() {
			// Each task sets its deadline in turn (task i after i ms of
			// clock time), all for the same instant t = 10 s.
			_ = c.Sleep(context.Background(), time.Duration(i+1)*time.Millisecond)
			_ = c.Sleep(context.Background(), 10*time.Second-time.Duration(i+1)*time.Millisecond)
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
		})
	}
	close(start)
	allDone(t, c, fs...)
	for i, v := range order {
		if v != i {
			t.Fatalf("wake order %v, want the order the deadlines were set (0..7)", order)
		}
	}
}

func TestClock_AfterFuncAndStop(t *testing.T) {
	c := simclock.New()
	var fired []time.Duration
	done := make(chan struct{})
	release := c.Hold()
	c.AfterFunc(3*time.Second, func() { fired = append(fired, c.Since(simclock.Epoch)) })
	stop := c.AfterFunc(2*time.Second, func() { t.Error("a stopped timer fired") })
	c.AfterFunc(5*time.Second, func() { fired = append(fired, c.Since(simclock.Epoch)); close(done) })
	if !stop() {
		t.Fatal("Stop of a pending timer returned false")
	}
	if stop() {
		t.Fatal("a second Stop returned true")
	}
	release()
	if !await(t, done, "timers") {
		return
	}
	if len(fired) != 2 || fired[0] != 3*time.Second || fired[1] != 5*time.Second {
		t.Fatalf("fired at %v, want [3s 5s]", fired)
	}
}

// A ctx that a timer's function cancels wakes its sleeper at that instant,
// before the clock moves on to a later deadline.
func TestClock_CtxEndedByATaskWakesBeforeTheClockMoves(t *testing.T) {
	c := simclock.New()
	ctx, cancel := context.WithCancel(context.Background())
	var woke time.Duration
	var err error
	release := c.Hold()
	c.AfterFunc(5*time.Second, cancel)
	allDone(t, c,
		func() { err = c.Sleep(ctx, simclock.Forever); woke = c.Since(simclock.Epoch) },
		func() { _ = c.Sleep(context.Background(), 6*time.Second) },
		func() { release() },
	)
	if err != context.Canceled || woke != 5*time.Second {
		t.Fatalf("sleeper woke at %v with %v, want 5s with context.Canceled", woke, err)
	}
}

func TestClock_SleepByANonTaskPanics(t *testing.T) {
	c := simclock.New()
	defer func() {
		if p := recover(); p == nil || !strings.Contains(p.(string), "not a task") {
			t.Fatalf("panic %v, want one naming a non-task", p)
		}
	}()
	_ = c.Sleep(context.Background(), time.Second)
}

// TestClock_Checker: random tasks sleep, work, spawn tasks, arm and stop
// timers and cancel each other's ctx; every sleep lasts exactly its
// duration on the clock or ends at the instant its ctx was cancelled by a
// timer's function (package doc: Cancels) — a cancel made directly by a
// task ends it with the ctx's error at that instant or later, never past
// its deadline, or leaves it to its deadline — every timer fires at its
// deadline or not at all after Stop, and everything ends (no stall).
func TestClock_Checker(t *testing.T) {
	for seed := range uint64(4) {
		c := simclock.New()
		r := rand.New(rand.NewPCG(seed, 1))
		var mu sync.Mutex
		var problems []string
		fail := func(s string) { mu.Lock(); problems = append(problems, s); mu.Unlock() }
		var wg sync.WaitGroup
		var task func(depth int, rs uint64)
		task = func(depth int, rs uint64) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(rs, 2))
			for range 20 {
				switch r.IntN(6) {
				case 0, 1:
					d := time.Duration(r.IntN(1000)) * time.Millisecond
					before := c.Now()
					_ = c.Sleep(context.Background(), d)
					if got := c.Now().Sub(before); d > 0 && got != d {
						fail("sleep of " + d.String() + " lasted " + got.String())
					}
				case 2:
					ctx, cancel := context.WithCancel(context.Background())
					at := time.Duration(1+r.IntN(500)) * time.Millisecond
					var firedAt time.Time
					before := c.Now()
					c.AfterFunc(at, func() { firedAt = c.Now(); cancel() })
					err := c.Sleep(ctx, simclock.Forever)
					if err == nil || !firedAt.Equal(before.Add(at)) || !c.Now().Equal(firedAt) {
						fail("a cancel at " + at.String() + " woke late or wrongly")
					}
				case 3:
					stop := c.AfterFunc(time.Duration(r.IntN(100))*time.Millisecond, func() {})
					if r.IntN(2) == 0 {
						stop()
					}
				case 5: // cancel a child task's ctx, directly or from a timer's function
					ctx, cancel := context.WithCancel(context.Background())
					d0 := time.Duration(1+r.IntN(300)) * time.Millisecond
					d1 := time.Duration(1+r.IntN(600)) * time.Millisecond
					if d1 == d0 {
						d1++
					}
					viaTimer := r.IntN(2) == 0
					start := c.Now()
					wg.Add(1)
					c.Go(func() {
						defer wg.Done()
						err := c.Sleep(ctx, d1)
						woke := c.Since(start)
						switch {
						case err == nil && woke != d1:
							fail("a sleep of " + d1.String() + " woke after " + woke.String())
						case err == nil && viaTimer && d0 < d1:
							fail("a sleep cancelled by a timer's function at " + d0.String() + " ran to its deadline " + d1.String())
						case err != nil && (err != context.Canceled || woke < d0 || woke > d1):
							fail("a sleep of " + d1.String() + " cancelled at " + d0.String() + " woke after " + woke.String() + " with " + err.Error())
						case err != nil && viaTimer && woke != d0:
							fail("a sleep cancelled by a timer's function at " + d0.String() + " woke after " + woke.String())
						}
						cancel()
					})
					_ = c.Sleep(context.Background(), d0)
					if viaTimer {
						c.AfterFunc(0, cancel)
					} else {
						cancel()
					}
				case 4:
					x := 0
					for i := range r.IntN(10000) {
						x += i
					}
					_ = x
					if depth < 3 {
						wg.Add(1)
						s := r.Uint64()
						c.Go(func() { task(depth+1, s) })
					}
				}
			}
		}
		release := c.Hold()
		for range 10 {
			wg.Add(1)
			s := r.Uint64()
			c.Go(func() { task(0, s) })
		}
		release()
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		if !await(t, done, "checker") {
			return
		}
		for _, p := range problems {
			t.Errorf("seed %d: %s", seed, p)
		}
	}
}

// A hand-off: a task waiting for something other than the clock gives up
// its hold (Release); the task that wakes it takes one on its behalf first
// (Acquire). The clock does not move between the wake and the woken
// task's next step, even with another deadline due.
func TestClock_HandOffKeepsTheClockStill(t *testing.T) {
	c := simclock.New()
	ch := make(chan struct{})
	var after time.Time
	allDone(t, c,
		func() {
			c.Release() // waits on ch, not on the clock
			<-ch        // the hold handed over comes with it
			after = c.Now()
			time.Sleep(10 * time.Millisecond) // work between the wake and the next step
			after2 := c.Now()
			if !after2.Equal(after) {
				t.Errorf("the clock moved from %v to %v while the woken task worked", after, after2)
			}
		},
		func() {
			_ = c.Sleep(context.Background(), time.Second)
			c.Acquire() // on the waiter's behalf
			close(ch)
		},
		func() { _ = c.Sleep(context.Background(), 2*time.Second) }, // a deadline that must wait
	)
	if want := simclock.Epoch.Add(time.Second); !after.Equal(want) {
		t.Fatalf("woken at %v, want %v", after, want)
	}
}

// A weak deadline fires on the clock's way to a later strong one, and the
// clock does not move to a weak deadline for its own sake.
func TestClock_WeakDeadlinesDoNotMoveTheClock(t *testing.T) {
	c := simclock.New()
	var fired []time.Duration
	var mu sync.Mutex
	release := c.Hold()
	c.AfterFuncWeak(time.Second, func() { mu.Lock(); fired = append(fired, c.Since(simclock.Epoch)); mu.Unlock() })
	c.AfterFuncWeak(5*time.Second, func() { t.Error("a weak deadline past every strong one fired") })
	allDone(t, c, func() { release(); _ = c.Sleep(context.Background(), 3*time.Second) })
	if len(fired) != 1 || fired[0] != time.Second {
		t.Fatalf("weak timer fired at %v, want [1s]", fired)
	}
	if got := c.Since(simclock.Epoch); got != 3*time.Second {
		t.Fatalf("clock at +%v, want +3s (it must not move on to the weak 5 s)", got)
	}
	if _, timers := c.Pending(); timers != 1 {
		t.Fatalf("%d deadlines pending, want the weak one", timers)
	}
}

// TestClock_StateSaysHoldsSleepersAndDeadlines: State counts the holds,
// the tasks asleep and the deadlines (weak ones apart), and says where the
// clock goes next — what a stalled simulation's report shows.
func TestClock_StateSaysHoldsSleepersAndDeadlines(t *testing.T) {
	c := simclock.New()
	release := c.Hold() // the driver
	asleep := make(chan struct{})
	woke := make(chan struct{})
	c.Go(func() {
		close(asleep)
		_ = c.Sleep(context.Background(), time.Second)
		close(woke)
	})
	stopWeak := c.AfterFuncWeak(time.Millisecond, func() {})
	defer stopWeak()
	if !await(t, asleep, "the task to start") {
		return
	}
	// The task is asleep once its deadline is pending.
	for deadline := time.Now().Add(waitLimit); c.State().Sleepers == 0; {
		if time.Now().After(deadline) {
			t.Fatalf("the task never fell asleep: %v", c.State())
		}
		time.Sleep(time.Millisecond)
	}
	st := c.State()
	if st.Holds != 1 || st.Sleepers != 1 || st.Timers != 2 || st.Weak != 1 || !st.Next.Equal(simclock.Epoch.Add(time.Millisecond)) {
		t.Fatalf("state %+v: want 1 hold (the driver's), 1 task asleep, 2 deadlines of which 1 weak, next at +1ms", st)
	}
	if s := st.String(); !strings.Contains(s, "1 holds, 1 tasks asleep, 2 deadlines (1 weak), next at +1ms") {
		t.Fatalf("state reads %q", s)
	}
	release()
	if !await(t, woke, "the sleeper to wake") {
		return
	}
	if st := c.State(); st.Sleepers != 0 || !st.Now.Equal(simclock.Epoch.Add(time.Second)) {
		t.Fatalf("after the sleep: %+v", st)
	}
}

// Watch reports a clock that a task holds while it waits for something no
// task will do, and stays quiet while the simulation moves.
func TestWatch_ReportsAClockStuckOutsideItself(t *testing.T) {
	c := simclock.New()
	stalled := make(chan [2]int, 1)
	stop := c.Watch(time.Second, func(holds, timers int) { stalled <- [2]int{holds, timers} })
	// A simulation that moves: a task sleeping in small steps for a while
	// of wall time. No stall may be reported during it.
	moving := make(chan struct{})
	c.Go(func() {
		defer close(moving)
		for range 150 { // 1.5 s of wall time in all, each step far below the watch's second
			_ = c.Sleep(context.Background(), time.Second)
			time.Sleep(10 * time.Millisecond) // wall time passes between moves
		}
	})
	if !await(t, moving, "a moving simulation") {
		return
	}
	select {
	case s := <-stalled:
		t.Fatalf("a stall reported while the clock moved: %v", s)
	default:
	}
	// Stuck: a task holds the clock and waits on a channel nobody closes,
	// while another sleeps.
	never := make(chan struct{})
	c.Go(func() { <-never })
	c.Go(func() { _ = c.Sleep(context.Background(), time.Hour) })
	select {
	case s := <-stalled:
		if s[0] != 1 || s[1] != 1 {
			t.Fatalf("stall with %d holds and %d deadlines, want 1 and 1", s[0], s[1])
		}
	case <-time.After(waitLimit):
		t.Fatal("no stall reported for a clock held by a task that waits forever")
	}
	stop()
	close(never)
}
