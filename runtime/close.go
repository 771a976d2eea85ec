package runtime

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/toolscope/toolscope/internal/core"
)

// lifecycle tracks the calls in flight (Execute and turns) so Close can
// drain them, and cancels them when Close's ctx expires first.
//
// Entering and leaving is one atomic add each way: no lock, no list, no
// allocation. Each call's ctx is a shutdownAwareCtx, which links the
// caller's ctx to the registry's shutdown signal only when somebody asks for
// Done.
type lifecycle struct {
	inflight atomic.Int64
	// drained receives a token whenever the count drops to zero after
	// Close began.
	drained chan struct{}
	// cancelled is set, and then shutdown cancelled, when Close's ctx
	// expires before the drain: every call in flight is cancelled.
	cancelled atomic.Bool
	// shutdown is cancelled with cancelled. Fused call ctxs register on it
	// (context.AfterFunc takes the ctx's mutex), so it is split in shards
	// under one root: calls waiting on Done under load do not all meet on
	// one lock.
	shutdown    [shutdownShards]context.Context
	shardCancel [shutdownShards]context.CancelFunc // cancelled through cancel; kept for vet
	cancel      context.CancelFunc                 // the root
}

const shutdownShards = 8

func (l *lifecycle) init() {
	l.drained = make(chan struct{}, 1)
	root, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	for i := range l.shutdown {
		l.shutdown[i], l.shardCancel[i] = context.WithCancel(root)
	}
}

// shutdownFor returns the shard of the shutdown signal c registers on.
func (l *lifecycle) shutdownFor(c *shutdownAwareCtx) context.Context {
	// Executions are 512-byte objects: the bits above that spread them.
	return l.shutdown[(uintptr(unsafe.Pointer(c))>>9)%shutdownShards]
}

// shutdownAwareCtx is a call's ctx that Close's cancellation and the call's
// end also cancel (the ctx types: nesting.go).
type shutdownAwareCtx struct {
	parent context.Context
	life   *lifecycle
	ended  atomic.Bool
	mu     sync.Mutex // serialises fuse, so a ctx gets one link
	link   atomic.Pointer[shutdownLink]
}

// shutdownLink is a shutdownAwareCtx's cancel ctx linked to the shutdown
// signal, built on first need.
type shutdownLink struct {
	ctx    context.Context
	cancel context.CancelFunc
	stop   func() bool
}

func (c *shutdownAwareCtx) init(parent context.Context, l *lifecycle) {
	c.parent, c.life = parent, l
}

// Deadline implements context.Context.
func (c *shutdownAwareCtx) Deadline() (time.Time, bool) { return c.parent.Deadline() }

// Value implements context.Context. Only the context package's own lookup
// needs the link: its key (unexported, a *int) is how a ctx derived from
// this one finds the cancel ctx to hang on, and how Cause finds a cause.
// Any other key the link would pass to the caller's ctx, so the caller's
// answers it, and a hook or body reading a value builds nothing.
func (c *shutdownAwareCtx) Value(key any) any {
	if _, maybeCancelKey := key.(*int); !maybeCancelKey {
		return c.parent.Value(key)
	}
	return c.fuse().ctx.Value(key)
}

// Err implements context.Context.
//
// It answers from the caller's ctx and the two flags, never from the fused
// ctx: that one learns of Close's cancellation through context.AfterFunc,
// on another goroutine, and a check made in between (a call admitted as
// Close gave up waiting) must already see it.
func (c *shutdownAwareCtx) Err() error {
	if err := c.parent.Err(); err != nil {
		return err
	}
	if c.life.cancelled.Load() || c.ended.Load() {
		return context.Canceled
	}
	return nil
}

// Done implements context.Context.
func (c *shutdownAwareCtx) Done() <-chan struct{} { return c.fuse().ctx.Done() }

// String names the ctx in debugging output.
func (c *shutdownAwareCtx) String() string { return "toolscope call context" }

