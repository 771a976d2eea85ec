package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

const ttl = 10 * time.Second // on the fake clock

func TestStore_Acquire_Rules(t *testing.T) {
	forEachStore(t, []StoreOption{}, func(t *testing.T, env storeEnv) {
		s, ctx := env.store, testCtx(t)

		a := mustAcquire(t, s, "tree", "member-a", ttl)
		if a.Epoch != 1 || a.Tree != "tree" || a.Holder != "member-a" || a.TTL != ttl {
			t.Fatalf("first lease = %+v, want epoch 1 for member-a", a)
		}

		// Held by another live holder: refused, saying by whom and until when.
		_, err := s.Acquire(ctx, "tree", "member-b", ttl)
		if !errors.Is(err, ErrLeaseHeld) || !strings.Contains(err.Error(), "member-a") || !strings.Contains(err.Error(), "until") {
			t.Fatalf("acquire while held = %v, want ErrLeaseHeld naming member-a and until when", err)
		}
		var held *LeaseHeldError
		if !errors.As(err, &held) || held.Holder != "member-a" || held.Epoch != 1 || !held.Until.Equal(env.clock.Now().Add(ttl)) {
			t.Fatalf("acquire while held = %#v, want a LeaseHeldError for member-a epoch 1 until now+ttl", err)
		}

		// Renew moves the expiry: past the first TTL it is still held.
		env.clock.Advance(ttl / 2)
		if err := s.Renew(ctx, a); err != nil {
			t.Fatal(err)
		}
		env.clock.Advance(ttl * 3 / 4)
		if _, err := s.Acquire(ctx, "tree", "member-b", ttl); !errors.Is(err, ErrLeaseHeld) {
			t.Fatalf("acquire after renew = %v, want ErrLeaseHeld", err)
		}

		// The same holder may re-acquire: new epoch, and the old lease is fenced.
		a2 := mustAcquire(t, s, "tree", "member-a", ttl)
		if a2.Epoch != 2 {
			t.Fatalf("re-acquire epoch = %d, want 2", a2.Epoch)
		}
		if err := s.Save(ctx, a, []byte("old")); !errors.Is(err, ErrFenced) {
			t.Fatalf("save with the replaced lease = %v, want ErrFenced", err)
		}
		if err := s.Renew(ctx, a); !errors.Is(err, ErrFenced) {
			t.Fatalf("renew of the replaced lease = %v, want ErrFenced", err)
		}

		// Expired: taken over by another holder, epoch counts on.
		env.clock.Advance(ttl + time.Millisecond)
		b := mustAcquire(t, s, "tree", "member-b", ttl)
		if b.Epoch != 3 {
			t.Fatalf("takeover epoch = %d, want 3", b.Epoch)
		}
		// Load first: a read writes nothing, so nothing else may have told
		// the lease yet that it was taken over (a map's random order once
		// made this a flake).
		for _, o := range []struct {
			name string
			op   func() error
		}{
			{"Load", func() error { _, err := s.Load(ctx, a2); return err }},
			{"Renew", func() error { return s.Renew(ctx, a2) }},
			{"Save", func() error { return s.Save(ctx, a2, []byte("zombie")) }},
			{"Record", func() error { return s.Record(ctx, a2, "c1", []byte("r")) }},
			{"Claim", func() error { _, err := s.Claim(ctx, a2, []string{"c1"}); return err }},
			{"Forget", func() error { return s.Forget(ctx, a2) }},
		} {
			if err := o.op(); !errors.Is(err, ErrFenced) {
				t.Errorf("%s with the taken-over lease = %v, want ErrFenced", o.name, err)
			}
		}
		// Releasing a lost lease is not an error, and does not release the new holder's.
		if err := s.Release(ctx, a2); err != nil {
			t.Fatalf("release of a lost lease = %v, want nil", err)
		}
		if _, err := s.Acquire(ctx, "tree", "member-c", ttl); !errors.Is(err, ErrLeaseHeld) {
			t.Fatalf("acquire after a lost lease's release = %v, want ErrLeaseHeld (member-b holds it)", err)
		}

		// Released: anyone may acquire at once, epoch still counts on; the released lease writes nothing.
		if err := s.Release(ctx, b); err != nil {
			t.Fatal(err)
		}
		c := mustAcquire(t, s, "tree", "member-c", ttl)
		if c.Epoch != 4 {
			t.Fatalf("after release epoch = %d, want 4", c.Epoch)
		}
		if err := s.Save(ctx, b, []byte("released")); !errors.Is(err, ErrFenced) {
			t.Fatalf("save with a released lease = %v, want ErrFenced", err)
		}
		if err := s.Release(ctx, b); err != nil {
			t.Fatalf("second release = %v, want nil", err)
		}

		// Bad arguments are refused, naming what was wrong.
		for _, tc := range []struct {
			tree, holder string
			ttl          time.Duration
			want         string
		}{
			{"", "h", ttl, "empty tree id"},
			{"t", "", ttl, "empty holder"},
			{"t", "h", 0, "ttl"},
		} {
			if _, err := s.Acquire(ctx, tc.tree, tc.holder, tc.ttl); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Acquire(%q, %q, %s) = %v, want an error saying %q", tc.tree, tc.holder, tc.ttl, err, tc.want)
			}
		}
	})
}

