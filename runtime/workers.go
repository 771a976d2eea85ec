package runtime

import "sync/atomic"

// workerPool runs dispatches on goroutines that are kept warm. A fresh
// goroutine per dispatch pays for growing its stack every time (the
// pipeline is a few frames deep); a parked worker already has the stack.
// At most maxIdle workers wait for work; the rest exit. Close stops the
// idle ones, so no goroutine outlives the registry.
type workerPool struct {
	tasks   chan func()
	quit    chan struct{}
	idle    atomic.Int32
	maxIdle int32
}

func newWorkerPool(maxIdle int32) *workerPool {
	return &workerPool{tasks: make(chan func()), quit: make(chan struct{}), maxIdle: maxIdle}
}

// run starts f on an idle worker, or on a new goroutine.
func (p *workerPool) run(f func()) {
	select {
	case p.tasks <- f:
	default:
		go p.work(f)
	}
}

func (p *workerPool) work(f func()) {
	for {
		f()
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
