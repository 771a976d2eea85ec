package runtime

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/toolscope/toolscope/internal/admit"
	"github.com/toolscope/toolscope/internal/core"
)

// Scope is a handle on one layer: the global scope, an agent scope, or an
// owner group filing into one of them (docs/contract.md#scopes). Registrations made through
// a handle live in its layer and die with it; each returns its exact
// disposer (R15). Reads through a handle use the handle's own view.
type Scope struct {
	reg    *Registry
	node   *core.Node
	record *scopeRecord // nil for the global scope
	state  *scopeState  // shared by a scope and its owner groups
	own    *owner
	group  bool
	// groupReg is the group's entry in its parent's owner list.
	groupReg *registration

	td teardownState
	// closing is set, under the registry's mu, once the scope's Dispose
	// (its own, or an ancestor's cascade) has begun: NewScope under it
	// fails from then on (R7: no orphan).
	closing bool

	ownStore owner // what own points to for a scope (groups allocate their own)
}

// teardownState is a handle's Dispose state (R7, R86). The first Dispose
// runs the teardown; a concurrent one waits until it is complete. The
// teardown runs no user code: it claims and removes the handle's
// registrations (layer mutations) and counts the removals that changed the
// view; only once it is marked complete are those removals announced to
// the change subscribers (one notification each, R87), by the Dispose that
// ran it. So nothing a subscriber does — a Dispose of the same handle, of
// another handle whose subscribers dispose this one, from its own goroutine
// or from a body it started on a worker — ever waits for a teardown in
// progress that waits for it: every wait in begin is for removals only.
type teardownState struct {
	mu      sync.Mutex
	started bool
	done    chan struct{} // closed once the teardown is complete
	// announce counts the removals made by this teardown that are still
	// to be announced once it is complete.
	announce atomic.Int32
}

// begin reports whether the caller runs the teardown. Otherwise it returns
// once the teardown is complete (its removals made; their announcements may
// still be under way on the Dispose that ran it).
func (t *teardownState) begin() bool {
	t.mu.Lock()
	if !t.started {
		t.started = true
		if t.done == nil { // else made early by Scope.Done
			t.done = make(chan struct{})
		}
		t.mu.Unlock()
		return true
	}
	done := t.done
	t.mu.Unlock()
	<-done // bounded: the teardown runs no user code
	return false
}

// end marks the teardown complete and then announces its removals.
func (t *teardownState) end(r *Registry) {
	close(t.done)
	t.announceAll(r)
}

// announceAll announces the removals counted by the teardown (R87).
func (t *teardownState) announceAll(r *Registry) {
	for range t.announce.Swap(0) {
		if err := r.notify(); err != nil {
			r.report(fmt.Errorf("change subscriber failed while a removal was announced: %w", printable(err)))
		}
	}
}

// scopeState is what a scope and its owner groups share: the mutex that makes
// the scope the single writer of its layer, and its admission (the gate,
// the admission line that keeps its FIFO line, the nested admission state).
type scopeState struct {
	// mu serialises the mutations of the scope's layer (apply: each is a
	// pure function of the published layer to the next, registry code,
	// never user code) and guards stopped, so a mutation either completes
	// before the scope is stopped or finds it stopped.
	mu      sync.Mutex
	stopped bool
	line    atomic.Pointer[admissionLine]
	gone    atomic.Bool // the scope was torn down (stale handles look up the live one)
	gate    admit.Gate
	nest    *scopeNest // nested admission (nesting.go), guarded by Registry.nest.mu
}

func (r *Registry) spawnScope(node *core.Node) *Scope {
	sc := &Scope{reg: r, node: node, state: &scopeState{}}
	sc.own = &sc.ownStore
	return sc
}

// apply runs fn on the node's layer and publishes the result, one mutation
// of the scope at a time.
func (s *Scope) apply(fn func(*core.Layer) (*core.Layer, error)) error {
	sh := s.state
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.stopped {
		return ErrScopeDisposed
	}
	return applyTo(s.node, fn)
}

// applyTo runs one mutation of node's layer and publishes the result. A
// panic in fn is returned as an error and publishes nothing.
func applyTo(node *core.Node, fn func(cur *core.Layer) (*core.Layer, error)) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("runtime: mutation failed: %v", p)
		}
	}()
	cur := node.Layer()
	next, err := fn(cur)
	if err != nil {
		return err
	}
	if next != nil && next != cur {
		node.Publish(next)
	}
	return nil
}

