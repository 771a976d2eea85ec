package cluster

import (
	"fmt"
	"testing"
	"time"
)

// benchStore opens a file-backed store (the production default) on an embedded server and
// reports, per op, the NATS messages the client sent (each a store request: a read, a write or
// a pipelined create).
func benchStore(b *testing.B) (*testEnv, func()) {
	env := startStore(b, withStorageFile())
	start := env.nc.Stats().OutMsgs
	return env, func() {
		b.ReportMetric(float64(env.nc.Stats().OutMsgs-start)/float64(b.N), "requests/op")
	}
}

// withStorageFile undoes startStore's memory storage (test-only option).
func withStorageFile() StoreOption { return func(c *storeConfig) { c.memory = false } }

// BenchmarkStore_ClaimRecord_1: one call claimed (a create and the fence: 2 round trips)
// and its result recorded (1 round trip).
func BenchmarkStore_ClaimRecord_1(b *testing.B) {
	env, report := benchStore(b)
	ctx := testCtx(b)
	l := mustAcquire(b, env.store, "tree", "bench", time.Hour)
	result := []byte(`{"content":[{"type":"text","text":"sunny, 21°C"}]}`)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		id := fmt.Sprint("c", i)
		if _, err := env.store.Claim(ctx, l, []string{id}); err != nil {
			b.Fatal(err)
		}
		if err := env.store.Record(ctx, l, id, result); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	report()
}

// BenchmarkStore_ClaimRecord_16: a 16-call turn claimed in one batch (16 pipelined creates
// and one fence: 2 round trips of latency) and its 16 results recorded one by one.
func BenchmarkStore_ClaimRecord_16(b *testing.B) {
	env, report := benchStore(b)
	ctx := testCtx(b)
	l := mustAcquire(b, env.store, "tree", "bench", time.Hour)
	result := []byte(`{"content":[{"type":"text","text":"sunny, 21°C"}]}`)
	ids := make([]string, 16)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		for j := range ids {
			ids[j] = fmt.Sprint("c", i, ".", j)
		}
		if _, err := env.store.Claim(ctx, l, ids); err != nil {
			b.Fatal(err)
		}
		for _, id := range ids {
			if err := env.store.Record(ctx, l, id, result); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	report()
}

// BenchmarkStore_AcquireLoad: an activation's start: acquire the lease (read + compare-and-set)
// and load a 4 KiB tree state (read).
func BenchmarkStore_AcquireLoad(b *testing.B) {
	env, report := benchStore(b)
	ctx := testCtx(b)
	l := mustAcquire(b, env.store, "tree", "bench", time.Hour)
	if err := env.store.Save(ctx, l, make([]byte, 4<<10)); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		l, err := env.store.Acquire(ctx, "tree", "bench", time.Hour)
		if err != nil {
			b.Fatal(err)
		}
		if st, err := env.store.Load(ctx, l); err != nil || len(st) != 4<<10 {
			b.Fatal(len(st), err)
		}
	}
	b.StopTimer()
	report()
}

// BenchmarkStore_Claim: the claim alone, for batches of 1 and 16 ids (how a turn's claims are
// batched: compare 16 × the 1-id figure with the 16-id one).
func BenchmarkStore_Claim(b *testing.B) {
	for _, n := range []int{1, 16} {
		b.Run(fmt.Sprint("ids=", n), func(b *testing.B) {
			env, report := benchStore(b)
			ctx := testCtx(b)
			l := mustAcquire(b, env.store, "tree", "bench", time.Hour)
			ids := make([]string, n)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				for j := range ids {
					ids[j] = fmt.Sprint("c", i, ".", j)
				}
				if _, err := env.store.Claim(ctx, l, ids); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			report()
		})
	}
}
