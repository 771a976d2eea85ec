package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/toolscope/toolscope/internal/core"
	"github.com/toolscope/toolscope/internal/jsonv"
)

// execState is one execution: the identity every stage shares (R43) and
// what the body leaves behind (deferred contexts, the turn mark).
type execState struct {
	reg    *Registry
	ectx   execCtx // the caller's (or turn's) ctx carrying this execution (cx)
	callID string
	rootID string
	name   string
	agent  string
	parent Token
	host   *execState // the execution this one runs within, for admission (nesting.go)
	node   *core.Node
	sh     *shell     // the scope's admission, when the caller has it at hand
	chain  core.Chain // the chain loaded at entry (R44); nodes are fixed, layers are reloaded where the SPEC says live
	args   []byte     // argument snapshot; nil when it failed (R48)
	// argCopy, when not nil, is a spare copy of args for the first
	// classifier call (a turn makes its calls' copies in one allocation).
	argCopy []byte
	// argsChecked records that the typed helper's schema already accepted
	// args (classification), so the body does not validate them again.
	argsChecked *jsonv.Schema
	// argsOver is the size of argument text refused for its size (over
	// WithMaxArgumentBytes; args is then nil); 0 otherwise.
	argsOver int

	finalizer func(context.Context, Execution, *Result) ([]Block, error)
	chainTool *toolDef         // what chain resolves name to (nil: no such tool); kept in step with chain
	rc        RunContext       // handed to the body; embedded to save an allocation
	slot      *resultWithBlock // where the first success goes (a turn's calls' results share one allocation), or nil

	mu          sync.Mutex
	deferred    []Message
	concluded   atomic.Bool
	bodyInvoked atomic.Bool
	// holding is the scope admission the dispatch holds (nil: none, or
	// released); holdExcl and holdSlot, written before holding is stored,
	// say whether it is exclusive and whether it is a slot of the gate or
	// runs inside an ancestor's (nesting.go).
	holding     atomic.Pointer[shell]
	typedOut    []byte // a typed body's canonical output (see typedOutMarker)
	aroundErr   error
	mode        Mode
	turnID      string
	enteredAt   int64
	startedAt   int64
	dispatchEnd int64           // when around+body returned (0: never dispatched)
	typed       []*Subscription // the typed subscribers at entry (observe.go)
	span        *hookSet        // the registry's hooks, taken at entry when a call has any (hooks.go); nil: none
	group       int32
	holdExcl    bool
	holdSlot    bool
	directBody  bool // the registry is calling the typed helper's body itself
	classified  bool
	denied      bool
	startedSent bool
	events      bool // someone listened on the event stream at entry: publish both events (events.go)
	// hookAdmitted and hookDispatching: StageAdmitted and StageDispatching
	// were reported (hooks.go).
	hookAdmitted    bool
	hookDispatching bool
}

// cx is the execution's ctx: the caller's (or turn's), carrying it.
func (s *execState) cx() context.Context { return &s.ectx }

// Execute runs one call in the scope's view through the whole pipeline
// (SPEC §7). call.Agent is set to the scope's key. It never panics and
// always returns a result; every failure is a coded or plain failure
// result.
func (s *Scope) Execute(ctx context.Context, call Call) *Result {
	call.Agent = s.node.Key
	return s.reg.executeWith(ctx, s.viewNode(), s.shell, call)
}

// Execute runs one call in the view of call.Agent ("" = global view).
func (r *Registry) Execute(ctx context.Context, call Call) *Result {
	return r.executeOn(ctx, r.nodeOf(call.Agent), call)
}

func (r *Registry) executeOn(ctx context.Context, node *core.Node, call Call) *Result {
	return r.executeWith(ctx, node, nil, call)
}

// executeWith runs a call; sh is the scope's shell when the caller holds
// the handle (saves a registry lookup on the hot path), else nil.
func (r *Registry) executeWith(ctx context.Context, node *core.Node, sh *shell, call Call) *Result {
	return r.executeArgs(ctx, node, sh, call, nil)
}

