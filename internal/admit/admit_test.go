package admit

import "testing"

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
	if !g.TryAcquire(true) {
		t.Fatal("first parallel call should be admitted at once")
	}
	if g.TryAcquire(false) {
		t.Fatal("exclusive call admitted while a parallel call runs")
	}
	if g.TryAcquire(true) {
		t.Fatal("parallel call overtook a pending exclusive call")
	}
	e := &Waiter{Parallel: false}
	p := &Waiter{Parallel: true}
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
	if !g.TryAcquire(false) || !g.TryRelease(true) {
		t.Fatal("fast exclusive acquire/release should work on an idle gate")
	}
}

func TestGate_DrainAdmitsEveryone(t *testing.T) {
	var g Gate
	q := Queue{G: &g}
	g.TryAcquire(false)
	ws := []*Waiter{{Parallel: true}, {Parallel: false}}
	for _, w := range ws {
		g.TryAcquire(w.Parallel)
		q.Admit(w)
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