// stop waits for the mutation in progress, if any, refuses later ones and
// retires the scope's admission line.
func (s *Scope) stop() {
	sh := s.state
	sh.mu.Lock()
	if sh.stopped {
		sh.mu.Unlock()
		return
	}
	sh.stopped = true
	sh.gone.Store(true)
	sh.mu.Unlock()
	if line := sh.line.Load(); line != nil {
		line.retire() // the calls in line keep their order (admission_line.go)
	}
}

// owner tracks what one handle registered, newest last, so disposal can
// run the exact disposers in LIFO order (R7, R8).
type owner struct {
	mu       sync.Mutex
	disposed bool
	inflight sync.WaitGroup
	// removing counts layer removals started by disposers called outside
	// teardown, so teardown (and the scope stop after it) waits for them
	// instead of letting them hit a stopped scope and leak the entry.
	removing sync.WaitGroup
	tail     *registration
}

// begin admits one mutation through the handle, or reports the handle
// disposed. The matching end comes once the registration is linked.
func (o *owner) begin() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.disposed {
		return ErrScopeDisposed
	}
	o.inflight.Add(1)
	return nil
}

func (o *owner) end() { o.inflight.Done() }

func (o *owner) link(g *registration) {
	o.mu.Lock()
	g.owner = o
	g.prev = o.tail
	if o.tail != nil {
		o.tail.next = g
	}
	o.tail = g
	g.linked = true
	o.mu.Unlock()
}

func (o *owner) unlinkLocked(g *registration) {
	if !g.linked {
		return
	}
	if g.prev != nil {
		g.prev.next = g.next
	}
	if g.next != nil {
		g.next.prev = g.prev
	} else {
		o.tail = g.prev
	}
	g.prev, g.next, g.linked = nil, nil, false
}

// teardown disposes every registration newest first, on behalf of the
// handle teardown m. It may run concurrently with, or nested inside (from a
// callback), another teardown of the same owner: each claims what is left
// and returns once every claimed layer removal is complete.
func (o *owner) teardown(m *teardownState) {
	o.mu.Lock()
	o.disposed = true
	o.mu.Unlock()
	o.inflight.Wait()
	for {
		o.mu.Lock()
		g := o.tail
		claimed := false
		if g != nil {
			o.unlinkLocked(g)
			// Claim and count under the lock, so a concurrent teardown
			// that finds the list empty still waits for this removal.
			if claimed = g.done.CompareAndSwap(false, true); claimed && !g.group {
				o.removing.Add(1)
			}
		}
		o.mu.Unlock()
		if g == nil {
			o.removing.Wait()
			return
		}
		if claimed {
			g.finish(m, !g.group)
		}
	}
}

// registration is one entry an owner made; dispose is its exact disposer.
type registration struct {
	owner      *owner
	prev, next *registration
	linked     bool
	done       atomic.Bool
	// remove undoes the registration and reports whether the view changed
	// (so a change notification is due, R87). m is the teardown running
	// it, nil for a disposer called on its own.
	remove func(m *teardownState) bool
	// group marks an owner group's entry in its parent's list. Its removal
	// is the group's teardown, so it is not counted in owner.removing.
	// Instead the group stays linked until its own Dispose has torn it
	// down, and a parent teardown that claims the entry runs (or joins) the
	// group's teardown itself (the removals it makes are announced by the
	// parent's Dispose).
	group bool
	reg   *Registry
}

// dispose is the registration's exact disposer (R15).
func (g *registration) dispose() { g.disposeIn(nil) }

func (g *registration) disposeIn(m *teardownState) {
	o := g.owner
	if o == nil {
		if !g.done.CompareAndSwap(false, true) {
			return
		}
		g.finish(m, false)
		return
	}
	// Claim and unlink atomically, so a concurrent teardown either
	// disposes g itself or waits for this removal (o.removing).
	o.mu.Lock()
	if !g.done.CompareAndSwap(false, true) {
		o.mu.Unlock()
		return
	}
	o.unlinkLocked(g)
	counted := !g.group
	if counted {
		o.removing.Add(1)
	}
	o.mu.Unlock()
	g.finish(m, counted)
}

// finish removes a claimed registration and announces the change: at once
// for a disposer called on its own, after the teardown is complete for a
// removal made by teardown m (teardownState.end). The removal itself runs
// no user code; the announcement comes after it is counted done.
func (g *registration) finish(m *teardownState, counted bool) {
	changed := g.remove(m)
	if counted {
		g.owner.removing.Done()
	}
	if !changed {
		return
	}
	if m != nil {
		m.announce.Add(1)
		return
	}
	if err := g.reg.notify(); err != nil {
		g.reg.report(fmt.Errorf("change subscriber failed while a removal was announced: %w", printable(err)))
	}
}