// executeArgs is executeWith; non-empty raw stands for call.Arguments =
// json.RawMessage(raw), without boxing it (the protobuf request's bytes).
func (r *Registry) executeArgs(ctx context.Context, node *core.Node, sh *shell, call Call, raw []byte) *Result {
	if ctx == nil {
		return failureFromMessage("runtime: Execute requires a non-nil context", nil)
	}
	if fail := r.enterCall(node); fail != nil {
		return fail // CLOSED or OVERLOADED (close.go)
	}
	var host *execState
	call.Parent, host = r.inferParent(ctx, call.Parent) // before ctx is wrapped: asking a callCtx for a value fuses it
	x := new(singleExec)
	s := &x.s
	s.host = host
	x.cctx.init(ctx, &r.life)
	defer r.exit(&x.cctx)
	r.initExec(s, &x.cctx, node, call)
	if len(raw) > 0 {
		if bound := r.cfg.argBound(); len(raw) > bound {
			s.argsOver = len(raw)
		} else if b, err := jsonv.AppendCanonical(nil, raw); err == nil {
			s.args = b // snapshotArgs(json.RawMessage(raw))
		}
	} else {
		s.snapshotArgs(call.Arguments)
	}
	s.sh = sh
	return r.run(s, scopeGate{r})
}

// singleExec is a single Execute's execution and its ctx (a turn's calls
// share the turn's), in one allocation.
type singleExec struct {
	s    execState
	cctx callCtx
}

// initExec fills a zero execState in place (a turn allocates all of its
// executions at once).
func (r *Registry) initExec(s *execState, ctx context.Context, node *core.Node, call Call) {
	s.reg = r
	s.callID = call.ID
	s.rootID = call.RootID
	s.name = call.Name
	s.agent = call.Agent
	s.parent = call.Parent
	s.node = node
	if s.rootID == "" {
		s.rootID = s.callID
	}
	s.events = r.listening()
	s.typed = r.typedListeners()
	s.span = r.hooks.forCalls()
	if s.events || s.typed != nil || s.span != nil {
		s.enteredAt = r.now().UnixNano()
	}
	if node == nil {
		s.agent = ""
	}
	if s.span != nil {
		ctx = s.span.startSpan(ctx, s)
	}
	s.ectx = execCtx{Context: ctx, s: s}
	// R44: entry capture of the finalizer, from one load of the chain.
	s.chain = core.Load(r.global.node, node)
	if td, ok := r.lookup(&s.chain, call.Name); ok {
		s.chainTool = td
		s.finalizer = td.def.FinalizeContent
	}
	if s.span != nil {
		s.spanResolved()
	}
}

// snapshotArgs takes R45/R47's one lossless snapshot of the arguments,
// before any hook; a failed snapshot leaves args nil (R48).
// Arguments over the registry's bound are refused instead (argsOver): text
// before it is read, a Go value by its snapshot.
func (s *execState) snapshotArgs(arguments any) {
	bound := s.reg.cfg.argBound()
	if raw, ok := arguments.(json.RawMessage); ok && len(raw) > bound {
		s.argsOver = len(raw)
		return
	}
	if b, err := encodeJSON(arguments); err == nil {
		if len(b) > bound {
			s.argsOver = len(b)
			return
		}
		s.args = b
	}
}

// hooks is the set of hook lists admitted for one call (R85).
type hooks struct {
	pre, around, post, result []core.Entry
}

// hooksFor returns the hooks admitted for s, from the chain s loaded.
func (r *Registry) hooksFor(s *execState) hooks {
	chain := &s.chain
	return hooks{
		pre:    callbacks(chain, core.KindPre),
		around: callbacks(chain, core.KindAround),
		post:   callbacks(chain, core.KindPost),
		result: callbacks(chain, core.KindResult),
	}
}

// callbacks is chain.Callbacks(k, nil) without the copy when only one
// layer has hooks of kind k (the usual case): that layer's published list,
// which nobody changes, capped so that an append cannot write into it.
func callbacks(chain *core.Chain, k core.Kind) []core.Entry {
	var only []core.Entry
	if l := chain.Global.List(k); len(l) > 0 {
		only = l
	}
	for i := 0; i < chain.Len(); i++ {
		if l := chain.At(i).List(k); len(l) > 0 {
			if only != nil {
				return chain.Callbacks(k, nil) // several layers: merge in Seq order
			}
			only = l
		}
	}
	return only[:len(only):len(only)]
}

