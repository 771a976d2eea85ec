package main

// Microbenchmarks: cd bench && go test -bench . -benchmem
// Timings are reported, never asserted.

import (
	"context"
	"fmt"
	"testing"
	"time"

	ts "github.com/toolscope/toolscope/runtime"
)

func reportCalls(b *testing.B, callsPerOp int) {
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(b.N*callsPerOp)/s, "calls/s")
	}
}

// --- toolscope serial Execute ---------------------------------------------

func benchExecute(b *testing.B, o worldOpts) {
	w := newWorld(o)
	defer w.close()
	ctx := context.Background()
	execOnce(ctx, w.agent)
	b.ReportAllocs()
	for b.Loop() {
		execOnce(ctx, w.agent)
	}
	reportCalls(b, 1)
}

func BenchmarkExecuteBare(b *testing.B)         { benchExecute(b, worldOpts{}) }
func BenchmarkExecuteBareNoEvents(b *testing.B) { benchExecute(b, worldOpts{noEvents: true}) }
func BenchmarkExecuteFull(b *testing.B)         { benchExecute(b, worldOpts{full: true}) }

func BenchmarkExecuteTools(b *testing.B) {
	for _, n := range []int{1, 10_000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) { benchExecute(b, worldOpts{extraTools: n - 1}) })
	}
}

// --- reads on a 3-deep chain ----------------------------------------------

func BenchmarkReadsChain3(b *testing.B) {
	for _, n := range []int{1, 10_000} {
		w := newWorld(worldOpts{extraTools: n - 1, depth: 3})
		b.Run(fmt.Sprintf("Get/n=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := w.agent.Get("t"); !ok {
					b.Fatal("t not found")
				}
			}
			reportCalls(b, 1)
		})
		b.Run(fmt.Sprintf("ExecutionMode/n=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if m := w.agent.ExecutionMode(trivialCall); m != ts.Parallel {
					b.Fatal("want parallel")
				}
			}
			reportCalls(b, 1)
		})
		w.close()
	}
}

// --- turns ----------------------------------------------------------------

func BenchmarkTurn16(b *testing.B) {
	w := newWorld(worldOpts{})
	defer w.close()
	ctx := context.Background()
	calls := turnCalls(16, "t")
	b.ReportAllocs()
	for b.Loop() {
		execTurn(ctx, w.agent, calls, ts.WithMaxParallel(16))
	}
	reportCalls(b, 16)
}

func BenchmarkTurnMixed16(b *testing.B) {
	w := newWorld(worldOpts{})
	defer w.close()
	ctx := context.Background()
	calls := mixedTurnCalls()
	b.ReportAllocs()
	for b.Loop() {
		execTurn(ctx, w.agent, calls, ts.WithMaxParallel(16))
	}
	reportCalls(b, 16)
}

func BenchmarkTurnSleep16x1ms(b *testing.B) {
	w := newWorld(worldOpts{})
	defer w.close()
	ctx := context.Background()
	calls := turnCalls(16, "sleep")
	b.ReportAllocs()
	for b.Loop() {
		execTurn(ctx, w.agent, calls, ts.WithMaxParallel(16))
	}
	b.ReportMetric(float64(b.Elapsed())/float64(b.N)/float64(time.Millisecond), "makespan/ideal")
}

// --- scopes and memory ----------------------------------------------------

// BenchmarkRestrict1000Scopes: one op creates 1,000 scopes, each restricted
// to one name, under 10,000 global tools.
func BenchmarkRestrict1000Scopes(b *testing.B) {
	w := newWorld(worldOpts{extraTools: 9_999})
	defer w.close()
	round := 0
	b.ReportAllocs()
	for b.Loop() {
		round++
		b.StopTimer()
		heap := heapNow()
		b.StartTimer()
		scopes := make([]*ts.Scope, 1000)
		for i := range scopes {
			scopes[i] = must(w.reg.NewScope(fmt.Sprintf("r%d-%d", round, i)))
			must(scopes[i].Restrict(ts.Restriction{Allow: []string{"filler_00042"}}))
		}
		b.StopTimer()
		b.ReportMetric(float64(heapNow()-heap), "heap-B/1000scopes")
		for _, s := range scopes {
			s.Dispose()
		}
		b.StartTimer()
	}
}

func BenchmarkHeapPerIdleScope(b *testing.B) {
	w := newWorld(worldOpts{})
	defer w.close()
	const n = 2000
	round := 0
	for b.Loop() {
		round++
		perScope, _ := heapPerScope(w.reg, n, fmt.Sprintf("h%d", round))
		b.ReportMetric(perScope, "heap-B/scope")
	}
}

func BenchmarkCreateDisposeScopes(b *testing.B) {
	n := 100_000
	if testing.Short() {
		n = 10_000
	}
	round := 0
	for b.Loop() {
		round++
		d, warm, leaked := createDisposeCheck(n, fmt.Sprintf("cd%d", round))
		b.ReportMetric(float64(d.Nanoseconds())/float64(n), "ns/scope")
		b.ReportMetric(float64(warm), "goroutines-warm")
		b.ReportMetric(float64(leaked), "goroutines-leaked")
		if warm > warmPoolBound {
			b.Errorf("%d goroutines above the registry's own after disposing %d scopes (its warm pool keeps at most %d)", warm, n, warmPoolBound)
		}
		if leaked > 0 {
			b.Errorf("%d goroutines outlive the registry after disposing %d scopes and closing it", leaked, n)
		}
	}
}

// --- message path and protoactor ------------------------------------------

func BenchmarkMessagePathExecute(b *testing.B) {
	w := newWorld(worldOpts{})
	defer w.close()
	m := newMsgClient(w)
	m.call()
	b.ReportAllocs()
	for b.Loop() {
		m.call()
	}
	reportCalls(b, 1)
}

func BenchmarkProtoactorRoundTrip(b *testing.B) {
	e := newEcho()
	defer e.close()
	b.ReportAllocs()
	for b.Loop() {
		e.call()
	}
	reportCalls(b, 1)
}

// --- baselines ------------------------------------------------------------

func BenchmarkBaselineDirectCall(b *testing.B) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := floorCall(ctx); err != nil {
			b.Fatal(err)
		}
	}
	reportCalls(b, 1)
}

func BenchmarkBaselineMapMutex(b *testing.B) {
	m := newMapRegistry(0)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.call(ctx, "t", trivialRaw); err != nil {
			b.Fatal(err)
		}
	}
	reportCalls(b, 1)
}

func BenchmarkBaselineMapMutexGoroutine(b *testing.B) {
	m := newMapRegistry(0)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.callGo(ctx, "t", trivialRaw); err != nil {
			b.Fatal(err)
		}
	}
	reportCalls(b, 1)
}

// --- peers ----------------------------------------------------------------

func BenchmarkEinoToolsNode1(b *testing.B) {
	ctx := context.Background()
	e := newEino(ctx)
	b.ReportAllocs()
	for b.Loop() {
		e.call(ctx, e.one)
	}
	reportCalls(b, 1)
}

func BenchmarkEinoToolsNode16(b *testing.B) {
	ctx := context.Background()
	e := newEino(ctx)
	b.ReportAllocs()
	for b.Loop() {
		e.call(ctx, e.many)
	}
	reportCalls(b, 16)
}

func BenchmarkMCPGoToolsCall(b *testing.B) {
	ctx := context.Background()
	m := newMCP()
	m.call(ctx)
	b.ReportAllocs()
	for b.Loop() {
		m.call(ctx)
	}
	reportCalls(b, 1)
}