// Key returns the scope key ("" for the global scope).
func (s *Scope) Key() string { return s.node.Key }

// Registry returns the registry the scope belongs to.
func (s *Scope) Registry() *Registry { return s.reg }

// NewScope creates an agent scope whose parent is s (R2, R3). Through the
// global handle it creates a top-level scope.
func (s *Scope) NewScope(key string) (*Scope, error) {
	return s.reg.newScope(key, s.record)
}

// Group derives an owner group (R8): registrations made through it go to
// the same layer but are disposed together by the group's Dispose, or with
// the scope.
func (s *Scope) Group() (*Scope, error) {
	if s.reg.closed.Load() {
		return nil, ErrClosed
	}
	if err := s.own.begin(); err != nil {
		return nil, s.reg.disposedErr(err)
	}
	defer s.own.end()
	g := &Scope{reg: s.reg, node: s.node, record: s.record, state: s.state, own: &owner{}, group: true}
	g.groupReg = &registration{
		remove: func(m *teardownState) bool { g.own.teardown(m); return false },
		group:  true,
		reg:    s.reg,
	}
	s.own.link(g.groupReg)
	return g, nil
}

// Dispose removes everything the handle registered, newest first, each
// exactly as its own disposer would (R7). Disposing a scope also disposes
// its owner groups (calls already in its admission line are still admitted,
// in order) and, first, every live scope below it, children before
// parents, each as its own Dispose would; from the moment it begins,
// NewScope under the scope or any scope below it fails with
// ErrScopeDisposed, so no sub-agent outlives it. Dispose is idempotent;
// concurrent callers all return once the teardown is complete. Later
// mutations through the handle return ErrScopeDisposed. The global scope
// is disposed only by Close.
//
// The teardown's removals are announced to the change subscribers (one
// notification per removal that changed a view, R87) after the teardown is
// complete, before this Dispose returns; a concurrent Dispose returns once
// the teardown is complete and may return before those announcements. So
// a subscriber (or the error handler) hearing one of them may call Dispose
// on the same handle, or on any other, from any goroutine — a body it runs,
// a turn's dispatch on a worker — and that call never waits for a teardown
// that waits for it (R86).
func (s *Scope) Dispose() {
	if s.record == nil && !s.group {
		return
	}
	s.dispose()
}

func (s *Scope) dispose() {
	if !s.td.begin() {
		return
	}
	if s.group {
		defer s.td.end(s.reg)
		// Tear the group down first, while its entry is still linked in the
		// parent's list, so a parent teardown meanwhile joins this one (and
		// waits for its removals) before stopping the scope. Then drop the
		// entry, so the parent forgets the group (no growth with
		// create/dispose cycles); its removal finds nothing left.
		s.own.teardown(&s.td)
		s.groupReg.disposeIn(&s.td)
		return
	}
	// R7: the scope's live descendants go first, children before
	// parents, each torn down as by its own Dispose. All of the subtree's
	// teardowns complete before any removal is announced, so a subscriber
	// hearing one may dispose any scope of it and never waits for a
	// teardown that waits for it (R86).
	subtree := s.descendants()
	var mine []*Scope // the descendants whose teardown this cascade ran
	for i := len(subtree) - 1; i >= 0; i-- {
		d := subtree[i]
		if !d.td.begin() {
			continue // another Dispose ran it; begin waited for it to complete
		}
		d.tearDown()
		close(d.td.done)
		mine = append(mine, d)
	}
	s.tearDown()
	close(s.td.done)
	for _, d := range mine {
		d.td.announceAll(d.reg)
	}
	s.td.announceAll(s.reg)
}

// descendants marks s and every live scope below it closing (so none takes
// a new child) and returns the live ones below it in depth-first preorder:
// walked backwards, every scope comes after all of its descendants. The
// walk is iterative (no recursion however deep the tree) and runs under
// the registry's mu, so a concurrent NewScope under any of them either
// made its child before the walk (the walk finds it) or fails after it.
func (s *Scope) descendants() []*Scope {
	r := s.reg
	r.mu.Lock()
	defer r.mu.Unlock()
	s.closing = true
	if len(s.record.kids) == 0 {
		return nil
	}
	var out []*Scope
	stack := append([]*scopeRecord(nil), s.record.kids...)
	for len(stack) > 0 {
		rec := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if d := rec.live; d != nil {
			d.closing = true
			out = append(out, d)
		}
		// Records of disposed keys are walked too: a key below one may be
		// live again (re-created under it, R3).
		stack = append(stack, rec.kids...)
	}
	return out
}

