package runtime

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/toolscope/toolscope/internal/core"
)

// Registry holds the global scope, every agent scope, and the options that
// apply to all of them (docs/contract.md#conventions). It is safe for concurrent use.
type Registry struct {
	logger *slog.Logger
	cfg    config

	global *Scope

	mu     sync.RWMutex
	scopes map[string]*scopeRecord

	// ids numbers registrations; hookSeq orders hooks across scopes (R85),
	// prependSeq counts down for prepended hooks.
	ids        atomic.Uint64
	hookSeq    atomic.Int64
	prependSeq atomic.Int64

	workers *workerPool
	nest    nestState // nested admission (nesting.go)
	hooks   *hookSet  // nil: no hooks but Event (hooks.go)
	// subs are the typed event subscriptions (observe.go), copy on write.
	subsMu sync.Mutex
	subs   atomic.Pointer[[]*Subscription]
	// defaultLog: no WithLogger was given, so a subscription's first drop
	// is logged through slog.Default() (observe.go).
	defaultLog bool

	closed    atomic.Bool
	closeOnce sync.Once
	closeDone chan struct{}
	life      lifecycle // calls in flight (close.go)
	code      *codeMode // run_code, when WithCodeMode (codemode.go)
	hostCap   *hostCap  // WithMaxInFlight (hostcap.go); nil: no cap
}

// scopeRecord is the registry's record of one key. It outlives a disposed
// scope while the key still has a parent link or children, so the recorded
// chain keeps working for reads by key (R6) and a re-created key keeps its
// node (the link is key-level, R3).
type scopeRecord struct {
	node     *core.Node
	parent   *scopeRecord
	live     *Scope // nil once disposed
	children int
	// kids are the records linked under this one (children of them), for
	// the cascade of Dispose (R7). Like children, it grows with the
	// distinct keys linked here, not with churn.
	kids []*scopeRecord
}

type config struct {
	maxParallel  int
	turnSeams    *turnSeams // tests only (turn_export_test.go)
	approver     Approver
	errorHandler func(error)
	logger       *slog.Logger
	events       bool
	maxQueued    int                                  // 0: unbounded (overload.go)
	maxInFlight  int                                  // 0: no host cap (hostcap.go)
	timeouts     bool                                 // enforce declared timeouts (default; WithoutTimeouts)
	codeFactory  func(*Registry) (RunCodeTool, error) // WithCodeMode (codemode.go)
	presentation Presentation                         // WithDefaultPresentation
	// maxSchemaBytes and maxArgBytes bound schema and argument text
	// (bounds.go); 0: the defaults.
	maxSchemaBytes int
	maxArgBytes    int
	hooks          []Hooks // WithHooks (hooks.go)
	clock          Clock   // WithClock (clock.go); nil: the wall clock
}

// Option configures a Registry.
type Option interface{ apply(*config) error }

type optionFunc func(*config) error

func (f optionFunc) apply(c *config) error { return f(c) }

// WithMaxParallel bounds the dispatches a turn runs at once (R91): passed
// to New it sets the registry's default (10 unless set), passed to
// ExecuteTurn it sets that turn's bound. n < 1 is a configuration error.
func WithMaxParallel(n int) MaxParallelOption { return MaxParallelOption{n: n} }

// MaxParallelOption is what WithMaxParallel returns: both an Option (the
// registry's default) and a TurnOption (one turn's bound).
type MaxParallelOption struct{ n int }

func (o MaxParallelOption) check() error {
	if o.n < 1 {
		return fmt.Errorf("%w: MaxParallel must be at least 1, got %d", ErrInvalidConfig, o.n)
	}
	return nil
}

func (o MaxParallelOption) apply(c *config) error {
	if err := o.check(); err != nil {
		return err
	}
	c.maxParallel = o.n
	return nil
}

func (o MaxParallelOption) applyTurn(t *turnOptions) error {
	if err := o.check(); err != nil {
		return err
	}
	t.maxParallel = o.n
	return nil
}

// WithApprover sets the registry's approver: it resolves the Ask decisions
// (R55) of calls whose scopes, and the global scope, set none of their own
// (Scope.SetApprover).
func WithApprover(a Approver) Option {
	return optionFunc(func(c *config) error { c.approver = a; return nil })
}

