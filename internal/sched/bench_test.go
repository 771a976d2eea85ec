package sched

import "testing"

// driveAllParallel runs an n-call all-parallel turn to completion, completing
// dispatches newest-first so that commits are held back (R95).
func driveAllParallel(tb testing.TB, n, maxParallel int) {
	tu, err := New(n, maxParallel)
	if err != nil {
		tb.Fatal(err)
	}
	var stack [64]int
	top := 0
	for {
		a := tu.Next()
		switch a.Kind {
		case Classify:
			err = tu.Classified(a.Call, Parallel)
		case Prepare:
			stack[top] = a.Call
			top++
			err = tu.Prepared(a.Call, true)
		case Commit:
			err = tu.Committed(a.Call)
		case Wait:
			top--
			err = tu.DispatchDone(stack[top])
		case Done:
			return
		default:
			tb.Fatalf("unexpected %v", a)
		}
		if err != nil {
			tb.Fatal(err)
		}
	}
}

func BenchmarkTurn_AllParallel16(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		driveAllParallel(b, 16, DefaultMaxParallel)
	}
}

func TestTurn_AllParallel16Allocs(t *testing.T) {
	if avg := testing.AllocsPerRun(100, func() { driveAllParallel(t, 16, DefaultMaxParallel) }); avg > 1 {
		t.Errorf("allocs per 16-call turn = %v, want <= 1", avg)
	}
}
