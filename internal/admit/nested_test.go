package admit

import "testing"

// A waiter that leaves the queue is never admitted, and the waiters behind
// it are (issue 11: waiting honours the caller's ctx).
func TestQueue_CancelledWaiterIsSkipped(t *testing.T) {
	var g Gate
	q := Queue{G: &g}
	if !g.TryAcquire(false) {
		t.Fatal("first exclusive call should be admitted at once")
	}
	excl := &Waiter{Parallel: false, Ready: make(chan struct{})}
	par := &Waiter{Parallel: true, Ready: make(chan struct{})}
	for _, w := range []*Waiter{excl, par} {
		if g.TryAcquire(w.Parallel) {
			t.Fatal("admitted while an exclusive call runs")
		}
		if got := q.Admit(w); len(got) != 0 {
			t.Fatal("admitted while an exclusive call runs")
		}
	}
	if !g.Leave(excl) {
		t.Fatal("a queued waiter can leave")
	}
	if g.Leave(excl) {
		t.Fatal("a waiter leaves once")
	}
	got := release(&q, true)
	if len(got) != 1 || got[0] != par {
		t.Fatalf("release admitted %v, want only the parallel waiter behind the one that left", got)
	}
	if g.Leave(par) {
		t.Fatal("an admitted waiter cannot leave: it owes a release")
	}
	if g.Waiting() != 0 || q.Queued() != 0 {
		t.Fatalf("Waiting = %d, Queued = %d after the queue drained", g.Waiting(), q.Queued())
	}
	if n, excl := running(&g); n != 1 || excl {
		t.Fatalf("Running = %d, %v; want the one parallel call", n, excl)
	}
	if !g.TryRelease(false) {
		t.Fatal("the fast path is back once nobody waits")
	}
}

// A nested call that needs a slot is admitted ahead of the queue when it
// fits; the hold mark keeps everyone else out; the nested-wait mark sends
// every later call, and every release, off the fast path.
func TestGate_NestedMarks(t *testing.T) {
	var g Gate
	q := Queue{G: &g}
	if !g.TryAcquire(true) {
		t.Fatal("parallel call should be admitted at once")
	}
	w := &Waiter{Parallel: false, Ready: make(chan struct{})}
	if g.TryAcquire(false) {
		t.Fatal("exclusive admitted beside a parallel call")
	}
	q.Admit(w) // queued: the fast path is off
	if g.TryAcquire(true) {
		t.Fatal("a call that is not nested may not overtake the queue")
	}
	g.w.Add(^uint64(pendingOne - 1)) // undo that pending mark (it never reached the queue)
	g.waiters.Add(-1)
	if !g.TryAcquireNested(true) {
		t.Fatal("a nested parallel call fits beside parallel calls, queue or not")
	}
	if g.TryAcquireNested(false) {
		t.Fatal("a nested exclusive call does not fit beside running calls")
	}
	if g.HoldIfAlone() {
		t.Fatal("hold set with two slot holders")
	}
	if g.TryRelease(false) {
		t.Fatal("release took the fast path while a call is queued")
	}
	was := g.Release(false)
	if !was.Queued() || was.Count() != 2 {
		t.Fatalf("Release returned %#x", uint64(was))
	}
	if !g.HoldIfAlone() {
		t.Fatal("hold not set with one slot holder")
	}
	if g.TryAcquireNested(true) {
		t.Fatal("admitted beside a held nested exclusive call")
	}
	if got := q.AdmitWaiting(); len(got) != 0 {
		t.Fatal("the queue admitted a call beside a held nested exclusive call")
	}
	g.ClearHold()
	g.SetNestWait()
	if got := release(&q, false); len(got) != 0 {
		t.Fatal("the queue admitted a call while a nested call waits")
	}
	if !g.ClearNestWait().NestWaiting() {
		t.Fatal("ClearNestWait returns the word as it was")
	}
	if got := q.AdmitWaiting(); len(got) != 1 || got[0] != w {
		t.Fatalf("AdmitWaiting admitted %v, want the queued exclusive call", got)
	}
}
