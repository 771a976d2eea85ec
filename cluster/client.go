package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	protocluster "github.com/asynkron/protoactor-go/cluster"
	"go.opentelemetry.io/otel/propagation"
	"google.golang.org/protobuf/proto"

	"github.com/toolscope/toolscope/cluster/clustermsg"
	"github.com/toolscope/toolscope/messages"
	"github.com/toolscope/toolscope/runtime"
)

// Client reaches agent trees hosted as grains, from any member of the
// cluster or from a client-only member (Cluster.StartClient). It is safe for
// concurrent use.
type Client struct {
	c        *protocluster.Cluster
	kind     string
	timeout  time.Duration
	resend   time.Duration
	grace    time.Duration
	ids      func() string
	propagat propagation.TextMapPropagator
}

// ClientOption configures a Client.
type ClientOption func(*Client)

// WithKind names the grain kind (default KindName), as the members'
// Config.KindName does.
func WithKind(name string) ClientOption { return func(c *Client) { c.kind = name } }

// WithDefaultTimeout bounds a request whose ctx has no deadline (default
// 30s): every request travels with a deadline.
func WithDefaultTimeout(d time.Duration) ClientOption {
	return func(c *Client) { c.timeout = d }
}

// WithResend sets how often a request still unanswered is sent again with
// the same call id (default 2s). A resend reaches the running request if its
// member lives (it waits for that request's reply), or the tree's new
// activation if the member died (which answers at once: the recorded
// result, or unknown-outcome). It is how a caller learns of a dead member
// before its deadline. It never runs a body twice.
func WithResend(d time.Duration) ClientOption { return func(c *Client) { c.resend = d } }

// WithCancelGrace bounds how long a call whose ctx ended waits, after the
// Cancel is sent, for the remote body to answer (default 5s); after that the
// call ends as unknown-outcome.
func WithCancelGrace(d time.Duration) ClientOption { return func(c *Client) { c.grace = d } }

// WithCallIDs sets how the client makes call ids for requests that name
// none (mutations, and calls with an empty id). Default: random.
func WithCallIDs(f func() string) ClientOption { return func(c *Client) { c.ids = f } }

// NewClient returns a client over c (a started member or client).
func NewClient(c *protocluster.Cluster, opts ...ClientOption) *Client {
	cl := &Client{c: c, kind: KindName, timeout: 30 * time.Second, resend: 2 * time.Second, grace: 5 * time.Second,
		ids: func() string { return "c" + activationID() + activationID() }, propagat: propagation.TraceContext{}}
	for _, o := range opts {
		o(cl)
	}
	return cl
}

// Tree returns the handle of tree id's root scope. No request is sent: the
// tree activates on its first request.
func (cl *Client) Tree(id string) *Scope { return &Scope{cl: cl, tree: id, key: id} }

// Scope is a handle on one scope of a remote tree: the root or a sub-agent.
// Its methods are those of a local runtime.Scope that make sense as data.
// Every method honours ctx: its deadline travels with the request and its
// cancellation reaches the remote body.
type Scope struct {
	cl   *Client
	tree string
	key  string
}

// Key returns the scope's key.
func (s *Scope) Key() string { return s.key }

// Tree returns the tree's id.
func (s *Scope) Tree() string { return s.tree }

// Scope returns the handle of sub-agent key of the same tree (no request is
// sent; a scope that does not exist answers NO_SUCH_SCOPE).
func (s *Scope) Scope(key string) *Scope { return &Scope{cl: s.cl, tree: s.tree, key: key} }

func (s *Scope) header(ctx context.Context, callID string) (*clustermsg.Header, time.Time) {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(s.cl.timeout)
	}
	h := &clustermsg.Header{Tree: s.tree, Scope: s.key, CallId: callID, DeadlineUnixNanos: deadline.UnixNano()}
	if ctx.Err() != nil {
		// Ended already: the remote work starts with an ended ctx, as a
		// local call would (R79), not with one the Cancel may arrive too
		// late for.
		h.DeadlineUnixNanos = 1
	}
	carrier := propagation.MapCarrier{}
	s.cl.propagat.Inject(ctx, carrier)
	h.Traceparent, h.Tracestate = carrier["traceparent"], carrier["tracestate"]
	return h, deadline
}