// tearDown is a scope's teardown (no user code): its registrations and
// groups removed newest first, its key's record released, its admission
// retired.
func (s *Scope) tearDown() {
	s.own.teardown(&s.td)
	r := s.reg
	r.mu.Lock()
	if s.record.live == s {
		s.record.live = nil
	}
	r.forgetLocked(s.record)
	r.mu.Unlock()
	s.stop()
}

const reservedName = "run_code"

// Register adds a tool to the handle's layer (docs/contract.md#register). Validation runs in
// R11's order and a failure registers and notifies nothing. The returned
// disposer removes exactly this registration (R15).
func (s *Scope) Register(def Definition) (func(), error) {
	td, err := newToolDef(def, s.reg.cfg.schemaBound())
	if err != nil {
		return nil, err
	}
	id := s.reg.nextID()
	global := s.record == nil
	return s.register(s, true, func(l *core.Layer) (*core.Layer, error) {
		next, _, ok := l.AddTool(core.Entry{ID: id, Name: td.name, Payload: td})
		if !ok {
			if global {
				return nil, fmt.Errorf("%w: tool %q is already registered globally; register a per-agent variant through that agent's scope instead", ErrDuplicate, td.name)
			}
			return nil, fmt.Errorf("%w: tool %q is already registered in this scope", ErrDuplicate, td.name)
		}
		return next, nil
	}, func(l *core.Layer) (*core.Layer, bool) { return l.RemoveTool(td.name, id) })
}

// RegisterAll adds every definition to the handle's layer, all or nothing
// (docs/contract.md#r15): each is validated as Register validates it, and
// if any fails validation, or a name clashes with a live tool or with
// another name of the batch, nothing is registered and the error names the
// definition (errors.Is and errors.As see Register's error through it).
// Otherwise the tools appear in one step, with one change notification,
// and the one returned disposer removes them all. It is the form for setup
// code: one error to check however many tools.
func (s *Scope) RegisterAll(defs ...Definition) (func(), error) {
	tds := make([]*toolDef, len(defs))
	for i, def := range defs {
		td, err := newToolDef(def, s.reg.cfg.schemaBound())
		if err != nil {
			return nil, fmt.Errorf("RegisterAll: definition %d (%q): %w", i, def.Name, err)
		}
		tds[i] = td
	}
	ids := make([]uint64, len(tds))
	for i := range tds {
		ids[i] = s.reg.nextID()
	}
	global := s.record == nil
	return s.register(s, len(tds) > 0, func(l *core.Layer) (*core.Layer, error) {
		for i, td := range tds {
			next, _, ok := l.AddTool(core.Entry{ID: ids[i], Name: td.name, Payload: td})
			if !ok {
				where := "in this scope"
				if global {
					where = "globally"
				}
				return nil, fmt.Errorf("RegisterAll: definition %d (%q): %w: tool %q is already registered %s (or earlier in the batch); nothing was registered", i, td.name, ErrDuplicate, td.name, where)
			}
			l = next
		}
		return l, nil
	}, func(l *core.Layer) (*core.Layer, bool) {
		changed := false
		for i := len(tds) - 1; i >= 0; i-- {
			next, ok := l.RemoveTool(tds[i].name, ids[i])
			if ok {
				l, changed = next, true
			}
		}
		return l, changed
	})
}