func TestStore_SaveLoad_SurvivesActivations(t *testing.T) {
	forEachStore(t, []StoreOption{}, func(t *testing.T, env storeEnv) {
		s, ctx := env.store, testCtx(t)
		a := mustAcquire(t, s, "tree", "a", ttl)
		if got, err := s.Load(ctx, a); err != nil || got != nil {
			t.Fatalf("load of a new tree = %q, %v; want nil, nil", got, err)
		}
		for _, v := range []string{"v1", "v2"} {
			if err := s.Save(ctx, a, []byte(v)); err != nil {
				t.Fatal(err)
			}
		}
		env.clock.Advance(2 * ttl)
		b := mustAcquire(t, s, "tree", "b", ttl)
		if got, err := s.Load(ctx, b); err != nil || string(got) != "v2" {
			t.Fatalf("load after takeover = %q, %v; want v2", got, err)
		}
		if err := s.Save(ctx, a, []byte("zombie")); !errors.Is(err, ErrFenced) {
			t.Fatalf("zombie save = %v, want ErrFenced", err)
		}
		if got, _ := s.Load(ctx, b); string(got) != "v2" {
			t.Fatalf("state after a zombie's save = %q, want v2 (nothing written)", got)
		}
	})
}

func TestStore_Claim_Rules(t *testing.T) {
	forEachStore(t, []StoreOption{}, func(t *testing.T, env storeEnv) {
		s, ctx := env.store, testCtx(t)
		a := mustAcquire(t, s, "tree", "a", ttl)

		got, err := s.Claim(ctx, a, []string{"c1", "c2", "c3"})
		if err != nil {
			t.Fatal(err)
		}
		if want := []ClaimState{ClaimNew, ClaimNew, ClaimNew}; !slices.Equal(states(got), want) {
			t.Fatalf("first claim = %v, want %v", states(got), want)
		}
		if got[0].ID != "c1" || got[2].ID != "c3" {
			t.Fatalf("answers out of order: %+v", got)
		}
		if err := s.Record(ctx, a, "c1", []byte(`{"ok":1}`)); err != nil {
			t.Fatal(err)
		}
		if err := s.Record(ctx, a, "c3", nil); err != nil {
			t.Fatal(err)
		}
		// Repeated: recorded ones answer Done with the result, the unrecorded one Unknown, a fresh one New.
		got, err = s.Claim(ctx, a, []string{"c4", "c1", "c2", "c3"})
		if err != nil {
			t.Fatal(err)
		}
		if want := []ClaimState{ClaimNew, ClaimDone, ClaimUnknown, ClaimDone}; !slices.Equal(states(got), want) {
			t.Fatalf("repeated claim = %v, want %v", states(got), want)
		}
		if string(got[1].Result) != `{"ok":1}` || len(got[3].Result) != 0 {
			t.Fatalf("recorded results = %q, %q", got[1].Result, got[3].Result)
		}

		// Another activation after takeover sees the same, and never New for an old id.
		env.clock.Advance(2 * ttl)
		b := mustAcquire(t, s, "tree", "b", ttl)
		got, err = s.Claim(ctx, b, []string{"c1", "c2", "c4", "c5"})
		if err != nil {
			t.Fatal(err)
		}
		if want := []ClaimState{ClaimDone, ClaimUnknown, ClaimUnknown, ClaimNew}; !slices.Equal(states(got), want) {
			t.Fatalf("claim after takeover = %v, want %v", states(got), want)
		}

		// Batch rules.
		if got, err := s.Claim(ctx, b, nil); err != nil || len(got) != 0 {
			t.Fatalf("empty batch = %v, %v", got, err)
		}
		if _, err := s.Claim(ctx, b, []string{"d", "d"}); !errors.Is(err, ErrInvalidID) || !strings.Contains(err.Error(), "twice") {
			t.Fatalf("duplicate id in a batch = %v, want ErrInvalidID saying twice", err)
		}
		big := make([]string, MaxClaimBatch+1)
		for i := range big {
			big[i] = fmt.Sprint("id", i)
		}
		if _, err := s.Claim(ctx, b, big); err == nil || !strings.Contains(err.Error(), "more than") {
			t.Fatalf("oversized batch = %v, want refused", err)
		}
		// A refused batch claimed nothing.
		if got, err := s.Claim(ctx, b, []string{"d", "id0"}); err != nil || !slices.Equal(states(got), []ClaimState{ClaimNew, ClaimNew}) {
			t.Fatalf("ids of refused batches = %v, %v; want both new", states(got), err)
		}
	})
}