// errNoReply: no reply before the deadline.
var errNoReply = errors.New("no reply")

// request sends msg to the tree's grain and waits for its reply: until the
// deadline, resending every resend interval; when ctx ends first it sends a
// Cancel and waits up to the grace for the reply. A reply saying the tree is
// unavailable (nothing ran: it is moving or activating elsewhere) is retried
// with backoff while the deadline allows; the last one is returned if the
// deadline passes.
func (s *Scope) request(ctx context.Context, h *clustermsg.Header, deadline time.Time, msg proto.Message) (any, error) {
	replies := make(chan any, 1)
	stop := make(chan struct{})
	defer close(stop)
	c, root := s.cl.c, s.cl.c.ActorSystem.Root
	// send looks the grain up and sends msg off this loop: disthash's
	// lookup is itself a request to the owner member (bounded by its own
	// 5 s), and a lookup addressed to a member that just died must not hold
	// back the next resend. The PID is cached as protoactor's own grain
	// calls cache it (one round trip per call); a resend or an unavailable
	// reply drops the cached PID (the tree may have moved), and so does a
	// member leaving the topology.
	send := func(fresh bool) {
		wait := time.Until(deadline) + s.cl.grace
		if wait <= 0 {
			return
		}
		if fresh {
			c.PidCache.Remove(s.tree, s.kind())
		}
		go func() {
			pid, _ := c.PidCache.Get(s.tree, s.kind())
			if pid == nil {
				if pid = c.Get(s.tree, s.kind()); pid == nil {
					return
				}
				c.PidCache.Set(s.tree, s.kind(), pid)
			}
			res, err := root.RequestFuture(pid, msg, wait).Result()
			if _, dead := res.(*actor.DeadLetterResponse); dead || errors.Is(err, actor.ErrDeadLetter) {
				// A stale PID (the grain stopped, say after an idle
				// passivation): look it up again at once.
				c.PidCache.RemoveByValue(s.tree, s.kind(), pid)
				res, err = errDeadLetter, nil
			}
			if err != nil || res == nil {
				return
			}
			select {
			case replies <- res:
			case <-stop:
			}
		}()
	}
	send(false)
	resend := time.NewTicker(s.cl.resend)
	defer resend.Stop()
	hard := time.NewTimer(time.Until(deadline))
	defer hard.Stop()
	done := ctx.Done() // nil once ended (or for a ctx that never ends)
	ended := false
	var last any // the last unavailable reply
	backoff := 20 * time.Millisecond
	for {
		select {
		case r := <-replies:
			dead := r == errDeadLetter
			if !dead && (!unavailable(r) || ended || time.Until(deadline) < backoff) {
				return r, nil
			}
			if !dead {
				last = r
			}
			select { // nothing ran: try again shortly
			case <-time.After(backoff):
			case <-done:
				if dead {
					done, ended = nil, true
					s.cancel(h)
					hard.Reset(s.cl.grace)
					continue
				}
				return r, nil
			case <-hard.C:
				if last != nil {
					return last, nil
				}
				return nil, errNoReply
			}
			backoff = min(2*backoff, s.cl.resend)
			send(true)
		case <-resend.C:
			send(true) // look the tree up again: it may have moved
		case <-done:
			done, ended = nil, true
			s.cancel(h)
			hard.Reset(s.cl.grace)
		case <-hard.C:
			if !ended { // the deadline passed while ctx still lived
				s.cancel(h)
			}
			if last != nil {
				return last, nil
			}
			return nil, errNoReply
		}
	}
}

// errDeadLetter stands, on the replies channel, for a request that reached
// no grain (a stale PID): nothing ran, look up and send again.
var errDeadLetter = errors.New("dead letter")

// unavailable reports whether a reply says the tree could not serve and
// nothing ran (SCOPE_UNAVAILABLE).
func unavailable(r any) bool {
	code := string(CodeScopeUnavailable)
	switch r := r.(type) {
	case *clustermsg.ExecuteReply:
		return r.GetUnavailable()
	case *clustermsg.ExecuteTurnReply:
		return r.GetUnavailable()
	case interface{ GetFailure() *clustermsg.Failure }:
		return r.GetFailure().GetCode() == code
	}
	return false
}

