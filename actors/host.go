package actors

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/toolscope/toolscope/runtime"
)

// Host is toolscope living inside one protoactor actor system: a
// runtime.Registry, and the actors that give its scopes PIDs. Make one with
// Start (inside the caller's actor system) or New (inside a system of its
// own); drive the registry through Registry, exactly as without actors, and
// hand PID(scope) to the actors that should talk to a scope by message.
type Host struct {
	sys    *actor.ActorSystem
	reg    *runtime.Registry
	own    bool // the host made sys and shuts it down on Close
	report func(error)

	closing chan struct{} // closed by Close: watchers and workers end, nothing respawns
	workers workers

	mu      sync.Mutex
	closed  bool
	lost    bool      // the global actor stopped and could not be respawned
	global  *actorRec // the global scope's actor: nil until the first PID
	scopes  map[*runtime.Scope]*actorRec
	pending []*actorRec // agent actors the global actor is to spawn
}

// actorRec is one scope's actor, across its incarnations. Guarded by
// Host.mu except where said.
type actorRec struct {
	scope *runtime.Scope // the live scope handle it serves (immutable)
	key   string         // immutable
	pid   *actor.PID     // the PID handed out; never changes once set
	cur   *actor.PID     // the current incarnation's own PID (nil: none)
	ready chan struct{}  // closed once pid is set (or the host gave up)
	// retired: the scope was disposed (or the host closed); the actor is
	// stopped and never respawned.
	retired bool
}

// Option configures a Host.
type Option func(*config) error

type config struct {
	regOpts    []runtime.Option
	events     bool
	logger     *slog.Logger
	errHandler func(error)
}

// WithRegistry passes options to the runtime.Registry the host creates
// (runtime.New). The host adds its own runtime.WithHooks when asked for
// events, after these.
func WithRegistry(opts ...runtime.Option) Option {
	return func(c *config) error { c.regOpts = append(c.regOpts, opts...); return nil }
}

// WithEvents makes the host publish one messages.ExecutionStarted and one
// messages.ExecutionFinished per call (a turn's synthetic aborted calls
// included) on the actor system's event stream. Without it nothing is
// published and a call pays nothing for the event stream. With it every
// call builds its typed events (runtime.Hooks.Event) and publishes two
// messages, whoever listens.
func WithEvents() Option {
	return func(c *config) error { c.events = true; return nil }
}

// WithLogger sets the logger of the host's own warnings (a contained panic
// of an event-stream subscriber), and is given to the registry
// (runtime.WithLogger, before the options of WithRegistry, which win). On a
// system New makes, protoactor's own log goes to the same handler too, from
// level Warn up, marked component=protoactor. Default: discard.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return fmt.Errorf("%w: nil logger", runtime.ErrInvalidConfig)
		}
		c.logger = l
		return nil
	}
}

// WithErrorHandler receives the errors the host contains instead of
// returning: a panic of an event-stream subscriber that heard a dead letter
// of one of the host's sends (a reply to a sender that is gone, a stop).
func WithErrorHandler(h func(error)) Option {
	return func(c *config) error { c.errHandler = h; return nil }
}

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// New starts a host in an actor system of its own, which Close shuts down.
func New(opts ...Option) (*Host, error) {
	cfg, err := configure(opts)
	if err != nil {
		return nil, err
	}
	pl := discard
	if cfg.logger != nil {
		pl = slog.New(minLevel{cfg.logger.Handler(), slog.LevelWarn}).With("component", "protoactor")
	}
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return pl }))
	h, err := start(sys, cfg)
	if err != nil {
		sys.Shutdown()
		return nil, err
	}
	h.own = true
	return h, nil
}

// Start starts a host inside sys, the caller's actor system, which keeps
// its own logger and which Close leaves running. No actor is spawned yet:
// the first PID request spawns the global scope's actor.
func Start(sys *actor.ActorSystem, opts ...Option) (*Host, error) {
	if sys == nil {
		return nil, fmt.Errorf("%w: nil actor system", runtime.ErrInvalidConfig)
	}
	cfg, err := configure(opts)
	if err != nil {
		return nil, err
	}
	return start(sys, cfg)
}

func configure(opts []Option) (config, error) {
	var cfg config
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(&cfg); err != nil {
			return cfg, err
		}
	}
	return cfg, nil
}

func start(sys *actor.ActorSystem, cfg config) (*Host, error) {
	h := &Host{sys: sys, closing: make(chan struct{}), scopes: map[*runtime.Scope]*actorRec{}}
	h.workers.tasks = make(chan request)
	logger := cfg.logger
	if logger == nil {
		logger = discard
	}
	h.report = func(err error) {
		if cfg.errHandler != nil {
			cfg.errHandler(err)
		}
		logger.Warn("toolscope actors: contained failure", "err", err)
	}
	var ropts []runtime.Option
	if cfg.logger != nil {
		ropts = append(ropts, runtime.WithLogger(cfg.logger))
	}
	ropts = append(ropts, cfg.regOpts...)
	if cfg.events {
		ropts = append(ropts, runtime.WithHooks(runtime.Hooks{Event: h.publishEvent}))
	}
	reg, err := runtime.New(ropts...)
	if err != nil {
		return nil, err
	}
	h.reg = reg
	return h, nil
}

// Registry returns the host's registry. Everything a Go caller does goes
// through it, as without actors; a request sent to a scope's PID runs the
// same methods (Scope.Execute, Scope.ExecuteTurn, ...).
func (h *Host) Registry() *runtime.Registry { return h.reg }

// System returns the actor system the host lives in.
func (h *Host) System() *actor.ActorSystem { return h.sys }

