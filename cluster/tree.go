package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/propagation"
	"google.golang.org/protobuf/proto"

	"github.com/toolscope/toolscope/cluster/clustermsg"
	"github.com/toolscope/toolscope/messages"
	"github.com/toolscope/toolscope/runtime"
)

// maxTombstones bounds the cancellations remembered for calls not (yet)
// in flight on this activation.
const maxTombstones = 4096

// maxTurnCalls bounds the calls of one remote turn (network input).
const maxTurnCalls = 1024

// tree is one activation of one agent tree: the lease, the state, the
// runtime scopes rebuilt from it and the calls in flight. It is plain Go,
// driven by the grain actor (grain.go) and by the unit tests directly.
// Nothing here runs inside the actor's Receive but begin and cancel, which
// only touch maps.
type tree struct {
	cfg    *kindConfig
	id     string
	holder string

	ready chan struct{} // closed when activate has finished
	err   *Error        // why the activation failed (set before ready is closed)
	lease *Lease
	reg   *runtime.Registry

	lastRenew atomic.Int64 // unix nanos of the last acquisition or renewal
	// sysStopped reports that the actor system stopped without stopping
	// the grain (a non-graceful cluster shutdown): the activation then
	// shuts itself down at its next renewal. nil: never.
	sysStopped func() bool
	stopRenew  chan struct{}
	renewDone  chan struct{}

	mmu sync.Mutex // serializes mutations (held across a Save)

	mu         sync.Mutex // guards what follows; never held across I/O or user code
	state      *TreeState
	built      *Built
	lost       *Error // set once the lease is lost or the tree disposed: nothing more runs
	onLost     func() // tells the grain to stop (set by the grain)
	inflight   map[string]*flight
	tombstones map[string]bool
	tombOrder  []string
	closing    bool

	wg sync.WaitGroup // requests being answered
}

// flight is one call request in progress; a repeated request with the same
// call id (a client's resend) waits for it and gets its reply.
type flight struct {
	id     string
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	reply  proto.Message
	orig   *flight // set on a duplicate: the flight it waits for
}

func newTree(cfg *kindConfig, id, holder string) *tree {
	return &tree{
		cfg: cfg, id: id, holder: holder,
		ready:      make(chan struct{}),
		stopRenew:  make(chan struct{}),
		renewDone:  make(chan struct{}),
		inflight:   map[string]*flight{},
		tombstones: map[string]bool{},
	}
}

// storeCtx bounds one store operation; it never depends on a caller's ctx,
// so a result is recorded even when its caller has gone.
func (t *tree) storeCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), t.cfg.storeTimeout)
}

// activate takes the lease, loads the state and rebuilds the tree. On
// failure t.err says why (SCOPE_UNAVAILABLE) and nothing is held.
func (t *tree) activate() {
	defer close(t.ready)
	ctx, cancel := t.storeCtx()
	defer cancel()
	lease, err := t.cfg.store.Acquire(ctx, t.id, t.holder, t.cfg.leaseTTL)
	if err != nil {
		close(t.renewDone)
		if errors.Is(err, ErrLeaseHeld) {
			t.err = newError(CodeScopeUnavailable, "tree %q is held by another member (it is moving); nothing ran; retry later: %v", t.id, err)
		} else {
			t.err = newError(CodeScopeUnavailable, "tree %q could not take its lease (the store did not answer); nothing ran; retry later: %v", t.id, err)
		}
		return
	}
	t.lastRenew.Store(time.Now().UnixNano())
	fail := func(format string, args ...any) {
		close(t.renewDone)
		t.err = newError(CodeScopeUnavailable, format, args...)
		rctx, rcancel := t.storeCtx()
		_ = t.cfg.store.Release(rctx, lease)
		rcancel()
	}
	raw, err := t.cfg.store.Load(ctx, lease)
	if err != nil {
		fail("tree %q could not load its state; nothing ran; retry later: %v", t.id, err)
		return
	}
	st := NewTreeState(t.id)
	if raw != nil {
		if st, err = DecodeTreeState(raw); err != nil {
			fail("tree %q: its stored state cannot be read: %v", t.id, err)
			return
		}
		if st.Tree != t.id {
			fail("tree %q: the stored state is tree %q's", t.id, st.Tree)
			return
		}
	}
	reg, err := t.cfg.newRegistry()
	if err != nil {
		fail("tree %q: the member's registry could not be built: %v", t.id, err)
		return
	}
	built, err := Rebuild(reg, t.cfg.catalog, st)
	if err != nil {
		_ = reg.Close(context.Background())
		fail("tree %q could not be rebuilt on this member: %v", t.id, err)
		return
	}
	t.mu.Lock()
	t.lease, t.reg, t.state, t.built = lease, reg, st, built
	t.mu.Unlock()
	go t.renewLoop()
}

