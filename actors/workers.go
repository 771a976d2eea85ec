package actors

import (
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
)

// maxIdle bounds the warm workers that wait for requests: a fresh
// goroutine per request would pay for growing its stack through the
// pipeline every time, and for the closure that carries the request.
const maxIdle = 16

// request is one piece of work handed to a worker, by value: a request a
// scope actor received (rec, sender, msg), or a mailbox run (fn) of the
// host's dispatcher.
type request struct {
	fn     func()
	rec    *actorRec
	sender *actor.PID
	msg    any
}

// workers are the goroutines that answer requests off the actors'
// goroutines (Receive never runs user code).
type workers struct {
	tasks chan request // unbuffered: handed to a worker that waits
	idle  atomic.Int32
}

// run answers q on a waiting worker, or on a new one when none waits. It
// never blocks the actor.
func (h *Host) run(q request) {
	select {
	case h.workers.tasks <- q:
	default:
		go h.work(q)
	}
}

// work answers q, then waits for the next request while fewer than
// maxIdle workers wait; it ends with the host.
func (h *Host) work(q request) {
	w := &h.workers
	for {
		if q.fn != nil {
			q.fn()
		} else {
			h.answer(q.rec, q.sender, q.msg)
		}
		if w.idle.Add(1) > maxIdle {
			w.idle.Add(-1)
			return
		}
		select {
		case q = <-w.tasks:
			w.idle.Add(-1)
		case <-h.closing:
			w.idle.Add(-1)
			return
		}
	}
}

// dispatcher runs the scope actors' mailbox loops on the host's warm
// workers; protoactor's default starts a fresh goroutine each time a
// mailbox gets work, which then grows its stack through Receive.
type dispatcher struct{ h *Host }

// Schedule implements actor.Dispatcher.
func (d dispatcher) Schedule(fn func()) { d.h.run(request{fn: fn}) }

// Throughput implements actor.Dispatcher: messages per mailbox run before
// the loop yields (protoactor's default).
func (dispatcher) Throughput() int { return 300 }
