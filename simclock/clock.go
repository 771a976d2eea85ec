package simclock

import (
	"container/heap"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Epoch is where a clock made by New starts: a fixed instant, so that two
// runs of one simulation read the same times.
var Epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// Clock is a virtual clock. Its time moves only when no task runs: then
// it jumps to the earliest pending deadline and wakes what waits for it,
// one waiter at a time (see the package doc for what a task is). The zero
// value is not usable; make one with New. A Clock is safe for concurrent
// use.
type Clock struct {
	nowNs atomic.Int64 // UnixNano of the clock's time; written under mu

	mu       sync.Mutex
	holds    int                           // tasks running and explicit holds
	timers   timerHeap                     // pending deadlines, by (when, seq)
	strong   int                           // of them not weak (AfterFuncWeak)
	seq      uint64                        // orders timers with the same deadline
	sleepers map[<-chan struct{}]*ctxGroup // tasks asleep whose ctx can end, by the ctx's Done
	groups   []*ctxGroup                   // the same groups, for a check to go through quickly
	ready    readyHeap                     // sleepers whose ended ctx a check found, by the order they slept
	check    bool                          // a timer's function ran: check the sleepers' ctxs before the next move
	moves    atomic.Uint64                 // every change of holds or time (Activity)
	asleep   int                           // tasks in Sleep
	examined uint64                        // ctxs and sleepers a check looked at (the cost of a move; tests read it)
}

// New returns a clock reading Epoch, with no task.
func New() *Clock { return NewAt(Epoch) }

// NewAt returns a clock reading start, with no task.
func NewAt(start time.Time) *Clock {
	c := &Clock{sleepers: map[<-chan struct{}]*ctxGroup{}}
	c.nowNs.Store(start.UnixNano())
	return c
}

// Now reads the clock. It implements runtime.Clock.
func (c *Clock) Now() time.Time { return time.Unix(0, c.nowNs.Load()).UTC() }

// Since is the clock time elapsed since t.
func (c *Clock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// Hold marks one more task as running: the clock does not move until the
// returned release is called (once; later calls do nothing). A driver
// holds the clock while it sets a simulation up, and code that hands work
// to another goroutine holds it on that work's behalf until the work is a
// task of its own (see the package doc: hand-offs).
func (c *Clock) Hold() (release func()) {
	c.mu.Lock()
	c.holds++
	c.moves.Add(1)
	c.mu.Unlock()
	var once sync.Once
	return func() { once.Do(c.release) }
}

// Acquire takes one hold (as Hold does) that some later Release gives
// up: the pair for hand-offs. A task about to wait for something other
// than the clock calls Release; whoever will wake it calls Acquire first,
// on its behalf, and the woken task keeps that hold as its own — so the
// clock cannot move between the wake and the woken task's next step.
func (c *Clock) Acquire() {
	c.mu.Lock()
	c.holds++
	c.moves.Add(1)
	c.mu.Unlock()
}

// Release gives up one hold taken by Acquire, Hold or Go (a task's own):
// see Acquire. Giving up a hold nobody took panics.
func (c *Clock) Release() { c.release() }

// Go runs f on a new goroutine as a task: the clock counts it as running
// from before Go returns until f returns, except while f sleeps on the
// clock (Sleep, or a Hold it gives up).
func (c *Clock) Go(f func()) {
	release := c.Hold()
	go func() {
		defer release()
		f()
	}()
}

// Sleep blocks the calling task until d of clock time has passed, or ctx
// ends (whichever first; nil, or ctx's error). The caller must be a task —
// a goroutine that Go started, or one that holds a Hold — because Sleep
// gives up one hold while asleep and takes it back on waking: asleep, the
// caller is blocked on the clock. d ≤ 0 returns at once (ctx's error, if
// any). d ≥ Forever sleeps until ctx ends.
//
// A wake-up by the clock hands the hold over before the sleeper runs, so
// the clock cannot move between the deadline and the sleeper's next step.
// A ctx ended by a timer's function (AfterFunc) is noticed before the
// clock moves again, and the sleeper is woken with a hold the same way; a
// ctx ended otherwise wakes the sleeper when its goroutine sees it, which
// may be after the clock moved (see the package doc: Cancels). Either
// way the sleeper is woken once, and returns nil only if its deadline
// came first.
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	w := &waiter{ch: make(chan struct{}), ri: -1}
	c.mu.Lock()
	if c.holds <= 0 {
		c.mu.Unlock()
		panic("simclock: Sleep by a goroutine that is not a task (no hold to give up)")
	}
	if err := ctx.Err(); err != nil {
		c.mu.Unlock()
		return err
	}
	c.seq++
	w.seq = c.seq
	if d < Forever {
		w.t = c.addTimerLocked(d, w, nil)
	}
	if done := ctx.Done(); done != nil {
		g := c.sleepers[done]
		if g == nil {
			g = &ctxGroup{ctx: ctx, done: done, ws: map[*waiter]bool{}, gi: len(c.groups)}
			c.sleepers[done] = g
			c.groups = append(c.groups, g)
		}
		g.ws[w] = true
		w.g = g
	}
	c.asleep++
	c.releaseLocked()
	c.mu.Unlock()
	select {
	case <-w.ch:
	case <-ctx.Done():
		c.mu.Lock()
		if !w.woken { // not woken by the clock yet: wake ourselves
			w.woken, w.byCtx = true, true
			if w.t != nil {
				c.removeTimerLocked(w.t)
			}
			c.unreadyLocked(w)
			c.unsleepLocked(w)
			c.asleep--
			c.holds++
			c.moves.Add(1)
		}
		c.mu.Unlock()
	}
	if w.byCtx {
		return ctx.Err()
	}
	return nil
}

// Forever, as Sleep's d, sleeps until the ctx ends.
const Forever = time.Duration(1<<63 - 1)

// AfterFunc calls f as a task on its own goroutine once d of clock time has
// passed (d ≤ 0: when no task runs, at the current time). stop cancels f
// if it has not started and reports whether it did. With runtime.Clock's
// shape: a registry given this clock arms its declared timeouts here.
// Once f returns, the clock looks at its sleepers' ctxs before it moves
// again, so a ctx f cancelled wakes its sleepers at f's instant (not so
// for AfterFuncWeak's observers: see the package doc, Cancels).
func (c *Clock) AfterFunc(d time.Duration, f func()) (stop func() bool) {
	return c.afterFunc(d, f, false)
}

// AfterFuncWeak is AfterFunc with a weak deadline: one the clock does not
// move to for its own sake. The clock reaches it only on its way to a
// later deadline of a sleeper or of an AfterFunc; with only weak deadlines
// left it stays where it is. For observers — sampling a simulation every
// so often — that must not stretch the simulation past its end.
func (c *Clock) AfterFuncWeak(d time.Duration, f func()) (stop func() bool) {
	return c.afterFunc(d, f, true)
}

func (c *Clock) afterFunc(d time.Duration, f func(), weak bool) (stop func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.addTimerLocked(d, nil, f)
	if weak {
		t.weak = true
		c.strong--
	}
	if c.holds == 0 {
		c.advanceLocked()
	}
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		if t.index < 0 {
			return false
		}
		c.removeTimerLocked(t)
		return true
	}
}

