package sched_test

import (
	"fmt"

	"github.com/toolscope/toolscope/internal/sched"
)

// A synchronous stand-in for the shell: three parallel calls, the second
// denied during prepare, dispatches completing in reverse order. The real
// shell runs Prepare and Commit on goroutines and feeds outcomes back as
// messages; the loop is the same.
func Example() {
	modes := []sched.Mode{sched.Parallel, sched.Parallel, sched.Parallel}
	allowed := []bool{true, false, true}

	t, err := sched.New(len(modes), sched.DefaultMaxParallel)
	if err != nil {
		panic(err)
	}
	var running []int // launched dispatches, newest last
	for {
		// if ctx.Err() != nil { t.Abort() }  // R97: before every Next
		a := t.Next()
		fmt.Println(a)
		switch a.Kind {
		case sched.Classify:
			err = t.Classified(a.Call, modes[a.Call])
		case sched.Prepare:
			if allowed[a.Call] {
				running = append(running, a.Call)
			}
			err = t.Prepared(a.Call, allowed[a.Call])
		case sched.Commit:
			err = t.Committed(a.Call)
		case sched.Synthetic:
			// record call-started + ABORTED_BEFORE_DISPATCH
		case sched.Wait:
			last := running[len(running)-1]
			running = running[:len(running)-1]
			fmt.Println("  dispatch done:", last)
			err = t.DispatchDone(last)
		case sched.Done:
			fmt.Println("err:", t.Err())
			return
		}
		if err != nil {
			panic(err)
		}
	}
	// Output:
	// Classify(0)
	// Prepare(0)
	// Classify(1)
	// Prepare(1)
	// Classify(2)
	// Prepare(2)
	// Wait
	//   dispatch done: 2
	// Wait
	//   dispatch done: 0
	// Commit(0)
	// Commit(1)
	// Commit(2)
	// Done
	// err: <nil>
}
