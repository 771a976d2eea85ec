package admit

import (
	"fmt"
	"math/rand/v2"
	goruntime "runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// orderLine is the runtime's admission line around a Queue, for the
// checker: a mutex, the waiters it admits woken after it is released, and
// the checker's own bookkeeping (under the same mutex, so it sees the
// queue's admissions in their order).
type orderLine struct {
	t     *testing.T
	g     *Gate
	mu    sync.Mutex
	q     Queue
	base  Ticket    // the first ticket of the run
	byTk  []*Waiter // posted waiters by ticket - base
	low   int       // tickets below low are answered, each checked once
	fails atomic.Int32
}

func (l *orderLine) seq(tk Ticket) int { return tk.after(l.base) }

// post is admissionLine.post of a waiter; admitWaiting is post of nothing.
func (l *orderLine) post(w *Waiter) {
	l.mu.Lock()
	k := l.seq(w.Ticket)
	for len(l.byTk) <= k {
		l.byTk = append(l.byTk, nil)
	}
	if l.byTk[k] != nil {
		l.failf("ticket %d posted twice", w.Ticket)
	}
	l.byTk[k] = w
	l.admittedLocked(l.q.Admit(w))
}

func (l *orderLine) admitWaiting() {
	l.mu.Lock()
	l.admittedLocked(l.q.AdmitWaiting())
}

// admittedLocked checks the queue's admissions, in their order: a waiter is
// admitted only once every earlier ticket has been posted and answered
// (admitted or gone), so nobody overtook a call whose fast path failed
// first. Then it releases the mutex and wakes them.
func (l *orderLine) admittedLocked(ws []*Waiter) {
	for _, w := range ws {
		k := l.seq(w.Ticket)
		for ; l.low < k; l.low++ {
			switch e := l.byTk[l.low]; {
			case e == nil:
				l.failf("ticket %d admitted before ticket %d reached the line", w.Ticket, (l.base+Ticket(l.low))&ticketMask)
			case e.Waiting():
				l.failf("ticket %d admitted ahead of ticket %d, still waiting in line", w.Ticket, e.Ticket)
			}
		}
	}
	l.mu.Unlock()
	for _, w := range ws {
		close(w.Ready)
	}
}

func (l *orderLine) failf(format string, args ...any) {
	if l.fails.Add(1) <= 5 {
		l.t.Errorf(format, args...)
	}
}

// occupancy checks that admitted calls never overlap wrongly: an
// exclusive call runs alone.
type occupancy struct {
	mu        sync.Mutex
	par, excl int
}

func (o *occupancy) enter(parallel bool) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.excl > 0 || (!parallel && o.par > 0) {
		return fmt.Sprintf("a %s call admitted beside %d exclusive and %d parallel calls", modeName(parallel), o.excl, o.par)
	}
	if parallel {
		o.par++
	} else {
		o.excl++
	}
	return ""
}

func (o *occupancy) leave(parallel bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if parallel {
		o.par--
	} else {
		o.excl--
	}
}