// gate is the admission of dispatch, supplied by the caller: the scope's
// supervisor for single calls, the turn scheduler for turns.
type gate interface {
	// acquire admits s's dispatch; the admission is recorded on s and
	// given back by releaseAdmission. A non-nil result is the outcome of a
	// call that must not dispatch (nesting.go, Registry.acquire).
	acquire(s *execState) *Result
}

// run executes the stages of R49 for s and returns the final result.
func (r *Registry) run(s *execState, g gate) *Result {
	if res := r.collapse(s); res != nil {
		return r.finish(s, res, hooks{}) // R107: before any hook
	}
	h := r.hooksFor(s)
	res := r.pipeline(s, h, g)
	return r.finish(s, res, h)
}

// pipeline runs everything before finish and returns the candidate result.
func (r *Registry) pipeline(s *execState, h hooks, g gate) *Result {
	res, post := r.gate(s, h)
	if res == nil {
		out, final := r.dispatch(s, h, g)
		if s.span != nil {
			s.spanDispatched(len(h.around))
		}
		if final {
			return out
		}
		return r.complete(s, h, out)
	}
	if post {
		return r.postAndRecheck(s, h, res)
	}
	return res
}

// gate returns nil when the call passed; otherwise the candidate result and
// whether it is a post result.
func (r *Registry) gate(s *execState, h hooks) (res *Result, post bool) {
	// R48: argument failure wins over everything.
	if s.args == nil {
		if s.argsOver > 0 {
			return argsTooLarge(s.argsOver, r.cfg.argBound()), false
		}
		return failureFromMessage("tool execution arguments must be losslessly JSON-serializable", nil), false
	}
	// R79: pre-cancelled entry.
	if s.cx().Err() != nil {
		return abortedBeforeDispatch(), false
	}
	if s.span != nil {
		s.spanGate()
	}
	ex := Execution{s}
	dec, err := runPre(ex, h.pre)
	if s.span != nil {
		s.spanPre(len(h.pre), dec, err)
	}
	if err != nil {
		return failureFrom(err), false
	}
	switch dec.Kind {
	case DecisionDeny:
		return s.deny(dec.Reason), true
	case DecisionAsk:
		res, post, allowed := r.approve(s, dec)
		if s.span != nil {
			s.spanApproval()
		}
		if !allowed {
			return res, post
		}
	case DecisionAllow:
	default:
		return failureFromMessage(fmt.Sprintf("tools/pre-execute returned an unknown decision %d", dec.Kind), nil), false
	}
	reason, denied, err := r.evalGuards(s)
	if s.span != nil {
		s.spanGuards(denied)
	}
	if err != nil {
		return failureFrom(err), false
	}
	if denied {
		return s.deny(reason), true
	}
	// R56: cancelled while the gate ran.
	if s.cx().Err() != nil {
		return abortedBeforeDispatch(), true
	}
	return nil, false
}

// approve resolves an Ask (R55).
func (r *Registry) approve(s *execState, dec Decision) (res *Result, post, allowed bool) {
	ap := r.cfg.approver
	if ap == nil {
		reason := dec.Reason
		if !dec.HasReason {
			reason = fmt.Sprintf("tool %q requires approval (not yet supported)", s.name)
		}
		return s.deny(reason), true, false
	}
	if s.agent == "" {
		return s.deny(fmt.Sprintf("tool %q requires approval, but the call has no agent to route it through", s.name)), true, false
	}
	req := ApprovalRequest{Agent: s.agent, Tool: s.name, CallID: s.callID, Reason: dec.Reason, HasReason: dec.HasReason}
	out, err := callApprover(ap, s.cx(), req)
	if err != nil {
		return failureFrom(err), false, false
	}
	switch out {
	case ApprovalAllowedOnce:
		return nil, false, true
	case ApprovalRejected:
		return s.deny(fmt.Sprintf("the user rejected tool %q", s.name)), true, false
	case ApprovalCancelled:
		if s.cx().Err() != nil {
			return abortedBeforeDispatch(), true, false
		}
		return s.deny(fmt.Sprintf("approval for tool %q was cancelled", s.name)), true, false
	case ApprovalUnavailable:
		return s.deny(fmt.Sprintf("tool %q requires approval, but no approval channel is available", s.name)), true, false
	default:
		return failureFromMessage(fmt.Sprintf("approver returned an unknown outcome %q", string(out)), nil), false, false
	}
}

