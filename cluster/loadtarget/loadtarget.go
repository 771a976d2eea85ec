// Package loadtarget runs load scenarios (package load) against a toolscope
// cluster: the cluster itself is measured, not a proxy of it.
//
// Members serve the scenario's simulated tools through a catalog entry
// (Entry, added by AddTo; toolscope-member has it) that builds a tool from
// its scenario description as config — its name, classification, declared
// timeout and output size (load.SimulatedTool); the load generator draws
// each call's latency, failure and hang and carries them in the call's
// arguments, so the same seed gives the same calls as an in-process run.
//
// Target is a load.Remote over a cluster.Client. Each top-level agent of
// the scenario is a tree of its own, named "<run>.<agent>" (the run a
// random id, so runs never share call ids in the store); the tree's root
// scope mounts the scenario's tools — it plays the in-process registry's
// global scope — and the agent is the root's sub-agent of the agent's own
// key, its sub-agents below it, each restricted as its level says
// (restrictions filter what a scope inherits, never its own tools:
// docs/contract.md#r24, hence the tools one level up). Every turn is one
// ExecuteTurn through the client, timed on the client's side; Close
// disposes the run's trees, which forgets them in the store.
//
//	go run ./cluster/cmd/toolscope-load-cluster -scenario example:closed -members 3
package loadtarget

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/toolscope/toolscope/cluster"
	"github.com/toolscope/toolscope/load"
	"github.com/toolscope/toolscope/runtime"
)

// Entry is the catalog entry of the load tool's simulated tools; its
// config is a scenario tool (load.Tool) as JSON.
const Entry = "toolscope.load.simulated"

// AddTo adds Entry to cat. Its config (one JSON value, bounded: the
// catalog checks) is decoded strictly (an unknown field is refused) and
// checked (load.SimulatedTool).
func AddTo(cat *cluster.Catalog) error {
	return cat.AddTool(Entry, func(config json.RawMessage) (runtime.Definition, error) {
		var t load.Tool
		dec := json.NewDecoder(bytes.NewReader(config))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&t); err != nil {
			return runtime.Definition{}, fmt.Errorf("a load scenario tool: %w", err)
		}
		return load.SimulatedTool(t)
	})
}

// Target is a cluster as a load.Remote (see the package doc). It serves
// one run: Start, NewAgent for each agent, turns, Close.
type Target struct {
	cl          *cluster.Client
	run         string
	maxParallel int

	mu     sync.Mutex
	tools  []json.RawMessage // each scenario tool's config
	trees  []*cluster.Scope  // the roots made, for Close
	scopes map[string]*cluster.Scope
}

// New returns a Target that reaches the cluster through cl (whose members
// have Entry in their catalog).
func New(cl *cluster.Client) *Target {
	return &Target{cl: cl}
}

// Run is the run's id, the prefix of its trees' ids ("" before Start).
func (t *Target) Run() string { return t.run }

// Start keeps the scenario's tools as Entry's configs and names the run.
func (t *Target) Start(_ context.Context, sc *load.Scenario) error {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return err
	}
	t.run = "load-" + hex.EncodeToString(b[:])
	t.scopes = map[string]*cluster.Scope{}
	for _, tool := range sc.Tools {
		c, err := json.Marshal(tool)
		if err != nil {
			return fmt.Errorf("tool %s: %w", tool.Name, err)
		}
		t.tools = append(t.tools, c)
	}
	if sc.Registry != nil && sc.Registry.MaxParallel > 0 {
		t.maxParallel = sc.Registry.MaxParallel // the in-process registry's default, per turn here
	}
	return nil
}

// NewAgent makes agent key: for a top-level agent its tree (the root
// mounting the tools) and the agent under the root; else the sub-agent
// under parent. Then its restriction.
func (t *Target) NewAgent(ctx context.Context, key, parent string, restrict *runtime.Restriction) (load.RemoteAgent, error) {
	var p *cluster.Scope
	if parent == "" {
		root := t.cl.Tree(t.run + "." + key)
		t.mu.Lock()
		t.trees = append(t.trees, root)
		t.mu.Unlock()
		for i, c := range t.tools {
			if _, err := root.Mount(ctx, Entry, c); err != nil {
				return nil, fmt.Errorf("tree %s: mount tool %d: %w", root.Tree(), i, err)
			}
		}
		p = root
	} else {
		t.mu.Lock()
		p = t.scopes[parent]
		t.mu.Unlock()
		if p == nil {
			return nil, fmt.Errorf("no agent %q (the parent of %q) was made", parent, key)
		}
	}
	s, _, err := p.NewScope(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("tree %s: new scope: %w", p.Tree(), err)
	}
	if restrict != nil {
		if _, err := s.Restrict(ctx, *restrict); err != nil {
			return nil, fmt.Errorf("tree %s: restrict: %w", p.Tree(), err)
		}
	}
	t.mu.Lock()
	t.scopes[key] = s
	t.mu.Unlock()
	return agent{s, t.maxParallel}, nil
}

// Scope returns the handle of agent key once made (nil before), for a
// caller that wants to reach an agent of the run itself.
func (t *Target) Scope(key string) *cluster.Scope {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.scopes[key]
}

// Close disposes the run's trees, 16 at once; the first failure is
// returned, every tree is tried. Each disposal is bounded by the client's
// timeout (cluster.WithDefaultTimeout: the command's -call-timeout), as
// every other request of the run is, and ends with ctx: a deadline of
// ctx's own does not stretch it (with its members gone, a cluster would
// otherwise hold each disposal for as long as ctx allows).
func (t *Target) Close(ctx context.Context) error {
	t.mu.Lock()
	trees := t.trees
	t.trees = nil
	t.mu.Unlock()
	// The client takes a request's deadline from its ctx when it has one,
	// else its own timeout: give it ctx's cancellation without its deadline.
	dctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	defer context.AfterFunc(ctx, stop)()
	ctx = dctx
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []string
		sem  = make(chan struct{}, 16)
	)
	for _, root := range trees {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := root.Dispose(ctx); err != nil {
				mu.Lock()
				errs = append(errs, root.Tree()+": "+err.Error())
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		return fmt.Errorf("dispose %d of %d trees failed: %s", len(errs), len(trees), strings.Join(errs, "; "))
	}
	return nil
}

// agent is one agent scope of the run.
type agent struct {
	s           *cluster.Scope
	maxParallel int
}

// ExecuteTurn runs the turn on the member hosting the agent's tree; the
// turn id names its calls in the store ("<turn id>/<index>").
func (a agent) ExecuteTurn(ctx context.Context, id string, calls []runtime.TurnCall) (*runtime.TurnResult, error) {
	if a.maxParallel > 0 {
		return a.s.ExecuteTurn(ctx, calls, cluster.TurnID(id), cluster.TurnCallID(id), cluster.MaxParallel(a.maxParallel))
	}
	return a.s.ExecuteTurn(ctx, calls, cluster.TurnID(id), cluster.TurnCallID(id))
}

var _ load.Remote = (*Target)(nil)
