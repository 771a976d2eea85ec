package runtime

import (
	"sync/atomic"
)

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
		return failureFromMessage("tools/execute wrapper: next called after the wrapper returned (next is valid only while the wrapper runs)", nil)
	}
	return failureFromMessage("tools/execute wrapper: next called while a previous call of it is still running (calls of next must not overlap)", nil)
}
