package admit

import "testing"

// The exclusive mark goes with the exclusive call that set it (issue 20
// item 1): calls admitted unconditionally beside it (Drain) do not keep it
// set once it is released, so a parallel call fits again.
func TestGate_ExclusiveMarkGoesWithItsCall(t *testing.T) {
	for _, tc := range []struct {
		name    string
		drained []bool // modes (parallel?) of the waiters Drain admits beside the exclusive call
		excl    bool   // the mark after the exclusive call's release
		count   int
	}{
		{"alone", nil, false, 0},
		{"one parallel drained", []bool{true}, false, 1},
		{"two parallel drained", []bool{true, true}, false, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var g Gate
			q := Queue{G: &g}
			if !admits(g.TryAcquire(false)) {
				t.Fatal("exclusive call on an idle gate")
			}
			for _, p := range tc.drained {
				q.Admit(waiter(t, &g, p))
			}
			if got := q.Drain(); len(got) != len(tc.drained) {
				t.Fatalf("drain admitted %d", len(got))
			}
			g.Release(true)
			n, excl := running(&g)
			if n != tc.count || excl != tc.excl {
				t.Fatalf("after the exclusive release: Running = %d, %v; want %d, %v", n, excl, tc.count, tc.excl)
			}
			if tc.count > 0 && !g.TryAcquireNested(true) {
				t.Fatal("a parallel call does not fit beside parallel calls only")
			}
		})
	}
}

// A waiter that leaves stops counting at once, even behind a head that
// still waits (issue 20 item 8); the queue drops it when it gets there.
func TestGate_LeaveStopsCountingAtOnce(t *testing.T) {
	var g Gate
	q := Queue{G: &g}
	g.TryAcquire(false)
	head := waiter(t, &g, false)
	behind := waiter(t, &g, false)
	for _, w := range []*Waiter{head, behind} {
		q.Admit(w)
	}
	if g.Waiting() != 2 {
		t.Fatalf("Waiting = %d, want 2", g.Waiting())
	}
	if !g.Leave(behind) {
		t.Fatal("a queued waiter can leave")
	}
	if g.Waiting() != 1 {
		t.Fatalf("Waiting = %d after one left behind the head, want 1", g.Waiting())
	}
	if got := q.AdmitWaiting(); len(got) != 0 {
		t.Fatal("admitted beside the exclusive call")
	}
	if got := release(&q, true); len(got) != 1 || got[0] != head {
		t.Fatalf("release admitted %v, want the head", got)
	}
	if g.Waiting() != 0 || q.Queued() != 0 {
		t.Fatalf("Waiting = %d, Queued = %d", g.Waiting(), q.Queued())
	}
	if g.Leave(head) {
		t.Fatal("an admitted waiter cannot leave")
	}
}
