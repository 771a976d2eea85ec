package admit

import "testing"

// A waiter that leaves the queue is never admitted, and the waiters behind
// it are (issue 11: waiting honours the caller's ctx).
func TestQueue_CancelledWaiterIsSkipped(t *testing.T) {
	var g Gate
	q := Queue{G: &g}
	if !admits(g.TryAcquire(false)) {
		t.Fatal("first exclusive call should be admitted at once")
	}
	excl := waiter(t, &g, false)
	par := waiter(t, &g, true)
	for _, w := range []*Waiter{excl, par} {
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
	if !admits(g.TryAcquire(true)) {
		t.Fatal("parallel call should be admitted at once")
	}
	w := waiter(t, &g, false) // an exclusive call does not fit beside a parallel one
	q.Admit(w)                // queued: the fast path is off
	late := waiter(t, &g, true)
	// The late call gives up before it posts (a nested call taken out of
	// the line, say): it still posts, keeping the line's order whole.
	if !g.Leave(late) {
		t.Fatal("a waiter on its way to the queue can leave")
	}
	q.Admit(late)
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
