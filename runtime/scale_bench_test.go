package runtime_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	goruntime "runtime"

	"github.com/toolscope/toolscope/runtime"
)

// -register.big adds n=1,000,000 to BenchmarkRegisterN (a few seconds with
// an O(log n) table; far too slow for the normal suite under -race).
var registerBig = flag.Bool("register.big", false, "BenchmarkRegisterN: also register 1,000,000 tools")

// BenchmarkRegisterN registers n tools on the global scope through the
// public API and reports the cost per tool. O(log n) registration keeps
// ns/tool about flat as n grows. Run with -benchtime=1x for the large n.
func BenchmarkRegisterN(b *testing.B) {
	sizes := []int{1_000, 10_000, 100_000}
	if *registerBig {
		sizes = append(sizes, 1_000_000)
	}
	for _, n := range sizes {
		names := make([]string, n)
		for i := range names {
			names[i] = fmt.Sprintf("tool_%07d", i)
		}
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			var total, cpu time.Duration
			for b.Loop() {
				b.StopTimer()
				reg, _ := runtime.New(runtime.WithEvents(false))
				g := reg.Global()
				def := trivialDef("x")
				b.StartTimer()
				start, cpu0 := time.Now(), cpuTime()
				for _, name := range names {
					def.Name = name
					if _, err := g.Register(def); err != nil {
						b.Fatal(err)
					}
				}
				total += time.Since(start)
				cpu += cpuTime() - cpu0
				b.StopTimer()
				_ = reg.Close(context.Background())
				b.StartTimer()
			}
			b.ReportMetric(float64(total.Nanoseconds())/float64(b.N*n), "ns/tool")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*n), "cpu-ns/tool")
		})
	}
}

// cpuTime is the CPU time the process has used (user and system, every
// thread: the collector's work included). On a loaded machine it tells the
// cost of a registration better than wall time, which includes waiting for
// a core.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkLookupN: Get and ExecutionMode on an agent scope while the
// global scope holds n tools. Both must stay flat from 1 to 100,000 tools.
func BenchmarkLookupN(b *testing.B) {
	for _, n := range []int{1, 100_000} {
		reg, _ := runtime.New(runtime.WithEvents(false))
		g := reg.Global()
		if _, err := g.Register(trivialDef("t")); err != nil {
			b.Fatal(err)
		}
		def := trivialDef("x")
		for i := range n - 1 {
			def.Name = fmt.Sprintf("filler_%07d", i)
			if _, err := g.Register(def); err != nil {
				b.Fatal(err)
			}
		}
		s, _ := reg.NewScope("a")
		call := runtime.Call{ID: "1", Name: "t", Arguments: json.RawMessage(`{}`)}
		b.Run(fmt.Sprintf("Get/n=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := s.Get("t"); !ok {
					b.Fatal("t not found")
				}
			}
		})
		b.Run(fmt.Sprintf("ExecutionMode/n=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if m := s.ExecutionMode(call); m != runtime.Parallel {
					b.Fatal("want parallel")
				}
			}
		})
		b.Run(fmt.Sprintf("Execute/n=%d", n), func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if r := s.Execute(ctx, call); r.IsError() {
					b.Fatal(r.ErrorMessage())
				}
			}
		})
		_ = reg.Close(context.Background())
	}
}

// -scopes.big adds n=1,000,000 to BenchmarkIdleScopes.
var scopesBig = flag.Bool("scopes.big", false, "BenchmarkIdleScopes: also create 1,000,000 scopes")

