package runtime_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"testing"
	"time"

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
			var total time.Duration
			for b.Loop() {
				b.StopTimer()
				reg, _ := runtime.New(runtime.WithEvents(false))
				g := reg.Global()
				def := trivialDef("x")
				b.StartTimer()
				start := time.Now()
				for _, name := range names {
					def.Name = name
					if _, err := g.Register(def); err != nil {
						b.Fatal(err)
					}
				}
				total += time.Since(start)
				b.StopTimer()
				_ = reg.Close(context.Background())
				b.StartTimer()
			}
			b.ReportMetric(float64(total.Nanoseconds())/float64(b.N*n), "ns/tool")
		})
	}
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