// evalGuards runs the guards of R37 with live iteration per layer (R40).
func (r *Registry) evalGuards(s *execState) (reason string, denied bool, err error) {
	ex := Execution{s}
	check := func(n *core.Node) (string, bool, error) {
		l := n.Layer()
		if len(l.List(core.KindGuard)) == 0 {
			return "", false, nil
		}
		gen := l.GuardGen()
		last := int64(math.MinInt64)
		for {
			l = n.Layer()
			if l.GuardGen() != gen {
				return "", false, nil
			}
			list := l.List(core.KindGuard)
			i := 0
			for i < len(list) && list[i].Seq <= last {
				i++
			}
			if i == len(list) {
				return "", false, nil
			}
			last = list[i].Seq
			reason, deny, err := callGuard(list[i].Payload.(Guard), ex)
			if err != nil || deny {
				return reason, deny, err
			}
		}
	}
	if reason, deny, err := check(r.global.node); err != nil || deny {
		return reason, deny, err
	}
	for i := s.chain.Len() - 1; i >= 0; i-- {
		if reason, deny, err := check(s.chain.NodeAt(i)); err != nil || deny {
			return reason, deny, err
		}
	}
	return "", false, nil
}

// dispatch runs the around hooks and the base dispatch under admission,
// then normalizes (R58–R66). final=true means post-execute is skipped.
func (r *Registry) dispatch(s *execState, h hooks, g gate) (res *Result, final bool) {
	if g != nil {
		if res := g.acquire(s); res != nil {
			return res, false
		}
		defer r.releaseAdmission(s)
	}
	if s.span != nil {
		s.spanDispatching()
	}
	r.emitStarted(s)
	if s.startedSent {
		defer func() { s.dispatchEnd = r.now().UnixNano() }()
	}
	if len(h.around) == 0 {
		// No wrapper: the base result is this execution's own (R65).
		out := r.base(s, s.cx())
		return r.withDeferred(s, out), false
	}
	ex := Execution{s}
	var step func(i int, ctx context.Context) *Result
	step = func(i int, ctx context.Context) *Result {
		if i == len(h.around) {
			return r.base(s, ctx)
		}
		hook := h.around[i].Payload.(AroundHook)
		var busy nextBusy
		next := func(c context.Context) *Result {
			// A retrying wrapper gets a fresh dispatch each time, but one
			// at a time: the dispatches of one execution share its state.
			if st := busy.enter(); st != nextIdle {
				return refusedNext(st)
			}
			defer busy.leave()
			if c == nil {
				c = ctx
			}
			return step(i+1, c)
		}
		out, err := callAround(hook, ctx, ex, next)
		busy.close()
		if err != nil {
			s.mu.Lock()
			if s.aroundErr == nil {
				s.aroundErr = err
			}
			s.mu.Unlock()
			return failureFrom(err)
		}
		if out == nil {
			err := errors.New("tools/execute wrapper returned no result")
			s.mu.Lock()
			if s.aroundErr == nil {
				s.aroundErr = err
			}
			s.mu.Unlock()
			return failureFrom(err)
		}
		return out
	}
	out := step(0, s.cx())
	s.mu.Lock()
	aerr := s.aroundErr
	s.mu.Unlock()
	if aerr != nil {
		// R66: final failure, deferred contexts dropped.
		return failureFrom(aerr), true
	}
	// R65: normalization.
	if out.stamp != s {
		if out.isError && !out.lossyValue() {
			n := *out
			n.value = nil
			n.concludes = false
			n.stamp = nil
			out = &n
		} else {
			td, ok := r.resolve(s.node, s.name)
			if !ok {
				return unknownTool(s.name), true
			}
			rebuilt := r.createSuccess(s, td, out.foreignValue())
			if rebuilt.isError {
				return rebuilt, true
			}
			rebuilt.contexts = out.contexts
			out = rebuilt
		}
	}
	return r.withDeferred(s, out), false
}