// liveHeap is the live heap after a full collection.
func liveHeap() uint64 {
	var m goruntime.MemStats
	goruntime.GC()
	goruntime.GC()
	goruntime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkIdleScopes creates n idle agent scopes (bare, or each with one
// restriction of the one global tool) in a fresh registry and reports the
// live heap per scope (after GC, the registry's own heap subtracted) and
// the time Close takes to tear them all down. Run with -benchtime=1x.
func BenchmarkIdleScopes(b *testing.B) {
	sizes := []int{100_000}
	if *scopesBig {
		sizes = append(sizes, 1_000_000)
	}
	for _, n := range sizes {
		keys := make([]string, n)
		for i := range keys {
			keys[i] = fmt.Sprintf("agent-%07d", i)
		}
		for _, restricted := range []bool{false, true} {
			name := fmt.Sprintf("bare/n=%d", n)
			if restricted {
				name = fmt.Sprintf("restricted/n=%d", n)
			}
			b.Run(name, func(b *testing.B) {
				var heap float64
				var closing time.Duration
				for b.Loop() {
					b.StopTimer()
					reg, _ := runtime.New(runtime.WithEvents(false))
					if _, err := reg.Global().Register(trivialDef("t")); err != nil {
						b.Fatal(err)
					}
					scopes := make([]*runtime.Scope, n)
					before := liveHeap()
					b.StartTimer()
					for i, k := range keys {
						s, err := reg.NewScope(k)
						if err != nil {
							b.Fatal(err)
						}
						if restricted {
							if _, err := s.Restrict(runtime.Restriction{Allow: []string{"t"}}); err != nil {
								b.Fatal(err)
							}
						}
						scopes[i] = s
					}
					b.StopTimer()
					after := liveHeap()
					goruntime.KeepAlive(scopes)
					heap += float64(after-before) / float64(n)
					start := time.Now()
					if err := reg.Close(context.Background()); err != nil {
						b.Fatal(err)
					}
					closing += time.Since(start)
					b.StartTimer()
				}
				b.ReportMetric(heap/float64(b.N), "heap-B/scope")
				b.ReportMetric(float64(closing.Milliseconds())/float64(b.N), "close-ms")
			})
		}
	}
}

// lookupWorld is a registry whose global scope holds n tools ("t" and
// fillers) and an agent scope "a" that reads them.
func lookupWorld(b *testing.B, n int) (*runtime.Registry, *runtime.Scope) {
	b.Helper()
	reg, _ := runtime.New(runtime.WithEvents(false))
	g := reg.Global()
	if _, err := g.Register(trivialDef("t")); err != nil {
		b.Fatal(err)
	}
	def := trivialDef("x")
	for i := range n - 1 {
		def.Name = fmt.Sprintf("filler_%07d", i)
		if _, err := g.Register(def); err != nil {
			b.Fatal(err)
		}
	}
	s, err := reg.NewScope("a")
	if err != nil {
		b.Fatal(err)
	}
	return reg, s
}

// BenchmarkLookupRatio measures Get, ExecutionMode and Execute on a scope
// whose registry holds 100,000 tools against one holding 1, interleaved:
// each iteration is one round of a block of ops on each side (the side
// that goes first alternates), so load on the machine hits both alike. It
// reports the median and range of the per-round ratios big ÷ small; flat
// lookups keep the median near 1. Run with -benchtime=Nx (N rounds).
func BenchmarkLookupRatio(b *testing.B) {
	const block = 128
	smallReg, small := lookupWorld(b, 1)
	defer smallReg.Close(context.Background())
	bigReg, big := lookupWorld(b, 100_000)
	defer bigReg.Close(context.Background())
	call := runtime.Call{ID: "1", Name: "t", Arguments: json.RawMessage(`{}`)}
	ctx := context.Background()
	ops := []struct {
		name string
		op   func(s *runtime.Scope)
	}{
		{"Get", func(s *runtime.Scope) {
			if _, ok := s.Get("t"); !ok {
				b.Fatal("t not found")
			}
		}},
		{"ExecutionMode", func(s *runtime.Scope) {
			if s.ExecutionMode(call) != runtime.Parallel {
				b.Fatal("want parallel")
			}
		}},
		{"Execute", func(s *runtime.Scope) {
			if r := s.Execute(ctx, call); r.IsError() {
				b.Fatal(r.ErrorMessage())
			}
		}},
	}
	timed := func(s *runtime.Scope, op func(*runtime.Scope)) time.Duration {
		start := time.Now()
		for range block {
			op(s)
		}
		return time.Since(start)
	}
	for _, o := range ops {
		b.Run(o.name, func(b *testing.B) {
			var ratios []float64
			var sum [2]time.Duration
			round := 0
			for b.Loop() {
				var ts, tb time.Duration
				if round%2 == 0 {
					ts, tb = timed(small, o.op), timed(big, o.op)
				} else {
					tb, ts = timed(big, o.op), timed(small, o.op)
				}
				round++
				sum[0] += ts
				sum[1] += tb
				ratios = append(ratios, float64(tb)/float64(ts))
			}
			slices.Sort(ratios)
			b.ReportMetric(ratios[len(ratios)/2], "median-100k/1")
			b.ReportMetric(ratios[len(ratios)/10], "p10-100k/1")
			b.ReportMetric(ratios[len(ratios)*9/10], "p90-100k/1")
			b.ReportMetric(float64(sum[0].Nanoseconds())/float64(round*block), "ns/op-1")
			b.ReportMetric(float64(sum[1].Nanoseconds())/float64(round*block), "ns/op-100k")
		})
	}
}