// TestQueue_N1_RandomArrivalsAdmittedInTicketOrder is the randomized
// checker of first come, first served among concurrent arrivals
// (docs/contract.md#n1): many goroutines, exclusive and parallel calls
// mixed, each call descheduled at random between its failed fast path and
// its post to the line (the gap where a later caller could post first),
// some giving up while they wait. It checks that the queue admits in ticket
// order, every earlier ticket posted and answered first; that every call is
// answered once (admitted or gone); that an exclusive call runs alone; that
// nothing hangs; and that nothing is left over (the gate idle, nobody
// counted waiting, the queue empty, every ticket issued reached it). Half
// the runs start with the ticket counter just short of its wrap.
func TestQueue_N1_RandomArrivalsAdmittedInTicketOrder(t *testing.T) {
	runs, workers, calls := 16, 24, 60
	if testing.Short() {
		runs = 4
	}
	for run := range runs {
		var g Gate
		l := &orderLine{t: t, g: &g, q: Queue{G: &g}}
		if run%2 == 1 {
			start := Ticket(ticketMask - 40)
			g.w.Store(uint64(start) << ticketShift)
			l.q.first, l.base = start, start
		}
		var occ occupancy
		var admittedN, goneN, fastN atomic.Int64
		var wg sync.WaitGroup
		for wkr := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(run), uint64(wkr)))
				for range calls {
					parallel := rng.IntN(3) != 0
					tk, ok := g.TryAcquire(parallel)
					if ok {
						fastN.Add(1)
					} else {
						for range rng.IntN(4) { // the gap between the failed CAS and the post
							goruntime.Gosched()
						}
						w := &Waiter{Parallel: parallel, Ticket: tk, Ready: make(chan struct{})}
						l.post(w)
						if rng.IntN(5) == 0 { // its caller gives up
							goruntime.Gosched()
							if g.Leave(w) {
								goneN.Add(1)
								l.admitWaiting() // the waiters behind it may fit now
								continue
							}
						}
						select {
						case <-w.Ready:
						case <-time.After(30 * time.Second):
							l.failf("hang: ticket %d never admitted\n%s", tk, dump())
							return
						}
						admittedN.Add(1)
					}
					if msg := occ.enter(parallel); msg != "" {
						l.failf("%s", msg)
						return
					}
					for range rng.IntN(3) {
						goruntime.Gosched()
					}
					occ.leave(parallel)
					if !g.TryRelease(!parallel) {
						g.Release(!parallel)
						l.admitWaiting()
					}
				}
			}()
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			t.Fatalf("run %d: hang\n%s", run, dump())
		}
		if l.fails.Load() > 0 {
			t.Fatalf("run %d failed", run)
		}
		total := int64(workers * calls)
		if got := fastN.Load() + admittedN.Load() + goneN.Load(); got != total {
			t.Fatalf("run %d: %d calls answered (fast %d, from the queue %d, gone %d), want %d once each",
				run, got, fastN.Load(), admittedN.Load(), goneN.Load(), total)
		}
		if issued := ticketOf(uint64(g.Load())).after(l.base); issued != len(l.byTk) || int64(issued) != admittedN.Load()+goneN.Load() {
			t.Fatalf("run %d: %d tickets issued, %d posted, %d answered", run, issued, len(l.byTk), admittedN.Load()+goneN.Load())
		}
		w := g.Load()
		if uint64(w)&(ticketOne-1) != 0 || g.Waiting() != 0 || l.q.Queued() != 0 || l.q.first != ticketOf(uint64(w)) {
			t.Fatalf("run %d: left over: word %#x, %d waiting, %d queued, next ticket %d", run, uint64(w), g.Waiting(), l.q.Queued(), l.q.first)
		}
		if admittedN.Load() == 0 {
			t.Fatalf("run %d: nobody waited; the checker checked nothing", run)
		}
	}
}

// A ticket posted ahead of an earlier one waits behind that one's place,
// across the ticket counter's wrap (the queue compares distances).
func TestQueue_N1_TicketOrderAcrossTheWrap(t *testing.T) {
	var g Gate
	q := Queue{G: &g}
	start := Ticket(ticketMask) // the last ticket before the wrap
	g.w.Store(uint64(start) << ticketShift)
	q.first = start
	if !admits(g.TryAcquire(false)) {
		t.Fatal("an idle gate refused")
	}
	a := waiter(t, &g, false)
	b := waiter(t, &g, true)
	if a.Ticket != ticketMask || b.Ticket != 0 {
		t.Fatalf("tickets %d, %d; want %d, 0 (wrapped)", a.Ticket, b.Ticket, ticketMask)
	}
	g.Release(true)
	if got := q.Admit(b); len(got) != 0 {
		t.Fatal("the later ticket was admitted before the earlier one reached the line")
	}
	if got := q.Admit(a); len(got) != 1 || got[0] != a {
		t.Fatalf("admitted %v, want the earlier ticket alone (exclusive)", got)
	}
	if got := release(&q, true); len(got) != 1 || got[0] != b {
		t.Fatalf("admitted %v, want the later ticket", got)
	}
	if g.Load().Queued() || q.first != 1 {
		t.Fatalf("queued %v, next ticket %d after the line emptied", g.Load().Queued(), q.first)
	}
	if !g.TryRelease(false) {
		t.Fatal("the fast path is not back")
	}
}

func dump() string {
	var b strings.Builder
	if p := pprof.Lookup("goroutine"); p != nil {
		_ = p.WriteTo(&b, 2)
	}
	return b.String()
}
