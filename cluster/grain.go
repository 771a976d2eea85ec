package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"reflect"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	protocluster "github.com/asynkron/protoactor-go/cluster"
	"google.golang.org/protobuf/proto"

	"github.com/toolscope/toolscope/cluster/clustermsg"
	"github.com/toolscope/toolscope/runtime"
)

// KindName is the cluster kind of agent trees unless Config.KindName says
// otherwise.
const KindName = "toolscope-tree"

// Config configures the grain kind on one member. Every member of a cluster
// passes the same code: the same NewRegistry and the same Catalog.
type Config struct {
	// Store is the trees' replicated state (required).
	Store Store
	// Catalog is the named factories trees may mount and add (required).
	Catalog *Catalog
	// NewRegistry builds the registry one tree lives in: the member's
	// global tools, guards and hooks (required). It is called once per
	// activation; the registry is closed when the activation ends.
	NewRegistry func() (*runtime.Registry, error)
	// KindName is the kind's name (default KindName). Clients name the
	// same (WithKind).
	KindName string
	// LeaseTTL is how long an activation's lease lasts without renewal
	// (default 10s); it is renewed every third of it. It bounds how long a
	// tree whose member died stays unavailable.
	LeaseTTL time.Duration
	// StoreTimeout bounds each store operation (default 5s).
	StoreTimeout time.Duration
	// IdleTimeout passivates a tree that has received no request for that
	// long (0: never; a tree then lives until its member stops or it loses
	// its lease).
	IdleTimeout time.Duration
}

type kindConfig struct {
	store        Store
	catalog      *Catalog
	newRegistry  func() (*runtime.Registry, error)
	leaseTTL     time.Duration
	storeTimeout time.Duration
	idle         time.Duration
}

// Kind returns the cluster kind that hosts agent trees as grains: one grain
// per tree id (its root agent scope's key). Add it to the cluster config
// beside your own kinds (cluster.WithKinds). A grain activates by taking the
// tree's lease in the store, loading its state and rebuilding it with the
// member's registry and catalog; it passivates (idle timeout, member
// shutdown) or loses its lease by disposing the tree.
func Kind(cfg Config) (*protocluster.Kind, error) {
	if cfg.Store == nil || cfg.Catalog == nil || cfg.NewRegistry == nil {
		return nil, errors.New("cluster: Kind needs Store, Catalog and NewRegistry")
	}
	k := &kindConfig{
		store: cfg.Store, catalog: cfg.Catalog, newRegistry: cfg.NewRegistry,
		leaseTTL: cfg.LeaseTTL, storeTimeout: cfg.StoreTimeout, idle: cfg.IdleTimeout,
	}
	if k.leaseTTL <= 0 {
		k.leaseTTL = 10 * time.Second
	}
	if k.storeTimeout <= 0 {
		k.storeTimeout = 5 * time.Second
	}
	if k.idle < 0 {
		return nil, errors.New("cluster: Kind: IdleTimeout must not be negative")
	}
	name := cfg.KindName
	if name == "" {
		name = KindName
	}
	props := actor.PropsFromProducer(func() actor.Actor { return &grain{cfg: k} })
	return protocluster.NewKind(name, props), nil
}

// grain is the actor of one tree activation. Receive only routes: every
// request is answered on its own goroutine (bodies, hooks, store I/O never
// run in Receive), its reply sent to the request's sender.
type grain struct {
	cfg  *kindConfig
	t    *tree
	busy atomic.Int64 // requests being answered (for the idle timeout)
}

// Receive implements actor.Actor.
func (g *grain) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *protocluster.ClusterInit:
		g.start(c, m.Identity.GetIdentity())
		return
	case *actor.Started:
		if g.cfg.idle > 0 {
			c.SetReceiveTimeout(g.cfg.idle)
		}
		return
	case *actor.ReceiveTimeout:
		if g.busy.Load() == 0 {
			c.Stop(c.Self())
		}
		return
	case *actor.Stopping:
		if g.t != nil {
			go g.t.shutdown()
		}
		return
	case *actor.Stopped, *actor.Restarting:
		return
	case *clustermsg.CancelRequest:
		if g.t != nil {
			g.t.cancel(m.GetHeader().GetCallId())
		}
		return
	}
	sender := c.Sender()
	if sender == nil {
		return // nobody to answer
	}
	if g.t == nil {
		if id := protocluster.GetClusterIdentity(c); id != nil {
			g.start(c, id.GetIdentity())
		}
	}
	if g.t == nil {
		c.Respond(&clustermsg.MutationReply{Failure: failure(newError(CodeScopeUnavailable, "this actor was not activated as a tree grain"))})
		return
	}
	m := c.Message()
	r, ok := routes[reflect.TypeOf(m)]
	if !ok {
		c.Respond(&clustermsg.MutationReply{Failure: failure(newError(CodeInvalid, "a tree grain does not answer a %T (package clustermsg lists what it answers)", m))})
		return
	}
	t, sys, h := g.t, c.ActorSystem(), m.(request).GetHeader() // every routed kind is a request
	var work func() proto.Message
	switch {
	case !t.sameTree(h):
		e := newError(CodeInvalid, "the request names tree %q but was delivered to tree %q's grain; nothing ran", h.GetTree(), t.id)
		work = func() proto.Message { return r.wrong(e) }
	case r.call != nil:
		f := t.begin(h) // in Receive: a Cancel received after the request finds it
		work = func() proto.Message { reply := r.call(t, f, m); t.end(f, reply); return reply }
	default:
		work = func() proto.Message {
			ctx, cancel := requestCtx(h)
			defer cancel()
			return r.answer(t, ctx, m)
		}
	}
	g.busy.Add(1)
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		defer g.busy.Add(-1)
		sys.Root.Send(sender, work())
	}()
}