// PID returns the PID of the live scope of s.Key(): s itself, or the scope
// the owner group s files into; the global scope's PID for the global
// scope. Actors in the host's system may send it the requests of package
// messages and receive the replies (see the package doc).
//
// The scope's actor is spawned by the first PID request (an idle scope
// costs no actor), as a child of the global scope's actor; later requests
// return the same PID, also after protoactor stopped the actor and the host
// respawned it. A handle already disposed (or of another registry), and any
// handle once the host is closed, gets a PID that no process serves: a
// request to it is a dead letter, which a RequestFuture reports at once
// (actor.ErrDeadLetter).
func (h *Host) PID(s *runtime.Scope) *actor.PID {
	if s == nil || s.Registry() != h.reg {
		return h.deadPID(s)
	}
	live := h.reg.Global()
	if key := s.Key(); key != "" {
		if isDone(s.Done()) {
			return h.deadPID(s)
		}
		var ok bool
		if live, ok = h.reg.Scope(key); !ok {
			return h.deadPID(s)
		}
	}
	rec, g, spawnGlobal := h.recFor(live)
	if rec == nil {
		return h.deadPID(s)
	}
	if spawnGlobal {
		h.spawnGlobal()
	}
	// The waits are bounded: the global actor's Receive runs no user code,
	// and Close or a lost global actor release them too.
	<-g.ready
	if g.pid == nil {
		return h.deadPID(s)
	}
	if rec != g {
		h.send(g.pid, wakeMsg)
		<-rec.ready
	}
	if rec.pid == nil {
		return h.deadPID(s)
	}
	return rec.pid
}

// recFor returns the record of live's actor, creating it (queued for the
// global actor to spawn) on first use, and the global actor's record;
// spawnGlobal says the caller must spawn the global actor. nil: the host
// is closed.
func (h *Host) recFor(live *runtime.Scope) (rec, global *actorRec, spawnGlobal bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || h.lost {
		return nil, nil, false
	}
	if h.global == nil {
		h.global = &actorRec{scope: h.reg.Global(), ready: make(chan struct{})}
		spawnGlobal = true
	}
	global = h.global
	if live.Key() == "" {
		return global, global, spawnGlobal
	}
	if rec = h.scopes[live]; rec != nil {
		return rec, global, spawnGlobal
	}
	rec = &actorRec{scope: live, key: live.Key(), ready: make(chan struct{})}
	h.scopes[live] = rec
	h.pending = append(h.pending, rec)
	go h.watch(rec)
	return rec, global, spawnGlobal
}

// watch retires rec's actor once its scope is disposed (or ends with the
// host).
func (h *Host) watch(rec *actorRec) {
	select {
	case <-rec.scope.Done():
	case <-h.closing:
		return
	}
	h.mu.Lock()
	rec.retired = true
	cur, pid := rec.cur, rec.pid
	h.mu.Unlock()
	if cur != nil {
		h.retire(pid, cur)
	}
}

// retire stops a disposed scope's actor without dropping a request: its
// PID leaves the process registry first (a later send is a dead letter,
// which a RequestFuture reports at once), then a retireMsg goes straight
// to its process, behind the requests already in its mailbox, which are
// answered (an ErrorReply: the scope is disposed) before it stops itself.
// A Stop (a system message) would drop them, and their senders would wait
// for their timeouts. The global actor forgets the record when it hears
// the actor terminated.
func (h *Host) retire(pid, cur *actor.PID) {
	defer h.recoverSubscriber()
	procs := h.sys.ProcessRegistry
	proc, ok := procs.Get(pid)
	if !ok {
		return // stopped meanwhile; the global actor does not respawn it
	}
	procs.Remove(pid)
	proc.SendUserMessage(cur, &retireMsg{proc: proc})
}

// deadPID is a PID no process serves, the same for the same handle.
func (h *Host) deadPID(s *runtime.Scope) *actor.PID {
	return actor.NewPID(h.sys.Address(), fmt.Sprintf("toolscope-unserved-%p", s))
}

// Close closes the registry (runtime.Registry.Close: calls in flight,
// those that came by message included, are drained or, when ctx ends
// first, cancelled), then stops the host's actors and, if New made the
// actor system, shuts it down. A request that reaches a PID meanwhile is
// answered (a CLOSED result, or ErrClosed for a turn); afterwards the PIDs
// are served by no process. Close is idempotent; its error is the
// registry's.
func (h *Host) Close(ctx context.Context) error {
	err := h.reg.Close(ctx)
	if errors.Is(err, runtime.ErrCloseInsideCall) {
		return err // the registry finishes the shutdown; the actors answer CLOSED meanwhile
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return err
	}
	h.closed = true
	close(h.closing)
	g := h.global
	var gpid *actor.PID
	if g != nil {
		gpid = g.cur
	}
	for _, rec := range h.pending {
		close(rec.ready)
	}
	h.pending = nil
	h.mu.Unlock()
	if gpid != nil {
		// Stopping the global actor stops every scope actor (its children)
		// first. Bounded by ctx; protoactor stops an actor without user code.
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer h.recoverSubscriber()
			_ = h.sys.Root.StopFuture(gpid).Wait()
		}()
		select {
		case <-done:
		case <-ctx.Done():
			if err == nil {
				err = ctx.Err()
			}
		}
	}
	if h.own {
		h.sys.Shutdown()
	}
	return err
}

// isDone reports whether ch is closed, without waiting.
func isDone(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// minLevel passes only records at or above min to the wrapped handler.
type minLevel struct {
	slog.Handler
	min slog.Level
}

func (m minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= m.min && m.Handler.Enabled(ctx, l)
}

func (m minLevel) WithAttrs(a []slog.Attr) slog.Handler {
	return minLevel{m.Handler.WithAttrs(a), m.min}
}

func (m minLevel) WithGroup(name string) slog.Handler {
	return minLevel{m.Handler.WithGroup(name), m.min}
}