// WithErrorHandler receives errors the registry contains instead of
// returning: a change subscriber failing while a removal is announced
// (R90) and observer failures (R75).
func WithErrorHandler(h func(error)) Option {
	return optionFunc(func(c *config) error { c.errorHandler = h; return nil })
}

// WithLogger sets the logger of the registry's own warnings — contained
// failures: observer and change-subscriber errors, recovered panics of
// hooks and subscribers (default: discard).
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(c *config) error { c.logger = l; return nil })
}

// New creates a registry with its global scope (R1).
func New(opts ...Option) (*Registry, error) {
	cfg := config{maxParallel: 10, events: true, timeouts: true}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o.apply(&cfg); err != nil {
			return nil, err
		}
	}
	defaultLog := cfg.logger == nil
	if defaultLog {
		cfg.logger = slog.New(slog.DiscardHandler)
	}
	r := &Registry{
		defaultLog: defaultLog,
		cfg:        cfg,
		logger:     cfg.logger,
		scopes:     map[string]*scopeRecord{},
		closeDone:  make(chan struct{}),
		workers:    newWorkerPool(64),
		hostCap:    newHostCap(cfg.maxInFlight),
	}
	r.life.init()
	r.installHooks()
	r.global = r.spawnScope(core.NewNode("", nil))
	if err := r.installCodeMode(); err != nil {
		_ = r.Close(context.Background())
		return nil, err
	}
	if r.hooks != nil {
		if err := r.hooks.open(); err != nil {
			_ = r.Close(context.Background())
			return nil, err
		}
	}
	return r, nil
}

// WithoutTimeouts turns off the enforcement of declared timeouts
// (Definition.Timeout, WithTimeout), which a registry applies by default
// (R19, R83): a declared timeout is then metadata only, as for a registry
// that times its tools out by other means. TimeoutHook registered by hand
// still enforces them where it is registered.
func WithoutTimeouts() Option {
	return optionFunc(func(c *config) error { c.timeouts = false; return nil })
}

// WithTimeouts enforces every tool's declared timeout, which is what a
// registry does by default (R83): a call whose body runs past its tool's
// timeout, counted from dispatch, gets the TOOL_TIMEOUT failure "tool call
// timed out after <ms>ms" (its body's ctx is cancelled at the deadline).
// Given after WithoutTimeouts it turns enforcement back on.
//
// Deprecated: declared timeouts apply by default; use WithoutTimeouts to
// opt out.
func WithTimeouts() Option {
	return optionFunc(func(c *config) error { c.timeouts = true; return nil })
}

// Global returns the handle of the global scope (R1).
func (r *Registry) Global() *Scope { return r.global }

// NewScope creates a top-level agent scope (R2) whose parent is the global
// layer. See Scope.NewScope for nested scopes.
func (r *Registry) NewScope(key string) (*Scope, error) { return r.newScope(key, nil) }

// Scope returns the live handle of key, if any.
func (r *Registry) Scope(key string) (*Scope, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	record := r.scopes[key]
	if record == nil || record.live == nil {
		return nil, false
	}
	return record.live, true
}

// disposedErr turns the ErrScopeDisposed of a handle that Close disposed
// into ErrClosed: after Close every method says the registry is closed
// (N5), not that one of its scopes was disposed.
func (r *Registry) disposedErr(err error) error {
	if err == ErrScopeDisposed && r.closed.Load() {
		return ErrClosed
	}
	return err
}

