package goid

import "testing"

// Two goroutines have different, non-zero ids, and one goroutine reads the
// same id twice.
func TestID_DistinctPerGoroutineStablePerGoroutine(t *testing.T) {
	me := ID()
	if me == 0 || ID() != me {
		t.Fatalf("ID() = %d, then %d", me, ID())
	}
	other := make(chan uint64, 1)
	go func() { other <- ID() }()
	if o := <-other; o == 0 || o == me {
		t.Fatalf("other goroutine's id %d, mine %d", o, me)
	}
}