// start creates the activation and starts activating it off Receive.
func (g *grain) start(c actor.Context, id string) {
	if g.t != nil || id == "" {
		return
	}
	sys, self := c.ActorSystem(), c.Self()
	t := newTree(g.cfg, id, sys.Address()+"/"+activationID())
	t.onLost = func() { sys.Root.Stop(self) }
	t.sysStopped = sys.IsStopped
	g.t = t
	go func() {
		t.activate()
		if t.err != nil {
			sys.Root.Stop(self) // the next request activates afresh
		}
	}()
}

func activationID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (t *tree) sameTree(h *clustermsg.Header) bool { return h.GetTree() == t.id }

// route is how a tree grain answers one request kind: a call (Execute,
// ExecuteTurn) runs between begin and end, so CancelRequest reaches it and
// a duplicate waits for it; any other request is answered under its
// header's deadline. wrong is the kind's reply to a request whose header
// names another tree than the grain's: nothing runs.
type route struct {
	call   func(t *tree, f *flight, m any) proto.Message
	answer func(t *tree, ctx context.Context, m any) proto.Message
	wrong  func(e *Error) proto.Message
}

// request is a request kind a route answers: it carries a header.
type request interface{ GetHeader() *clustermsg.Header }

func callRoute[Req request, Rep proto.Message](run func(*tree, *flight, Req) Rep, wrong func(*Error) proto.Message) route {
	return route{call: func(t *tree, f *flight, m any) proto.Message { return run(t, f, m.(Req)) }, wrong: wrong}
}

func answerRoute[Req request, Rep proto.Message](run func(*tree, context.Context, Req) Rep, wrong func(*Error) proto.Message) route {
	return route{answer: func(t *tree, ctx context.Context, m any) proto.Message { return run(t, ctx, m.(Req)) }, wrong: wrong}
}

// mutationRoute answers a mutation; another tree's is refused.
func mutationRoute[Req request](run func(*tree, context.Context, Req) *clustermsg.MutationReply) route {
	return answerRoute(run, func(e *Error) proto.Message { return refused(e) })
}

// routes are the request kinds a tree grain answers (CancelRequest aside:
// Receive handles it at once).
var routes = map[reflect.Type]route{
	reflect.TypeFor[*clustermsg.ExecuteRequest](): callRoute((*tree).execute, func(e *Error) proto.Message {
		return &clustermsg.ExecuteReply{Result: failResult(CodeInvalid, "%s", e.msg).Proto()}
	}),
	reflect.TypeFor[*clustermsg.ExecuteTurnRequest]():   callRoute((*tree).turn, func(e *Error) proto.Message { return turnError("%s", e.msg) }),
	reflect.TypeFor[*clustermsg.GetRequest]():           answerRoute((*tree).get, func(e *Error) proto.Message { return &clustermsg.GetReply{Failure: failure(e)} }),
	reflect.TypeFor[*clustermsg.SchemasRequest]():       answerRoute((*tree).schemas, func(e *Error) proto.Message { return &clustermsg.SchemasReply{Failure: failure(e)} }),
	reflect.TypeFor[*clustermsg.ExecutionModeRequest](): answerRoute((*tree).mode, func(e *Error) proto.Message { return &clustermsg.ExecutionModeReply{Failure: failure(e)} }),
	reflect.TypeFor[*clustermsg.RestrictRequest]():      mutationRoute((*tree).restrict),
	reflect.TypeFor[*clustermsg.MountRequest]():         mutationRoute((*tree).mount),
	reflect.TypeFor[*clustermsg.AddGuardRequest]():      mutationRoute((*tree).addGuard),
	reflect.TypeFor[*clustermsg.UndoRequest]():          mutationRoute((*tree).undo),
	reflect.TypeFor[*clustermsg.NewScopeRequest]():      mutationRoute((*tree).newScope),
	reflect.TypeFor[*clustermsg.DisposeRequest]():       mutationRoute((*tree).dispose),
}

// answer answers a request that is not a call (reads and mutations).
func (t *tree) answer(ctx context.Context, m any) proto.Message {
	if r, ok := routes[reflect.TypeOf(m)]; ok && r.answer != nil {
		return r.answer(t, ctx, m)
	}
	return refused(newError(CodeInvalid, "a tree grain does not answer a %T", m))
}