// renewLoop renews the lease at a third of its TTL. A fenced renewal, or
// no successful renewal for a whole TTL, loses the tree.
func (t *tree) renewLoop() {
	defer close(t.renewDone)
	tick := time.NewTicker(t.cfg.leaseTTL / 3)
	defer tick.Stop()
	for {
		select {
		case <-t.stopRenew:
			return
		case <-tick.C:
		}
		if t.sysStopped != nil && t.sysStopped() {
			go t.shutdown() // it waits for this loop to end
			return
		}
		ctx, cancel := t.storeCtx()
		err := t.cfg.store.Renew(ctx, t.lease)
		cancel()
		switch {
		case err == nil:
			t.lastRenew.Store(time.Now().UnixNano())
		case errors.Is(err, ErrFenced):
			t.lose(newError(CodeScopeUnavailable, "tree %q moved to another member (this activation lost its lease); retry later", t.id))
			return
		case !t.leaseFresh():
			t.lose(newError(CodeScopeUnavailable, "tree %q could not renew its lease for a whole lease period and gave it up; retry later: %v", t.id, err))
			return
		}
	}
}

// leaseFresh reports whether the lease was acquired or renewed within its
// TTL: a member that cannot tell (it was paused, or the store is away)
// runs nothing, even before the store refuses it.
func (t *tree) leaseFresh() bool {
	return time.Since(time.Unix(0, t.lastRenew.Load())) < t.cfg.leaseTTL
}

// lose ends the activation: nothing more runs or is written, calls in
// flight are cancelled, the scopes are disposed, the grain is told to stop.
func (t *tree) lose(why *Error) {
	t.mu.Lock()
	if t.lost != nil {
		t.mu.Unlock()
		return
	}
	t.lost = why
	for _, f := range t.inflight {
		f.cancel()
	}
	scopes, onLost := t.scopesLocked(), t.onLost
	t.mu.Unlock()
	for _, s := range scopes { // the root first: its disposal cascades
		s.Dispose()
	}
	if onLost != nil {
		onLost()
	}
}

// scopesLocked lists the built tree's scopes, the root first (a mutation
// may change the map once t.mu is released).
func (t *tree) scopesLocked() []*runtime.Scope {
	if t.built == nil {
		return nil
	}
	out := make([]*runtime.Scope, 0, len(t.built.Scopes))
	if r := t.built.Scopes[t.id]; r != nil {
		out = append(out, r)
	}
	for k, s := range t.built.Scopes {
		if k != t.id {
			out = append(out, s)
		}
	}
	return out
}

// shutdown passivates the activation (the grain stops): it stops renewing,
// cancels what is in flight, waits for the requests being answered (each
// is bounded by its deadline and the store timeout), disposes the tree,
// closes its registry and releases the lease.
func (t *tree) shutdown() {
	<-t.ready
	t.mu.Lock()
	already := t.closing
	t.closing = true
	if t.lost == nil {
		t.lost = newError(CodeScopeUnavailable, "tree %q is passivating on this member; retry later", t.id)
	}
	for _, f := range t.inflight {
		f.cancel()
	}
	t.mu.Unlock()
	if already || t.err != nil {
		return
	}
	close(t.stopRenew)
	<-t.renewDone
	t.wg.Wait()
	t.mu.Lock()
	scopes := t.scopesLocked()
	t.mu.Unlock()
	for _, s := range scopes {
		s.Dispose()
	}
	_ = t.reg.Close(context.Background())
	ctx, cancel := t.storeCtx()
	_ = t.cfg.store.Release(ctx, t.lease)
	cancel()
}