func (r *Registry) newScope(key string, parent *scopeRecord) (*Scope, error) {
	if r.closed.Load() {
		return nil, ErrClosed
	}
	if key == "" {
		return nil, fmt.Errorf("%w: empty scope key (the empty key is the global view)", ErrScopeLink)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	// closed is checked again under r.mu: Close sets it before its teardown takes
	// the list of live scopes under r.mu, so a scope is either in that list
	// (and torn down) or never created. Checked before the lock, a scope
	// created meanwhile escaped the teardown and stayed live after Close.
	if r.closed.Load() {
		return nil, ErrClosed
	}
	if parent != nil && (parent.live == nil || parent.live.closing) {
		// A parent being disposed takes no new children: its cascade
		// (R7) has collected, or is about to collect, every live one.
		return nil, ErrScopeDisposed
	}
	record := r.scopes[key]
	switch {
	case record == nil:
		var pnode *core.Node
		if parent != nil {
			pnode = parent.node
			parent.children++
		}
		record = &scopeRecord{node: core.NewNode(key, pnode), parent: parent}
		if parent != nil {
			parent.kids = append(parent.kids, record)
		}
		r.scopes[key] = record
	case record.live != nil:
		return nil, fmt.Errorf("%w: %q", ErrScopeExists, key)
	case record.parent != parent && record.parent != nil:
		return nil, fmt.Errorf("%w: scope %q is already linked to another parent", ErrScopeLink, key)
	case record.parent != parent:
		// R3: a disposed top-level key has no parent yet, so it may be bound
		// under one now, exactly as if its record had been forgotten
		// (forgetLocked) — unless the link would form a cycle (the new
		// parent is the key itself or one of its recorded descendants).
		if !record.node.SetParent(parent.node) {
			return nil, fmt.Errorf("%w: linking scope %q under %q would form a cycle", ErrScopeLink, key, parent.node.Key)
		}
		record.parent = parent
		parent.children++
		parent.kids = append(parent.kids, record)
	}
	s := r.spawnScope(record.node)
	s.record = record
	record.live = s
	return s, nil
}

// forgetLocked drops the record of a disposed top-level scope with no
// children: nothing can reach its key any more, and a key read afterwards
// behaves exactly as it would with the record (R6). Records with a parent
// link are kept so reads by key still see the recorded chain; their memory
// grows with the number of distinct keys, not with churn. Caller holds r.mu.
func (r *Registry) forgetLocked(record *scopeRecord) {
	if record.live == nil && record.children == 0 && record.parent == nil && r.scopes[record.node.Key] == record {
		delete(r.scopes, record.node.Key)
	}
}

// nodeOf returns the node of key for reads by key: nil for the global view
// or a key never created (R5, R6).
func (r *Registry) nodeOf(key string) *core.Node {
	if key == "" {
		return nil
	}
	r.mu.RLock()
	record := r.scopes[key]
	r.mu.RUnlock()
	if record == nil {
		return nil
	}
	return record.node
}

// View returns the read view of key (R29, R5, R6): what a call made for that
// key sees — the global tools plus those of every scope on its chain,
// through its restrictions. "" is the global view. Reads go by key each
// time, so a View stays valid whether or not a scope of that key is live
// (a key never created, or disposed, reads as its recorded chain or the
// global view). A Scope handle has the same read methods for its own key.
func (r *Registry) View(key string) View { return View{reg: r, key: key} }

// View is one key's read view of a Registry (see Registry.View). Its key is
// a distinct type from a tool name at every call site: v.Get(name) cannot be
// confused with a scope key.
type View struct {
	reg *Registry
	key string
}

// Key returns the view's scope key ("" for the global view).
func (v View) Key() string { return v.key }

// Get returns the definition visible under name (R30).
func (v View) Get(name string) (Definition, bool) { return v.reg.get(name, v.reg.nodeOf(v.key)) }

// Schemas returns the model-facing schemas visible in the view (R31).
func (v View) Schemas() ([]ToolSchema, error) { return v.reg.schemas(v.reg.nodeOf(v.key)) }

// ExecutionMode classifies call in the view (R36); call.Agent is ignored.
func (v View) ExecutionMode(call Call) Mode {
	return v.reg.executionModeOf(v.reg.nodeOf(v.key), call)
}

// Tools lists the names visible in the view, in view order.
func (v View) Tools() []string { return v.reg.toolNames(v.reg.nodeOf(v.key)) }

// Execute runs call in the view (call.Agent is set to the view's key), like
// Registry.Execute.
func (v View) Execute(ctx context.Context, call Call) *Result {
	call.Agent = v.key
	return v.reg.Execute(ctx, call)
}

func (r *Registry) nextID() uint64 { return r.ids.Add(1) }

// report hands on a failure the registry absorbs (R75, R90): one warning
// and the optional error handler. An error whose Error method panics is
// reported as "<unprintable value>" (docs/contract.md#failures); callers wrapping
// one must wrap printable(err), since fmt formats the message eagerly.
func (r *Registry) report(err error) {
	err = printable(err)
	r.logger.Warn("toolscope: contained failure", "err", err)
	if h := r.cfg.errorHandler; h != nil {
		func() {
			defer func() { _ = recover() }()
			h(err)
		}()
	}
}
