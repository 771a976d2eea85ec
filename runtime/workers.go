package runtime

import (
	goruntime "runtime"
	"sync/atomic"
)

// workerPool runs a turn's dispatches on goroutines that are kept warm. A
// fresh goroutine per dispatch pays for growing its stack every time (the
// pipeline is a few frames deep); a parked worker already has the stack. At most maxIdle workers wait for work; the rest
// exit. An idle worker waits on one channel receive (a select with a quit
// channel made every hand-off lock two channels). close tells the idle
// ones to exit with a nil task; a worker that finds the pool closed when it
// would go idle exits instead, so no goroutine outlives the registry.
type workerPool struct {
	tasks   chan task
	idle    atomic.Int32
	closed  atomic.Bool
	maxIdle int32
}

// task is one unit of work; a pointer type implementing it travels
// through the pool without an allocation (a closure would need one).
type task interface{ run() }

func newWorkerPool(maxIdle int32) *workerPool {
	return &workerPool{tasks: make(chan task), maxIdle: maxIdle}
}

// start runs t on an idle worker, or on a new goroutine.
func (p *workerPool) start(t task) {
	select {
	case p.tasks <- t:
	default:
		go p.work(t)
	}
}

func (p *workerPool) work(t task) {
	for {
		t.run()
		if p.idle.Add(1) > p.maxIdle || p.closed.Load() {
			p.idle.Add(-1)
			return
		}
		t = <-p.tasks
		p.idle.Add(-1)
		if t == nil {
			return // close
		}
	}
}

// close makes every idle worker exit, and every busy one once it is done.
// Nothing should start tasks afterwards; one that does still runs, on a
// goroutine that then exits.
func (p *workerPool) close() {
	p.closed.Store(true)
	// A worker counted idle may not have reached its receive yet, and a
	// late start may take the hand-off instead: offer the nil task until
	// no worker is idle.
	for p.idle.Load() > 0 {
		select {
		case p.tasks <- nil:
		default:
			goruntime.Gosched()
		}
	}
}
