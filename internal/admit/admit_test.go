package admit

import "testing"

// admits reports TryAcquire's admission, dropping the ticket (for calls
// expected to be admitted, or whose ticket the test does not post).
func admits(_ Ticket, ok bool) bool { return ok }

// waiter is what a caller does when TryAcquire fails: it makes its Waiter,
// carrying the ticket. It fails the test when the call is admitted at once.
func waiter(t *testing.T, g *Gate, parallel bool) *Waiter {
	t.Helper()
	tk, ok := g.TryAcquire(parallel)
	if ok {
		t.Fatalf("a %s call was admitted at once; the test wants it to wait", modeName(parallel))
	}
	return &Waiter{Parallel: parallel, Ticket: tk, Ready: make(chan struct{})}
}

func modeName(parallel bool) string {
	if parallel {
		return "parallel"
	}
	return "exclusive"
}

func ready(ws []*Waiter, w *Waiter) bool {
	for _, x := range ws {
		if x == w {
			return true
		}
	}
	return false
}

// An exclusive call that failed the fast path is pending; a later parallel
// call must not overtake it on the fast path (FCFS), and must queue behind.
func TestGate_PendingBlocksFastPath(t *testing.T) {
	var g Gate
	q := Queue{G: &g}
	if !admits(g.TryAcquire(true)) {
		t.Fatal("first parallel call should be admitted at once")
	}
	e := waiter(t, &g, false) // fails: a parallel call runs
	p := waiter(t, &g, true)  // fails: must not overtake the pending exclusive call
	if got := q.Admit(e); len(got) != 0 {
		t.Fatal("exclusive admitted while a parallel call runs")
	}
	if got := q.Admit(p); len(got) != 0 {
		t.Fatal("parallel admitted ahead of the queued exclusive")
	}
	if g.TryRelease(false) {
		t.Fatal("release took the fast path while calls wait")
	}
	got := release(&q, false)
	if len(got) != 1 || got[0] != e {
		t.Fatalf("release admitted %v, want the exclusive call", got)
	}
	if n, excl := running(&g); n != 1 || !excl {
		t.Fatalf("running = %d, %v", n, excl)
	}
	got = release(&q, true)
	if !ready(got, p) {
		t.Fatal("parallel call not admitted after the exclusive one")
	}
	// Queue empty, nothing pending: the fast path is back.
	if !g.TryRelease(false) {
		t.Fatal("fast release should work again")
	}
	if !admits(g.TryAcquire(false)) || !g.TryRelease(true) {
		t.Fatal("fast exclusive acquire/release should work on an idle gate")
	}
}

func TestGate_DrainAdmitsEveryone(t *testing.T) {
	var g Gate
	q := Queue{G: &g}
	g.TryAcquire(false)
	for _, p := range []bool{true, false} {
		q.Admit(waiter(t, &g, p))
	}
	if got := q.Drain(); len(got) != 2 {
		t.Fatalf("drain admitted %d, want 2", len(got))
	}
}

// release is the runtime's slow release: the slot goes back on the gate,
// then the queue admits whoever fits (AdmitWaiting).
func release(q *Queue, excl bool) []*Waiter {
	q.G.Release(excl)
	return q.AdmitWaiting()
}

// running reports the admitted calls and whether one is exclusive.
func running(g *Gate) (n int, excl bool) {
	w := g.Load()
	return w.Count(), w.Exclusive()
}
