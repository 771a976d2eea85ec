//go:build !race

package cluster

import (
	"context"
	"fmt"
	"net"
	"slices"
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

// BenchmarkRemote_ExecuteVsBareGrain measures a remote Execute through the
// client (A) and a bare grain request/response with the same payload (B)
// interleaved in one loop: each iteration runs one of each, the order
// alternating, so both see the same machine load. It reports both costs,
// and the ratio A/B over blocks of 64 iterations: median, min and max
// (goal: ≤ 1.3). The remote Execute claims and records its call in the
// in-memory store; the bare grain only answers.
func BenchmarkRemote_ExecuteVsBareGrain(b *testing.B) {
	cl, c0, tree, echo := benchCluster(b)
	ctx := context.Background()
	s := cl.Tree(tree)
	execA := func(i int) {
		if r := s.Execute(ctx, runtime.Call{ID: fmt.Sprint("v", i), Name: "g1", Arguments: raw(`{}`)}); r.IsError() {
			b.Fatal(r.ErrorMessage())
		}
	}
	execB := func(i int) {
		req := &clustermsg.ExecuteRequest{Header: &clustermsg.Header{Tree: echo, CallId: fmt.Sprint("v", i)}, Call: &messages.Call{CallId: fmt.Sprint("v", i), Name: "g1", ArgumentsJson: []byte(`{}`)}}
		if _, err := c0.Request(echo, "echo", req, protocluster.WithTimeout(5*time.Second)); err != nil {
			b.Fatal(err)
		}
	}
	const block = 64
	var totA, totB, blkA, blkB time.Duration
	var ratios []float64
	n := 0
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		if i%2 == 0 {
			execA(i)
			t1 := time.Now()
			execB(i)
			blkA, blkB = blkA+t1.Sub(t0), blkB+time.Since(t1)
		} else {
			execB(i)
			t1 := time.Now()
			execA(i)
			blkB, blkA = blkB+t1.Sub(t0), blkA+time.Since(t1)
		}
		n++
		if n%block == 0 {
			ratios = append(ratios, float64(blkA)/float64(blkB))
			totA, totB, blkA, blkB = totA+blkA, totB+blkB, 0, 0
		}
	}
	totA, totB = totA+blkA, totB+blkB
	b.ReportMetric(float64(totA.Nanoseconds())/float64(n), "client-ns/op")
	b.ReportMetric(float64(totB.Nanoseconds())/float64(n), "bare-ns/op")
	b.ReportMetric(float64(totA)/float64(totB), "ratio")
	if len(ratios) > 0 {
		slices.Sort(ratios)
		b.ReportMetric(ratios[len(ratios)/2], "ratio-median")
		b.ReportMetric(ratios[0], "ratio-min")
		b.ReportMetric(ratios[len(ratios)-1], "ratio-max")
	}
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
