package cluster

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolscope/toolscope/cluster/clustermsg"
	"github.com/toolscope/toolscope/messages"
	"github.com/toolscope/toolscope/runtime"
)

// seed saves st as tree st.Tree's state, as an earlier activation would have.
func seed(t *testing.T, store *memStore, st *TreeState) {
	t.Helper()
	ctx := context.Background()
	l, err := store.Acquire(ctx, st.Tree, "seed", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	b, err := st.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Save(ctx, l, b); err != nil {
		t.Fatal(err)
	}
	if err := store.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
}

func TestGrain_Item4_ActivationRebuildsFromStoredState(t *testing.T) {
	store, m := newMemStore(), newMember(t)
	seed(t, store, sampleState())
	tr := activeTree(t, m, store, "root")
	if tr.err != nil {
		t.Fatal(tr.err)
	}
	if r := exec(tr, "", "c1", "say", `{"text":"hi"}`); r.IsError() || r.Text() != "root:hi" {
		t.Fatalf("mounted tool after activation: %q", r.Text())
	}
	if r := exec(tr, "", "c2", "g1", `{}`); r.ErrorMessage() != "not here" {
		t.Fatalf("guard after activation: %q", r.ErrorMessage())
	}
	wantCode(t, exec(tr, "grandchild", "c3", "count", `{}`), runtime.CodeUnknownTool, "count")
	rep := tr.schemas(context.Background(), &clustermsg.SchemasRequest{Header: hdr("root", "child", "")})
	var names []string
	for _, s := range rep.GetReply().GetTools() {
		names = append(names, s.GetName())
	}
	if !slices.Equal(names, []string{"g1", "say", "count", "block", "par"}) && !slices.Contains(names, "say") || slices.Contains(names, "g2") {
		t.Fatalf("child's view (deny g2) = %q", names)
	}
}

func TestGrain_Item4_LeaseHeldAnswersMoving(t *testing.T) {
	store, m := newMemStore(), newMember(t)
	if _, err := store.Acquire(context.Background(), "t1", "other-member", time.Minute); err != nil {
		t.Fatal(err)
	}
	tr := activeTree(t, m, store, "t1")
	wantCode(t, exec(tr, "", "c1", "count", `{}`), CodeScopeUnavailable, "held by another member (it is moving)")
	if m.runs("c1") != 0 {
		t.Fatal("a body ran on an activation without the lease")
	}
}

func TestGrain_Item4_EachMutationPersistedBeforeItIsAcknowledged(t *testing.T) {
	store, m := newMemStore(), newMember(t)
	tr := activeTree(t, m, store, "t1")
	var acked bool
	var saved *TreeState
	store.onSave = func(tree string, b []byte) {
		if acked {
			t.Error("a state was saved after its mutation was acknowledged")
		}
		st, err := DecodeTreeState(b)
		if err != nil {
			t.Error(err)
		}
		saved = st
	}
	run := func(req any) *clustermsg.MutationReply {
		acked, saved = false, nil
		r := mutate(tr, req)
		acked = true
		if f := r.GetFailure(); f != nil {
			t.Fatalf("%T refused: %s", req, f.GetMessage())
		}
		if saved == nil {
			t.Fatalf("%T was acknowledged without a save", req)
		}
		return r
	}
	h := func(scope string) *clustermsg.Header { return hdr("t1", scope, "call-"+activationID()) }

	mount := run(&clustermsg.MountRequest{Header: h(""), Entry: "echo", ConfigJson: raw(`{"name":"say","prefix":">"}`)})
	if i, j := saved.find(mount.GetId()); i != 0 || saved.Scopes[0].Mutations[j].Entry != "echo" {
		t.Fatalf("mount id %q not in the saved state", mount.GetId())
	}
	guard := run(&clustermsg.AddGuardRequest{Header: h(""), Entry: "deny", ConfigJson: raw(`{"tool":"g1","reason":"no g1"}`)})
	sub := run(&clustermsg.NewScopeRequest{Header: h(""), Key: "kid"})
	if i := saved.scope("kid"); i < 0 || saved.Scopes[i].ID != sub.GetId() {
		t.Fatalf("new scope not in the saved state with id %q", sub.GetId())
	}
	restr := run(&clustermsg.RestrictRequest{Header: h("kid"), Deny: []string{"g2"}, HasDeny: true})
	if i, _ := saved.find(restr.GetId()); i != saved.scope("kid") {
		t.Fatal("restriction not saved on the sub-agent")
	}
	if r := exec(tr, "kid", "x1", "g1", `{}`); r.ErrorMessage() != "no g1" {
		t.Fatalf("the root's guard does not hold in its sub-agent: %q", r.ErrorMessage())
	}

	// Exact disposers: an id names exactly its own mutation.
	if r := mutate(tr, &clustermsg.UndoRequest{Header: h(""), Id: guard.GetId(), Kind: KindMount}); r.GetFailure().GetCode() != string(CodeInvalid) {
		t.Fatalf("Unmount of a guard's id: %v", r.GetFailure())
	}
	run(&clustermsg.UndoRequest{Header: h(""), Id: guard.GetId(), Kind: KindGuard})
	if i, _ := saved.find(guard.GetId()); i >= 0 {
		t.Fatal("the removed guard is still in the saved state")
	}
	if r := exec(tr, "kid", "x2", "g1", `{}`); r.IsError() {
		t.Fatalf("guard still denies after RemoveGuard: %q", r.ErrorMessage())
	}
	if r := mutate(tr, &clustermsg.UndoRequest{Header: h(""), Id: guard.GetId(), Kind: KindGuard}); r.GetFailure().GetCode() != string(CodeNoSuchScope) {
		t.Fatalf("second RemoveGuard of the same id: %v", r.GetFailure())
	}
	run(&clustermsg.UndoRequest{Header: h(""), Id: mount.GetId(), Kind: KindMount})
	wantCode(t, exec(tr, "", "x3", "say", `{"text":"a"}`), runtime.CodeUnknownTool, "say")
	run(&clustermsg.DisposeRequest{Header: h("kid")})
	if saved.scope("kid") >= 0 {
		t.Fatal("the disposed sub-agent is still in the saved state")
	}
	wantCode(t, exec(tr, "kid", "x4", "g1", `{}`), CodeNoSuchScope, `no scope "kid"`)
}

func TestGrain_Item4_RetriedMutationAppliesOnce(t *testing.T) {
	store, m := newMemStore(), newMember(t)
	tr := activeTree(t, m, store, "t1")
	req := &clustermsg.MountRequest{Header: hdr("t1", "", "same"), Entry: "echo", ConfigJson: raw(`{"name":"say"}`)}
	a, b := mutate(tr, req), mutate(tr, req)
	if a.GetId() == "" || a.GetId() != b.GetId() {
		t.Fatalf("retry with the same call id: ids %q, %q (failure %v)", a.GetId(), b.GetId(), b.GetFailure())
	}
}

func TestGrain_Item1_BadCatalogConfigRefusedAtMountNothingSaved(t *testing.T) {
	store, m := newMemStore(), newMember(t)
	tr := activeTree(t, m, store, "t1")
	cases := []struct {
		req  any
		want string
	}{
		{&clustermsg.MountRequest{Header: hdr("t1", "", "a"), Entry: "echo", ConfigJson: raw(`{"prefix":"x"}`)}, `tool entry "echo" refused its config`},
		{&clustermsg.MountRequest{Header: hdr("t1", "", "b"), Entry: "nope", ConfigJson: raw(`{}`)}, `no tool entry "nope"`},
		{&clustermsg.MountRequest{Header: hdr("t1", "", "d"), Entry: "echo", ConfigJson: raw(`{"name":"g1"}`)}, ``},                                     // shadows the global g1: allowed (R12)
		{&clustermsg.MountRequest{Header: hdr("t1", "", "c"), Entry: "echo", ConfigJson: raw(`{"name":"g1"}`)}, `mount of catalog tool "echo" refused`}, // a duplicate in the layer (R13)
		{&clustermsg.AddGuardRequest{Header: hdr("t1", "", "e"), Entry: "deny", ConfigJson: raw(`[1]`)}, `guard entry "deny" refused its config`},
		{&clustermsg.RestrictRequest{Header: hdr("t1", "", "f"), Allow: []string{"nosuch"}, HasAllow: true}, `restriction refused`},
		{&clustermsg.RestrictRequest{Header: hdr("t1", "", "g")}, `restriction refused`},
		{&clustermsg.NewScopeRequest{Header: hdr("t1", "", "h"), Key: "t1"}, `in use`},
		{&clustermsg.MountRequest{Header: hdr("t1", "ghost", "i"), Entry: "echo", ConfigJson: raw(`{"name":"x"}`)}, `no scope "ghost"`},
	}
	for _, tc := range cases {
		before := len(store.writes)
		r := mutate(tr, tc.req)
		if tc.want == "" {
			if r.GetFailure() != nil {
				t.Fatalf("%T refused: %v", tc.req, r.GetFailure())
			}
			continue
		}
		if r.GetFailure() == nil || !strings.Contains(r.GetFailure().GetMessage(), tc.want) {
			t.Fatalf("%T: failure %v, want one containing %q", tc.req, r.GetFailure(), tc.want)
		}
		if len(store.writes) != before {
			t.Fatalf("%T was refused but wrote %q", tc.req, store.writes[before:])
		}
	}
}

func TestGrain_Item4_CallClaimedOnceRecordedResultOnRetry(t *testing.T) {
	store, m := newMemStore(), newMember(t)
	tr := activeTree(t, m, store, "t1")
	a := exec(tr, "", "once", "count", `{}`)
	b := exec(tr, "", "once", "count", `{}`)
	if a.IsError() || a.Text() != b.Text() || m.runs("once") != 1 {
		t.Fatalf("retry: %q vs %q, body ran %d times", a.Text(), b.Text(), m.runs("once"))
	}
	// A claim without a result (an activation died mid-call): never run.
	store.mu.Lock()
	store.trees["t1"].claims["orphan"] = &fakeClaim{}
	store.mu.Unlock()
	wantCode(t, exec(tr, "", "orphan", "count", `{}`), CodeOutcomeUnknown, "check whether it took effect before repeating it")
	if m.runs("orphan") != 0 {
		t.Fatal("a claimed call without a result ran")
	}
}

func TestGrain_Item4_StaleLeaseEndsUnknownOutcomeRunsAndWritesNothing(t *testing.T) {
	store, m := newMemStore(), newMember(t)
	tr := activeTree(t, m, store, "t1")
	if r := exec(tr, "", "before", "count", `{}`); r.IsError() {
		t.Fatal(r.ErrorMessage())
	}
	store.steal("t1") // another activation took the tree (a zombie's view)
	before := len(store.writes)
	wantCode(t, exec(tr, "", "zombie", "count", `{}`), CodeOutcomeUnknown, "moved to another member")
	wantCode(t, exec(tr, "", "zombie2", "count", `{}`), CodeScopeUnavailable, "moved to another member")
	r := mutate(tr, &clustermsg.MountRequest{Header: hdr("t1", "", "m"), Entry: "echo", ConfigJson: raw(`{"name":"x"}`)})
	if r.GetFailure().GetCode() != string(CodeScopeUnavailable) {
		t.Fatalf("mutation after losing the lease: %v", r.GetFailure())
	}
	if m.runs("zombie")+m.runs("zombie2") != 0 || len(store.writes) != before {
		t.Fatalf("a fenced activation ran a body or wrote %q", store.writes[before:])
	}
}

func TestGrain_Item4_StaleLeaseLocallyRunsNothingBeforeAskingTheStore(t *testing.T) {
	store, m := newMemStore(), newMember(t)
	tr := activeTree(t, m, store, "t1")
	tr.lastRenew.Store(time.Now().Add(-time.Hour).UnixNano()) // as after a long pause
	before := len(store.writes)
	wantCode(t, exec(tr, "", "late", "count", `{}`), CodeScopeUnavailable, "stale")
	if m.runs("late") != 0 || len(store.writes) != before {
		t.Fatal("an activation with a stale lease claimed or ran a call")
	}
}

func TestGrain_Item4_StoreFailureAtClaimRunsNothing(t *testing.T) {
	store, m := newMemStore(), newMember(t)
	tr := activeTree(t, m, store, "t1")
	store.failNext("claim", errors.New("store unreachable"))
	wantCode(t, exec(tr, "", "c", "count", `{}`), CodeOutcomeUnknown, "did not confirm the call's claim")
	if m.runs("c") != 0 {
		t.Fatal("a call whose claim failed ran")
	}
}

func TestGrain_Item4_TurnClaimsInOneBatchAndAnswersInModelOrder(t *testing.T) {
	store, m := newMemStore(), newMember(t)
	tr := activeTree(t, m, store, "t1")
	turn := func(callID string) *messages.TurnReply {
		req := &clustermsg.ExecuteTurnRequest{Header: hdr("t1", "", callID), Turn: &messages.TurnRequest{TurnId: "turn", Calls: []*messages.TurnCall{
			{CallId: "a", Name: "count"}, {CallId: "b", Name: "nosuch"}, {CallId: "c", Name: "par"}, {CallId: "d", Name: "par"},
		}}}
		f := tr.begin(req.GetHeader())
		r := tr.turn(f, req)
		tr.end(f, r)
		return r.GetTurn()
	}
	before := len(store.writes)
	first := turn("T1")
	if first.GetError() != "" || len(first.GetResults()) != 4 {
		t.Fatalf("turn: %v", first)
	}
	w := store.writes[before:]
	if len(w) < 4 || !slices.Equal(w[:4], []string{"claim t1 T1/0", "claim t1 T1/1", "claim t1 T1/2", "claim t1 T1/3"}) {
		t.Fatalf("writes %q: want the four claims first, together", w)
	}
	if first.GetResults()[1].GetError().GetInfo().GetCode() != string(runtime.CodeUnknownTool) {
		t.Fatalf("model order: result 1 = %v", first.GetResults()[1])
	}
	again := turn("T1")
	for i := range 4 {
		if string(first.GetResults()[i].GetValueJson()) != string(again.GetResults()[i].GetValueJson()) {
			t.Fatalf("retried turn result %d differs", i)
		}
	}
	if n := m.runs("a"); n != 1 {
		t.Fatalf("the retried turn ran call a %d times", n)
	}
}

func TestGrain_Item4_CancelReachesTheBody(t *testing.T) {
	store, m := newMemStore(), newMember(t)
	tr := activeTree(t, m, store, "t1")
	req := &clustermsg.ExecuteRequest{Header: hdr("t1", "", "blk"), Call: &messages.Call{CallId: "blk", Name: "block"}}
	f := tr.begin(req.GetHeader())
	done := make(chan *runtime.Result, 1)
	go func() { r := tr.execute(f, req); tr.end(f, r); done <- runtime.ResultFromProto(r.GetResult()) }()
	awaitClosed(t, m.startedCh("blk"), "the block body to start")
	tr.cancel("blk")
	select {
	case r := <-done:
		if !r.IsError() {
			t.Fatal("a cancelled body succeeded")
		}
	case <-time.After(waitLimit):
		failHung(t, "the cancelled call to end")
	}
	// Cancelled before it arrived: ends before dispatch, body never runs.
	tr.cancel("early")
	wantCode(t, exec(tr, "", "early", "block", `{}`), runtime.CodeAbortedBeforeDispatch, "")
	if m.runs("early") != 0 {
		t.Fatal("a call cancelled before it arrived ran")
	}
}

func TestGrain_Item4_DeadlineTravels(t *testing.T) {
	store, m := newMemStore(), newMember(t)
	tr := activeTree(t, m, store, "t1")
	h := hdr("t1", "", "late")
	h.DeadlineUnixNanos = time.Now().Add(-time.Second).UnixNano()
	req := &clustermsg.ExecuteRequest{Header: h, Call: &messages.Call{CallId: "late", Name: "block"}}
	f := tr.begin(h)
	r := runtime.ResultFromProto(tr.execute(f, req).GetResult())
	tr.end(f, nil)
	if !r.IsError() || m.runs("late") != 0 {
		t.Fatalf("a call past its deadline: %v %q, ran %d", r.IsError(), r.ErrorMessage(), m.runs("late"))
	}
}

func TestGrain_Item4_RootDisposeForgetsTheTree(t *testing.T) {
	store, m := newMemStore(), newMember(t)
	tr := activeTree(t, m, store, "t1")
	if r := mutate(tr, &clustermsg.MountRequest{Header: hdr("t1", "", "a"), Entry: "echo", ConfigJson: raw(`{"name":"x"}`)}); r.GetFailure() != nil {
		t.Fatal(r.GetFailure())
	}
	if r := mutate(tr, &clustermsg.DisposeRequest{Header: hdr("t1", "", "d")}); r.GetFailure() != nil {
		t.Fatal(r.GetFailure())
	}
	if store.state("t1") != nil {
		t.Fatal("the disposed tree's state is still stored")
	}
	wantCode(t, exec(tr, "", "after", "count", `{}`), CodeNoSuchScope, "disposed")
}

func TestGrain_Item4_OnlyTheGrainsOwnRefusalIsMarkedRetryable(t *testing.T) {
	store, m := newMemStore(), newMember(t)
	tr := activeTree(t, m, store, "t1")
	req := &clustermsg.ExecuteRequest{Header: hdr("t1", "", "own"), Call: &messages.Call{CallId: "own", Name: "own_unavailable", ArgumentsJson: []byte(`{}`)}}
	f := tr.begin(req.GetHeader())
	r := tr.execute(f, req)
	tr.end(f, r)
	if r.GetResult().GetError().GetInfo().GetCode() != string(CodeScopeUnavailable) || r.GetUnavailable() {
		t.Fatalf("a tool's own SCOPE_UNAVAILABLE result must not be marked retryable: %v", r)
	}
	if _, err := store.Acquire(context.Background(), "t2", "other", time.Minute); err != nil {
		t.Fatal(err)
	}
	held := activeTree(t, m, store, "t2")
	req = &clustermsg.ExecuteRequest{Header: hdr("t2", "", "x"), Call: &messages.Call{CallId: "x", Name: "g1"}}
	f = held.begin(req.GetHeader())
	r = held.execute(f, req)
	held.end(f, r)
	if !r.GetUnavailable() {
		t.Fatalf("the grain's own SCOPE_UNAVAILABLE refusal must be marked retryable: %v", r)
	}
}