func (c *shutdownAwareCtx) fuse() *shutdownLink {
	if f := c.link.Load(); f != nil {
		return f
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if f := c.link.Load(); f != nil {
		return f
	}
	f := &shutdownLink{}
	f.ctx, f.cancel = context.WithCancel(c.parent)
	if c.ended.Load() || c.life.cancelled.Load() {
		f.cancel()
		f.stop = func() bool { return false }
	} else {
		f.stop = context.AfterFunc(c.life.shutdownFor(c), f.cancel)
	}
	c.link.Store(f)
	if c.ended.Load() {
		// release ran meanwhile and may have missed the link: end it here
		// (stop and cancel are idempotent).
		f.stop()
		f.cancel()
	}
	return f
}

// release ends the call: its ctx is done from now on, and its shutdownLink's
// registration with the shutdown signal is dropped. It takes no lock: it
// sets ended, then looks for a link; fuse stores its link, then looks at
// ended. The atomics are sequentially consistent, so at least one of the
// two sees the other's write and ends the link — a plain call (whose ctx
// nobody asked for Done or a value) pays two atomics here, not a mutex.
func (c *shutdownAwareCtx) release() {
	c.ended.Store(true)
	if f := c.link.Load(); f != nil {
		f.stop()
		f.cancel()
	}
}

// enterCall admits one Execute: it returns the immediate failure result of
// a call that must not run: CLOSED after Close, OVERLOADED when the scope's
// admission queue is full (WithMaxQueued). A nil failure obliges the
// caller to exit exactly once.
func (r *Registry) enterCall(node *core.Node) *Result {
	if r.closed.Load() {
		// CLOSED before OVERLOADED: a full queue says nothing once Close began.
		if r.hooks != nil {
			r.hooks.refused(CodeClosed)
		}
		return closedResult()
	}
	if r.cfg.maxQueued > 0 {
		if r.overloaded(node) {
			if r.hooks != nil {
				r.hooks.refused(CodeOverloaded)
			}
			return overloadedResult()
		}
		if c := r.hostCap; c != nil && c.waiting.Load() >= int64(r.cfg.maxQueued) {
			if r.hooks != nil {
				r.hooks.refused(CodeOverloaded)
			}
			return hostOverloadedResult()
		}
	}
	if !r.enter() {
		if r.hooks != nil {
			r.hooks.refused(CodeClosed)
		}
		return closedResult()
	}
	return nil
}

// enterTurn admits one turn like enterCall; after Close it returns
// ErrClosed.
func (r *Registry) enterTurn() error {
	if !r.enter() {
		return ErrClosed
	}
	return nil
}

// enter counts one call in; false means the registry is closed (nothing to
// exit).
func (r *Registry) enter() bool {
	l := &r.life
	l.inflight.Add(1)
	// The count goes up before the closed check: Close sets closed before
	// it reads the count, so either Close waits for this call or the call
	// sees closed.
	if r.closed.Load() {
		l.done()
		return false
	}
	return true
}

// exit counts a call out once its result is ready; c is its ctx.
func (r *Registry) exit(c *shutdownAwareCtx) {
	c.release()
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

// cancelAll cancels every call in flight (and any that still slips in).
func (l *lifecycle) cancelAll() {
	l.cancelled.Store(true)
	l.cancel()
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

// ErrCloseInsideCall is returned by a Close made from inside a toolscope
// callback (a tool body, a hook, a guard, an observer, a change subscriber,
// the approver) with the ctx the callback was given, or one derived from
// it: Close has begun the shutdown but does not wait for it,
// since the teardown cannot complete before the calling callback returns
// (see Close).
var ErrCloseInsideCall = errors.New("runtime: Close called from inside a toolscope callback: the shutdown has begun and completes once the calling call has returned")

func closedResult() *Result { return codedFailure(NameClosed, CodeClosed, "registry closed") }

// Close shuts the registry down. New calls get a CLOSED failure result
// (turns ErrClosed) at once; calls in flight are drained: each still
// returns its one result. If ctx expires first, the calls in flight are
// cancelled (their ctx is done; cooperative bodies return and their
// callers get ABORTED-style results) and Close returns ctx.Err() while the
// teardown completes in the background once they have returned; a later
// Close waits for it. After the drain every scope is disposed and the
// registry's dispatch workers exit. Close is idempotent.
//
// Close made from inside a toolscope callback — a tool body, a hook, a
// guard, the approver, an observer, a change subscriber (including one
// hearing the removals of Close's own teardown) — cannot wait: the drain
// includes the call it is made from, and the teardown runs the callbacks it
// is made from. Close recognises such a caller by its ctx: the ctx the
// callback was given, or one derived from it, on any goroutine (an
// execution's ctx of this registry, or the ctx of a change subscriber or of
// ExecutionMode's classifier). With it, Close begins the shutdown exactly as
// above and returns ErrCloseInsideCall at once; its ctx still bounds the
// drain: when it ends before the teardown is complete, now or later, the
// calls in flight are cancelled (a callback's own ctx ends when its call
// ends, so passing it cancels the rest as soon as the calling call is
// over); the teardown completes once the calling call has returned, and a
// later Close from outside waits for it and returns nil.
//
// A Close from inside a callback with an unrelated ctx (context.Background(),
// or a ctx not derived from the callback's) cannot be told apart from a
// Close from outside, so it waits like one, as http.Server.Shutdown called
// from a handler does: until its ctx ends, which cancels the calls in flight
// (the calling one included) and returns ctx.Err(). A callback that calls
// Close passes the ctx it was given.
func (r *Registry) Close(ctx context.Context) error {
	r.closeOnce.Do(func() {
		r.closed.Store(true)
		go r.shutdown()
	})
	select {
	case <-r.closeDone:
		return nil
	default:
	}
	if r.insideCallback(ctx) {
		r.cancelOnExpiry(ctx)
		return ErrCloseInsideCall
	}
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

// cancelOnExpiry gives ctx, the ctx of a Close that does not wait (made
// from inside a callback), the effect it has on a Close that waits: if it
// ends before the teardown is complete — now or later — the calls in
// flight are cancelled. The watch ends with the teardown or the ctx.
func (r *Registry) cancelOnExpiry(ctx context.Context) {
	if ctx.Err() != nil {
		r.life.cancelAll()
		return
	}
	done := ctx.Done()
	if done == nil {
		return // never ends
	}
	go func() {
		select {
		case <-r.closeDone:
		case <-done:
			select {
			case <-r.closeDone:
			default:
				r.life.cancelAll()
			}
		}
	}()
}

// insideCallback reports whether a Close with ctx is made from inside a
// toolscope callback: whether ctx is, or derives from, a ctx the registry
// gave a callback (see Close). No goroutine identity or stack is read.
func (r *Registry) insideCallback(ctx context.Context) bool {
	if s := execOf(ctx); s != nil && s.reg == r {
		return true
	}
	return fromCallbackCtx(ctx) // a change subscriber's (or ExecutionMode classifier's) ctx
}

func (r *Registry) shutdown() {
	defer close(r.closeDone)
	r.life.waitDrained()
	r.mu.RLock()
	live := make([]*Scope, 0, len(r.scopes))
	for _, record := range r.scopes {
		if record.live != nil {
			live = append(live, record.live)
		}
	}
	r.mu.RUnlock()
	for _, s := range live {
		s.dispose()
	}
	r.global.stop()
	r.closeSubscriptions()
	if r.hooks != nil {
		r.hooks.close()
	}
	r.workers.close()
}