// Activity counts every change of the clock's state (a hold taken or given
// up, a move of time). A watchdog that sees it unchanged for long while
// Pending reports holds knows the simulation is stuck outside the clock.
func (c *Clock) Activity() uint64 { return c.moves.Load() }

// Pending reports the holds (running tasks and explicit holds) and the
// pending deadlines (sleepers and timers).
func (c *Clock) Pending() (holds, timers int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.holds, len(c.timers)
}

// State is a snapshot of a clock (Clock.State): what a watchdog reports
// when a simulation stands still.
type State struct {
	Now      time.Time // the clock's time
	Holds    int       // running tasks and explicit holds
	Sleepers int       // tasks asleep in Sleep
	Timers   int       // pending deadlines: sleepers' and AfterFunc's (weak ones too)
	Weak     int       // of Timers, the weak ones (AfterFuncWeak)
	// Next is the earliest pending deadline (zero with none): where the
	// clock moves once no task runs.
	Next time.Time
}

// String reads the state in one line, e.g. "at 2000-01-01T00:00:01Z:
// 2 holds, 3 tasks asleep, 4 deadlines (1 weak), next at +5ms".
func (s State) String() string {
	next := "none"
	if !s.Next.IsZero() {
		next = "+" + s.Next.Sub(s.Now).String()
	}
	return fmt.Sprintf("at %s: %d holds, %d tasks asleep, %d deadlines (%d weak), next at %s",
		s.Now.Format(time.RFC3339Nano), s.Holds, s.Sleepers, s.Timers, s.Weak, next)
}

// State reports the clock's state: its time, holds, sleeping tasks and
// pending deadlines.
func (c *Clock) State() State {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := State{Now: c.Now(), Holds: c.holds, Sleepers: c.asleep, Timers: len(c.timers), Weak: len(c.timers) - c.strong}
	if len(c.timers) > 0 {
		s.Next = time.Unix(0, c.timers[0].when).UTC()
	}
	return s
}

// ctxGroup is the sleepers sharing one ctx's Done channel (agents asleep
// on one run's ctx): a move checks each ctx once.
type ctxGroup struct {
	ctx  context.Context
	done <-chan struct{}
	ws   map[*waiter]bool
	gi   int // index in Clock.groups
}

func (c *Clock) unsleepLocked(w *waiter) {
	if g := w.g; g != nil {
		delete(g.ws, w)
		if len(g.ws) == 0 {
			delete(c.sleepers, g.done)
			last := c.groups[len(c.groups)-1]
			c.groups[g.gi], last.gi = last, g.gi
			c.groups[len(c.groups)-1] = nil
			c.groups = c.groups[:len(c.groups)-1]
		}
		w.g = nil
	}
}

