package cluster

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/toolscope/toolscope/runtime"
)

// ruleScope is what the contract's data-stated rules need of a scope. It
// has two implementations: a local runtime scope (catalog entries applied
// by hand) and a remote handle through the client. One table runs against
// both.
type ruleScope interface {
	execute(ctx context.Context, c runtime.Call) *runtime.Result
	turn(ctx context.Context, calls []runtime.TurnCall, maxParallel int) (*runtime.TurnResult, error)
	tools(t *testing.T) []string
	mode(t *testing.T, c runtime.Call) runtime.Mode
	restrict(r runtime.Restriction) (undo func() error, err error)
	mount(entry, config string) (undo func() error, err error)
	guard(entry, config string) (undo func() error, err error)
	sub(t *testing.T, key string) ruleScope
}

type localScope struct {
	s   *runtime.Scope
	cat *Catalog
}

func (l localScope) execute(ctx context.Context, c runtime.Call) *runtime.Result {
	return l.s.Execute(ctx, c)
}
func (l localScope) turn(ctx context.Context, calls []runtime.TurnCall, n int) (*runtime.TurnResult, error) {
	opts := []runtime.TurnOption{runtime.WithTurnID("turn")}
	if n != 0 {
		opts = append(opts, runtime.WithMaxParallel(n))
	}
	return l.s.ExecuteTurn(ctx, calls, opts...)
}
func (l localScope) tools(t *testing.T) []string {
	list, err := l.s.Schemas()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range list {
		out = append(out, s.Name)
	}
	return out
}
func (l localScope) mode(t *testing.T, c runtime.Call) runtime.Mode { return l.s.ExecutionMode(c) }
func wrap(f func(), err error) (func() error, error) {
	if err != nil {
		return nil, err
	}
	return func() error { f(); return nil }, nil
}
func (l localScope) restrict(r runtime.Restriction) (func() error, error) {
	return wrap(l.s.Restrict(r))
}
func (l localScope) mount(entry, config string) (func() error, error) {
	def, err := l.cat.Tool(entry, json.RawMessage(config))
	if err != nil {
		return nil, err
	}
	return wrap(l.s.Register(def))
}
func (l localScope) guard(entry, config string) (func() error, error) {
	g, err := l.cat.Guard(entry, json.RawMessage(config))
	if err != nil {
		return nil, err
	}
	return wrap(l.s.Guard(g))
}
func (l localScope) sub(t *testing.T, key string) ruleScope {
	s, err := l.s.NewScope(key)
	if err != nil {
		t.Fatal(err)
	}
	return localScope{s: s, cat: l.cat}
}

type remoteScope struct {
	s   *Scope
	ctx context.Context
}