// withDeferred prepends the body's deferred contexts to the result's (R65).
func (r *Registry) withDeferred(s *execState, out *Result) *Result {
	s.mu.Lock()
	deferred := s.deferred
	s.mu.Unlock()
	if len(deferred) == 0 {
		return out
	}
	n := *out
	n.contexts = append(append(make([]Message, 0, len(deferred)+len(out.contexts)), deferred...), out.contexts...)
	return &n
}

// base is the innermost next (R61).
func (r *Registry) base(s *execState, ctx context.Context) *Result {
	bodyCtx := ctx
	if ctx != s.cx() {
		// R60: fuse the caller ctx and the wrapper's ctx. Err answers from
		// both at once (a cancellation of the caller is seen here before
		// the body runs, not when AfterFunc gets round to it); Done closes
		// when either does.
		fused, cancel := context.WithCancel(ctx)
		stop := context.AfterFunc(s.cx(), cancel)
		defer func() { stop(); cancel() }()
		bodyCtx = &fusedBodyCtx{Context: fused, caller: s.cx(), s: s}
	}
	if bodyCtx.Err() != nil {
		return stamped(s, abortedBeforeDispatch())
	}
	td, ok := r.resolveExec(s)
	if !ok {
		return stamped(s, unknownTool(s.name))
	}
	s.bodyInvoked.Store(true)
	v, err := callBody(td, bodyCtx, s)
	if err != nil {
		return stamped(s, failureFrom(err))
	}
	if bodyCtx.Err() != nil {
		return stamped(s, aborted())
	}
	return stamped(s, r.createSuccess(s, td, v))
}

func stamped(s *execState, res *Result) *Result {
	res.stamp = s
	return res
}

// createSuccess is success creation (R62, R64, R78). value is any lossless
// JSON value, including canonical bytes.
func (r *Registry) createSuccess(s *execState, td *toolDef, value any) *Result {
	var b []byte
	if _, ok := value.(typedOutMarker); ok {
		b, s.typedOut = s.typedOut, nil
	} else if raw, ok := value.(canonical); ok {
		b = raw
	} else {
		var err error
		if b, err = encodeJSON(value); err != nil {
			return invalidOutput(td.name, "value is not lossless JSON")
		}
	}
	if v := td.outSchema.Validate(b, "value"); len(v) > 0 {
		return invalidOutput(td.name, v...)
	}
	if td.trustedRender {
		// The typed helper's own renderer keeps and changes nothing; its
		// one text block (no Data to check) shares the result's allocation.
		rb := s.resultSlot()
		rb.block[0] = renderDefault(b)
		rb.res.value, rb.res.content = b, rb.block[:]
		return r.withMeta(s, td, &rb.res, b)
	}
	content, err := callRender(td.def.Output.Render, s.cx(), s.args, b)
	if err != nil {
		return invalidOutput(td.name, "output.render failed: "+messageOf(err))
	}
	if !blocksSafe(content) {
		return invalidOutput(td.name, "output.render returned non-lossless JSON")
	}
	rb := s.resultSlot()
	if len(content) == 1 {
		// The usual single block is copied into the result's allocation.
		rb.block[0] = content[0]
		rb.block[0].Data = cloneBytes(content[0].Data)
		content = rb.block[:]
	} else {
		content = cloneBlocks(content)
	}
	rb.res.value, rb.res.content = b, content
	return r.withMeta(s, td, &rb.res, b)
}

// resultWithBlock is a result and its single content block in one
// allocation.
type resultWithBlock struct {
	res   Result
	block [1]Block
}

// resultSlot returns the zero result its first success goes in: the one
// allocated with its turn, if any and not taken yet, else a new one.
func (s *execState) resultSlot() *resultWithBlock {
	if rb := s.slot; rb != nil {
		s.slot = nil
		return rb
	}
	return &resultWithBlock{}
}

