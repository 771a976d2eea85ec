package main

// Microbenchmarks: cd bench && go test -bench . -benchmem
// Timings are reported, never asserted.

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
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

func BenchmarkExecuteBare(b *testing.B) { benchExecute(b, worldOpts{}) }

// BenchmarkExecuteRaw: the no-decode tool (rawTool), the counterpart of
// BenchmarkEinoToolsNodeRaw1.
func BenchmarkExecuteRaw(b *testing.B) {
	w := newWorld(worldOpts{})
	defer w.close()
	ctx := context.Background()
	execRaw(ctx, w.agent)
	b.ReportAllocs()
	for b.Loop() {
		execRaw(ctx, w.agent)
	}
	reportCalls(b, 1)
}

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

// BenchmarkTurnRaw16: 16 parallel calls of the no-decode tool, the
// counterpart of BenchmarkEinoToolsNodeRaw16.
func BenchmarkTurnRaw16(b *testing.B) {
	w := newWorld(worldOpts{})
	defer w.close()
	ctx := context.Background()
	calls := turnCalls(16, "r")
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
	w := newWorld(worldOpts{actors: true})
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

func BenchmarkEinoToolsNodeRaw1(b *testing.B)  { benchEino(b, newEinoRaw, false) }
func BenchmarkEinoToolsNodeRaw16(b *testing.B) { benchEino(b, newEinoRaw, true) }

// BenchmarkEinoToolsNodeFull1: the typed tool behind four pass-through
// middlewares, eino's counterpart of BenchmarkExecuteFull.
func BenchmarkEinoToolsNodeFull1(b *testing.B) { benchEino(b, newEinoFull, false) }

func benchEino(b *testing.B, mk func(context.Context) *einoNode, many bool) {
	ctx := context.Background()
	e := mk(ctx)
	m, calls := e.one, 1
	if many {
		m, calls = e.many, 16
	}
	e.call(ctx, m)
	b.ReportAllocs()
	for b.Loop() {
		e.call(ctx, m)
	}
	reportCalls(b, calls)
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

// --- throughput and scale ---------------------------------------------------

// BenchmarkCallers: n goroutines share b.N typed Execute calls, all on one
// scope or each on its own scope; calls/s is the figure.
func BenchmarkCallers(b *testing.B) {
	for _, shape := range []string{"one_scope", "scopes"} {
		for _, n := range callerCounts {
			b.Run(fmt.Sprintf("%s/callers=%d", shape, n), func(b *testing.B) {
				w := newWorld(worldOpts{})
				defer w.close()
				scopes := []*ts.Scope{w.agent}
				if shape == "scopes" {
					scopes = make([]*ts.Scope, n)
					for i := range scopes {
						scopes[i] = must(w.reg.NewScope(fmt.Sprintf("c%d", i)))
					}
				}
				ctx := context.Background()
				execOnce(ctx, w.agent)
				var next atomic.Int64
				var wg sync.WaitGroup
				b.ReportAllocs()
				b.ResetTimer()
				for i := range n {
					wg.Add(1)
					go func() {
						defer wg.Done()
						s := scopes[i%len(scopes)]
						for next.Add(1) <= int64(b.N) {
							execOnce(ctx, s)
						}
					}()
				}
				wg.Wait()
				b.StopTimer()
				reportCalls(b, 1)
			})
		}
	}
}

// BenchmarkScaleTools and BenchmarkScaleIdleScopes run at 10,000 by
// default, so that CI's single-iteration run (-benchtime 1x) stays short
// while registration is superlinear (100,000 tools take 15–70 s on the
// shared 2-core machine today); -scale runs them at 100,000 and -big at
// 100,000 and 1,000,000 (go test -run '^$' -bench Scale -benchtime 1x
// -big). The load generator (go run .) runs 100,000 always and 1,000,000
// with its own -big.
var (
	scaleFlag = flag.Bool("scale", false, "BenchmarkScale*: 100,000 tools and scopes instead of 10,000")
	bigScale  = flag.Bool("big", false, "BenchmarkScale*: 100,000 and 1,000,000 tools and scopes")
)

func scaleSizes() []int {
	switch {
	case *bigScale:
		return []int{100_000, 1_000_000}
	case *scaleFlag:
		return []int{100_000}
	}
	return []int{10_000}
}

// BenchmarkScaleTools registers n typed tools (ns/tool), then measures
// Execute and Get with n tools; compare with BenchmarkExecuteTools/n=1
// and BenchmarkReadsChain3 (the load generator interleaves the two).
func BenchmarkScaleTools(b *testing.B) {
	for _, n := range scaleSizes() {
		w := newWorld(worldOpts{})
		start := time.Now()
		fr := fillTools(w, n, time.Hour, "bench")
		perTool := float64(time.Since(start).Nanoseconds()) / float64(fr.reached)
		ctx := context.Background()
		b.Run(fmt.Sprintf("Execute/n=%s", sizeName(n)), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				execOnce(ctx, w.agent)
			}
			reportCalls(b, 1)
			b.ReportMetric(perTool, "register-ns/tool") // after the loop, which resets metrics
		})
		b.Run(fmt.Sprintf("Get/n=%s", sizeName(n)), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := w.agent.Get("t"); !ok {
					b.Fatal("t not found")
				}
			}
			reportCalls(b, 1)
		})
		w.close()
	}
}

// BenchmarkScaleIdleScopes creates n idle scopes with one restriction each
// and reports the heap per scope after GC, then closes the registry and
// reports Close's time per scope.
func BenchmarkScaleIdleScopes(b *testing.B) {
	for _, n := range scaleSizes() {
		b.Run(fmt.Sprintf("n=%s", sizeName(n)), func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				w := newWorld(worldOpts{})
				before := heapNow()
				b.StartTimer()
				scopes := make([]*ts.Scope, n)
				for i := range scopes {
					scopes[i] = must(w.reg.NewScope(fmt.Sprintf("idle-%d", i)))
					must(scopes[i].Restrict(ts.Restriction{Allow: []string{"t"}}))
				}
				b.StopTimer()
				after := heapNow()
				runtime.KeepAlive(scopes)
				start := time.Now()
				check(w.reg.Close(context.Background()))
				b.ReportMetric(float64(after-before)/float64(n), "heap-B/scope")
				b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(n), "close-ns/scope")
				b.StartTimer()
			}
		})
	}
}
