package main

import (
	"context"
	"fmt"
	"runtime"
	"time"

	ts "github.com/toolscope/toolscope/runtime"
)

// heapNow is the live heap after a full collection.
func heapNow() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// stackNow is the stack memory in use.
func stackNow() int64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.StackInuse)
}

// heapPerScope creates n idle scopes, each with one restriction, and returns
// the live heap and stack bytes per scope; the scopes are disposed after.
func heapPerScope(reg *ts.Registry, n int, prefix string) (heapB, stackB float64) {
	scopes := make([]*ts.Scope, n)
	before, sBefore := heapNow(), stackNow()
	for i := range scopes {
		scopes[i] = must(reg.NewScope(fmt.Sprintf("%s-%d", prefix, i)))
		must(scopes[i].Restrict(ts.Restriction{Allow: []string{"t"}}))
	}
	time.Sleep(10 * time.Millisecond) // let actors go idle
	after, sAfter := heapNow(), stackNow()
	runtime.KeepAlive(scopes)
	for _, s := range scopes {
		s.Dispose()
	}
	return float64(after-before) / float64(n), float64(sAfter-sBefore) / float64(n)
}

// heapPerTool registers n filler tools in a fresh registry and returns the
// live heap bytes per tool.
func heapPerTool(n int) float64 {
	reg := must(ts.New())
	defer reg.Close(context.Background())
	before := heapNow()
	registerFillers(reg, n)
	after := heapNow()
	runtime.KeepAlive(reg)
	return float64(after-before) / float64(n)
}

// createDispose creates and disposes n scopes, one after the other.
func createDispose(reg *ts.Registry, n int, prefix string) time.Duration {
	start := time.Now()
	for i := range n {
		s := must(reg.NewScope(fmt.Sprintf("%s-%d", prefix, i)))
		s.Dispose()
	}
	return time.Since(start)
}

// warmPoolBound is the most idle workers a registry keeps warm
// (runtime.newWorkerPool(64)); they exit at Close.
const warmPoolBound = 64

// createDisposeCheck creates and disposes n scopes, one after the other, in
// a fresh registry. It reports the time, the goroutines above the
// registry's own once the scopes are gone (its warm worker pool may stay:
// at most warmPoolBound, whatever n is) and the goroutines left above the
// starting count once the registry is closed (a leak: must be 0).
func createDisposeCheck(n int, prefix string) (d time.Duration, warm, leaked int) {
	base := runtime.NumGoroutine()
	w := newWorld(worldOpts{})
	own := runtime.NumGoroutine()
	d = createDispose(w.reg, n, prefix)
	// Let transient goroutines (protoactor's dead-letter throttle lives
	// about a second) go before counting what stays.
	settleGoroutines(own+warmPoolBound, 5*time.Second)
	warm = max(runtime.NumGoroutine()-own, 0)
	w.close()
	leaked = settleGoroutines(base, 5*time.Second)
	return d, warm, leaked
}

// settleGoroutines waits up to d for the goroutine count to return to base
// and returns how many remain above it.
func settleGoroutines(base int, d time.Duration) int {
	deadline := time.Now().Add(d)
	for {
		left := runtime.NumGoroutine() - base
		if left <= 0 || time.Now().After(deadline) {
			return max(left, 0)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
