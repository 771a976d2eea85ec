package runtime

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/toolscope/toolscope/internal/core"
)

// lifecycle tracks the calls in flight (Execute and turns) so Close can
// drain them, and cancels them when Close's ctx expires first.
//
// Every call entering the registry derives its ctx from the caller's and
// files the cancel function in one of a few shards (a shard lock, not one
// registry-wide lock, on the hot path). Close flips every shard to
// cancelled and cancels what is filed there; a call entering after that
// sees the flag under the same lock, so none is missed.
type lifecycle struct {
	inflight atomic.Int64
	// drained receives a token whenever the count drops to zero after
	// Close began.
	drained chan struct{}
	shards  [lifeShards]lifeShard
}

const lifeShards = 16

type lifeShard struct {
	mu        sync.Mutex
	cancelled bool
	head      *ticket
}

// ticket is one call in flight.
type ticket struct {
	cancel     context.CancelFunc
	shard      *lifeShard
	prev, next *ticket
}

func (l *lifecycle) init() { l.drained = make(chan struct{}, 1) }

// enterCall admits one Execute: it returns the call's ctx (the caller's,
// fused with the registry's shutdown) and its ticket, or the immediate
// failure result of a call that must not run: CLOSED after Close,
// OVERLOADED when the scope's admission queue is full (WithMaxQueued).
// A nil failure obliges the caller to exit(t) exactly once.
func (r *Registry) enterCall(ctx context.Context, node *core.Node) (context.Context, *ticket, *Result) {
	if r.cfg.maxQueued > 0 && r.overloaded(node) {
		return ctx, nil, overloadedResult()
	}
	c, t := r.enter(ctx)
	if t == nil {
		return ctx, nil, closedResult()
	}
	return c, t, nil
}

// enterTurn admits one turn like enterCall; after Close it returns
// ErrClosed.
func (r *Registry) enterTurn(ctx context.Context) (context.Context, *ticket, error) {
	c, t := r.enter(ctx)
	if t == nil {
		return ctx, nil, ErrClosed
	}
	return c, t, nil
}

// enter counts one call in and derives its ctx. A nil ticket means the
// registry is closed (nothing to exit).
func (r *Registry) enter(ctx context.Context) (context.Context, *ticket) {
	l := &r.life
	n := l.inflight.Add(1)
	// The count goes up before the closed check: Close sets closed before
	// it reads the count, so either Close waits for this call or the call
	// sees closed.
	if r.closed.Load() {
		l.done()
		return ctx, nil
	}
	c, cancel := context.WithCancel(ctx)
	t := &ticket{cancel: cancel, shard: &l.shards[uint64(n)%lifeShards]}
	sh := t.shard
	sh.mu.Lock()
	if sh.cancelled {
		sh.mu.Unlock()
		cancel()
		t.shard = nil
		return c, t
	}
	t.next = sh.head
	if sh.head != nil {
		sh.head.prev = t
	}
	sh.head = t
	sh.mu.Unlock()
	return c, t
}

// exit counts a call out once its result is ready.
func (r *Registry) exit(t *ticket) {
	if sh := t.shard; sh != nil {
		sh.mu.Lock()
		if t.prev != nil {
			t.prev.next = t.next
		} else if sh.head == t {
			sh.head = t.next
		}
		if t.next != nil {
			t.next.prev = t.prev
		}
		t.prev, t.next = nil, nil
		sh.mu.Unlock()
	}
	t.cancel()
	r.life.done()
}

func (l *lifecycle) done() {
	if l.inflight.Add(-1) == 0 {
		select {
		case l.drained <- struct{}{}:
		default:
		}
	}
}

// cancelAll cancels every call in flight and every call that still slips
// in (they find the shard cancelled).
func (l *lifecycle) cancelAll() {
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		sh.cancelled = true
		var cancels []context.CancelFunc
		for t := sh.head; t != nil; t = t.next {
			cancels = append(cancels, t.cancel)
		}
		sh.mu.Unlock()
		for _, c := range cancels {
			c()
		}
	}
}

// waitDrained blocks until no call is in flight. Only called after closed
// is set, so the count can only fall (a late enter backs out at once).
func (l *lifecycle) waitDrained() {
	for l.inflight.Load() != 0 {
		<-l.drained
	}
}

// InFlight reports the Execute and turn calls currently running.
func (r *Registry) InFlight() int { return int(r.life.inflight.Load()) }

func closedResult() *Result { return codedFailure(NameClosed, CodeClosed, "registry closed") }

// Close shuts the registry down. New calls get a CLOSED failure result
// (turns ErrClosed) at once; calls in flight are drained: each still
// returns its one result. If ctx expires first, the calls in flight are
// cancelled (their ctx is done; cooperative bodies return and their
// callers get ABORTED-style results) and Close returns ctx.Err() while the
// teardown completes in the background once they have returned; a later
// Close waits for it. After the drain every scope is disposed, the actors
// are stopped and, if the registry started its own actor system, it is
// shut down. Close is idempotent.
func (r *Registry) Close(ctx context.Context) error {
	r.closeOnce.Do(func() {
		r.closed.Store(true)
		go r.shutdown()
	})
	select {
	case <-r.closeDone:
		return nil
	case <-ctx.Done():
	}
	// ctx expired before the drain: cancel what is in flight and report
	// the expiry. (The teardown may finish a moment later, or even before
	// this returns, once the cancelled calls return; a later Close waits.)
	r.life.cancelAll()
	return ctx.Err()
}

func (r *Registry) shutdown() {
	defer close(r.closeDone)
	r.life.waitDrained()
	r.mu.RLock()
	live := make([]*Scope, 0, len(r.scopes))
	for _, rec := range r.scopes {
		if rec.live != nil {
			live = append(live, rec.live)
		}
	}
	r.mu.RUnlock()
	for _, s := range live {
		s.dispose()
	}
	r.global.stop()
	r.workers.close()
	if r.ownSystem {
		r.system.Shutdown()
	}
}
