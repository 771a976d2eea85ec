package runtime

import (
	"errors"
	"sync"
	"testing"

	"github.com/toolscope/toolscope/internal/admit"
	"github.com/toolscope/toolscope/internal/core"
)

func newTestLine() (*scopeState, *admissionLine) {
	sh := &scopeState{}
	return sh, &admissionLine{gate: &sh.gate, queue: admit.Queue{G: &sh.gate}}
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// waitInLine is what acquire does when the fast path fails: count itself on
// the way (TryAcquire), then get in line.
func waitInLine(t *testing.T, sh *scopeState, line *admissionLine, parallel bool) *admit.Waiter {
	t.Helper()
	tk, ok := sh.gate.TryAcquire(parallel)
	if ok {
		t.Fatal("admitted at once; the test wants it in line")
	}
	w := &admit.Waiter{Parallel: parallel, Ticket: tk, Ready: make(chan struct{})}
	if !line.post(lineOp{w: w}) {
		t.Fatal("post refused by a live admission line")
	}
	return w
}

// N1: the admission line is an in-process serializer — post applies a request
// before it returns, on the caller's goroutine: the waiters it admits are
// woken (Ready closed) by then, in arrival order, and a turn's go-ahead is
// given by then too. No goroutine or message hop is involved.
func TestAdmissionLine_N1_PostAppliesAtOnceInArrivalOrder(t *testing.T) {
	sh, line := newTestLine()
	if _, ok := sh.gate.TryAcquire(false); !ok { // an exclusive call runs
		t.Fatal("empty gate refused")
	}
	x := waitInLine(t, sh, line, false)
	p1 := waitInLine(t, sh, line, true)
	p2 := waitInLine(t, sh, line, true)
	if isClosed(x.Ready) || isClosed(p1.Ready) || isClosed(p2.Ready) {
		t.Fatal("a waiter was admitted while the exclusive call runs")
	}
	var ready sync.WaitGroup
	ready.Add(1)
	if !line.postTurn(&ready) {
		t.Fatal("postTurn refused by a live admission line")
	}
	ready.Wait() // given at once: would hang if it waited for anything

	// The running call ends: its release finds the line and admits those waiting.
	sh.gate.Release(true)
	line.admitWaiting()
	if !isClosed(x.Ready) {
		t.Fatal("the first in line (exclusive) was not admitted when admitWaiting returned")
	}
	if isClosed(p1.Ready) || isClosed(p2.Ready) {
		t.Fatal("parallel waiters overlapped the exclusive call admitted before them")
	}
	sh.gate.Release(true)
	line.admitWaiting()
	if !isClosed(p1.Ready) || !isClosed(p2.Ready) {
		t.Fatal("the parallel waiters were not admitted together once the exclusive call ended")
	}
	if sh.gate.Load().Queued() {
		t.Fatal("the line is empty but the gate still says queued")
	}
}

// R7: a retired admission line (its scope torn down) keeps admitting the calls
// already in line, in order and keeping exclusivity, and stops once the
// line is empty: later requests are refused (the caller is admitted where
// its key's calls now are). With nobody in line it stops at once.
func TestAdmissionLine_R7_RetireKeepsTheLineThenStops(t *testing.T) {
	_, line := newTestLine()
	line.retire()
	if line.post(lineOp{}) {
		t.Fatal("an admission line retired with nobody in line still accepts requests")
	}

	sh, line := newTestLine()
	if _, ok := sh.gate.TryAcquire(false); !ok {
		t.Fatal("empty gate refused")
	}
	x1 := waitInLine(t, sh, line, false)
	x2 := waitInLine(t, sh, line, false)
	line.retire()
	if isClosed(x1.Ready) {
		t.Fatal("retire admitted a waiter while an exclusive call runs")
	}
	sh.gate.Release(true)
	if !line.post(lineOp{}) {
		t.Fatal("a retiring admission line with calls in line refused admitWaiting")
	}
	if !isClosed(x1.Ready) || isClosed(x2.Ready) {
		t.Fatal("a retiring admission line did not keep its line in order and exclusive")
	}
	sh.gate.Release(true)
	line.admitWaiting() // admits x2: the line is empty now, so it stops
	if !isClosed(x2.Ready) {
		t.Fatal("the last in line was not admitted")
	}
	if line.post(lineOp{}) {
		t.Fatal("a retired admission line with an empty line still accepts requests")
	}
	var ready sync.WaitGroup
	ready.Add(1)
	if line.postTurn(&ready) {
		t.Fatal("a stopped admission line accepted a turn")
	}
}

// A scope's mutations are applied by its mutex, the single writer of its
// layer: a mutation publishes the new layer; a failing or panicking one
// returns an error and publishes nothing; the scope goes on serving; a
// stopped scope refuses mutations with ErrScopeDisposed. (Ported from the
// scope actor's TestScopeActor_AppliesPublishesAndContainsPanics.)
func TestScope_MutationsAppliedOneAtATimeContainPanics(t *testing.T) {
	reg, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close(t.Context())
	s, err := reg.NewScope("a")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.apply(func(l *core.Layer) (*core.Layer, error) {
		n, _, _ := l.AddTool(core.Entry{ID: 1, Name: "read"})
		return n, nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.node.Layer().Lookup("read"); !ok {
		t.Fatal("the mutation was not published")
	}
	before := s.node.Layer()
	boom := errors.New("boom")
	if err := s.apply(func(*core.Layer) (*core.Layer, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	if err := s.apply(func(*core.Layer) (*core.Layer, error) { panic("bad mutation") }); err == nil {
		t.Fatal("a panicking mutation must return an error")
	}
	if s.node.Layer() != before {
		t.Fatal("a failed mutation published a layer")
	}
	if err := s.apply(func(l *core.Layer) (*core.Layer, error) { return l, nil }); err != nil {
		t.Fatal(err)
	}
	// Concurrent mutations are serialized: none is lost.
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.apply(func(l *core.Layer) (*core.Layer, error) {
				n, _, _ := l.AddTool(core.Entry{ID: uint64(100 + i), Name: "t" + string(rune('A'+i))})
				return n, nil
			}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	for i := range 50 {
		if _, ok := s.node.Layer().Lookup("t" + string(rune('A'+i))); !ok {
			t.Fatalf("concurrent mutation %d lost", i)
		}
	}
	s.Dispose()
	if err := s.apply(func(l *core.Layer) (*core.Layer, error) { return l, nil }); !errors.Is(err, ErrScopeDisposed) {
		t.Fatalf("mutation of a disposed scope: %v, want ErrScopeDisposed", err)
	}
}
