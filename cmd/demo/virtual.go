package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/toolscope/toolscope/examples/demotools"
	"github.com/toolscope/toolscope/runtime"
	"github.com/toolscope/toolscope/simclock"
)

// Virtual time (-virtual). The registry runs on a simclock.Clock given
// with runtime.WithTaskClock, every simulated latency (the tools' and the
// approver's) sleeps on it, and the clock moves only when every piece of
// the demo's work is blocked on it. What counts as a task of the clock:
//
//   - each top-level agent's driver (simclock Go), from its start until its
//     last turn returned; while ExecuteTurn waits for the turn, the driver's
//     hold is handed to the registry and back (WithTaskClock);
//   - each dispatch of a turn, from the moment the turn hands it to one of
//     the registry's workers until the worker is done (WithTaskClock) — the
//     tool body with it: a sub-agent's delegated turn runs inside its
//     delegate call's body, driven by that task, and so does a run_code
//     program (its parallel() batch is a nested turn, its direct calls run
//     on the program's goroutine); a body asleep on the clock gives its
//     hold up while it sleeps;
//   - the prepare part of a call (hooks, the approver, guards), on the
//     goroutine driving its turn, a task by the two rules above;
//   - the simulated user's Ctrl-C: a clock AfterFunc armed when the marked
//     call starts dispatching (a hook on the dispatching goroutine), a
//     task while it cancels the turn's ctx; a declared timeout (fetch) is
//     the registry's AfterFunc on the same clock;
//   - the set-up: a Hold from before the first driver starts until the
//     last one has.
//
// Not tasks, because they start no work and read no clock the run reports:
// the delivery of events to the demo's recorder (Registry.Subscribe), the
// progress line and the metrics server. run waits for the drivers outside
// the clock.
//
// Nothing in the demo's plan waits outside the clock: each scope runs one
// turn at a time, and nested calls run inside their ancestors' admission
// (docs/contract.md#n2), so no dispatch waits for admission — the one wait
// WithTaskClock does not hand over. Were one to, its hold would keep the
// clock where it is; a watchdog (simclock Watch) then stops the run with an
// error after stallAfter of wall time rather than let it report a wrong
// timeline.
//
// Refused under -virtual: -trace (checkVirtual says why). -metrics works:
// its call durations are read on the registry's clock.
//
// -scale N stretches the simulation: every duration that passes through the
// clock — the tools' latencies, the approver's wait, the interrupt's delay,
// fetch's declared timeout (the registry arms it on the clock) — lasts N
// times as long, so every time on the timeline is N times the unscaled
// run's and the outcomes are the same: a team whose tools take seconds
// instead of milliseconds, at the same wall cost.
type demoClock struct {
	v     *simclock.Clock // nil: the wall clock
	scale time.Duration   // -scale: what every duration on v is multiplied by (≥ 1)
	slept func(call string, d time.Duration)
}

// maxScale bounds -scale.
const maxScale = 1_000_000

// checkVirtual says what is wrong with -virtual's flags, if anything.
// -trace is refused with -virtual: otelscope stamps a span's start and end
// with the wall clock (only its stage events follow the registry's clock),
// so a virtual run's spans would not contain their own events.
func checkVirtual(cfg config) error {
	switch {
	case cfg.Virtual && cfg.TraceFile != "":
		return fmt.Errorf("-trace cannot be used with -virtual: OpenTelemetry spans (otelscope) start and end on the wall clock while their stage events follow the virtual one, so the trace would contradict itself; run -trace without -virtual")
	case cfg.Scale < 0 || cfg.Scale > maxScale:
		return fmt.Errorf("-scale must be between 1 and %d, got %d", maxScale, cfg.Scale)
	case cfg.Scale > 1 && !cfg.Virtual:
		return fmt.Errorf("-scale %d needs -virtual: it stretches virtual time (on the wall clock it would only make the run %d times slower)", cfg.Scale, cfg.Scale)
	}
	return nil
}