func (s *Scope) kind() string { return s.cl.kind }

// cancel tells the grain to cancel the request with h's call id.
func (s *Scope) cancel(h *clustermsg.Header) {
	go func() { // off the loop: a lookup may wait on a dead member
		pid, _ := s.cl.c.PidCache.Get(s.tree, s.kind())
		if pid == nil {
			pid = s.cl.c.Get(s.tree, s.kind())
		}
		if pid != nil {
			s.cl.c.ActorSystem.Root.Send(pid, &clustermsg.CancelRequest{Header: &clustermsg.Header{Tree: h.GetTree(), Scope: h.GetScope(), CallId: h.GetCallId()}})
		}
	}()
}

// Execute runs call in the scope's view on the member hosting the tree and
// returns its result — always a result: a call that could not run, or
// whose outcome is unknown, ends as a coded failure (CodeScopeUnavailable,
// CodeOutcomeUnknown, CodeNoSuchScope). call.ID is the call id claimed in
// the store (a random one when empty); repeating a call with the same id
// returns its recorded result and never runs its body twice.
func (s *Scope) Execute(ctx context.Context, call runtime.Call) *runtime.Result {
	if call.ID == "" {
		call.ID = s.cl.ids()
	}
	args, err := argsJSON(call.Arguments)
	if err != nil {
		return failResult(CodeInvalid, "call %q: arguments cannot travel: %v; nothing ran", call.ID, err)
	}
	h, deadline := s.header(ctx, call.ID)
	m := &clustermsg.ExecuteRequest{Header: h, Call: &messages.Call{CallId: call.ID, RootCallId: call.RootID, Name: call.Name, ArgumentsJson: args, Agent: call.Agent}}
	r, err := s.request(ctx, h, deadline, m)
	if err != nil {
		return unknownOutcome(call.ID, "no reply came from the member hosting tree "+quote(s.tree)+" before the deadline")
	}
	rep, ok := r.(*clustermsg.ExecuteReply)
	if !ok || rep.GetResult() == nil {
		return unknownOutcome(call.ID, fmt.Sprintf("the reply was a %T", r))
	}
	return runtime.ResultFromProto(rep.GetResult())
}

func argsJSON(a any) ([]byte, error) {
	switch v := a.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		return v, nil
	}
	return json.Marshal(a)
}

// TurnOption configures a remote turn.
type TurnOption func(*clustermsg.ExecuteTurnRequest)

// TurnID sets the turn's id (as runtime.WithTurnID).
func TurnID(id string) TurnOption {
	return func(m *clustermsg.ExecuteTurnRequest) { m.Turn.TurnId = id }
}

// MaxParallel caps the turn's dispatches (as runtime.WithMaxParallel).
func MaxParallel(n int) TurnOption {
	return func(m *clustermsg.ExecuteTurnRequest) { m.Turn.MaxParallel = int32(n) }
}

// TurnCallID sets the request's call id (default random); its calls are
// claimed as "<id>/<index>", so repeating the turn with the same id returns
// the recorded results and runs no body twice.
func TurnCallID(id string) TurnOption {
	return func(m *clustermsg.ExecuteTurnRequest) { m.Header.CallId = id }
}

