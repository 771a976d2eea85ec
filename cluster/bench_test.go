//go:build !race

package cluster

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	protocluster "github.com/asynkron/protoactor-go/cluster"

	"github.com/toolscope/toolscope/cluster/clustermsg"
	"github.com/toolscope/toolscope/messages"
	"github.com/toolscope/toolscope/runtime"
)

// echoGrain is a bare protoactor grain answering an ExecuteRequest with an
// ExecuteReply of the same payload: the floor a remote Execute is compared
// with.
type echoGrain struct{}

func (echoGrain) Receive(c actor.Context) {
	if m, ok := c.Message().(*clustermsg.ExecuteRequest); ok {
		c.Respond(&clustermsg.ExecuteReply{Result: runtime.Success("ran").Proto(), Unavailable: m.GetHeader() == nil})
	}
}

// benchCluster starts two members (the client on the first) with the tree
// kind and the bare echo kind, and returns ids of a tree and of an echo
// grain both hosted by the second member.
func benchCluster(b *testing.B) (cl *Client, c0 *protocluster.Cluster, tree, echo string) {
	store := newMemStore()
	m := newMember(b)
	tc := &testCluster{t: b, name: "bench" + activationID(), store: store}
	b.Cleanup(tc.stop)
	health := []net.Listener{listen(b), listen(b)}
	for _, h := range health {
		tc.hosts = append(tc.hosts, h.Addr().String())
	}
	echoKind := protocluster.NewKind("echo", actor.PropsFromProducer(func() actor.Actor { return echoGrain{} }))
	for i := range 2 {
		tc.members = append(tc.members, tc.startWith(health[i], m, echoKind))
	}
	tc.waitMembers(2)
	c0 = tc.members[0]
	other := tc.members[1].ActorSystem.Address()
	cl = NewClient(c0)
	ctx := bounded(b)
	for i := 0; tree == "" || echo == ""; i++ {
		if i > 200 {
			b.Fatal("no identity placed on the second member")
		}
		id := fmt.Sprint("b", i)
		if tree == "" {
			if r := cl.Tree(id).Execute(ctx, runtime.Call{Name: "g1", Arguments: raw(`{}`)}); r.IsError() {
				b.Fatal(r.ErrorMessage())
			}
			if store.holderOf(id) == other {
				tree = id
			}
		}
		if echo == "" {
			if pid := c0.Get(id, "echo"); pid != nil && pid.Address == other {
				echo = id
			}
		}
	}
	return cl, c0, tree, echo
}

// BenchmarkRemote compares, in one run: a remote Execute through the
// client (claim + record in the in-memory store), a bare grain
// request/response with the same payload, a local Execute, a remote 16-call
// turn and 16 remote Executes. The store is in memory: a JetStream store
// adds its round trips per claim and record (one Claim per turn).
func BenchmarkRemote(b *testing.B) {
	cl, c0, tree, echo := benchCluster(b)
	ctx := context.Background()
	b.Run("ExecuteClient", func(b *testing.B) {
		s := cl.Tree(tree)
		for i := 0; b.Loop(); i++ {
			if r := s.Execute(ctx, runtime.Call{ID: fmt.Sprint("x", i), Name: "g1", Arguments: raw(`{}`)}); r.IsError() {
				b.Fatal(r.ErrorMessage())
			}
		}
	})
	b.Run("BareGrain", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			req := &clustermsg.ExecuteRequest{Header: &clustermsg.Header{Tree: echo, CallId: fmt.Sprint("x", i)}, Call: &messages.Call{CallId: fmt.Sprint("x", i), Name: "g1", ArgumentsJson: []byte(`{}`)}}
			if _, err := c0.Request(echo, "echo", req, protocluster.WithTimeout(5*time.Second)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ExecuteLocal", func(b *testing.B) {
		m := newMember(b)
		reg, _ := m.newRegistry()
		defer reg.Close(ctx)
		s, _ := reg.NewScope("local")
		for i := 0; b.Loop(); i++ {
			if r := s.Execute(ctx, runtime.Call{ID: fmt.Sprint("x", i), Name: "g1", Arguments: raw(`{}`)}); r.IsError() {
				b.Fatal(r.ErrorMessage())
			}
		}
	})
	calls := make([]runtime.TurnCall, 16)
	for i := range calls {
		calls[i] = runtime.TurnCall{ID: fmt.Sprint("c", i), Name: "g1", ArgumentsText: "{}"}
	}
	b.Run("Turn16Remote", func(b *testing.B) {
		s := cl.Tree(tree)
		for b.Loop() {
			if _, err := s.ExecuteTurn(ctx, calls); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Execute16Remote", func(b *testing.B) {
		s := cl.Tree(tree)
		for i := 0; b.Loop(); i++ {
			for j := range 16 {
				if r := s.Execute(ctx, runtime.Call{ID: fmt.Sprint("y", i, "-", j), Name: "g1", Arguments: raw(`{}`)}); r.IsError() {
					b.Fatal(r.ErrorMessage())
				}
			}
		}
	})
}

// BenchmarkActivation_10Scopes is the activation of a tree of 10 scopes
// (each with a mount and a restriction): acquire, load, decode, a registry,
// rebuild — with the in-memory store.
func BenchmarkActivation_10Scopes(b *testing.B) {
	store, m := newMemStore(), newMember(b)
	st := NewTreeState("big")
	for i := range 10 {
		if i > 0 {
			st.Scopes = append(st.Scopes, ScopeState{Key: fmt.Sprint("s", i), Parent: "big", ID: st.nextID()})
		}
		st.Scopes[i].Mutations = []MutationState{
			{ID: st.nextID(), Kind: KindMount, Entry: "echo", Config: raw(fmt.Sprintf(`{"name":"t%d"}`, i))},
			{ID: st.nextID(), Kind: KindRestrict, Deny: []string{"g2"}},
		}
	}
	l, _ := store.Acquire(context.Background(), "big", "seed", time.Minute)
	enc, err := st.Encode()
	if err != nil {
		b.Fatal(err)
	}
	_ = store.Save(context.Background(), l, enc)
	_ = store.Release(context.Background(), l)
	cfg := m.config(store)
	k := &kindConfig{store: cfg.Store, catalog: cfg.Catalog, newRegistry: cfg.NewRegistry, leaseTTL: time.Hour, storeTimeout: time.Second}
	for b.Loop() {
		tr := newTree(k, "big", "bench")
		tr.activate()
		if tr.err != nil {
			b.Fatal(tr.err)
		}
		tr.shutdown()
	}
}