// withMeta adds presentation metadata (R64) and the turn mark to a new
// success.
func (r *Registry) withMeta(s *execState, td *toolDef, res *Result, b []byte) *Result {
	if s.parent.IsZero() && td.def.Output.PresentationMeta != nil {
		m, err := callMeta(td.def.Output.PresentationMeta, s.cx(), s.args, b)
		if err != nil {
			return invalidOutput(td.name, "output.presentationMeta failed: "+messageOf(err))
		}
		mb, err := encodeJSON(m)
		if err != nil {
			return invalidOutput(td.name, "output.presentationMeta returned non-lossless JSON")
		}
		res.meta = mb
	}
	res.concludes = s.concluded.Load()
	return res
}

// complete runs the after-dispatch cancel check, post-execute and the
// second cancel check (R80, R67).
func (r *Registry) complete(s *execState, h hooks, res *Result) *Result {
	res = r.recheck(s, res)
	return r.postAndRecheck(s, h, res)
}

func (r *Registry) postAndRecheck(s *execState, h hooks, res *Result) *Result {
	if s.span != nil {
		s.spanPostStart()
	}
	res = r.runPost(s, h, res)
	if s.span != nil {
		s.spanPost(len(h.post))
	}
	return r.recheck(s, res)
}

// recheck replaces a success when the caller ctx is cancelled (R80).
func (r *Registry) recheck(s *execState, res *Result) *Result {
	if res.isError || s.cx().Err() == nil {
		return res
	}
	var out *Result
	if s.bodyInvoked.Load() {
		out = aborted()
	} else {
		out = abortedBeforeDispatch()
	}
	out.contexts = res.contexts
	return out
}

// runPost is post-execute (R68–R71).
func (r *Registry) runPost(s *execState, h hooks, res *Result) *Result {
	if len(h.post) == 0 {
		return res // the innermost default is Accept{} (R68)
	}
	steps := make([]postStep, len(h.post))
	for i := range steps {
		p := &steps[i]
		p.ex, p.res, p.all, p.list, p.i = Execution{s}, res, steps, h.post, i
	}
	dec, err := steps[0].run()
	if err != nil {
		return failureFrom(err)
	}
	if dec.Blocked {
		out := blocked(dec.Feedback)
		out.contexts = cloneMessages(dec.Contexts)
		return out
	}
	if dec.Content != nil && dec.HasValue {
		return failureFromMessage("tools/post-execute accept decision cannot replace both value and content", nil)
	}
	out := res
	switch {
	case dec.HasValue:
		if res.isError {
			return failureFromMessage("tools/post-execute cannot replace the value of a failed result", nil)
		}
		td, ok := r.resolve(s.node, s.name)
		if !ok {
			return unknownTool(s.name)
		}
		rebuilt := r.createSuccess(s, td, dec.Value)
		if rebuilt.isError {
			return rebuilt
		}
		out = rebuilt
	case dec.Content != nil:
		if !blocksSafe(dec.Content) {
			return failureFromMessage("tool result must be losslessly JSON-serializable", nil)
		}
		n := *res
		n.content = cloneBlocks(dec.Content)
		out = &n
	}
	if len(dec.Contexts) > 0 || out != res {
		n := *out
		n.contexts = append(append([]Message(nil), res.contexts...), dec.Contexts...)
		if len(n.contexts) == 0 {
			n.contexts = nil
		}
		out = &n
	}
	out.stamp = nil
	return out
}

// finish is R72–R75: materialize, finalize once, materialize again, notify
// observers.
func (r *Registry) finish(s *execState, res *Result, h hooks) *Result {
	if !blocksSafe(res.content) {
		res = failureFromMessage("tool result must be losslessly JSON-serializable", nil)
	}
	if s.finalizer != nil {
		blocks, err := callFinalizer(s.finalizer, Execution{s}, res)
		switch {
		case err != nil:
			res = failureFrom(err)
		case blocks != nil:
			if !blocksSafe(blocks) {
				res = failureFromMessage("tool result must be losslessly JSON-serializable", nil)
			} else {
				n := *res
				n.content = cloneBlocks(blocks)
				res = &n
			}
		}
	}
	res.stamp = nil
	r.emitFinished(s, res)
	if s.span != nil {
		s.spanObserversStart(res, len(h.result))
		defer s.endSpan(res, len(h.result)) // after the observers: the span covers the whole call
	}
	ex := Execution{s}
	for _, e := range h.result {
		if err := callObserver(e.Payload.(ResultObserver), ex, res); err != nil {
			r.contain(fmt.Errorf("result observer failed for call %q: %w", s.callID, printable(err)))
		}
	}
	return res
}