// ExecuteTurn runs the calls of one model turn in the scope's view on the
// member hosting the tree: results in model order, one per call. A call
// that could not run or whose outcome is unknown has a coded failure
// result; the error is a configuration or scheduler failure (R98), as for
// a local turn.
func (s *Scope) ExecuteTurn(ctx context.Context, calls []runtime.TurnCall, opts ...TurnOption) (*runtime.TurnResult, error) {
	h, deadline := s.header(ctx, s.cl.ids())
	m := &clustermsg.ExecuteTurnRequest{Header: h, Turn: &messages.TurnRequest{}}
	for _, c := range calls {
		m.Turn.Calls = append(m.Turn.Calls, &messages.TurnCall{CallId: c.ID, Name: c.Name, ArgumentsText: c.ArgumentsText})
	}
	for _, o := range opts {
		o(m)
	}
	r, err := s.request(ctx, h, deadline, m)
	var rep *messages.TurnReply
	if err == nil {
		if tr, ok := r.(*clustermsg.ExecuteTurnReply); ok {
			rep = tr.GetTurn()
		}
	}
	if rep == nil {
		out := &runtime.TurnResult{}
		for _, c := range calls {
			out.Results = append(out.Results, unknownOutcome(c.ID, "no reply came from the member hosting tree "+quote(s.tree)+" before the deadline"))
		}
		return out, nil
	}
	out := &runtime.TurnResult{Concluded: rep.GetConcluded()}
	for _, x := range rep.GetResults() {
		out.Results = append(out.Results, runtime.ResultFromProto(x))
	}
	for _, e := range rep.GetEvents() {
		k := runtime.CallStarted
		if e.GetKind() == messages.TurnEventResult {
			k = runtime.ResultRecorded
		}
		out.Events = append(out.Events, runtime.TurnEvent{Kind: k, CallID: e.GetCallId()})
	}
	for _, c := range rep.GetContexts() {
		out.Contexts = append(out.Contexts, runtime.ContextMessage{Role: c.GetRole(), Text: c.GetText()})
	}
	if e := rep.GetError(); e != "" {
		if len(out.Results) == 0 && len(calls) > 0 {
			return nil, errors.New(e)
		}
		return out, errors.New(e)
	}
	return out, nil
}

// replyErr turns a Failure into an *Error (nil for none).
func replyErr(f *clustermsg.Failure) error {
	if f == nil {
		return nil
	}
	return newError(runtime.Code(f.GetCode()), "%s", f.GetMessage())
}

func (s *Scope) noReply(what string) error {
	return newError(CodeOutcomeUnknown, "%s: no reply came from the member hosting tree %q before the deadline", what, s.tree)
}

// Get returns the schema of the tool name resolves to in the scope's view
// (only the schema travels: a Definition's functions live on the member).
func (s *Scope) Get(ctx context.Context, name string) (runtime.ToolSchema, bool, error) {
	h, deadline := s.header(ctx, s.cl.ids())
	r, err := s.request(ctx, h, deadline, &clustermsg.GetRequest{Header: h, Name: name})
	if err != nil {
		return runtime.ToolSchema{}, false, s.noReply("Get")
	}
	rep, _ := r.(*clustermsg.GetReply)
	if err := replyErr(rep.GetFailure()); err != nil {
		return runtime.ToolSchema{}, false, err
	}
	if !rep.GetReply().GetFound() {
		return runtime.ToolSchema{}, false, nil
	}
	t := rep.GetReply().GetTool()
	return runtime.ToolSchema{Name: t.GetName(), Description: t.GetDescription(), Parameters: t.GetParametersJson()}, true, nil
}

// Schemas returns the schemas of the tools visible in the scope's view, in
// view order (R29, R31).
func (s *Scope) Schemas(ctx context.Context) ([]runtime.ToolSchema, error) {
	h, deadline := s.header(ctx, s.cl.ids())
	r, err := s.request(ctx, h, deadline, &clustermsg.SchemasRequest{Header: h})
	if err != nil {
		return nil, s.noReply("Schemas")
	}
	rep, _ := r.(*clustermsg.SchemasReply)
	if err := replyErr(rep.GetFailure()); err != nil {
		return nil, err
	}
	if e := rep.GetReply().GetError(); e != "" {
		return nil, errors.New(e)
	}
	out := make([]runtime.ToolSchema, 0, len(rep.GetReply().GetTools()))
	for _, t := range rep.GetReply().GetTools() {
		out = append(out, runtime.ToolSchema{Name: t.GetName(), Description: t.GetDescription(), Parameters: t.GetParametersJson()})
	}
	return out, nil
}

// ExecutionMode classifies call in the scope's view (R36).
func (s *Scope) ExecutionMode(ctx context.Context, call runtime.Call) (runtime.Mode, error) {
	args, err := argsJSON(call.Arguments)
	if err != nil {
		return runtime.Exclusive, newError(CodeInvalid, "arguments cannot travel: %v", err)
	}
	h, deadline := s.header(ctx, s.cl.ids())
	r, err := s.request(ctx, h, deadline, &clustermsg.ExecutionModeRequest{Header: h, Call: &messages.Call{Name: call.Name, ArgumentsJson: args, Agent: call.Agent}})
	if err != nil {
		return runtime.Exclusive, s.noReply("ExecutionMode")
	}
	rep, _ := r.(*clustermsg.ExecutionModeReply)
	if err := replyErr(rep.GetFailure()); err != nil {
		return runtime.Exclusive, err
	}
	if rep.GetMode() == messages.ModeParallel {
		return runtime.Parallel, nil
	}
	return runtime.Exclusive, nil
}