// A zombie's claim that could not be fenced leaves its ids claimed without a result: the new
// holder gets ClaimUnknown for them, never ClaimNew, so the body runs at most once.
func TestStore_Claim_ZombieLeavesNothingRunnable(t *testing.T) {
	forEachStore(t, []StoreOption{}, func(t *testing.T, env storeEnv) {
		s, ctx := env.store, testCtx(t)
		zombie := mustAcquire(t, s, "tree", "a", ttl)
		env.clock.Advance(2 * ttl) // the zombie was paused past its TTL
		b := mustAcquire(t, s, "tree", "b", ttl)

		got, err := s.Claim(ctx, zombie, []string{"x", "y"})
		if !errors.Is(err, ErrFenced) || got != nil {
			t.Fatalf("zombie claim = %v, %v; want nil, ErrFenced", got, err)
		}
		got, err = s.Claim(ctx, b, []string{"x", "y", "z"})
		if err != nil {
			t.Fatal(err)
		}
		if want := []ClaimState{ClaimUnknown, ClaimUnknown, ClaimNew}; !slices.Equal(states(got), want) {
			t.Fatalf("new holder's claim of the zombie's ids = %v, want %v", states(got), want)
		}
		if err := s.Record(ctx, zombie, "x", []byte("late")); !errors.Is(err, ErrFenced) {
			t.Fatalf("zombie record = %v, want ErrFenced", err)
		}
	})
}