// requestCtx is the ctx a request's work runs under: the caller's
// deadline and trace context.
func requestCtx(h *clustermsg.Header) (context.Context, context.CancelFunc) {
	ctx := context.Background()
	if tp := h.GetTraceparent(); tp != "" {
		carrier := propagation.MapCarrier{"traceparent": tp}
		if ts := h.GetTracestate(); ts != "" {
			carrier["tracestate"] = ts
		}
		ctx = propagation.TraceContext{}.Extract(ctx, carrier)
	}
	if d := h.GetDeadlineUnixNanos(); d > 0 {
		return context.WithDeadline(ctx, time.Unix(0, d))
	}
	return context.WithCancel(ctx)
}

// begin registers a call request (Execute or ExecuteTurn) before its work
// starts; the grain calls it in Receive, so a Cancel received after the
// request finds it. A request whose call id is in flight already becomes a
// duplicate that waits for that flight.
func (t *tree) begin(h *clustermsg.Header) *flight {
	ctx, cancel := requestCtx(h)
	f := &flight{id: h.GetCallId(), ctx: ctx, cancel: cancel, done: make(chan struct{})}
	t.mu.Lock()
	defer t.mu.Unlock()
	if f.id == "" {
		return f
	}
	if o := t.inflight[f.id]; o != nil {
		f.orig = o
		return f
	}
	if t.tombstones[f.id] {
		cancel() // cancelled before it arrived: the runtime ends it before dispatch
	}
	t.inflight[f.id] = f
	return f
}

// end publishes f's reply and forgets it.
func (t *tree) end(f *flight, reply proto.Message) {
	f.reply = reply
	t.mu.Lock()
	if f.orig == nil && f.id != "" && t.inflight[f.id] == f {
		delete(t.inflight, f.id)
	}
	t.mu.Unlock()
	f.cancel()
	close(f.done)
}

// cancel cancels the call request with id: in flight now, or arriving
// later on this activation.
func (t *tree) cancel(id string) {
	if id == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if f := t.inflight[id]; f != nil {
		f.cancel()
		return
	}
	if !t.tombstones[id] {
		if len(t.tombOrder) >= maxTombstones {
			delete(t.tombstones, t.tombOrder[0])
			t.tombOrder = t.tombOrder[1:]
		}
		t.tombstones[id] = true
		t.tombOrder = append(t.tombOrder, id)
	}
}