// mutation sends a mutation with a fresh call id (kept across the
// client's resends) and returns the reply's id.
func (s *Scope) mutation(ctx context.Context, what string, build func(h *clustermsg.Header) proto.Message) (string, error) {
	h, deadline := s.header(ctx, s.cl.ids())
	r, err := s.request(ctx, h, deadline, build(h))
	if err != nil {
		return "", s.noReply(what)
	}
	rep, ok := r.(*clustermsg.MutationReply)
	if !ok {
		return "", newError(CodeOutcomeUnknown, "%s: the reply was a %T", what, r)
	}
	if err := replyErr(rep.GetFailure()); err != nil {
		return "", err
	}
	return rep.GetId(), nil
}

// Restrict restricts what the scope inherits (docs/contract.md#restrict)
// and returns the restriction's id; Unrestrict with that id is its exact
// disposer. It is saved in the store before it is acknowledged.
func (s *Scope) Restrict(ctx context.Context, r runtime.Restriction) (string, error) {
	return s.mutation(ctx, "Restrict", func(h *clustermsg.Header) proto.Message {
		return &clustermsg.RestrictRequest{Header: h, Allow: r.Allow, HasAllow: r.Allow != nil, Deny: r.Deny, HasDeny: r.Deny != nil}
	})
}

// Mount registers the catalog tool entry built with config in the scope and
// returns the mount's id; Unmount with that id is its exact disposer. Bad
// config is refused here (CodeInvalid, the error naming the entry).
func (s *Scope) Mount(ctx context.Context, entry string, config json.RawMessage) (string, error) {
	return s.mutation(ctx, "Mount", func(h *clustermsg.Header) proto.Message {
		return &clustermsg.MountRequest{Header: h, Entry: entry, ConfigJson: config}
	})
}

// AddGuard adds the catalog guard entry built with config to the scope and
// returns its id; RemoveGuard with that id is its exact disposer.
func (s *Scope) AddGuard(ctx context.Context, entry string, config json.RawMessage) (string, error) {
	return s.mutation(ctx, "AddGuard", func(h *clustermsg.Header) proto.Message {
		return &clustermsg.AddGuardRequest{Header: h, Entry: entry, ConfigJson: config}
	})
}

func (s *Scope) undo(ctx context.Context, what, kind, id string) error {
	_, err := s.mutation(ctx, what, func(h *clustermsg.Header) proto.Message {
		return &clustermsg.UndoRequest{Header: h, Id: id, Kind: kind}
	})
	return err
}

// Unmount removes exactly the mount id (refused when id names anything
// else).
func (s *Scope) Unmount(ctx context.Context, id string) error {
	return s.undo(ctx, "Unmount", KindMount, id)
}

// RemoveGuard removes exactly the guard id.
func (s *Scope) RemoveGuard(ctx context.Context, id string) error {
	return s.undo(ctx, "RemoveGuard", KindGuard, id)
}

// Unrestrict removes exactly the restriction id.
func (s *Scope) Unrestrict(ctx context.Context, id string) error {
	return s.undo(ctx, "Unrestrict", KindRestrict, id)
}

// NewScope creates sub-agent key under this scope and returns its handle
// and the id of its creation.
func (s *Scope) NewScope(ctx context.Context, key string) (*Scope, string, error) {
	id, err := s.mutation(ctx, "NewScope", func(h *clustermsg.Header) proto.Message {
		return &clustermsg.NewScopeRequest{Header: h, Key: key}
	})
	if err != nil {
		return nil, "", err
	}
	return s.Scope(key), id, nil
}

// Dispose disposes the scope and its sub-agents; the root's disposal
// forgets the whole tree in the store.
func (s *Scope) Dispose(ctx context.Context) error {
	_, err := s.mutation(ctx, "Dispose", func(h *clustermsg.Header) proto.Message {
		return &clustermsg.DisposeRequest{Header: h}
	})
	return err
}
