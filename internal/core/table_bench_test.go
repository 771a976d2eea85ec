package core

import (
	"fmt"
	"testing"
	"time"
)

func benchNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("tool_%07d", i)
	}
	return names
}

// BenchmarkLayerAddToolN adds n tools to a layer one at a time (each
// AddTool returns a new immutable layer) and reports the cost per tool.
func BenchmarkLayerAddToolN(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000, 1_000_000} {
		names := benchNames(n)
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			var total time.Duration
			for b.Loop() {
				start := time.Now()
				l := Empty
				for i, name := range names {
					l, _, _ = l.AddTool(Entry{ID: uint64(i), Name: name})
				}
				total += time.Since(start)
				if l.Len() != n {
					b.Fatal(l.Len())
				}
			}
			b.ReportMetric(float64(total.Nanoseconds())/float64(b.N*n), "ns/tool")
		})
	}
}

// BenchmarkLayerLookupN looks up a present name in a layer of n tools.
func BenchmarkLayerLookupN(b *testing.B) {
	for _, n := range []int{1, 100, 10_000, 100_000} {
		names := benchNames(n)
		l := Empty
		for i, name := range names {
			l, _, _ = l.AddTool(Entry{ID: uint64(i), Name: name})
		}
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			i := 0
			for b.Loop() {
				if _, ok := l.Lookup(names[i]); !ok {
					b.Fatal("missing")
				}
				i++
				if i == n {
					i = 0
				}
			}
		})
		b.Run(fmt.Sprintf("same/n=%d", n), func(b *testing.B) {
			name := names[n/2]
			for b.Loop() {
				if _, ok := l.Lookup(name); !ok {
					b.Fatal("missing")
				}
			}
		})
	}
}