func TestStore_Forget_DropsStateAndClaims(t *testing.T) {
	forEachStore(t, []StoreOption{WithClaimRetention(time.Hour)}, func(t *testing.T, env storeEnv) {
		s, ctx := env.store, testCtx(t)
		a := mustAcquire(t, s, "tree", "a", ttl)
		other := mustAcquire(t, s, "tree.other", "a", ttl)
		for _, l := range []*Lease{a, other} {
			if err := s.Save(ctx, l, []byte("state")); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Claim(ctx, l, []string{"c1", "c2"}); err != nil {
				t.Fatal(err)
			}
			if err := s.Record(ctx, l, "c1", []byte("r")); err != nil {
				t.Fatal(err)
			}
		}
		// A stale lease forgets nothing.
		env.clock.Advance(2 * ttl)
		b := mustAcquire(t, s, "tree", "b", ttl)
		if err := s.Forget(ctx, a); !errors.Is(err, ErrFenced) {
			t.Fatalf("forget with a lost lease = %v, want ErrFenced", err)
		}
		if st, _ := s.Load(ctx, b); string(st) != "state" {
			t.Fatalf("state after a stale forget = %q", st)
		}
		if err := s.Forget(ctx, b); err != nil {
			t.Fatal(err)
		}
		if err := s.Save(ctx, b, []byte("after")); !errors.Is(err, ErrFenced) {
			t.Fatalf("save after forget = %v, want ErrFenced (the lease is given up)", err)
		}
		c := mustAcquire(t, s, "tree", "c", ttl) // released: no wait
		if c.Epoch != b.Epoch+1 {
			t.Fatalf("epoch after forget = %d, want %d", c.Epoch, b.Epoch+1)
		}
		if st, err := s.Load(ctx, c); err != nil || st != nil {
			t.Fatalf("state after forget = %q, %v; want none", st, err)
		}
		if got, err := s.Claim(ctx, c, []string{"c1", "c2"}); err != nil || !slices.Equal(states(got), []ClaimState{ClaimNew, ClaimNew}) {
			t.Fatalf("claims after forget = %v, %v; want new (the tree's history is gone)", states(got), err)
		}
		// The other tree (whose id extends this one's) is untouched.
		other2 := mustAcquire(t, s, "tree.other", "b", ttl)
		if st, _ := s.Load(ctx, other2); string(st) != "state" {
			t.Fatalf("other tree's state = %q", st)
		}
		if got, _ := s.Claim(ctx, other2, []string{"c1", "c2"}); !slices.Equal(states(got), []ClaimState{ClaimDone, ClaimUnknown}) {
			t.Fatalf("other tree's claims = %v", states(got))
		}
	})
}

func TestStore_SizeBound(t *testing.T) {
	const max = 1024
	forEachStore(t, []StoreOption{WithMaxValueBytes(max)}, func(t *testing.T, env storeEnv) {
		s, ctx := env.store, testCtx(t)
		a := mustAcquire(t, s, "tree", "a", ttl)
		if err := s.Save(ctx, a, bytes.Repeat([]byte("s"), max)); err != nil {
			t.Fatalf("save at the bound: %v", err)
		}
		if err := s.Save(ctx, a, bytes.Repeat([]byte("s"), max+1)); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "1025") {
			t.Fatalf("save over the bound = %v, want ErrTooLarge naming the size", err)
		}
		if st, _ := s.Load(ctx, a); len(st) != max {
			t.Fatalf("state after a refused save is %d bytes, want %d (kept)", len(st), max)
		}
		if _, err := s.Claim(ctx, a, []string{"c"}); err != nil {
			t.Fatal(err)
		}
		if err := s.Record(ctx, a, "c", bytes.Repeat([]byte("r"), max+1)); !errors.Is(err, ErrTooLarge) {
			t.Fatalf("record over the bound = %v, want ErrTooLarge", err)
		}
		if err := s.Record(ctx, a, "c", bytes.Repeat([]byte("r"), max)); err != nil {
			t.Fatalf("record at the bound: %v", err)
		}
		got, err := s.Claim(ctx, a, []string{"c"})
		if err != nil || got[0].State != ClaimDone || len(got[0].Result) != max {
			t.Fatalf("claim of a recorded max-size result = %+v, %v", got, err)
		}
	})
}