// runPre is the pre-execute waterfall (R52). Each hook's next runs the
// rest of the waterfall at most once (later calls return the same
// decision); the levels share one allocation.
func runPre(ex Execution, list []core.Entry) (Decision, error) {
	if len(list) == 0 {
		return Allow(), nil
	}
	steps := make([]preStep, len(list))
	for i := range steps {
		p := &steps[i]
		p.ex, p.all, p.list, p.i = ex, steps, list, i
	}
	return steps[0].run()
}

// preStep is one level of the pre-execute waterfall.
type preStep struct {
	ex   Execution
	all  []preStep
	list []core.Entry
	i    int
	once sync.Once
	d    Decision
	e    error
}

func (p *preStep) run() (Decision, error) {
	return callPre(p.list[p.i].Payload.(PreExecuteHook), p.ex, p.next)
}

// next is the hook's next: the rest of the waterfall, once.
func (p *preStep) next() (Decision, error) {
	p.once.Do(p.rest)
	return p.d, p.e
}

func (p *preStep) rest() {
	if p.i+1 == len(p.all) {
		p.d, p.e = Allow(), nil
		return
	}
	p.d, p.e = p.all[p.i+1].run()
}

// postStep is one level of the post-execute waterfall (runPost), like
// preStep.
type postStep struct {
	ex   Execution
	res  *Result
	all  []postStep
	list []core.Entry
	i    int
	once sync.Once
	d    PostDecision
	e    error
}

func (p *postStep) run() (PostDecision, error) {
	return callPost(p.list[p.i].Payload.(PostExecuteHook), p.ex, p.res, p.next)
}

func (p *postStep) next() (PostDecision, error) {
	p.once.Do(p.rest)
	return p.d, p.e
}

func (p *postStep) rest() {
	if p.i+1 == len(p.all) {
		p.d, p.e = Accept(), nil
		return
	}
	p.d, p.e = p.all[p.i+1].run()
}

// --- result constructors (SPEC §0.3) ---

func failureFromMessage(msg string, c Coded) *Result {
	res := &Result{isError: true, errMsg: msg, content: []Block{Text("Error: " + msg)}}
	if c != nil {
		res.errName, res.errCode, res.hasInfo = safeName(c), safeCode(c), true
	}
	return res
}

func codedFailure(name string, code Code, msg string) *Result {
	return failureFromMessage(msg, NewError(name, code, msg))
}

// failureFrom derives a failure from err: message per §0.3, Info if coded.
func failureFrom(err error) *Result {
	var c Coded
	if !errors.As(err, &c) {
		c = nil
	}
	return failureFromMessage(messageOf(err), c)
}

func safeName(c Coded) (s string) {
	defer func() {
		if recover() != nil {
			s = ""
		}
	}()
	return c.Name()
}

func safeCode(c Coded) (s Code) {
	defer func() {
		if recover() != nil {
			s = ""
		}
	}()
	return Code(c.Code())
}

func denial(reason string) *Result { return failureFromMessage(reason, nil) }

// deny marks s denied (for the outcome of its execution events) and
// returns the denial result (R57).
func (s *execState) deny(reason string) *Result {
	s.denied = true
	return denial(reason)
}

func abortedBeforeDispatch() *Result {
	return codedFailure(NameAbort, CodeAbortedBeforeDispatch, "tool call aborted before dispatch")
}

func aborted() *Result { return codedFailure(NameAbort, CodeAborted, "tool call aborted") }

func unknownTool(name string) *Result {
	return codedFailure(NameToolNotFound, CodeUnknownTool, fmt.Sprintf("unknown tool %q", name))
}

