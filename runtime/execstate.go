package runtime

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"

	"github.com/toolscope/toolscope/internal/core"
	"github.com/toolscope/toolscope/internal/jsonv"
)

// execState is one execution: the identity every stage shares (R43) and
// what the body leaves behind (deferred contexts, the turn mark).
type execState struct {
	reg    *Registry
	ectx   execCarrierCtx // the caller's (or turn's) ctx carrying this execution (ctx)
	callID string
	rootID string
	name   string
	agent  string
	parent Token
	host   *execState // the execution this one runs within, for admission (nesting.go)
	node   *core.Node
	sh     *scopeState // the scope's admission, when the caller has it at hand
	chain  core.Chain  // the chain loaded at entry (R44); nodes are fixed, layers are reloaded where the contract says live (R40, R61, R65, R69)
	args   []byte      // argument snapshot; nil when it failed (R48)
	// argCopy, when not nil, is a spare copy of args for the first
	// classifier call (a turn makes its calls' copies in one allocation).
	argCopy []byte
	// argsChecked records that the typed helper's schema already accepted
	// args (classification), so the body does not validate them again.
	argsChecked *jsonv.Schema
	// argsOver is the size of argument text refused for its size (over
	// WithMaxArgumentBytes; args is then nil); 0 otherwise.
	argsOver int
	// argsWhy says why the snapshot failed, for R48's message: the Go
	// type that is not lossless JSON, or where JSON text breaks ("": the
	// plain message).
	argsWhy string

	finalizer func(context.Context, Execution, *Result) ([]Block, error)
	chainTool *toolDef         // what chain resolves name to (nil: no such tool); kept in step with chain
	rc        RunContext       // handed to the body; embedded to save an allocation
	slot      *resultWithBlock // where the first success goes (a turn's calls' results share one allocation), or nil

	mu       sync.Mutex
	deferred []ContextMessage
	// anyDeferred is set once deferred is not empty, so a call whose body
	// defers nothing reads one atomic instead of taking mu (withDeferred).
	anyDeferred atomic.Bool
	concluded   atomic.Bool
	bodyInvoked atomic.Bool
	// hostSlot: the dispatch holds a host slot (WithMaxInFlight); nested
	// calls read it to ride the slot (hostcap.go).
	hostSlot atomic.Bool
	// holding is the scope admission the dispatch holds (nil: none, or
	// released); holdExcl and holdSlot, written before holding is stored,
	// say whether it is exclusive and whether it is a slot of the gate or
	// runs inside an ancestor's (nesting.go).
	holding     atomic.Pointer[scopeState]
	typedOut    []byte // a typed body's canonical output (see typedOutMarker)
	aroundErr   error
	mode        Mode
	turnID      string
	enteredAt   int64
	startedAt   int64
	dispatchEnd int64           // when around+body returned (0: never dispatched)
	typed       []*Subscription // the typed subscribers at entry (observe.go)
	hooks       *hookSet        // the registry's hooks, taken at entry when a call has any (hooks.go); nil: none
	group       int32
	holdExcl    bool
	// fromText: the arguments came from text (a turn's ArgumentsText, a
	// protobuf arguments_json), not from a Go value; badText: that text is
	// not valid JSON and is passed on as a JSON string (R91). Both only
	// shape INVALID_ARGS messages (typedArgsMessage).
	fromText    bool
	badText     bool
	holdSlot    bool
	directBody  bool // the registry is calling the typed helper's body itself
	classified  bool
	startedSent bool
	// admittedReported and dispatchingReported: StageAdmitted and StageDispatching
	// were reported (hooks.go).
	admittedReported    bool
	dispatchingReported bool
	// stages and times are s.hooks' (hooks.go): the call reports its
	// stages; it reads the clock for CallDone's times.
	stages bool
	times  bool
}

// ctx is the execution's ctx: the caller's (or turn's), carrying it.
func (s *execState) ctx() context.Context { return &s.ectx }

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
	s.typed = r.typedListeners()
	if h := r.hooks.forCalls(); h != nil {
		s.hooks, s.stages, s.times = h, h.stages, h.times
	}
	if s.typed != nil || s.hooks != nil && s.hooks.entry {
		s.enteredAt = r.now().UnixNano()
	}
	if node == nil {
		s.agent = ""
	}
	if s.hooks != nil && len(s.hooks.callStart) > 0 {
		ctx = s.hooks.hookStart(ctx, s)
	}
	s.ectx = execCarrierCtx{Context: ctx, s: s}
	// R44: entry capture of the finalizer, from one load of the chain.
	s.chain = core.Load(r.global.node, node)
	if td, ok := r.lookup(&s.chain, call.Name); ok {
		s.chainTool = td
		s.finalizer = td.def.FinalizeContent
	}
	if s.stages {
		s.hookResolved()
	}
}

// snapshotArgs takes R45/R47's one lossless snapshot of the arguments,
// before any hook; a failed snapshot leaves args nil (R48).
// Arguments over the registry's bound are refused instead (argsOver): text
// before it is read, a Go value by its snapshot.
//
// Absent arguments — a nil Call.Arguments, an empty json.RawMessage — are
// {}, as empty turn text is (R45, R91).
func (s *execState) snapshotArgs(arguments any) {
	bound := s.reg.cfg.argBound()
	if absentArgs(arguments) {
		s.args = []byte("{}")
		return
	}
	if raw, ok := arguments.(json.RawMessage); ok && len(raw) > bound {
		s.argsOver = len(raw)
		return
	}
	b, err := encodeJSON(arguments)
	if err != nil {
		s.argsWhy = argsRefusal(arguments)
		return
	}
	if len(b) > bound {
		s.argsOver = len(b)
		return
	}
	s.args = b
}

// absentArgs reports whether a call's arguments are absent — a nil
// Call.Arguments, a nil or empty json.RawMessage — which stand for {}
// (R45). Every reading of Call.Arguments (the snapshot, ExecutionMode)
// asks it, so they agree.
func absentArgs(arguments any) bool {
	if arguments == nil {
		return true
	}
	raw, ok := arguments.(json.RawMessage)
	return ok && len(raw) == 0
}

// hookLists is the set of hook lists admitted for one call (R85).
type hookLists struct {
	pre, around, post, result []core.Entry
}

// hookListsFor returns the hooks admitted for s, from the chain s loaded.
func (r *Registry) hookListsFor(s *execState) hookLists {
	chain := &s.chain
	return hookLists{
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