func TestStore_HostileIDs(t *testing.T) {
	forEachStore(t, []StoreOption{}, func(t *testing.T, env storeEnv) {
		s, ctx := env.store, testCtx(t)
		hostile := []string{"a", "a.b", "a.*", "*", ">", "a.>", "a b", " ", "$KV.toolscope.l.YQ", "..", "a\x00b", "日本語", "-_=/", strings.Repeat("z", MaxIDBytes)}
		leases := map[string]*Lease{}
		for i, tree := range hostile {
			l := mustAcquire(t, s, tree, "h", ttl)
			leases[tree] = l
			if err := s.Save(ctx, l, []byte(tree)); err != nil {
				t.Fatalf("save %q: %v", tree, err)
			}
			// Each tree claims every hostile call id; only ids up to i are recorded.
			got, err := s.Claim(ctx, l, hostile)
			if err != nil {
				t.Fatalf("claim in %q: %v", tree, err)
			}
			for j, c := range got {
				if c.State != ClaimNew || c.ID != hostile[j] {
					t.Fatalf("tree %q call %q = %+v, want new (trees are separate)", tree, hostile[j], c)
				}
				if j <= i {
					if err := s.Record(ctx, l, c.ID, []byte(tree+"/"+c.ID)); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		for i, tree := range hostile {
			l := leases[tree]
			if st, err := s.Load(ctx, l); err != nil || string(st) != tree {
				t.Fatalf("state of %q = %q, %v", tree, st, err)
			}
			got, err := s.Claim(ctx, l, hostile)
			if err != nil {
				t.Fatal(err)
			}
			for j, c := range got {
				want := ClaimUnknown
				if j <= i {
					want = ClaimDone
					if string(c.Result) != tree+"/"+c.ID {
						t.Fatalf("tree %q call %q result %q", tree, c.ID, c.Result)
					}
				}
				if c.State != want {
					t.Fatalf("tree %q call %q = %v, want %v", tree, c.ID, c.State, want)
				}
			}
		}
		// Forgetting one tree leaves the others.
		if err := s.Forget(ctx, leases["a"]); err != nil {
			t.Fatal(err)
		}
		if st, _ := s.Load(ctx, leases["a.b"]); string(st) != "a.b" {
			t.Fatalf("forget of %q touched %q: %q", "a", "a.b", st)
		}
		if got, _ := s.Claim(ctx, leases["a.*"], []string{"a"}); got[0].State != ClaimDone {
			t.Fatalf("forget of %q touched %q's claims: %v", "a", "a.*", got[0].State)
		}

		bad := []struct{ id, want string }{
			{"", "empty"},
			{strings.Repeat("z", MaxIDBytes+1), "more than"},
			{"\xff\xfe", "not UTF-8"},
		}
		l := leases["a.b"]
		for _, tc := range bad {
			if _, err := s.Acquire(ctx, tc.id, "h", ttl); !errors.Is(err, ErrInvalidID) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Acquire(tree %q) = %v, want ErrInvalidID saying %q", tc.id, err, tc.want)
			}
			if _, err := s.Claim(ctx, l, []string{"ok", tc.id}); !errors.Is(err, ErrInvalidID) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Claim(id %q) = %v, want ErrInvalidID saying %q", tc.id, err, tc.want)
			}
			if err := s.Record(ctx, l, tc.id, nil); !errors.Is(err, ErrInvalidID) {
				t.Errorf("Record(id %q) = %v, want ErrInvalidID", tc.id, err)
			}
		}
		// A refused batch claimed nothing, not even its good ids.
		if got, _ := s.Claim(ctx, l, []string{"ok"}); got[0].State != ClaimNew {
			t.Fatalf("good id of a refused batch = %v, want new", got[0].State)
		}
	})
}

func TestStore_Options_Refused(t *testing.T) {
	env := startStore(t)
	for _, tc := range []struct {
		opt  StoreOption
		want string
	}{
		{WithBucket("a.b"), "bucket"},
		{WithReplicas(0), "replicas"},
		{WithMaxValueBytes(0), "max value"},
		{WithClaimRetention(time.Millisecond), "retention"},
		{WithOpTimeout(0), "op timeout"},
	} {
		if _, err := NewJetStreamStore(testCtx(t), env.js, tc.opt); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("option error = %v, want one naming %q", err, tc.want)
		}
	}
	if _, err := env.store.Claim(testCtx(t), &Lease{Tree: "t"}, []string{"x"}); err == nil {
		t.Error("a lease not from this store was accepted")
	}
}