func invalidOutput(name string, violations ...string) *Result {
	return codedFailure(NameToolOutput, CodeInvalidToolOutput,
		fmt.Sprintf("tool %q returned invalid output: %s", name, strings.Join(violations, "; ")))
}

// blocked is R69's Block: the feedback is the content, the message is
// derived from it.
func blocked(feedback []Block) *Result {
	parts := make([]string, 0, len(feedback))
	for _, b := range feedback {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		} else {
			parts = append(parts, "["+b.Type+" content]")
		}
	}
	msg := strings.Join(parts, "\n")
	if msg == "" {
		msg = "tool result blocked by post-execute policy"
	}
	content := cloneBlocks(feedback)
	if content == nil {
		content = []Block{}
	}
	return &Result{isError: true, errMsg: msg, content: content}
}

func blocksSafe(bs []Block) bool {
	for _, b := range bs {
		if b.Data != nil && !validJSON(b.Data) {
			return false
		}
	}
	return true
}

func cloneMessages(m []Message) []Message {
	if len(m) == 0 {
		return nil
	}
	return append([]Message(nil), m...)
}

// scopeGate admits single executions on their scope's gate (nesting.go).
type scopeGate struct{ reg *Registry }

func (g scopeGate) acquire(s *execState) *Result {
	s.mode, s.classified = Exclusive, true
	if td, ok := g.reg.resolveExec(s); ok {
		s.mode = td.classifyExec(s)
	}
	sh := s.sh
	if sh == nil || sh.gone.Load() {
		// A stale handle (its scope disposed, the key maybe live again)
		// admits on the live scope's gate, as its turns do.
		sh = g.reg.admission(s.node)
	}
	if res := g.reg.refusedFromCallback(s, sh); res != nil {
		return res
	}
	return g.reg.acquire(s, sh, s.mode == Parallel)
}

// fusedBodyCtx is the body's ctx when a wrapper delegated with a ctx of its
// own (R60): cancelled when either the caller's or the wrapper's is, with
// Err answering from both synchronously; it carries the execution, whatever
// ctx the wrapper passed.
type fusedBodyCtx struct {
	context.Context // a cancel ctx under the wrapper's, cancelled by the caller's too
	caller          context.Context
	s               *execState
}

// Err implements context.Context.
func (c *fusedBodyCtx) Err() error {
	if err := c.caller.Err(); err != nil {
		return err
	}
	return c.Context.Err()
}

// Value implements context.Context.
func (c *fusedBodyCtx) Value(key any) any {
	return execValue(c.s, c.Context, key)
}

// nextBusy marks one around hook's next as running. An around hook may call
// next again once the previous call returned (a retry), but a call made
// while another call of the same next is still running — next called from
// several goroutines at once — is refused (refusedNext): the dispatches
// below would share the execution's state (its RunContext, typed output,
// stamps). Since each hook runs inside one call of the next above it, this
// keeps at most one base dispatch of an execution running at a time. Once
// the hook returned, its next is closed: a next kept and called later (from
// a goroutine the hook left behind) is refused too.
type nextBusy struct{ st atomic.Int32 }

// The states of a nextBusy.
const (
	nextIdle    int32 = iota // may be called
	nextRunning              // a call is running
	nextClosed               // the hook returned: a next kept past it is refused
)

func (b *nextBusy) enter() int32 {
	if b.st.CompareAndSwap(nextIdle, nextRunning) {
		return nextIdle
	}
	return b.st.Load()
}
func (b *nextBusy) leave() { b.st.CompareAndSwap(nextRunning, nextIdle) }
func (b *nextBusy) close() { b.st.Store(nextClosed) }

// refusedNext is the failure a refused call of next returns: one made while
// a previous call of it still runs, or after its hook returned.
func refusedNext(st int32) *Result {
	if st == nextClosed {
		return failureFromMessage("tools/execute wrapper: next called after the wrapper returned (next is valid only while the wrapper runs)", nil)
	}
	return failureFromMessage("tools/execute wrapper: next called while a previous call of it is still running (calls of next must not overlap)", nil)
}
