package runtime

import "sync/atomic"

// workerPool runs dispatches on goroutines that are kept warm. A fresh
// goroutine per dispatch pays for growing its stack every time (the
// pipeline is a few frames deep); a parked worker already has the stack.
// At most maxIdle workers wait for work; the rest exit. Close stops the
// idle ones, so no goroutine outlives the registry.
type workerPool struct {
	tasks   chan task
	quit    chan struct{}
	idle    atomic.Int32
	maxIdle int32
}

// task is one unit of work; a pointer type implementing it travels
// through the pool without an allocation (a closure would need one).
type task interface{ run() }

type funcTask func()

func (f funcTask) run() { f() }

func newWorkerPool(maxIdle int32) *workerPool {
	return &workerPool{tasks: make(chan task), quit: make(chan struct{}), maxIdle: maxIdle}
}

// run starts f on an idle worker, or on a new goroutine.
func (p *workerPool) run(f func()) { p.start(funcTask(f)) }

// start runs t on an idle worker, or on a new goroutine.
func (p *workerPool) start(t task) {
	select {
	case p.tasks <- t:
	default:
		go p.work(t)
	}
}

func (p *workerPool) work(f task) {
	for {
		f.run()
		if p.idle.Add(1) > p.maxIdle {
			p.idle.Add(-1)
			return
		}
		select {
		case f = <-p.tasks:
			p.idle.Add(-1)
		case <-p.quit:
			p.idle.Add(-1)
			return
		}
	}
}

func (p *workerPool) close() { close(p.quit) }