// waiter is a sleeping task.
type waiter struct {
	ch    chan struct{}
	g     *ctxGroup // nil: its ctx cannot end
	t     *timer
	seq   uint64 // order of Sleep calls: sleepers whose ctx ended wake in it
	ri    int    // index in the ready heap; -1 when not on it
	woken bool   // the hold is handed back (by the clock or by the waiter itself)
	byCtx bool   // woken because ctx ended
}

// timer is one pending deadline: a sleeper to wake or a function to run.
type timer struct {
	when  int64
	seq   uint64
	w     *waiter
	f     func()
	index int  // in the heap; -1 once fired or removed
	weak  bool // AfterFuncWeak: not counted in strong
}

func (c *Clock) addTimerLocked(d time.Duration, w *waiter, f func()) *timer {
	now := c.nowNs.Load()
	when := now
	if d > 0 {
		when = now + int64(d)
		if when < now { // overflow
			when = 1<<63 - 1
		}
	}
	c.seq++
	t := &timer{when: when, seq: c.seq, w: w, f: f}
	heap.Push(&c.timers, t)
	c.strong++
	return t
}

func (c *Clock) removeTimerLocked(t *timer) {
	if t.index >= 0 {
		heap.Remove(&c.timers, t.index)
		if !t.weak {
			c.strong--
		}
	}
}

func (c *Clock) release() {
	c.mu.Lock()
	c.releaseLocked()
	c.mu.Unlock()
}

func (c *Clock) releaseLocked() {
	if c.holds <= 0 {
		panic("simclock: a hold was given up that was never taken (Sleep by a goroutine that is not a task?)")
	}
	c.holds--
	c.moves.Add(1)
	if c.holds == 0 {
		c.advanceLocked()
	}
}

// advanceLocked runs when no task runs: it wakes a sleeper whose ctx ended
// (its task runs again), else moves the time to the earliest deadline and
// fires that one timer — the next waits until no task runs again. Either
// way it hands a hold to what it wakes, so the clock stays put until that
// task is blocked again.
func (c *Clock) advanceLocked() {
	if c.check {
		c.check = false
		c.checkEndedLocked()
	}
	if len(c.ready) > 0 { // the earliest-set sleeper whose ctx ended
		c.wakeLocked(c.ready[0], true)
		return
	}
	if c.strong == 0 { // nothing but weak deadlines (or none): stay
		return
	}
	t := heap.Pop(&c.timers).(*timer)
	if !t.weak {
		c.strong--
	}
	if t.when > c.nowNs.Load() {
		c.nowNs.Store(t.when)
	}
	if t.w != nil {
		c.wakeLocked(t.w, false)
		return
	}
	c.holds++
	c.moves.Add(1)
	f, weak := t.f, t.weak
	go func() {
		defer c.releaseTimerFunc(weak)
		f()
	}()
}

// releaseTimerFunc gives up the hold of a timer's function that returned:
// what a strong one ran may have ended sleepers' ctxs (a declared timeout,
// a run's end), so the clock checks them before it moves again. A weak
// one is an observer's, which ends nothing the simulation waits for.
func (c *Clock) releaseTimerFunc(weak bool) {
	c.mu.Lock()
	if !weak {
		c.check = true
	}
	c.releaseLocked()
	c.mu.Unlock()
}

// checkEndedLocked puts on the ready heap every sleeper whose ctx has
// ended and that is not on it yet: one look at each distinct ctx, one at
// each sleeper of an ended one.
func (c *Clock) checkEndedLocked() {
	for _, g := range c.groups {
		c.examined++
		if g.ctx.Err() == nil {
			continue
		}
		for w := range g.ws {
			c.examined++
			if w.ri < 0 {
				heap.Push(&c.ready, w)
			}
		}
	}
}

func (c *Clock) unreadyLocked(w *waiter) {
	if w.ri >= 0 {
		heap.Remove(&c.ready, w.ri)
	}
}

func (c *Clock) wakeLocked(w *waiter, byCtx bool) {
	if w.t != nil && byCtx {
		c.removeTimerLocked(w.t)
	}
	c.unreadyLocked(w)
	c.unsleepLocked(w)
	c.asleep--
	w.woken, w.byCtx = true, byCtx
	c.holds++
	c.moves.Add(1)
	close(w.ch)
}

// timerHeap orders timers by deadline, then by the order they were set.
type timerHeap []*timer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if h[i].when != h[j].when {
		return h[i].when < h[j].when
	}
	return h[i].seq < h[j].seq
}
func (h timerHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i]; h[i].index = i; h[j].index = j }
func (h *timerHeap) Push(x any) {
	t := x.(*timer)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	t.index = -1
	return t
}

// readyHeap orders sleepers whose ctx ended by the order they fell asleep.
type readyHeap []*waiter

func (h readyHeap) Len() int           { return len(h) }
func (h readyHeap) Less(i, j int) bool { return h[i].seq < h[j].seq }
func (h readyHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i]; h[i].ri = i; h[j].ri = j }
func (h *readyHeap) Push(x any) {
	w := x.(*waiter)
	w.ri = len(*h)
	*h = append(*h, w)
}
func (h *readyHeap) Pop() any {
	old := *h
	w := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	w.ri = -1
	return w
}
