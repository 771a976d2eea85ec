package runtime

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/toolscope/toolscope/internal/core"
)

// around runs the around hooks of list (R58), outermost first, each with a
// next that runs the rest, the innermost next being the base dispatch
// (R61). It returns what the outermost hook returned and the first error an
// around hook failed with, if any (R66).
func (r *Registry) around(s *execState, list []core.Entry) (*Result, error) {
	ex := Execution{s}
	var step func(i int, ctx context.Context) *Result
	step = func(i int, ctx context.Context) *Result {
		if i == len(list) {
			return r.base(s, ctx)
		}
		hook := list[i].Payload.(AroundHook)
		var busy nextBusy
		next := func(c context.Context) *Result {
			// A retrying wrapper gets a fresh dispatch each time, but one
			// at a time: the dispatches of one execution share its state.
			if st := busy.enter(); st != nextIdle {
				return refusedNext(st)
			}
			defer busy.leave()
			if c == nil {
				c = ctx
			}
			return step(i+1, c)
		}
		out, err := callAround(hook, ctx, ex, next)
		busy.close()
		if err == nil && out == nil {
			err = errors.New("around hook returned no result")
		}
		if err != nil {
			s.failAround(err)
			return failureFrom(err)
		}
		return out
	}
	out := step(0, s.ctx())
	s.mu.Lock()
	err := s.aroundErr
	s.mu.Unlock()
	return out, err
}

// failAround records the first error an around hook of s failed with (R66).
func (s *execState) failAround(err error) {
	s.mu.Lock()
	if s.aroundErr == nil {
		s.aroundErr = err
	}
	s.mu.Unlock()
}

// nextBusy marks one around hook's next as running. An around hook may call
// next again once the previous call returned (a retry), but a call made
// while another call of the same next is still running — next called from
// several goroutines at once — is refused (refusedNext): the dispatches
// below would share the execution's state (its RunContext, typed output,
// stamps). Since each hook runs inside one call of the next above it, this
// keeps at most one base dispatch of an execution running at a time. Once
// the hook returned, its next is closed: a next kept and called later (from
// a goroutine the hook left behind) is refused too.
type nextBusy struct{ st atomic.Int32 }

// The states of a nextBusy.
const (
	nextIdle    int32 = iota // may be called
	nextRunning              // a call is running
	nextClosed               // the hook returned: a next kept past it is refused
)

func (b *nextBusy) enter() int32 {
	if b.st.CompareAndSwap(nextIdle, nextRunning) {
		return nextIdle
	}
	return b.st.Load()
}
func (b *nextBusy) leave() { b.st.CompareAndSwap(nextRunning, nextIdle) }
func (b *nextBusy) close() { b.st.Store(nextClosed) }

// refusedNext is the failure a refused call of next returns: one made while
// a previous call of it still runs, or after its hook returned.
func refusedNext(st int32) *Result {
	if st == nextClosed {
		return failureFromMessage("around hook: next called after the hook returned (next is valid only while the hook runs)", nil)
	}
	return failureFromMessage("around hook: next called while a previous call of it is still running (calls of next must not overlap)", nil)
}
