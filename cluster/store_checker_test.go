package cluster

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestStore_Checker_AtMostOnce_Fenced races activations of the same trees: each acquires,
// claims overlapping batches of call ids, records some results, saves state, renews or not,
// and some are "paused" past their TTL (the shared fake clock jumps) and go on using their
// lease as zombies while others take the tree over. Invariants checked:
//
//   - every call id is ClaimNew at most once across all activations;
//   - no write (Claim, Record, Save) succeeds from a lease once a newer epoch of its tree had
//     been acquired before the write began, and once a lease got ErrFenced it gets nothing else;
//   - every ClaimDone carries the result recorded by the one activation that got ClaimNew;
//   - at the end the tree's state is the last successful Save, and a fresh activation finds
//     recorded ids Done, claimed-but-unrecorded ids Unknown, untouched ids New.
func TestStore_Checker_AtMostOnce_Fenced(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	forEachStore(t, nil, func(t *testing.T, env storeEnv) { checkStore(t, seed, env) })
}

func checkStore(t *testing.T, seed uint64, env storeEnv) {
	s := env.store
	const (
		trees       = 2
		activations = 6
		steps       = 60
		pool        = 120
		ttl         = 10 * time.Second
	)
	var (
		mu         sync.Mutex
		newBy      = map[string]string{} // tree/id → activation that got ClaimNew
		recorded   = map[string]string{} // tree/id → result recorded
		doneSeen   = map[string][]string{}
		claimedAny = map[string]bool{} // tree/id attempted by some Claim (may exist unfenced)
		lastSave   = map[string]saveMark{}
		maxEpoch   [trees]atomic.Uint64
	)
	violation := func(format string, args ...any) {
		t.Errorf("seed %d: "+format, append([]any{seed}, args...)...)
	}
	noteAcquired := func(tree int, e uint64) {
		for {
			cur := maxEpoch[tree].Load()
			if e <= cur || maxEpoch[tree].CompareAndSwap(cur, e) {
				return
			}
		}
	}
	// checkWrite: a write by lease l of tree ti that began when the newest epoch was seen
	// must not have succeeded if seen > l.Epoch; and a fenced lease stays fenced.
	checkWrite := func(what string, ti int, l *Lease, seen uint64, fenced bool, err error) {
		if err == nil && seen > l.Epoch {
			violation("%s by epoch %d succeeded after epoch %d was acquired", what, l.Epoch, seen)
		}
		if err == nil && fenced {
			violation("%s by epoch %d succeeded after the lease had been fenced", what, l.Epoch)
		}
		if err != nil && !errors.Is(err, ErrFenced) {
			violation("%s by epoch %d: unexpected error %v", what, l.Epoch, err)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	var wg sync.WaitGroup
	for a := range activations {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(a)))
			holder := fmt.Sprint("member-", a)
			ti := a % trees
			tree := fmt.Sprint("tree.", ti) // a dot, on purpose
			var l *Lease
			fenced := false
			saves := 0
			for range steps {
				if ctx.Err() != nil {
					return
				}
				if l == nil {
					nl, err := s.Acquire(ctx, tree, holder, ttl)
					if errors.Is(err, ErrLeaseHeld) {
						if rng.IntN(3) == 0 {
							env.clock.Advance(ttl + time.Second) // someone paused past its TTL
						}
						continue
					}
					if err != nil {
						violation("acquire: %v", err)
						return
					}
					noteAcquired(ti, nl.Epoch)
					l, fenced = nl, false
					continue
				}
				switch r := rng.IntN(20); {
				case r < 9: // claim a batch, run (record) some of the new ones
					n := 1 + rng.IntN(8)
					ids := make([]string, 0, n)
					seenIDs := map[string]bool{}
					for len(ids) < n {
						id := fmt.Sprint("call.", rng.IntN(pool))
						if !seenIDs[id] {
							seenIDs[id] = true
							ids = append(ids, id)
						}
					}
					mu.Lock()
					for _, id := range ids {
						claimedAny[tree+"/"+id] = true
					}
					mu.Unlock()
					seen := maxEpoch[ti].Load()
					got, err := s.Claim(ctx, l, ids)
					checkWrite("claim", ti, l, seen, fenced, err)
					if err != nil {
						fenced = true
						continue
					}
					for _, c := range got {
						key := tree + "/" + c.ID
						mu.Lock()
						switch c.State {
						case ClaimNew:
							if prev, ok := newBy[key]; ok {
								violation("%s ClaimNew twice: by %s and by %s epoch %d", key, prev, holder, l.Epoch)
							}
							newBy[key] = fmt.Sprint(holder, "@", l.Epoch)
						case ClaimDone:
							doneSeen[key] = append(doneSeen[key], string(c.Result))
						case ClaimUnknown:
						default:
							violation("%s: state %d", key, c.State)
						}
						mu.Unlock()
						if c.State == ClaimNew && rng.IntN(4) != 0 {
							res := fmt.Sprint("result of ", key, " by ", holder, "@", l.Epoch)
							seen := maxEpoch[ti].Load()
							err := s.Record(ctx, l, c.ID, []byte(res))
							checkWrite("record", ti, l, seen, fenced, err)
							if err != nil {
								fenced = true
								break
							}
							mu.Lock()
							recorded[key] = res
							mu.Unlock()
						}
					}
				case r < 12: // save state
					saves++
					v := fmt.Sprintf("%s@%d#%d", holder, l.Epoch, saves)
					seen := maxEpoch[ti].Load()
					err := s.Save(ctx, l, []byte(v))
					checkWrite("save", ti, l, seen, fenced, err)
					if err != nil {
						fenced = true
						continue
					}
					mu.Lock()
					if m := lastSave[tree]; l.Epoch > m.epoch || (l.Epoch == m.epoch && saves > m.n) {
						lastSave[tree] = saveMark{l.Epoch, saves, v}
					}
					mu.Unlock()
				case r < 16: // renew
					err := s.Renew(ctx, l)
					if err == nil && fenced {
						violation("renew of a fenced lease (epoch %d) succeeded", l.Epoch)
					}
					if err != nil && !errors.Is(err, ErrFenced) {
						violation("renew: %v", err)
					}
					if err != nil {
						fenced = true
					}
				case r < 18: // pause past the TTL: others may take the tree; keep the lease (zombie)
					env.clock.Advance(ttl + time.Second)
				case r < 19: // drop a fenced lease, or release a live one
					if fenced {
						l = nil
						continue
					}
					if err := s.Release(ctx, l); err != nil {
						violation("release: %v", err)
					}
					l, fenced = nil, true
				default: // passivate without releasing (a member that died): the lease expires
					l = nil
				}
			}
		}()
	}
	within(t, "checker activations", wg.Wait)

	// A fresh activation of each tree sees the outcome.
	env.clock.Advance(ttl + time.Second)
	for ti := range trees {
		tree := fmt.Sprint("tree.", ti)
		l := mustAcquire(t, s, tree, "auditor", ttl)
		if st, err := s.Load(ctx, l); err != nil || string(st) != lastSave[tree].v {
			violation("%s state = %q, %v; want the last successful save %q", tree, st, err, lastSave[tree].v)
		}
		ids := make([]string, pool)
		for i := range ids {
			ids[i] = fmt.Sprint("call.", i)
		}
		got, err := s.Claim(ctx, l, ids)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range got {
			key := tree + "/" + c.ID
			_, wasNew := newBy[key]
			res, rec := recorded[key]
			switch {
			case rec && (c.State != ClaimDone || string(c.Result) != res):
				violation("%s recorded %q, auditor sees %v %q", key, res, c.State, c.Result)
			case !rec && wasNew && c.State != ClaimUnknown:
				violation("%s was run (new) without a record, auditor sees %v, want unknown", key, c.State)
			case !wasNew && c.State == ClaimDone:
				violation("%s done but never claimed new", key)
			case c.State == ClaimNew && !claimedAny[key]:
				// untouched: fine
			case c.State == ClaimNew && wasNew:
				violation("%s new again for the auditor", key)
			}
			for _, d := range doneSeen[key] {
				if d != res {
					violation("%s: a claim saw result %q, recorded %q", key, d, res)
				}
			}
		}
	}
	mu.Lock()
	t.Logf("claimed new: %d ids, recorded: %d, trees' last epochs: %d %d", len(newBy), len(recorded), maxEpoch[0].Load(), maxEpoch[1].Load())
	mu.Unlock()
}

type saveMark struct {
	epoch uint64
	n     int
	v     string
}