// scaled is d stretched by the clock's scale (saturating: simclock.Forever).
func (c demoClock) scaled(d time.Duration) time.Duration {
	if c.scale <= 1 || d <= 0 {
		return d
	}
	if d > simclock.Forever/c.scale {
		return simclock.Forever
	}
	return d * c.scale
}

// sleep sleeps d (stretched) on the virtual clock; the caller is a task.
func (c demoClock) sleep(ctx context.Context, d time.Duration) error {
	return c.v.Sleep(ctx, c.scaled(d))
}

// scaledClock is the registry's view of a stretched clock: AfterFunc's
// durations (declared timeouts) are stretched like every other.
type scaledClock struct {
	*simclock.Clock
	c demoClock
}

// AfterFunc implements runtime.Clock.
func (s scaledClock) AfterFunc(d time.Duration, f func()) (stop func() bool) {
	return s.Clock.AfterFunc(s.c.scaled(d), f)
}

// stallAfter is how long the virtual clock may stand still, on the wall,
// while drivers still run, before the run is stopped as stalled.
var stallAfter = 10 * time.Second

func newDemoClock(virtual bool, scale int) demoClock {
	if virtual {
		return demoClock{v: simclock.New(), scale: time.Duration(max(scale, 1))}
	}
	return demoClock{}
}

func (c demoClock) now() time.Time {
	if c.v != nil {
		return c.v.Now()
	}
	return time.Now()
}

// options are the registry's: the clock, with its tasks.
func (c demoClock) options() []runtime.Option {
	if c.v == nil {
		return nil
	}
	if c.scale > 1 {
		return []runtime.Option{runtime.WithTaskClock(scaledClock{c.v, c})}
	}
	return []runtime.Option{runtime.WithTaskClock(c.v)}
}

// context gives the tools and the approver the clock to sleep on.
func (c demoClock) context(ctx context.Context) context.Context {
	if c.v == nil {
		return ctx
	}
	if c.slept == nil {
		return demotools.WithSleep(ctx, c.sleep)
	}
	return demotools.WithSleep(ctx, func(ctx context.Context, d time.Duration) error {
		id := ""
		if ex, ok := runtime.ExecutionFromContext(ctx); ok {
			id = ex.CallID()
		}
		c.slept(id, d)
		return c.sleep(ctx, d)
	})
}

// afterFunc calls f once d has passed (a task of a virtual clock).
func (c demoClock) afterFunc(d time.Duration, f func()) {
	if c.v != nil {
		c.v.AfterFunc(c.scaled(d), f)
		return
	}
	time.AfterFunc(d, f)
}

// drive runs each of fs on a goroutine of its own (tasks of a virtual
// clock, started under one hold) and waits for them all. On a virtual
// clock that stands still for stallAfter while they run, it cancels
// (the drivers' ctx, so that they unwind) and returns the stall as an
// error once they did, or after a bound.
func (c demoClock) drive(cancel context.CancelFunc, fs []func()) error {
	var wg sync.WaitGroup
	if c.v == nil {
		for _, f := range fs {
			wg.Go(f)
		}
		wg.Wait()
		return nil
	}
	begin := c.v.Now()
	release := c.v.Hold()
	for _, f := range fs {
		wg.Add(1)
		c.v.Go(func() { defer wg.Done(); f() })
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	stall := make(chan error, 1)
	stop := c.v.Watch(stallAfter, func(holds, timers int) {
		stall <- fmt.Errorf("-virtual: the clock stood still at +%v for %v of wall time with %d holds and %d deadlines while agents still ran: some work waits outside the clock (see runtime.WithTaskClock), so the run was stopped rather than report a wrong timeline",
			c.v.Since(begin), stallAfter, holds, timers)
	})
	release()
	select {
	case <-done:
		stop()
		return nil
	case err := <-stall:
		stop()
		cancel()
		select {
		case <-done:
		case <-time.After(stallAfter):
		}
		return err
	}
}