// Restrict filters what the scope inherits (docs/contract.md#restrict). It is only for agent
// scopes (R20); validation follows R21. Names are copied and evaluated
// against the live inherited set on every read (R25).
func (s *Scope) Restrict(r Restriction) (func(), error) {
	if s.record == nil {
		return nil, fmt.Errorf("%w: the global scope cannot restrict (Restrict is for agent scopes)", ErrInvalidRestriction)
	}
	if r.Allow == nil && r.Deny == nil {
		return nil, fmt.Errorf("%w: restriction is a no-op: give Allow, Deny or both", ErrInvalidRestriction)
	}
	for _, list := range [][]string{r.Allow, r.Deny} {
		for _, n := range list {
			if n == reservedName {
				return nil, fmt.Errorf("%w: restriction cannot name reserved tool %q", ErrInvalidRestriction, reservedName)
			}
		}
	}
	chain := core.Load(s.reg.global.node, s.node)
	var unknown []string
	seen := map[string]bool{}
	for _, list := range [][]string{r.Allow, r.Deny} {
		for _, n := range list {
			if !seen[n] && !chain.Restrictable(n) {
				unknown = append(unknown, n)
			}
			seen[n] = true
		}
	}
	if len(unknown) > 0 {
		return nil, unknownNamesError(unknown, chain.RestrictableNames())
	}
	rs := &core.Restriction{ID: s.reg.nextID(), Allow: nameSet(r.Allow), Deny: nameSet(r.Deny)}
	return s.register(s, true,
		func(l *core.Layer) (*core.Layer, error) { return l.AddRestriction(rs), nil },
		func(l *core.Layer) (*core.Layer, bool) { return l.RemoveRestriction(rs.ID) })
}

// register is the one way an entry enters a layer: it applies add to the
// layer of target, tracks the exact disposer (R15) — remove, applied to the
// same layer — as owned by s, and when announce is set delivers the change
// notification, rolling the entry back if a subscriber fails (R87). An add
// that fails registers and notifies nothing. Callbacks are not announced
// (R28, R84): their disposer notifies nothing either.
func (s *Scope) register(target *Scope, announce bool, add func(*core.Layer) (*core.Layer, error), remove func(*core.Layer) (*core.Layer, bool)) (func(), error) {
	if err := s.own.begin(); err != nil {
		return nil, s.reg.disposedErr(err)
	}
	if err := target.apply(add); err != nil {
		s.own.end()
		return nil, s.reg.disposedErr(err)
	}
	g := &registration{reg: s.reg, remove: func(*teardownState) bool {
		changed := false
		_ = target.apply(func(l *core.Layer) (*core.Layer, error) {
			next, ok := remove(l)
			changed = ok
			return next, nil
		})
		return announce && changed
	}}
	s.own.link(g)
	s.own.end()
	if announce {
		if err := s.reg.notify(); err != nil {
			g.dispose()
			return nil, err
		}
	}
	return g.dispose, nil
}

func unknownNamesError(unknown, known []string) error {
	quoted := make([]string, len(unknown))
	for i, n := range unknown {
		quoted[i] = fmt.Sprintf("%q", n)
	}
	word := "tool"
	if len(unknown) > 1 {
		word = "tools"
	}
	k := "(none)"
	if len(known) > 0 {
		k = strings.Join(known, ", ")
	}
	return fmt.Errorf("%w: unknown global %s %s; known global tools: %s", ErrInvalidRestriction, word, strings.Join(quoted, ", "), k)
}

func nameSet(names []string) *core.NameSet {
	if names == nil {
		return nil
	}
	return core.NewNameSet(names)
}

// HookOption configures a hook registration.
type HookOption interface{ hookOption() }

type prependOption struct{}

func (prependOption) hookOption() {}

// WithPrepend puts the hook before every hook registered so far (R85).
func WithPrepend() HookOption { return prependOption{} }

// Guard adds a deny-only check of calls in this scope's audience (docs/contract.md#guards).
// Guards emit no change notification (R28).
func (s *Scope) Guard(g Guard) (func(), error) {
	if g == nil {
		return nil, ErrNilCallback
	}
	return s.addCallback(s, core.KindGuard, g, false)
}

// SetApprover sets the approver that resolves the Ask decisions of the
// calls of this scope and of its sub-agents (R55): a multi-tenant server
// gives each session's scope its own. The nearest scope with an approver
// answers — the call's own, else its nearest ancestor's, else the global
// scope's (set through Registry.Global) — and the registry's WithApprover
// only when none has one; of several set through one scope the newest
// answers. The disposer removes it (the previous one answers again), as
// does disposing the handle it was set through (R7).
func (s *Scope) SetApprover(a Approver) (func(), error) {
	if a == nil {
		return nil, ErrNilCallback
	}
	return s.addCallback(s, core.KindApprover, a, false)
}

// OnPreExecute adds a pre-execute hook (R52).
func (s *Scope) OnPreExecute(h PreExecuteHook, opts ...HookOption) (func(), error) {
	if h == nil {
		return nil, ErrNilCallback
	}
	return s.addCallback(s, core.KindPre, h, hasPrepend(opts))
}

