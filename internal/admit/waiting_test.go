package admit

import "testing"

// Waiting counts the calls that failed the fast path until they are
// admitted, by the queue or by a drain (the overload bound reads it).
func TestGate_WaitingCount(t *testing.T) {
	var g Gate
	q := Queue{G: &g}
	if !admits(g.TryAcquire(false)) {
		t.Fatal("first exclusive call should be admitted at once")
	}
	if g.Waiting() != 0 {
		t.Fatalf("Waiting = %d with nobody waiting", g.Waiting())
	}
	ws := make([]*Waiter, 3)
	for i := range ws {
		ws[i] = waiter(t, &g, i%2 == 0)
	}
	if g.Waiting() != 3 {
		t.Fatalf("Waiting = %d, want 3 pending", g.Waiting())
	}
	for _, w := range ws {
		if got := q.Admit(w); len(got) != 0 {
			t.Fatal("admitted while an exclusive call runs")
		}
	}
	if g.Waiting() != 3 {
		t.Fatalf("Waiting = %d, want 3 queued", g.Waiting())
	}
	if got := release(&q, true); len(got) != 1 || got[0] != ws[0] {
		t.Fatalf("release admitted %v, want the first (parallel) waiter", got)
	}
	if g.Waiting() != 2 {
		t.Fatalf("Waiting = %d, want 2", g.Waiting())
	}
	if got := q.Drain(); len(got) != 2 {
		t.Fatalf("drain admitted %d, want 2", len(got))
	}
	if g.Waiting() != 0 {
		t.Fatalf("Waiting = %d after drain", g.Waiting())
	}
}
