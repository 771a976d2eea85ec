package runtime

import (
	"container/list"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
)

// WithMaxInFlight bounds the calls dispatching at once across the whole
// registry — every scope, single calls and turns' dispatches alike
// (docs/contract.md#n7). A call takes a host slot when it reaches dispatch
// (after pre-execute, approval and its guards), before its scope's
// admission, and gives it back when its around hooks and body have
// returned; so at most n top-level calls wait for their scope or run, and
// the rest wait for a slot in one first-come-first-served line across all
// scopes. A nested call (made with the ctx of a call holding a slot, or
// with that call's Token as Call.Parent) runs within its ancestor's slot:
// it takes none and never waits for one, so nesting cannot deadlock on the
// cap. A call whose ctx ends while it waits leaves the line and returns
// ABORTED_BEFORE_DISPATCH without running its body; a call made with a
// change subscriber's or ExecutionMode's callback ctx that finds no slot
// free fails at once with WOULD_DEADLOCK (R86). With WithMaxQueued(m) as
// well, a call entering while m calls wait for a host slot is refused with
// OVERLOADED. A declared timeout is counted from dispatch, so time spent
// waiting for a slot is not the tool's (R83).
//
// n = 0 (the default) means no cap; n < 0 is a configuration error. Calls
// cost nothing for the cap unless it is set.
func WithMaxInFlight(n int) Option {
	return optionFunc(func(c *config) error {
		if n < 0 {
			return fmt.Errorf("%w: MaxInFlight must not be negative, got %d", ErrInvalidConfig, n)
		}
		c.maxInFlight = n
		return nil
	})
}

// hostCap is WithMaxInFlight's bound: the slots held, and the calls waiting
// for one in arrival order. A release hands its slot to the first waiter
// (no barging: while anyone waits, a new call queues behind), so the line
// is FIFO across every scope of the registry.
type hostCap struct {
	max     int
	mu      sync.Mutex
	held    int
	line    list.List    // of *capWaiter, guarded by mu
	waiting atomic.Int64 // line.Len(), readable without mu (Queued, WithMaxQueued)
}

type capWaiter struct {
	ready   chan struct{} // closed once granted
	granted bool          // guarded by hostCap.mu
	elem    *list.Element
}

func newHostCap(n int) *hostCap {
	if n <= 0 {
		return nil
	}
	return &hostCap{max: n}
}

// admitsNow reports whether a slot is free for a call arriving now (a
// snapshot: a racing call may take it first).
func (c *hostCap) admitsNow() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.held < c.max && c.line.Len() == 0
}

// tryAcquire takes a slot if one is free and nobody waits.
func (c *hostCap) tryAcquire() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held < c.max && c.line.Len() == 0 {
		c.held++
		return true
	}
	return false
}

// acquire takes a slot, waiting in line for one until ctx ends; false
// means ctx ended first (nothing is held).
func (c *hostCap) acquire(ctx context.Context) bool {
	c.mu.Lock()
	if c.held < c.max && c.line.Len() == 0 {
		c.held++
		c.mu.Unlock()
		return true
	}
	w := &capWaiter{ready: make(chan struct{})}
	w.elem = c.line.PushBack(w)
	c.waiting.Add(1)
	c.mu.Unlock()
	select {
	case <-w.ready:
		return true
	case <-ctx.Done():
	}
	c.mu.Lock()
	if w.granted {
		// Granted as ctx ended: the slot goes on to the next in line.
		c.mu.Unlock()
		c.release()
		return false
	}
	c.line.Remove(w.elem)
	c.waiting.Add(-1)
	c.mu.Unlock()
	return false
}

// release gives a slot back: to the first waiter, if any.
func (c *hostCap) release() {
	c.mu.Lock()
	if e := c.line.Front(); e != nil {
		w := c.line.Remove(e).(*capWaiter)
		c.waiting.Add(-1)
		w.granted = true
		c.mu.Unlock()
		close(w.ready)
		return
	}
	c.held--
	c.mu.Unlock()
}

// ridesHostSlot reports whether s runs within an ancestor's host slot (an
// execution it runs within holds one now): then it takes none.
func ridesHostSlot(s *execState) bool {
	for h := s.host; h != nil; h = h.host {
		if h.hostSlot.Load() {
			return true
		}
	}
	return false
}

// acquireHost takes s's host slot before its scope admission (WithMaxInFlight;
// the caller checked r.hostCap != nil). A nil result means s holds a slot
// or rides an ancestor's; otherwise it is s's outcome and nothing is held.
func (r *Registry) acquireHost(s *execState) *Result {
	c := r.hostCap
	if ridesHostSlot(s) {
		return nil
	}
	if !c.tryAcquire() {
		if fromCallbackCtx(s.ectx.Context) && !r.nestedCall(s) {
			return codedFailure(NameDeadlock, CodeWouldDeadlock, "tool call \""+s.name+"\" would wait for a host slot (WithMaxInFlight),"+
				" but it was made with the ctx of a change subscriber or of ExecutionMode's classifier, which carries no execution:"+
				" it cannot be nested in the call it may run inside, so it does not wait (R86)")
		}
		if !c.acquire(s.ctx()) {
			return abortedBeforeDispatch()
		}
	}
	s.hostSlot.Store(true)
	return nil
}

// releaseHost gives s's host slot back, if it holds one.
func (r *Registry) releaseHost(s *execState) {
	if s.hostSlot.Load() {
		s.hostSlot.Store(false)
		r.hostCap.release()
	}
}

// hostAdmitsNow reports whether s would get its host slot at once (riding
// an ancestor's, or one free): a turn's driver admits a dispatch at prepare
// only then, and leaves a wait to the dispatch's own goroutine.
func (r *Registry) hostAdmitsNow(s *execState) bool {
	return r.hostCap == nil || ridesHostSlot(s) || r.hostCap.admitsNow()
}

func hostOverloadedResult() *Result {
	return codedFailure(NameOverloaded, CodeOverloaded, "tool call rejected: too many calls waiting for a host slot (WithMaxInFlight)")
}

// admitUnderHostCap is a dispatch's admission with a host cap: the host
// slot first, then the scope's admission (R86's callback refusal, N1–N4).
// Taking the slot first means a call never holds its scope while it waits
// for a slot — a slot holder waiting for that scope would otherwise wait
// for a call waiting for it. A refused scope admission gives the slot back.
func (r *Registry) admitUnderHostCap(s *execState, sh *scopeState) *Result {
	if res := r.acquireHost(s); res != nil {
		return res
	}
	res := r.refusedFromCallback(s, sh)
	if res == nil {
		res = r.acquire(s, sh, s.mode == Parallel)
	}
	if res != nil {
		r.releaseHost(s)
	}
	return res
}