// OnExecute adds an around-dispatch hook (R58).
func (s *Scope) OnExecute(h AroundHook, opts ...HookOption) (func(), error) {
	if h == nil {
		return nil, ErrNilCallback
	}
	return s.addCallback(s, core.KindAround, h, hasPrepend(opts))
}

// OnPostExecute adds a post-execute hook (R67).
func (s *Scope) OnPostExecute(h PostExecuteHook, opts ...HookOption) (func(), error) {
	if h == nil {
		return nil, ErrNilCallback
	}
	return s.addCallback(s, core.KindPost, h, hasPrepend(opts))
}

// OnResult adds a result observer (R75).
func (s *Scope) OnResult(h ResultObserver, opts ...HookOption) (func(), error) {
	if h == nil {
		return nil, ErrNilCallback
	}
	return s.addCallback(s, core.KindResult, h, hasPrepend(opts))
}

// OnChange adds a change subscriber. Every subscriber sees every change in
// every scope (R89); it dies with the handle it was registered through.
func (s *Scope) OnChange(h ChangeSubscriber) (func(), error) {
	if h == nil {
		return nil, ErrNilCallback
	}
	// Subscribers are unfiltered, so they live in the global layer; the
	// registering handle still owns them.
	return s.addCallback(s.reg.global, core.KindChange, h, false)
}

func hasPrepend(opts []HookOption) bool {
	for _, o := range opts {
		if _, ok := o.(prependOption); ok {
			return true
		}
	}
	return false
}

// addCallback files a callback into the layer of target, owned by s. No
// change notification (R28, R84).
func (s *Scope) addCallback(target *Scope, k core.Kind, fn any, prepend bool) (func(), error) {
	seq := s.reg.hookSeq.Add(1)
	if prepend {
		seq = -s.reg.prependSeq.Add(1)
	}
	e := core.Entry{ID: s.reg.nextID(), Seq: seq, Payload: fn}
	return s.register(target, false,
		func(l *core.Layer) (*core.Layer, error) { return l.AddCallback(k, e), nil },
		func(l *core.Layer) (*core.Layer, bool) { return l.RemoveCallback(k, e.ID) })
}

// notify delivers one change notification to every subscriber, in
// registration order, synchronously (R88). The first failure stops the
// delivery and is returned.
func (r *Registry) notify() error {
	r.emitChanged()
	subs := r.global.node.Layer().List(core.KindChange)
	for _, e := range subs {
		if err := callSubscriber(e.Payload.(ChangeSubscriber)); err != nil {
			return err
		}
	}
	return nil
}

func callSubscriber(f ChangeSubscriber) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = panicError(p)
		}
	}()
	return f(callbackCtx)
}

// Get returns the definition visible in the scope's view (R30).
func (s *Scope) Get(name string) (Definition, bool) { return s.reg.get(name, s.viewNode()) }

// Schemas returns the model-facing schemas visible in the scope's view (R31).
func (s *Scope) Schemas() ([]ToolSchema, error) { return s.reg.schemas(s.viewNode()) }

// ExecutionMode classifies call in the scope's view (R36); call.Agent is
// ignored.
func (s *Scope) ExecutionMode(call Call) Mode {
	return s.reg.executionModeOf(s.viewNode(), call)
}

// Tools lists the names visible in the scope's view, in view order.
func (s *Scope) Tools() []string { return s.reg.toolNames(s.viewNode()) }

func (r *Registry) toolNames(node *core.Node) []string {
	chain := core.Load(r.global.node, node)
	view := chain.View()
	out := make([]string, len(view), len(view)+1)
	for i, e := range view {
		out[i] = e.Name
	}
	if r.presentsCode(&chain) {
		out = append(out, reservedName) // R107
	}
	return out
}

// viewNode is the node whose view the handle reads: nil for the global
// scope (the global view).
func (s *Scope) viewNode() *core.Node {
	if s.record == nil {
		return nil
	}
	return s.node
}

// Done returns a channel that is closed once the handle's Dispose has
// completed its teardown (every registration removed; their change
// notifications may still be under way), whether Dispose was called on it
// or on its scope, or Close disposed it. For a scope that is never
// disposed it is never closed; the global scope is never disposed (Close
// ends it without closing this channel). It lets a package that serves a
// scope by other means — package actors, which gives a scope a protoactor
// PID — learn of its end without polling. The channel is made on the first
// call: a handle nobody asks pays nothing.
func (s *Scope) Done() <-chan struct{} {
	t := &s.td
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done == nil {
		t.done = make(chan struct{})
	}
	return t.done
}