func (r remoteScope) execute(ctx context.Context, c runtime.Call) *runtime.Result {
	return r.s.Execute(ctx, c)
}
func (r remoteScope) turn(ctx context.Context, calls []runtime.TurnCall, n int) (*runtime.TurnResult, error) {
	return r.s.ExecuteTurn(ctx, calls, TurnID("turn"), MaxParallel(n))
}
func (r remoteScope) tools(t *testing.T) []string {
	list, err := r.s.Schemas(r.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range list {
		out = append(out, s.Name)
	}
	return out
}
func (r remoteScope) mode(t *testing.T, c runtime.Call) runtime.Mode {
	m, err := r.s.ExecutionMode(r.ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
func (r remoteScope) restrict(x runtime.Restriction) (func() error, error) {
	id, err := r.s.Restrict(r.ctx, x)
	if err != nil {
		return nil, err
	}
	return func() error { return r.s.Unrestrict(r.ctx, id) }, nil
}
func (r remoteScope) mount(entry, config string) (func() error, error) {
	id, err := r.s.Mount(r.ctx, entry, json.RawMessage(config))
	if err != nil {
		return nil, err
	}
	return func() error { return r.s.Unmount(r.ctx, id) }, nil
}
func (r remoteScope) guard(entry, config string) (func() error, error) {
	id, err := r.s.AddGuard(r.ctx, entry, json.RawMessage(config))
	if err != nil {
		return nil, err
	}
	return func() error { return r.s.RemoveGuard(r.ctx, id) }, nil
}
func (r remoteScope) sub(t *testing.T, key string) ruleScope {
	s, _, err := r.s.NewScope(r.ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	return remoteScope{s: s, ctx: r.ctx}
}

// checker returns a func taking a mutation's (disposer, error) that fails
// t on the error.
func checker(t *testing.T) func(func() error, error) func() error {
	return func(undo func() error, err error) func() error {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return undo
	}
}

func undone(t *testing.T, undo func() error) {
	t.Helper()
	if err := undo(); err != nil {
		t.Fatal(err)
	}
}

func codeOf(r *runtime.Result) string {
	if !r.IsError() {
		return "ok:" + r.Text()
	}
	if c := r.Code(); c != "" {
		return string(c)
	}
	return "uncoded:" + r.ErrorMessage()
}

// contractRules are the rules of docs/contract.md that can be stated with
// data. Each gets a fresh root agent scope.
var contractRules = []struct {
	name string
	run  func(t *testing.T, m *member, root ruleScope)
}{
	{"R12_MountedToolShadowsTheGlobalOne", func(t *testing.T, m *member, root ruleScope) {
		check := checker(t)
		ctx := bounded(t)
		if got := codeOf(root.execute(ctx, runtime.Call{Name: "g1", Arguments: raw(`{}`)})); got != "ok:ran" {
			t.Fatalf("global g1: %s", got)
		}
		undo := check(root.mount("echo", `{"name":"g1","prefix":"mine:"}`))
		kid := root.sub(t, "kid")
		for _, s := range []ruleScope{root, kid} {
			if got := codeOf(s.execute(ctx, runtime.Call{Name: "g1", Arguments: raw(`{"text":"x"}`)})); got != "ok:mine:x" {
				t.Fatalf("shadowed g1: %s", got)
			}
		}
		undone(t, undo)
		if got := codeOf(kid.execute(ctx, runtime.Call{Name: "g1", Arguments: raw(`{}`)})); got != "ok:ran" {
			t.Fatalf("after unmount, the global g1 again: %s", got)
		}
	}},
	{"R21_RestrictDenyAndEmptyAllow", func(t *testing.T, m *member, root ruleScope) {
		check := checker(t)
		ctx := bounded(t)
		kid := root.sub(t, "kid")
		undo := check(kid.restrict(runtime.Restriction{Deny: []string{"g2"}}))
		if got := codeOf(kid.execute(ctx, runtime.Call{Name: "g2", Arguments: raw(`{}`)})); got != string(runtime.CodeUnknownTool) {
			t.Fatalf("denied g2: %s", got)
		}
		if slices.Contains(kid.tools(t), "g2") || !slices.Contains(root.tools(t), "g2") {
			t.Fatal("deny must hide g2 in the sub-agent only")
		}
		undone(t, undo)
		check(kid.restrict(runtime.Restriction{Allow: []string{}}))
		check(kid.mount("echo", `{"name":"own"}`))
		if got := kid.tools(t); !slices.Equal(got, []string{"own"}) {
			t.Fatalf("an empty Allow hides every inherited tool, not its own: %q", got)
		}
		if _, err := kid.restrict(runtime.Restriction{Deny: []string{"no_such_tool"}}); err == nil {
			t.Fatal("a restriction naming an unknown tool must be refused")
		}
	}},
	{"R36_Modes", func(t *testing.T, m *member, root ruleScope) {
		cases := map[string]runtime.Mode{"par": runtime.Parallel, "g1": runtime.Exclusive, "nosuch": runtime.Exclusive}
		for name, want := range cases {
			if got := root.mode(t, runtime.Call{Name: name, Arguments: raw(`{}`)}); got != want {
				t.Fatalf("mode of %s = %v, want %v", name, got, want)
			}
		}
	}},
	{"Codes_UnknownInvalidDenied", func(t *testing.T, m *member, root ruleScope) {
		check := checker(t)
		ctx := bounded(t)
		check(root.mount("echo", `{"name":"say"}`))
		check(root.guard("deny", `{"tool":"g2","reason":"g2 is off"}`))
		cases := []struct {
			call runtime.Call
			want string
		}{
			{runtime.Call{Name: "nosuch"}, string(runtime.CodeUnknownTool)},
			{runtime.Call{Name: "say", Arguments: raw(`{"text":3}`)}, string(runtime.CodeInvalidArgs)},
			{runtime.Call{Name: "g2", Arguments: raw(`{}`)}, "uncoded:g2 is off"},
			{runtime.Call{Name: "say", Arguments: raw(`{"text":"a"}`)}, "ok:a"},
		}
		for _, c := range cases {
			if got := codeOf(root.execute(ctx, c.call)); got != c.want {
				t.Fatalf("%s: %s, want %s", c.call.Name, got, c.want)
			}
		}
	}},
	{"R95_TurnResultsInModelOrder", func(t *testing.T, m *member, root ruleScope) {
		ctx := bounded(t)
		res, err := root.turn(ctx, []runtime.TurnCall{
			{ID: "1", Name: "par"}, {ID: "2", Name: "nosuch"}, {ID: "3", Name: "g1"}, {ID: "4", Name: "par"},
		}, 0)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range res.Results {
			got = append(got, codeOf(r))
		}
		if want := []string{"ok:p", string(runtime.CodeUnknownTool), "ok:ran", "ok:p"}; !slices.Equal(got, want) {
			t.Fatalf("turn results %q, want %q", got, want)
		}
		var committed []string
		for _, e := range res.Events {
			if e.Kind == runtime.ResultRecorded {
				committed = append(committed, e.CallID)
			}
		}
		if !slices.Equal(committed, []string{"1", "2", "3", "4"}) {
			t.Fatalf("results committed in order %q", committed)
		}
	}},
	{"R91_NegativeMaxParallelIsAnError", func(t *testing.T, m *member, root ruleScope) {
		if _, err := root.turn(bounded(t), []runtime.TurnCall{{ID: "1", Name: "g1"}}, -1); err == nil {
			t.Fatal("a negative max parallel must be an error")
		}
	}},
	{"R79_CancelledAtEntryRunsNothing", func(t *testing.T, m *member, root ruleScope) {
		root.tools(t) // the tree is active
		ctx, cancel := context.WithCancel(bounded(t))
		cancel()
		id := "pre-" + activationID()
		if got := codeOf(root.execute(ctx, runtime.Call{ID: id, Name: "count", Arguments: raw(`{}`)})); got != string(runtime.CodeAbortedBeforeDispatch) {
			t.Fatalf("cancelled at entry: %s", got)
		}
		if m.runs(id) != 0 {
			t.Fatal("a call cancelled at entry ran")
		}
	}},
	{"R80_CancelledWhileRunning", func(t *testing.T, m *member, root ruleScope) {
		ctx, cancel := context.WithCancel(bounded(t))
		id := "blk-" + activationID()
		done := make(chan *runtime.Result, 1)
		go func() { done <- root.execute(ctx, runtime.Call{ID: id, Name: "block", Arguments: raw(`{}`)}) }()
		awaitClosed(t, m.startedCh(id), "the body to start")
		cancel()
		select {
		case r := <-done:
			if !r.IsError() {
				t.Fatal("a cancelled call succeeded")
			}
			if got := codeOf(r); got != "uncoded:context canceled" {
				t.Fatalf("cancelled while running: %s", got)
			}
		case <-bounded(t).Done():
			failHung(t, "the cancelled call")
		}
	}},
}

func TestRules_Item6_LocalScope(t *testing.T) {
	m := newMember(t)
	for _, rule := range contractRules {
		t.Run(rule.name, func(t *testing.T) {
			reg, err := m.newRegistry()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = reg.Close(context.Background()) })
			s, err := reg.NewScope("root")
			if err != nil {
				t.Fatal(err)
			}
			rule.run(t, m, localScope{s: s, cat: m.catalog})
		})
	}
}
