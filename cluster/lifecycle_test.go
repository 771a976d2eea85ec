package cluster

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/toolscope/toolscope/cluster/clustermsg"
	"github.com/toolscope/toolscope/runtime"
)

// eventually polls cond until it holds, failing with a goroutine dump after
// waitLimit.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			failHung(t, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestGrain_Item4_ActivationFailuresAnswerUnavailableAndReleaseTheLease(t *testing.T) {
	t.Run("load fails", func(t *testing.T) {
		store, m := newMemStore(), newMember(t)
		store.failNext("load", errors.New("store away"))
		tr := activeTree(t, m, store, "t1")
		wantCode(t, exec(tr, "", "c", "count", `{}`), CodeScopeUnavailable, "could not load its state")
		if store.holderOf("t1") != "" {
			t.Fatal("a failed activation kept the lease")
		}
	})
	t.Run("catalog entry missing on this member", func(t *testing.T) {
		store, m := newMemStore(), newMember(t)
		st := NewTreeState("t1")
		st.Scopes[0].Mutations = []MutationState{{ID: "m1", Kind: KindMount, Entry: "gone", Config: raw(`{}`)}}
		seed(t, store, st)
		tr := activeTree(t, m, store, "t1")
		wantCode(t, exec(tr, "", "c", "count", `{}`), CodeScopeUnavailable, `no tool entry "gone"`)
		if store.holderOf("t1") != "" || m.runs("c") != 0 {
			t.Fatal("a failed activation kept the lease or ran a call")
		}
	})
}

func TestGrain_Item4_FailedSaveWithdrawsTheAddition(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		code runtime.Code
	}{
		{"fenced", ErrFenced, CodeScopeUnavailable},
		{"store failure", errors.New("timeout"), CodeOutcomeUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store, m := newMemStore(), newMember(t)
			tr := activeTree(t, m, store, "t1")
			root, _ := tr.scope("")
			store.failNext("save", tc.err)
			r := mutate(tr, &clustermsg.MountRequest{Header: hdr("t1", "", "a"), Entry: "echo", ConfigJson: raw(`{"name":"say"}`)})
			if r.GetFailure().GetCode() != string(tc.code) || r.GetId() != "" {
				t.Fatalf("reply %v, want code %s and no id", r, tc.code)
			}
			if _, ok := root.Get("say"); ok {
				t.Fatal("an addition whose save failed is still visible")
			}
			wantCode(t, exec(tr, "", "c", "count", `{}`), CodeScopeUnavailable, "")
		})
	}
}

func TestGrain_Item4_FencedRenewalLosesTheTree(t *testing.T) {
	store, m := newMemStore(), newMember(t)
	cfg := m.config(store)
	k := &kindConfig{store: store, catalog: cfg.Catalog, newRegistry: cfg.NewRegistry, leaseTTL: 150 * time.Millisecond, storeTimeout: time.Second}
	tr := newTree(k, "t1", "test")
	tr.activate()
	t.Cleanup(tr.shutdown)
	root, err := tr.scope("")
	if err != nil {
		t.Fatal(err)
	}
	store.steal("t1")
	eventually(t, "the activation to notice its lease is gone", func() bool {
		select {
		case <-root.Done():
			return true
		default:
			return false
		}
	})
	wantCode(t, exec(tr, "", "c", "count", `{}`), CodeScopeUnavailable, "moved to another member")
}

func TestGrain_Item4_ShutdownReleasesTheLeaseAndDisposesTheTree(t *testing.T) {
	store, m := newMemStore(), newMember(t)
	tr := activeTree(t, m, store, "t1")
	root, _ := tr.scope("")
	tr.shutdown()
	select {
	case <-root.Done():
	default:
		t.Fatal("passivation left the tree's scopes alive")
	}
	if store.holderOf("t1") != "" {
		t.Fatal("passivation kept the lease")
	}
	if !strings.Contains(strings.Join(store.writes, ","), "release t1") {
		t.Fatalf("writes %q: no release", store.writes)
	}
}