// await waits until the activation is ready or ctx ends; it returns the
// refusal when the tree cannot serve.
func (t *tree) await(ctx context.Context) *Error {
	select {
	case <-t.ready:
	default:
		select {
		case <-t.ready:
		case <-ctx.Done():
			return newError(CodeScopeUnavailable, "tree %q was still activating when the request's deadline passed; nothing ran; retry later", t.id)
		}
	}
	if t.err != nil {
		return t.err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lost
}

// scope returns the runtime scope with key ("" is the root) and the
// refusal when there is none or the tree cannot serve.
func (t *tree) scope(key string) (*runtime.Scope, *Error) {
	if key == "" {
		key = t.id
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.lost != nil {
		return nil, t.lost
	}
	s := t.built.Scopes[key]
	if s == nil {
		return nil, newError(CodeNoSuchScope, "tree %q has no scope %q (never created, or disposed); nothing ran", t.id, key)
	}
	return s, nil
}

// usable reports the refusal of any work on this activation: lost, or
// its lease not renewed within a TTL (the member may have been paused).
func (t *tree) usable() *Error {
	t.mu.Lock()
	lost := t.lost
	t.mu.Unlock()
	if lost != nil {
		return lost
	}
	if !t.leaseFresh() {
		return newError(CodeScopeUnavailable, "tree %q: this member's lease on it is stale; nothing ran; retry later", t.id)
	}
	return nil
}

// claimFailed handles a Claim error: ErrFenced loses the tree.
func (t *tree) claimFailed(err error) string {
	if errors.Is(err, ErrFenced) {
		t.lose(newError(CodeScopeUnavailable, "tree %q moved to another member; retry later", t.id))
		return "the tree moved to another member while the call was being claimed"
	}
	return "the store did not confirm the call's claim: " + err.Error()
}

// recordFailed handles a Record error. The result still goes to the
// caller (its body ran); a repeat of the call id will get unknown-outcome.
// ErrFenced loses the tree; any other failure (the store away, a result
// over its bound) leaves the activation serving.
func (t *tree) recordFailed(err error) {
	if errors.Is(err, ErrFenced) {
		t.lose(newError(CodeScopeUnavailable, "tree %q moved to another member; retry later", t.id))
	}
}

// execute answers an ExecuteRequest registered by begin.
func (t *tree) execute(f *flight, m *clustermsg.ExecuteRequest) *clustermsg.ExecuteReply {
	res, unavailable := t.executeResult(f, m)
	return &clustermsg.ExecuteReply{Result: res.Proto(), Unavailable: unavailable}
}

func (t *tree) executeResult(f *flight, m *clustermsg.ExecuteRequest) (*runtime.Result, bool) {
	h, c := m.GetHeader(), m.GetCall()
	if f.orig != nil {
		select {
		case <-f.orig.done:
			if r, ok := f.orig.reply.(*clustermsg.ExecuteReply); ok {
				return runtime.ResultFromProto(r.GetResult()), r.GetUnavailable()
			}
			return failResult(CodeInvalid, "call id %q is in use by a request of another kind", f.id), false
		case <-f.ctx.Done():
			return unknownOutcome(f.id, "a request with this call id was still running when this one's deadline passed"), false
		}
	}
	if f.id == "" || (c.GetCallId() != "" && c.GetCallId() != f.id) {
		return failResult(CodeInvalid, "the request's call id %q must be non-empty and equal the call's id %q; nothing ran", f.id, c.GetCallId()), false
	}
	if err := t.await(f.ctx); err != nil {
		return refusal(err)
	}
	s, serr := t.scope(h.GetScope())
	if serr != nil {
		return refusal(serr)
	}
	if a := c.GetAgent(); a != "" && a != s.Key() {
		return failResult(CodeInvalid, "call.agent %q is not the scope %q the request names; nothing ran", a, s.Key()), false
	}
	if err := t.usable(); err != nil {
		return refusal(err)
	}
	ctx, cancel := t.storeCtx()
	claims, err := t.cfg.store.Claim(ctx, t.lease, []string{f.id})
	cancel()
	if err != nil {
		return unknownOutcome(f.id, t.claimFailed(err)), false
	}
	if len(claims) != 1 {
		return unknownOutcome(f.id, "the store answered the claim with "+strconv.Itoa(len(claims))+" states"), false
	}
	switch claims[0].State {
	case ClaimDone:
		return recorded(f.id, claims[0].Result), false
	case ClaimNew:
	default:
		return unknownOutcome(f.id, "it was claimed before by an activation that did not record a result"), false
	}
	res := s.Execute(f.ctx, runtime.Call{ID: f.id, RootID: c.GetRootCallId(), Name: c.GetName(), Arguments: argsFromProto(c.GetArgumentsJson())})
	t.record(f.id, res)
	return res, false
}

// refusal is the result of a call refused as a whole; SCOPE_UNAVAILABLE
// marks the reply as retryable (nothing ran, nothing was claimed).
func refusal(e *Error) (*runtime.Result, bool) {
	return failResult(runtime.Code(e.Code()), "%s", e.msg), e.code == CodeScopeUnavailable
}

// record records a ClaimNew call's result.
func (t *tree) record(id string, res *runtime.Result) {
	b, err := proto.Marshal(res.Proto())
	if err == nil {
		ctx, cancel := t.storeCtx()
		err = t.cfg.store.Record(ctx, t.lease, id, b)
		cancel()
	}
	if err != nil {
		t.recordFailed(err)
	}
}

// recorded decodes a recorded result.
func recorded(id string, b []byte) *runtime.Result {
	var m messages.Result
	if err := proto.Unmarshal(b, &m); err != nil {
		return unknownOutcome(id, "its recorded result cannot be read: "+err.Error())
	}
	return runtime.ResultFromProto(&m)
}

func argsFromProto(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return json.RawMessage(b)
}

// turn answers an ExecuteTurnRequest registered by begin. Its calls are
// claimed in one batch under ids "<request call id>/<index>"; the calls
// claimed now run as one runtime turn (model order kept among them); a
// call claimed before is answered by its recorded result or as
// unknown-outcome, in its place.
func (t *tree) turn(f *flight, m *clustermsg.ExecuteTurnRequest) *clustermsg.ExecuteTurnReply {
	if f.orig != nil {
		select {
		case <-f.orig.done:
			if r, ok := f.orig.reply.(*clustermsg.ExecuteTurnReply); ok {
				return r
			}
			return turnError("call id %q is in use by a request of another kind", f.id)
		case <-f.ctx.Done():
		}
	}
	tr := m.GetTurn()
	calls := tr.GetCalls()
	all := func(r func(i int, id string) *runtime.Result) *clustermsg.ExecuteTurnReply {
		out := &messages.TurnReply{}
		for i, c := range calls {
			out.Results = append(out.Results, r(i, c.GetCallId()).Proto())
		}
		return &clustermsg.ExecuteTurnReply{Turn: out}
	}
	switch {
	case f.orig != nil:
		return all(func(_ int, id string) *runtime.Result {
			return unknownOutcome(id, "the same turn request was still running when this one's deadline passed")
		})
	case f.id == "":
		return turnError("the request's call id must be non-empty; nothing ran")
	case len(calls) > maxTurnCalls:
		return turnError("the turn has %d calls, over the bound of %d; nothing ran", len(calls), maxTurnCalls)
	case tr.GetMaxParallel() < 0:
		return turnError("max_parallel is %d: it must not be negative (R91); nothing ran", tr.GetMaxParallel())
	}
	refuse := func(e *Error) *clustermsg.ExecuteTurnReply {
		r := all(func(int, string) *runtime.Result { return failResult(runtime.Code(e.Code()), "%s", e.msg) })
		r.Unavailable = e.code == CodeScopeUnavailable
		return r
	}
	if err := t.await(f.ctx); err != nil {
		return refuse(err)
	}
	s, serr := t.scope(m.GetHeader().GetScope())
	if serr != nil {
		return refuse(serr)
	}
	if err := t.usable(); err != nil {
		return refuse(err)
	}
	ids := make([]string, len(calls))
	for i := range calls {
		ids[i] = f.id + "/" + strconv.Itoa(i)
	}
	var claims []Claim
	var err error
	if len(ids) > 0 {
		ctx, cancel := t.storeCtx()
		claims, err = t.cfg.store.Claim(ctx, t.lease, ids)
		cancel()
	}
	if err == nil && len(claims) != len(ids) {
		err = fmt.Errorf("the store answered %d claims with %d states", len(ids), len(claims))
	}
	if err != nil {
		why := t.claimFailed(err)
		return all(func(_ int, id string) *runtime.Result { return unknownOutcome(id, why) })
	}
	results := make([]*runtime.Result, len(calls))
	var run []runtime.TurnCall
	var runAt []int
	for i, cl := range claims {
		switch cl.State {
		case ClaimNew:
			c := calls[i]
			run = append(run, runtime.TurnCall{ID: c.GetCallId(), Name: c.GetName(), ArgumentsText: c.GetArgumentsText()})
			runAt = append(runAt, i)
		case ClaimDone:
			results[i] = recorded(calls[i].GetCallId(), cl.Result)
		default:
			results[i] = unknownOutcome(calls[i].GetCallId(), "it was claimed before by an activation that did not record a result")
		}
	}
	out := &messages.TurnReply{}
	if len(run) > 0 {
		opts := []runtime.TurnOption{runtime.WithTurnID(tr.GetTurnId())}
		if n := tr.GetMaxParallel(); n != 0 {
			opts = append(opts, runtime.WithMaxParallel(int(n)))
		}
		tres, terr := s.ExecuteTurn(f.ctx, run, opts...)
		if terr != nil {
			out.Error = terr.Error()
		}
		if tres != nil {
			for j, r := range tres.Results {
				results[runAt[j]] = r
				t.record(ids[runAt[j]], r)
			}
			for _, e := range tres.Events {
				k := messages.TurnEventCallStarted
				if e.Kind == runtime.ResultRecorded {
					k = messages.TurnEventResult
				}
				out.Events = append(out.Events, &messages.TurnEvent{Kind: k, CallId: e.CallID})
			}
			for _, c := range tres.Contexts {
				out.Contexts = append(out.Contexts, &messages.ContextMessage{Role: c.Role, Text: c.Text})
			}
		}
	}
	for i, r := range results {
		if r == nil { // the runtime turn failed before answering it (R98): it may have started
			r = unknownOutcome(calls[i].GetCallId(), "the turn failed before its result: "+out.Error)
		}
		if r.ConcludesTurn() {
			out.Concluded = true
		}
		out.Results = append(out.Results, r.Proto())
	}
	return &clustermsg.ExecuteTurnReply{Turn: out}
}

func turnError(format string, args ...any) *clustermsg.ExecuteTurnReply {
	return &clustermsg.ExecuteTurnReply{Turn: &messages.TurnReply{Error: fmt.Sprintf(format, args...)}}
}

func failure(e *Error) *clustermsg.Failure {
	if e == nil {
		return nil
	}
	return &clustermsg.Failure{Code: e.Code(), Message: e.msg}
}

// read waits for the activation and resolves the header's scope, for the
// requests that run no body (Get, Schemas, ExecutionMode).
func (t *tree) read(ctx context.Context, h *clustermsg.Header) (*runtime.Scope, *Error) {
	if err := t.await(ctx); err != nil {
		return nil, err
	}
	return t.scope(h.GetScope())
}

// get answers a GetRequest.
func (t *tree) get(ctx context.Context, m *clustermsg.GetRequest) *clustermsg.GetReply {
	s, err := t.read(ctx, m.GetHeader())
	if err != nil {
		return &clustermsg.GetReply{Failure: failure(err)}
	}
	d, ok := s.Get(m.GetName())
	if !ok {
		return &clustermsg.GetReply{Reply: &messages.GetReply{}}
	}
	ts := &messages.ToolSchema{Name: d.Name, Description: d.Description}
	if raw, ok := d.Parameters.(json.RawMessage); ok {
		ts.ParametersJson = raw
	} else if d.Parameters != nil {
		ts.ParametersJson, _ = json.Marshal(d.Parameters)
	}
	return &clustermsg.GetReply{Reply: &messages.GetReply{Found: true, Tool: ts}}
}

// schemas answers a SchemasRequest.
func (t *tree) schemas(ctx context.Context, m *clustermsg.SchemasRequest) *clustermsg.SchemasReply {
	s, err := t.read(ctx, m.GetHeader())
	if err != nil {
		return &clustermsg.SchemasReply{Failure: failure(err)}
	}
	list, serr := s.Schemas()
	if serr != nil {
		return &clustermsg.SchemasReply{Reply: &messages.SchemasReply{Error: serr.Error()}}
	}
	out := &messages.SchemasReply{Tools: make([]*messages.ToolSchema, len(list))}
	for i, ts := range list {
		out.Tools[i] = &messages.ToolSchema{Name: ts.Name, Description: ts.Description, ParametersJson: ts.Parameters}
	}
	return &clustermsg.SchemasReply{Reply: out}
}

// mode answers an ExecutionModeRequest.
func (t *tree) mode(ctx context.Context, m *clustermsg.ExecutionModeRequest) *clustermsg.ExecutionModeReply {
	s, err := t.read(ctx, m.GetHeader())
	if err != nil {
		return &clustermsg.ExecutionModeReply{Failure: failure(err)}
	}
	c := m.GetCall()
	if a := c.GetAgent(); a != "" && a != s.Key() {
		return &clustermsg.ExecutionModeReply{Failure: failure(newError(CodeInvalid, "call.agent %q is not the scope %q the request names", a, s.Key()))}
	}
	md := messages.ModeExclusive
	if s.ExecutionMode(runtime.Call{Name: c.GetName(), Arguments: argsFromProto(c.GetArgumentsJson())}) == runtime.Parallel {
		md = messages.ModeParallel
	}
	return &clustermsg.ExecutionModeReply{Mode: md}
}
