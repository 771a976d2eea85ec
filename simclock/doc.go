// Package simclock is a virtual clock for simulations: time that moves only
// when everything simulated is waiting for it, so hours of simulated tool
// latency run in seconds of wall time, and a run's times do not depend on
// the machine.
//
// Give a registry the clock with runtime.WithClock(c): its event
// timestamps, the times its hooks read and its declared timeouts
// (runtime.WithTimeouts) then follow c. Package load's -virtual runs a
// scenario this way, with simulated tools whose latency is a Sleep on c.
// runtime.WithTaskClock(c) does the same and makes the registry's own work
// on turns tasks of c (see Tasks); cmd/demo -virtual runs this way.
//
// # Tasks
//
// The clock knows only what is registered with it. A task is
//
//   - a goroutine started by Go, from the call until its function returns;
//   - a function run by AfterFunc at its deadline, while it runs;
//   - an explicit Hold, from Hold until its release is called (or an
//     Acquire, until the matching Release).
//
// Each counts as one running task except while it sleeps on the clock
// (Sleep). Nothing else is seen: a goroutine that is not a task — the
// registry's own workers under WithClock, a goroutine the user started — is
// invisible, and the clock may move while it runs. Work handed from a task
// to invisible code that will become a task again (a call handed to the
// registry whose tool body will Sleep) is covered by a Hold taken before
// the hand-off and released once the receiving task runs: package load
// holds the clock for every call its model says is about to start.
//
// A registry given the clock with runtime.WithTaskClock does those
// hand-offs itself, with Acquire and Release: a turn's dispatch it hands
// to a worker is a task until the worker is done with it, and ExecuteTurn's
// caller (which must be a task) gives its hold up while it waits for the
// turn's last commit and is handed one back before it wakes. Tool bodies,
// the nested turns they drive (a sub-agent's turn, a code-mode program's
// batch) and the hooks and approver of a turn's calls then all run as
// tasks. A wait the registry does not hand over (a dispatch waiting for
// admission behind another call) keeps its hold: the clock stands still
// instead of moving under it, and Watch reports the standstill.
//
// # The rule
//
// The clock moves only when no task runs (every task is asleep on it and
// no Hold is held). It then does exactly one thing, and hands a hold to
// what it wakes, so it stays put until that is blocked again:
//
//  1. it wakes the sleeper, if any, whose ctx it found ended (the
//     earliest-set first) — it looks after a timer's function ran (see
//     Cancels below), so a ctx such a function cancelled is seen before
//     time moves;
//  2. otherwise it jumps to the earliest deadline and wakes that one
//     sleeper or starts that one AfterFunc function — as long as some
//     deadline is strong: a weak one (AfterFuncWeak, an observer's) is
//     reached only on the way to a later strong one, so with nothing but
//     weak deadlines left the clock stays where the simulation ended.
//
// So a task doing CPU work between two sleeps keeps the clock where it is
// (no premature move), and when every task sleeps the clock jumps at once
// to the next deadline (no stall). Deadlines at the same instant fire one
// at a time, in the order they were set (Sleep or AfterFunc calls), each
// after the previous one's task is blocked again: that order is
// deterministic when the tasks that set them ran one after another, and
// follows the race between them when they ran at once.
//
// # Cancels
//
// A ctx tells nobody synchronously that it ended: a check means looking
// at it. The clock looks at its sleepers' ctxs (each distinct ctx once)
// before the first move after a timer's function (AfterFunc; not an
// observer's, AfterFuncWeak) returned, which is how a simulation's
// cancels are usually made: a registry's declared timeout, a run's end at
// its duration. Such a cancel is seen at the instant it happens, before
// time moves. A ctx ended any other way — by a task that runs on, by an
// observer, or from outside the clock (Ctrl-C, a wall-clock deadline) —
// is seen by its sleeper, which wakes itself, taking a hold, once its
// goroutine runs: with the ctx's error, never after its own deadline, but
// possibly after the clock moved on. A task whose cancel must be seen at
// the instant it makes it cancels from a timer's function:
// AfterFunc(0, cancel).
//
// Cost: a move is a heap operation (O(log n) in the pending deadlines and
// sleepers whose ctx was found ended); Sleep and AfterFunc are a heap push
// each. The look at the sleepers' ctxs after a timer's function costs one
// check per distinct ctx asleep (sleepers on one ctx cost one check): a
// simulation pays it once per timer's function that ran, not per move.
//
// Watch is a watchdog: it reports a clock that stood still for a while of
// wall time, which, while the simulation should be running, means work
// waits outside the clock.
//
// Sleep must be called by a task (it gives up the caller's hold while
// asleep); called by a goroutine that holds nothing it panics. A clock
// with no task moves through its deadlines at once: set a simulation up
// under a Hold.
//
// A hold must last until the receiving code is really blocked where the
// simulation expects it, not merely on its way: released a few
// instructions early, it lets the clock move while that goroutine is
// descheduled, which a loaded machine (or -race) does now and then. A
// simulation that stands still, held, is stuck outside the clock: Activity
// tells a watchdog that nothing changes, and State says what is pending
// (holds, tasks asleep, deadlines, the next one) for its report.
package simclock
