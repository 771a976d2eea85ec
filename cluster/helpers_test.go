package cluster

import (
	"context"
	"encoding/json"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolscope/toolscope/cluster/clustermsg"
	"github.com/toolscope/toolscope/messages"
	"github.com/toolscope/toolscope/runtime"
)

// waitLimit bounds every wait in these tests; a wait that runs out dumps
// every goroutine.
const waitLimit = 20 * time.Second

func goroutineDump() string {
	var b strings.Builder
	if p := pprof.Lookup("goroutine"); p != nil {
		_ = p.WriteTo(&b, 2)
	}
	return b.String()
}

func failHung(t testing.TB, what string) {
	t.Helper()
	t.Fatalf("hang: %s\n--- goroutines ---\n%s", what, goroutineDump())
}

func awaitClosed(t testing.TB, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(waitLimit):
		failHung(t, what)
	}
}

// member is what one test member's code builds: the registry factory
// (global tools g1, g2, count, block, slow_parallel) and the catalog, and
// what its bodies saw.
type member struct {
	t       testing.TB
	catalog *Catalog
	hooks   runtime.Hooks
	idle    time.Duration // Config.IdleTimeout

	mu      sync.Mutex
	ran     map[string]int           // call id → bodies run (count, block)
	started map[string]chan struct{} // call id → closed when block's body started
}

func newMember(t testing.TB) *member {
	return &member{t: t, catalog: testCatalog(t), ran: map[string]int{}, started: map[string]chan struct{}{}}
}

func (m *member) startedCh(id string) chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	ch := m.started[id]
	if ch == nil {
		ch = make(chan struct{})
		m.started[id] = ch
	}
	return ch
}

func (m *member) runs(id string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ran[id]
}

func (m *member) newRegistry() (*runtime.Registry, error) {
	reg, err := runtime.New(runtime.WithHooks(m.hooks))
	if err != nil {
		return nil, err
	}
	plain := func(name string) runtime.Definition {
		d, _ := runtime.NewTool(name, "global tool", func(ctx context.Context, in struct{}, _ *runtime.RunContext) (string, error) { return "ran", nil })
		return d
	}
	count, _ := runtime.NewTool("count", "counts its runs by call id", func(ctx context.Context, in struct{}, _ *runtime.RunContext) (string, error) {
		e, _ := runtime.ExecutionFromContext(ctx)
		m.mu.Lock()
		m.ran[e.CallID()]++
		m.mu.Unlock()
		return "counted " + e.CallID(), nil
	})
	block, _ := runtime.NewTool("block", "blocks until its ctx ends", func(ctx context.Context, in struct{}, _ *runtime.RunContext) (string, error) {
		e, _ := runtime.ExecutionFromContext(ctx)
		m.mu.Lock()
		m.ran[e.CallID()]++
		m.mu.Unlock()
		close(m.startedCh(e.CallID()))
		<-ctx.Done()
		return "", ctx.Err()
	})
	par, _ := runtime.NewTool("par", "a parallel tool", func(ctx context.Context, in struct{}, _ *runtime.RunContext) (string, error) { return "p", nil }, runtime.WithParallel())
	own, _ := runtime.NewTool("own_unavailable", "fails with a code of its own that looks like the grain's", func(ctx context.Context, in struct{}, _ *runtime.RunContext) (string, error) {
		return "", runtime.NewError("Mine", CodeScopeUnavailable, "the tool's own failure")
	})
	if _, err := reg.Global().RegisterAll(plain("g1"), plain("g2"), count, block, par, own); err != nil {
		return nil, err
	}
	return reg, nil
}

func (m *member) config(store Store) Config {
	return Config{Store: store, Catalog: m.catalog, NewRegistry: m.newRegistry, LeaseTTL: 5 * time.Second, StoreTimeout: 5 * time.Second, IdleTimeout: m.idle}
}

// activeTree activates tree id on a fresh activation (no actor) and shuts
// it down at cleanup.
func activeTree(t testing.TB, m *member, store Store, id string) *tree {
	t.Helper()
	cfg := m.config(store)
	k := &kindConfig{store: cfg.Store, catalog: cfg.Catalog, newRegistry: cfg.NewRegistry, leaseTTL: cfg.LeaseTTL, storeTimeout: cfg.StoreTimeout}
	tr := newTree(k, id, "test/"+activationID())
	tr.activate()
	t.Cleanup(tr.shutdown)
	return tr
}

func hdr(tree, scope, callID string) *clustermsg.Header {
	return &clustermsg.Header{Tree: tree, Scope: scope, CallId: callID, DeadlineUnixNanos: time.Now().Add(waitLimit).UnixNano()}
}

// exec runs one Execute request on tr as the grain would.
func exec(tr *tree, scope, callID, name, args string) *runtime.Result {
	m := &clustermsg.ExecuteRequest{Header: hdr(tr.id, scope, callID), Call: &messages.Call{CallId: callID, Name: name, ArgumentsJson: []byte(args)}}
	f := tr.begin(m.GetHeader())
	r := tr.execute(f, m)
	tr.end(f, r)
	return runtime.ResultFromProto(r.GetResult())
}

func wantCode(t testing.TB, r *runtime.Result, code runtime.Code, msgPart string) {
	t.Helper()
	if !r.IsError() || r.Code() != code || !strings.Contains(r.ErrorMessage(), msgPart) {
		t.Fatalf("result = error %v, code %q, %q; want code %q containing %q", r.IsError(), r.Code(), r.ErrorMessage(), code, msgPart)
	}
}

func mutate(tr *tree, m any) *clustermsg.MutationReply {
	return tr.answer(context.Background(), m).(*clustermsg.MutationReply)
}

func raw(s string) json.RawMessage { return json.RawMessage(s) }

// bounded returns a ctx that ends after waitLimit (or with the test).
func bounded(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	t.Cleanup(cancel)
	return ctx
}
