package main

// scale.go holds the scale scenarios of the load generator: registering
// 100,000 and 1,000,000 tools (time per tool, then lookup and Execute cost
// against a 1-tool registry, interleaved), and 100,000 and 1,000,000 idle
// scopes (heap per scope after GC, creation and Close time). The 1,000,000
// cases run with -big only; go test's BenchmarkScale* cover 100,000 (and
// 1,000,000 with its own -big flag).

import (
	"context"
	"fmt"
	"regexp"
	goruntime "runtime"
	"time"

	ts "github.com/toolscope/toolscope/runtime"
)

// sizeName is 100k, 1m: the suffix of a scale figure's key.
func sizeName(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%dm", n/1_000_000)
	case n >= 1_000 && n%1_000 == 0:
		return fmt.Sprintf("%dk", n/1_000)
	}
	return fmt.Sprint(n)
}

// fillResult is how far registering up to n tools got within a budget.
type fillResult struct {
	reached   int           // tools registered (n unless the budget ran out)
	elapsed   time.Duration // time spent in Register
	lastNsPer float64       // ns per tool over the last tenth registered
}

// fillTools registers filler tools on w's global scope until it holds n
// tools besides w's own, or budget has passed (checked every 1,000 tools,
// or every tenth of n when that is less); it records the time per tool
// overall and over the last tenth registered (where a superlinear table
// shows), or the last part of a tenth when the budget ran out.
func fillTools(w *world, n int, budget time.Duration, label string) fillResult {
	g := w.reg.Global()
	def := trivialTool("filler")
	chunk := max(n/10, 1)
	every := min(chunk, 1000)
	var res fillResult
	start := time.Now()
	chunkStart, chunkFrom := start, 0
	for i := range n {
		def.Name = fmt.Sprintf("filler_%07d", i)
		must(g.Register(def))
		res.reached = i + 1
		if res.reached%every != 0 && res.reached != n {
			continue
		}
		now := time.Now()
		over := now.Sub(start) > budget && res.reached < n
		if res.reached%chunk == 0 || res.reached == n || over {
			res.lastNsPer = float64(now.Sub(chunkStart).Nanoseconds()) / float64(res.reached-chunkFrom)
			chunkStart, chunkFrom = now, res.reached
		}
		progress.set(fmt.Sprintf("%s: %d/%d tools registered", label, res.reached, n))
		if over {
			break
		}
	}
	res.elapsed = time.Since(start)
	return res
}

// runScaleTools registers n tools (within budget) and, when all are in,
// interleaves Execute and Get against a 1-tool registry.
func runScaleTools(cfg runConfig, n int, scale map[string]float64, inter map[string]Interleaved) {
	sz := sizeName(n)
	ctx := context.Background()
	big := newWorld(worldOpts{})
	defer big.close()
	fr := fillTools(big, n, cfg.registerBudget, "scale: register "+sz)
	scale["register_"+sz+"_tools_reached"] = float64(fr.reached)
	scale["register_"+sz+"_tools_seconds"] = sig3(fr.elapsed.Seconds())
	scale["register_"+sz+"_ns_per_tool"] = sig3(float64(fr.elapsed.Nanoseconds()) / float64(fr.reached))
	scale["register_"+sz+"_last_tenth_ns_per_tool"] = sig3(fr.lastNsPer)
	if fr.reached < n {
		// No lookup figures at a size that was not reached.
		return
	}
	small := newWorld(worldOpts{})
	defer small.close()
	progress.set("scale: interleaved Execute, " + sz + " tools vs 1")
	inter["tools"+sz+"_vs_1"] = measurePair(cfg,
		fmt.Sprintf("toolscope typed Execute with %d global tools", n+3), "the same with 1 global tool (and 3 fixtures)", 32,
		func() (op, op, func()) {
			return func() int { execOnce(ctx, big.agent); return 1 },
				func() int { execOnce(ctx, small.agent); return 1 }, func() {}
		})
	progress.set("scale: interleaved Get, " + sz + " tools vs 1")
	get := func(s *ts.Scope) op {
		return func() int {
			if _, ok := s.Get("t"); !ok {
				panic("t not found")
			}
			return 1
		}
	}
	inter["lookup"+sz+"_vs_1"] = measurePair(cfg,
		fmt.Sprintf("Scope.Get of a tool with %d global tools", n+3), "the same with 1 global tool (and 3 fixtures)", 32,
		func() (op, op, func()) { return get(big.agent), get(small.agent), func() {} })
}

// runScaleScopes creates n idle scopes, each with one restriction, in a
// fresh registry, and records the heap per scope after GC (ReadMemStats),
// the creation time and the registry's Close time per scope.
func runScaleScopes(n int, scale map[string]float64) {
	sz := sizeName(n)
	w := newWorld(worldOpts{})
	progress.set(fmt.Sprintf("scale: %s idle scopes", sz))
	scopes := make([]*ts.Scope, n)
	before := heapNow()
	start := time.Now()
	for i := range scopes {
		scopes[i] = must(w.reg.NewScope(fmt.Sprintf("idle-%d", i)))
		must(scopes[i].Restrict(ts.Restriction{Allow: []string{"t"}}))
	}
	created := time.Since(start)
	time.Sleep(20 * time.Millisecond) // let the actors go idle
	after := heapNow()
	goruntime.KeepAlive(scopes)
	progress.set(fmt.Sprintf("scale: Close with %s idle scopes", sz))
	start = time.Now()
	err := w.reg.Close(context.Background())
	closed := time.Since(start)
	check(err)
	scale["idle_scopes_"+sz+"_heap_per_scope_bytes"] = sig3(float64(after-before) / float64(n))
	scale["idle_scopes_"+sz+"_create_ns_per_scope"] = sig3(float64(created.Nanoseconds()) / float64(n))
	scale["idle_scopes_"+sz+"_close_ms"] = sig3(float64(closed.Microseconds()) / 1e3)
	scale["idle_scopes_"+sz+"_close_ns_per_scope"] = sig3(float64(closed.Nanoseconds()) / float64(n))
}

// runScale runs the selected scale scenarios: scale_tools_100k,
// scale_scopes_100k and, with cfg.big, scale_tools_1m and scale_scopes_1m.
func runScale(cfg runConfig, filter *regexp.Regexp, inter map[string]Interleaved) map[string]float64 {
	scale := map[string]float64{}
	sizes := []int{100_000}
	if cfg.big {
		sizes = append(sizes, 1_000_000)
	}
	for _, n := range sizes {
		if filter.MatchString("scale_tools_" + sizeName(n)) {
			runScaleTools(cfg, n, scale, inter)
		}
		if filter.MatchString("scale_scopes_" + sizeName(n)) {
			runScaleScopes(n, scale)
		}
	}
	if len(scale) == 0 {
		return nil
	}
	return scale
}
