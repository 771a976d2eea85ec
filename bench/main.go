// Command bench is toolscope's load generator: it runs the scenarios of
// bench/README.md against toolscope, in-process baselines and peers in one
// process, prints a table, and writes a JSON report and an HTML page.
//
//	cd bench && go run . [-quick] [-json FILE|-] [-html FILE]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	ts "github.com/toolscope/toolscope/runtime"
)

// Result is one scenario's figures.
type Result struct {
	Name          string             `json:"name"`
	Group         string             `json:"group"`
	Callers       int                `json:"callers"`
	Calls         int64              `json:"calls"`
	Ops           int64              `json:"ops"`
	Seconds       float64            `json:"seconds"`
	CallsPerSec   float64            `json:"calls_per_sec"`
	NsPerCall     float64            `json:"ns_per_call"` // wall time per call (serial) or 1/throughput (concurrent)
	NsPerOp       float64            `json:"ns_per_op"`   // mean latency of one op (a call or a turn)
	P50us         float64            `json:"p50_us"`
	P99us         float64            `json:"p99_us"`
	P999us        float64            `json:"p999_us"`
	AllocsPerCall float64            `json:"allocs_per_call"`
	BytesPerCall  float64            `json:"bytes_per_call"`
	HeapBytes     int64              `json:"heap_bytes"`
	Extra         map[string]float64 `json:"extra,omitempty"`
}

// Report is the JSON report.
type Report struct {
	Machine   map[string]any `json:"machine"`
	GoVersion string         `json:"go_version"`
	Commit    string         `json:"commit"`
	Started   time.Time      `json:"started"`
	Mode      string         `json:"mode"`
	Rounds    int            `json:"rounds"`
	// Ratios holds every ratio that was measured, and only those: the
	// median of the interleaved rounds for a pair (see Interleaved), else
	// the ratio of two timed scenarios, 3 significant digits (sig3).
	Ratios  map[string]float64 `json:"ratios"`
	Targets map[string]string  `json:"targets"`
	// Goals are issue 13's goals (performance, round 2).
	Goals map[string]string `json:"goals,omitempty"`
	// Interleaved has the median and range of each interleaved ratio.
	Interleaved map[string]Interleaved `json:"interleaved,omitempty"`
	Scenarios   []Result               `json:"scenarios"`
	Memory      map[string]float64     `json:"memory"`
	// Scale has the scale scenarios: registering 100k (1M) tools, 100k
	// (1M) idle scopes.
	Scale     map[string]float64 `json:"scale,omitempty"`
	Reference string             `json:"reference"`
}

// op is one caller's operation; it returns the number of tool calls done.
type op func() int

type scenario struct {
	name, group string
	callers     int
	// setup builds the system and returns one op per caller and a teardown.
	setup func(callers int) ([]op, func())
}

var progress = newProgressLine(os.Stderr)

func main() {
	quick := flag.Bool("quick", false, "short run (within 60 s on 2 cores)")
	jsonOut := flag.String("json", "", "write the JSON report to FILE (- for stdout)")
	htmlOut := flag.String("html", "", "write the HTML report to FILE")
	dur := flag.Duration("d", 0, "time per scenario and round (default 300ms quick, 2s full)")
	rounds := flag.Int("rounds", 0, "rounds over the timed scenarios; the median round is kept (default 3)")
	svgDir := flag.String("svg", "", "also write the charts as SVG files into DIR (ratios.svg, latency.svg, agents.svg)")
	from := flag.String("from", "", "render the table, HTML and SVG from an earlier JSON report instead of running")
	only := flag.String("run", "", "run only the timed scenarios whose name matches this regexp")
	ref := flag.Bool("ref", true, "measure the node reference implementation when node is present (npm installs it into ref/node_modules)")
	big := flag.Bool("big", false, "also run the 1,000,000-tool and 1,000,000-scope scale scenarios")
	registerBudget := flag.Duration("register-budget", 0, "time allowed to register a scale scenario's tools before it stops short (default 20s quick, 90s full)")
	pairRounds := flag.Int("pair-rounds", 0, "rounds of each interleaved ratio (default 15 quick, 25 full)")
	pairDur := flag.Duration("pair-d", 0, "time per round of an interleaved ratio (default 20ms quick, 160ms full)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the run to FILE")
	memProfile := flag.String("memprofile", "", "write an allocation profile of the run to FILE")
	flag.Parse()

	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		check(err)
		check(pprof.StartCPUProfile(f))
		defer func() { pprof.StopCPUProfile(); check(f.Close()) }()
	}
	if *memProfile != "" {
		goruntime.MemProfileRate = 4096
		defer func() {
			f, err := os.Create(*memProfile)
			check(err)
			check(pprof.Lookup("allocs").WriteTo(f, 0))
			check(f.Close())
		}()
	}

	cfg := runConfig{dur: 2 * time.Second, rounds: 3, scopesDisposed: 100_000, heapScopes: 10_000,
		pairRounds: 25, pairRoundDur: 160 * time.Millisecond, registerBudget: 90 * time.Second}
	mode := "full"
	if *quick {
		cfg = runConfig{dur: 300 * time.Millisecond, rounds: 3, scopesDisposed: 20_000, heapScopes: 2_000,
			pairRounds: 15, pairRoundDur: 20 * time.Millisecond, registerBudget: 20 * time.Second}
		mode = "quick"
	}
	if *dur > 0 {
		cfg.dur = *dur
	}
	if *rounds > 0 {
		cfg.rounds = *rounds
	}
	if *pairRounds > 0 {
		cfg.pairRounds = *pairRounds
	}
	if *pairDur > 0 {
		cfg.pairRoundDur = *pairDur
	}
	if *registerBudget > 0 {
		cfg.registerBudget = *registerBudget
	}
	cfg.big = *big
	if *big {
		mode += "+big"
	}

	var rep *Report
	if *from != "" {
		b, err := os.ReadFile(*from)
		check(err)
		rep = new(Report)
		check(json.Unmarshal(b, rep))
	} else {
		rep = run(cfg, mode, *only, *ref)
	}

	// The table goes to stdout unless the JSON does.
	tableW := io.Writer(os.Stdout)
	if *jsonOut == "-" {
		tableW = os.Stderr
	}
	printTable(tableW, rep)
	if *jsonOut != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		check(err)
		b = append(b, '\n')
		if *jsonOut == "-" {
			_, err = os.Stdout.Write(b)
		} else {
			err = os.WriteFile(*jsonOut, b, 0o644)
		}
		check(err)
	}
	if *htmlOut != "" {
		check(os.WriteFile(*htmlOut, []byte(renderHTML(rep)), 0o644))
	}
	if *svgDir != "" {
		check(os.MkdirAll(*svgDir, 0o755))
		for name, svg := range map[string]string{
			"ratios.svg": ratioChart(rep), "latency.svg": latencyChart(rep.Scenarios), "agents.svg": agentsChart(rep.Scenarios),
		} {
			check(os.WriteFile(filepath.Join(*svgDir, name), []byte(svg+"\n"), 0o644))
		}
	}
}

// run measures everything and builds the report.
func run(cfg runConfig, mode, only string, ref bool) *Report {
	rep := &Report{
		Machine: machine(), GoVersion: goruntime.Version(), Commit: commit(),
		Started: time.Now().UTC(), Mode: mode, Rounds: cfg.rounds,
		Targets: map[string]string{
			"bare_vs_eino": "<= 1.0", "full_vs_eino": "<= 1.5", "turn16_vs_eino": "<= 1.0",
			"tools10k_vs_1": "<= 1.1", "scopes1k_vs_floor": ">= 0.25", "heap_per_scope_bytes": "<= 2048",
		},
	}
	rep.Goals = issue13Goals
	progress.start()
	filter := regexp.MustCompile(only)
	rep.Scenarios = runTimed(cfg, filter)
	rep.Interleaved = runPairs(cfg, filter)
	if filter.MatchString("memory") {
		rep.Memory = runMemory(cfg)
	}
	rep.Scale = runScale(cfg, filter, rep.Interleaved)
	if slices.ContainsFunc(refNames, filter.MatchString) {
		status, refs := reference(ref, max(cfg.dur, time.Second))
		rep.Reference = status
		rep.Scenarios = append(rep.Scenarios, refs...)
	} else {
		rep.Reference = "not measured: not selected by -run"
	}
	progress.stop()
	rep.Ratios = ratios(rep)

	return rep
}

type runConfig struct {
	dur            time.Duration // per timed scenario and round
	rounds         int           // rounds of the timed scenarios
	scopesDisposed int
	heapScopes     int
	pairRounds     int           // rounds of each interleaved ratio
	pairRoundDur   time.Duration // length of one interleaved round
	registerBudget time.Duration // time allowed to register a scale scenario's tools
	big            bool          // the 1,000,000 scale cases
}

// refNames are the reference implementation's scenarios (bench/ref).
var refNames = []string{"ref_execute_bare", "ref_execute_full", "ref_execute_tools_10k"}

// issue13Goals are the goals of issue 13 (performance, round 2), checked
// against the interleaved medians.
var issue13Goals = map[string]string{
	"bare_vs_eino":                         "<= 0.5",
	"full_vs_eino":                         "<= 0.8",
	"turn16_vs_eino":                       "<= 0.5",
	"raw_turn16_vs_eino_raw":               "<= 0.8",
	"tools100k_vs_1":                       "<= 1.02",
	"heap_per_scope_bytes":                 "<= 1024",
	"message_path_vs_protoactor_roundtrip": "<= 1.2",
}

// --- scenarios --------------------------------------------------------------

func serial(name, group string, setup func() (op, func())) scenario {
	return scenario{name: name, group: group, callers: 1, setup: func(int) ([]op, func()) {
		o, td := setup()
		return []op{o}, td
	}}
}

func scenarios() []scenario {
	ctx := context.Background()
	one := func(f func()) op { return func() int { f(); return 1 } }
	tsSerial := func(name string, o worldOpts) scenario {
		return serial(name, "toolscope", func() (op, func()) {
			w := newWorld(o)
			return one(func() { execOnce(ctx, w.agent) }), w.close
		})
	}
	tsTurn := func(name string, calls []ts.TurnCall) scenario {
		return serial(name, "toolscope", func() (op, func()) {
			w := newWorld(worldOpts{})
			return func() int { execTurn(ctx, w.agent, calls, ts.WithMaxParallel(16)); return len(calls) }, w.close
		})
	}
	list := []scenario{
		serial("floor_direct_call", "baseline", func() (op, func()) {
			return one(func() { check(second(floorCall(ctx))) }), func() {}
		}),
		serial("map_mutex", "baseline", func() (op, func()) {
			m := newMapRegistry(0)
			return one(func() { check(second(m.call(ctx, "t", trivialRaw))) }), func() {}
		}),
		serial("map_mutex_goroutine", "baseline", func() (op, func()) {
			m := newMapRegistry(0)
			return one(func() { check(second(m.callGo(ctx, "t", trivialRaw))) }), func() {}
		}),
		serial("protoactor_roundtrip", "baseline", func() (op, func()) {
			e := newEcho()
			return one(e.call), e.close
		}),
		serial("eino_toolsnode_1", "peer", func() (op, func()) {
			e := newEino(ctx)
			return one(func() { e.call(ctx, e.one) }), func() {}
		}),
		serial("eino_toolsnode_16", "peer", func() (op, func()) {
			e := newEino(ctx)
			return func() int { e.call(ctx, e.many); return 16 }, func() {}
		}),
		serial("eino_toolsnode_raw_1", "peer", func() (op, func()) {
			e := newEinoRaw(ctx)
			return one(func() { e.call(ctx, e.one) }), func() {}
		}),
		serial("eino_toolsnode_raw_16", "peer", func() (op, func()) {
			e := newEinoRaw(ctx)
			return func() int { e.call(ctx, e.many); return 16 }, func() {}
		}),
		serial("mcpgo_tools_call", "peer", func() (op, func()) {
			m := newMCP()
			return one(func() { m.call(ctx) }), func() {}
		}),
		tsSerial("ts_execute_bare", worldOpts{}),
		tsSerial("ts_execute_full", worldOpts{full: true}),
		serial("ts_execute_raw", "toolscope", func() (op, func()) {
			w := newWorld(worldOpts{})
			return one(func() { execRaw(ctx, w.agent) }), w.close
		}),
		tsSerial("ts_execute_tools_1", worldOpts{}),
		tsSerial("ts_execute_tools_10k", worldOpts{extraTools: 9_999}),
		serial("ts_message_path", "toolscope", func() (op, func()) {
			w := newWorld(worldOpts{actors: true})
			m := newMsgClient(w)
			return one(m.call), w.close
		}),
		tsTurn("ts_turn_16", turnCalls(16, "t")),
		tsTurn("ts_turn_raw_16", turnCalls(16, "r")),
		tsTurn("ts_turn_mixed_16", mixedTurnCalls()),
		tsTurn("ts_turn_sleep_16x1ms", turnCalls(16, "sleep")),
		serial("goroutines_sleep_16x1ms", "baseline", func() (op, func()) {
			return func() int { sleepGoroutines(ctx, 16, time.Millisecond); return 16 }, func() {}
		}),
	}
	for _, n := range []int{100, 1_000, 10_000} {
		list = append(list, scenario{name: fmt.Sprintf("ts_agents_%d", n), group: "agents", callers: n,
			setup: func(callers int) ([]op, func()) {
				w := newWorld(worldOpts{})
				ops := make([]op, callers)
				for i := range ops {
					s := must(w.reg.NewScope(fmt.Sprintf("a%d", i)))
					must(s.Restrict(ts.Restriction{Allow: []string{"t"}}))
					ops[i] = one(func() { execOnce(ctx, s) })
				}
				return ops, w.close
			}},
			scenario{name: fmt.Sprintf("map_mutex_goroutine_agents_%d", n), group: "agents-baseline", callers: n,
				setup: func(callers int) ([]op, func()) {
					m := newMapRegistry(0)
					ops := make([]op, callers)
					for i := range ops {
						ops[i] = one(func() { check(second(m.callGo(ctx, "t", trivialRaw))) })
					}
					return ops, func() {}
				}})
	}
	// Throughput with n closed-loop callers on one scope, and on n scopes.
	for _, n := range callerCounts {
		list = append(list,
			scenario{name: fmt.Sprintf("ts_callers_%d_one_scope", n), group: "callers-one-scope", callers: n,
				setup: func(callers int) ([]op, func()) {
					w := newWorld(worldOpts{})
					ops := make([]op, callers)
					for i := range ops {
						ops[i] = one(func() { execOnce(ctx, w.agent) })
					}
					return ops, w.close
				}},
			scenario{name: fmt.Sprintf("ts_callers_%d_scopes", n), group: "callers-scopes", callers: n,
				setup: func(callers int) ([]op, func()) {
					w := newWorld(worldOpts{})
					ops := make([]op, callers)
					for i := range ops {
						s := must(w.reg.NewScope(fmt.Sprintf("c%d", i)))
						ops[i] = one(func() { execOnce(ctx, s) })
					}
					return ops, w.close
				}})
	}
	return list
}

// callerCounts are the caller counts of the throughput scenarios.
var callerCounts = []int{1, 2, 8, 64, 1024}

func second[T any](_ T, err error) error { return err }

// runTimed runs every timed scenario cfg.rounds times and keeps, for each,
// the round with the median throughput.
func runTimed(cfg runConfig, filter *regexp.Regexp) []Result {
	list := slices.DeleteFunc(scenarios(), func(sc scenario) bool { return !filter.MatchString(sc.name) })
	all := make([][]Result, len(list))
	total := len(list) * cfg.rounds
	k := 0
	for r := range cfg.rounds {
		for i, sc := range list {
			k++
			progress.set(fmt.Sprintf("[%d/%d] round %d/%d %s", k, total, r+1, cfg.rounds, sc.name))
			all[i] = append(all[i], runScenario(sc, cfg.dur))
		}
	}
	out := make([]Result, len(list))
	for i, rs := range all {
		slices.SortFunc(rs, func(a, b Result) int {
			if a.CallsPerSec < b.CallsPerSec {
				return -1
			}
			if a.CallsPerSec > b.CallsPerSec {
				return 1
			}
			return 0
		})
		out[i] = rs[len(rs)/2]
	}
	return out
}

// runScenario runs a closed loop: each caller repeats its op until dur has
// passed, recording each op's latency.
func runScenario(sc scenario, dur time.Duration) Result {
	ops, teardown := sc.setup(sc.callers)
	defer teardown()
	for _, o := range ops[:min(len(ops), 64)] { // warm up
		o()
	}
	lat := make([][]int64, len(ops))
	calls := make([]int64, len(ops))
	var ready, done sync.WaitGroup
	startGate := make(chan struct{})
	var stop atomic.Bool
	goruntime.GC()
	var m0, m1 goruntime.MemStats
	goruntime.ReadMemStats(&m0)
	for i, o := range ops {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			l := make([]int64, 0, 1024)
			ready.Done()
			<-startGate
			n := int64(0)
			for !stop.Load() {
				t := time.Now()
				n += int64(o())
				l = append(l, int64(time.Since(t)))
			}
			lat[i], calls[i] = l, n
		}()
	}
	ready.Wait()
	start := time.Now()
	close(startGate)
	time.Sleep(dur)
	stop.Store(true)
	done.Wait()
	elapsed := time.Since(start)
	goruntime.ReadMemStats(&m1)

	h := hdrhistogram.New(1, int64(60*time.Second), 3)
	var nOps, nCalls int64
	for i := range lat {
		for _, v := range lat[i] {
			_ = h.RecordValue(max(v, 1))
		}
		nOps += int64(len(lat[i]))
		nCalls += calls[i]
	}
	res := Result{Name: sc.name, Group: sc.group, Callers: sc.callers, Calls: nCalls, Ops: nOps,
		Seconds: elapsed.Seconds()}
	if nCalls > 0 {
		res.CallsPerSec = float64(nCalls) / elapsed.Seconds()
		res.NsPerCall = 1e9 / res.CallsPerSec
		res.NsPerOp = h.Mean()
		res.AllocsPerCall = float64(m1.Mallocs-m0.Mallocs) / float64(nCalls)
		res.BytesPerCall = float64(m1.TotalAlloc-m0.TotalAlloc) / float64(nCalls)
	}
	res.P50us = float64(h.ValueAtQuantile(50)) / 1e3
	res.P99us = float64(h.ValueAtQuantile(99)) / 1e3
	res.P999us = float64(h.ValueAtQuantile(99.9)) / 1e3
	res.HeapBytes = int64(m1.HeapAlloc)
	if sc.name == "ts_turn_sleep_16x1ms" || sc.name == "goroutines_sleep_16x1ms" {
		res.Extra = map[string]float64{"makespan_vs_ideal": h.Mean() / float64(time.Millisecond)}
	}
	return res
}

// runMemory runs the memory and scope-lifecycle scenarios once.
func runMemory(cfg runConfig) map[string]float64 {
	out := map[string]float64{}

	progress.set("memory: heap per idle scope")
	w := newWorld(worldOpts{})
	heapB, stackB := heapPerScope(w.reg, cfg.heapScopes, "idle")
	out["heap_per_scope_bytes"] = heapB
	out["stack_per_scope_bytes"] = stackB
	out["heap_per_scope_n"] = float64(cfg.heapScopes)

	progress.set(fmt.Sprintf("memory: create+dispose %d scopes", cfg.scopesDisposed))
	w.close()
	d, warm, leaked := createDisposeCheck(cfg.scopesDisposed, "cd")
	out["create_dispose_scopes"] = float64(cfg.scopesDisposed)
	out["create_dispose_ns_per_scope"] = float64(d.Nanoseconds()) / float64(cfg.scopesDisposed)
	out["create_dispose_goroutines_warm"] = float64(warm)
	out["create_dispose_goroutines_leaked"] = float64(leaked)

	progress.set("memory: heap per registered tool")
	out["heap_per_tool_bytes"] = heapPerTool(10_000)

	progress.set("registry: 1,000 scopes restricted under 10,000 tools")
	w = newWorld(worldOpts{extraTools: 9_999})
	before := heapNow()
	start := time.Now()
	scopes := make([]*ts.Scope, 1000)
	for i := range scopes {
		scopes[i] = must(w.reg.NewScope(fmt.Sprintf("r%d", i)))
		must(scopes[i].Restrict(ts.Restriction{Allow: []string{"filler_00042"}}))
	}
	el := time.Since(start)
	out["restrict_1k_scopes_10k_tools_ms"] = float64(el.Microseconds()) / 1e3
	out["restrict_1k_scopes_10k_tools_heap_bytes"] = float64(heapNow() - before)
	goruntime.KeepAlive(scopes)
	w.close()
	return out
}

// ratios collects every measured ratio: the interleaved medians, and the
// ratios of timed scenarios that cannot be interleaved (another process,
// many callers). A ratio is present exactly when both of its sides were
// measured, whatever its value: one whose scenarios did not run (-run, no
// node) is absent, never 0.
func ratios(rep *Report) map[string]float64 {
	out := map[string]float64{}
	for k, v := range rep.Interleaved {
		out[k] = v.Median
	}
	by := map[string]Result{}
	for _, r := range rep.Scenarios {
		by[r.Name] = r
	}
	timed := func(key, a, b string, field func(Result) float64) {
		ra, okA := by[a]
		rb, okB := by[b]
		if okA && okB && field(ra) > 0 && field(rb) > 0 {
			out[key] = sig3(field(ra) / field(rb))
		}
	}
	nsPerCall := func(r Result) float64 { return r.NsPerCall }
	callsPerSec := func(r Result) float64 { return r.CallsPerSec }
	// Throughput of 1,000 restricted scopes, one caller each, against
	// 1,000 callers of the map+RWMutex baseline running bodies on goroutines.
	timed("scopes1k_vs_floor", "ts_agents_1000", "map_mutex_goroutine_agents_1000", callsPerSec)
	// The reference runs in node, in its own process: timed, not interleaved.
	timed("bare_vs_reference", "ts_execute_bare", "ref_execute_bare", nsPerCall)
	timed("full_vs_reference", "ts_execute_full", "ref_execute_full", nsPerCall)
	timed("tools10k_vs_reference", "ts_execute_tools_10k", "ref_execute_tools_10k", nsPerCall)
	if r, ok := by["ts_turn_sleep_16x1ms"]; ok {
		if v, ok := r.Extra["makespan_vs_ideal"]; ok {
			out["turn_sleep_makespan_vs_ideal"] = sig3(v)
		}
	}
	if v, ok := rep.Memory["heap_per_scope_bytes"]; ok {
		out["heap_per_scope_bytes"] = sig3(v)
	}
	return out
}

// --- output -----------------------------------------------------------------

func printTable(w io.Writer, rep *Report) {
	fmt.Fprintf(w, "toolscope bench (%s, %d round(s)) commit %s, %s, %v\n\n", rep.Mode, rep.Rounds,
		short(rep.Commit), rep.GoVersion, rep.Machine["cpu"])
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tcallers\tcalls/s\tns/call\tp50 µs\tp99 µs\tp99.9 µs\tallocs/call\tB/call\t")
	for _, r := range rep.Scenarios {
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.0f\t%.1f\t%.1f\t%.1f\t%.1f\t%.0f\t\n", r.Name, r.Callers,
			r.CallsPerSec, r.NsPerCall, r.P50us, r.P99us, r.P999us, r.AllocsPerCall, r.BytesPerCall)
	}
	check(tw.Flush())
	fmt.Fprintln(w)
	for _, k := range slices.Sorted(mapKeys(rep.Memory)) {
		fmt.Fprintf(w, "%-48s %.1f\n", k, rep.Memory[k])
	}
	fmt.Fprintln(w)
	if len(rep.Scale) > 0 {
		for _, k := range slices.Sorted(mapKeys(rep.Scale)) {
			fmt.Fprintf(w, "scale %-42s %s\n", k, fmtRatio(rep.Scale[k]))
		}
		fmt.Fprintln(w)
	}
	for _, k := range slices.Sorted(mapKeys(rep.Ratios)) {
		v := rep.Ratios[k]
		rng := "timed"
		if in, ok := rep.Interleaved[k]; ok {
			rng = fmt.Sprintf("[%s–%s] %d rounds", fmtRatio(in.Min), fmtRatio(in.Max), in.Rounds)
		}
		var notes []string
		if t := rep.Targets[k]; t != "" {
			notes = append(notes, "target "+t+" "+verdict(k, v, t))
		}
		if g := rep.Goals[k]; g != "" {
			notes = append(notes, "goal "+g+" "+verdict(k, v, g))
		}
		fmt.Fprintf(w, "ratio %-38s %9s  %-26s %s\n", k, fmtRatio(v), rng, strings.Join(notes, ", "))
	}
	fmt.Fprintf(w, "\nreference implementation: %s\n", rep.Reference)
}

func verdict(_ string, v float64, target string) string {
	var lim float64
	var op string
	fmt.Sscanf(target, "%s %g", &op, &lim)
	if (op == "<=" && v <= lim) || (op == ">=" && v >= lim) {
		return "ok"
	}
	return "MISSED"
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func short(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}

// --- environment ------------------------------------------------------------

func machine() map[string]any {
	m := map[string]any{"goos": goruntime.GOOS, "goarch": goruntime.GOARCH,
		"cpus": goruntime.NumCPU(), "gomaxprocs": goruntime.GOMAXPROCS(0)}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m["cpu"] = strings.TrimSpace(v)
				break
			}
		}
	}
	if h, err := os.Hostname(); err == nil {
		m["hostname"] = h
	}
	return m
}

func commit() string {
	out, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	c := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain", "--", "..").Output(); err == nil && len(st) > 0 {
		c += "-dirty"
	}
	return c
}

// refReport is what bench/ref/bench.mjs prints.
type refReport struct {
	Node      string `json:"node"`
	DshTools  string `json:"dsh_tools"`
	Scenarios []struct {
		Name        string  `json:"name"`
		Calls       int64   `json:"calls"`
		Seconds     float64 `json:"seconds"`
		CallsPerSec float64 `json:"calls_per_sec"`
		NsPerCall   float64 `json:"ns_per_call"`
		P50us       float64 `json:"p50_us"`
		P99us       float64 `json:"p99_us"`
		P999us      float64 `json:"p999_us"`
	} `json:"scenarios"`
}

// reference measures the reference implementation (@deepseek-ai/dsh-tools)
// with node when node is present, installing its packages with npm into
// ref/node_modules on first use; it returns the status line and the
// scenarios as Results.
func reference(enabled bool, dur time.Duration) (string, []Result) {
	if !enabled {
		return "not measured: disabled with -ref=false", nil
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return "not measured: node is not installed", nil
	}
	if _, err := os.Stat("ref/bench.mjs"); err != nil {
		return "not measured: ref/bench.mjs not found (run from bench/)", nil
	}
	if _, err := os.Stat("ref/node_modules/@deepseek-ai/dsh-tools"); err != nil {
		progress.set("reference: npm install (ref/install.sh)")
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		if out, err := exec.CommandContext(ctx, "bash", "ref/install.sh").CombinedOutput(); err != nil {
			return fmt.Sprintf("not measured: ref/install.sh failed: %v: %s", err, strings.TrimSpace(string(out))), nil
		}
	}
	progress.set("reference: node ref/bench.mjs")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "bench.mjs", "-d", fmt.Sprint(dur.Seconds()))
	cmd.Dir = "ref"
	out, err := cmd.Output()
	if err != nil {
		return fmt.Sprintf("not measured: node ref/bench.mjs failed: %v", err), nil
	}
	var rr refReport
	if err := json.Unmarshal(out, &rr); err != nil {
		return fmt.Sprintf("not measured: bad output from ref/bench.mjs: %v", err), nil
	}
	var rs []Result
	for _, s := range rr.Scenarios {
		rs = append(rs, Result{Name: s.Name, Group: "reference", Callers: 1, Calls: s.Calls, Ops: s.Calls,
			Seconds: s.Seconds, CallsPerSec: s.CallsPerSec, NsPerCall: s.NsPerCall, NsPerOp: s.NsPerCall,
			P50us: s.P50us, P99us: s.P99us, P999us: s.P999us})
	}
	return fmt.Sprintf("measured: @deepseek-ai/dsh-tools %s on node %s", rr.DshTools, rr.Node), rs
}

// --- progress line ------------------------------------------------------------

type progressLine struct {
	w     io.Writer
	mu    sync.Mutex
	label string
	since time.Time
	t0    time.Time
	done  chan struct{}
	wg    sync.WaitGroup
}

func newProgressLine(w io.Writer) *progressLine { return &progressLine{w: w} }

func (p *progressLine) set(label string) {
	p.mu.Lock()
	p.label, p.since = label, time.Now()
	p.mu.Unlock()
}

func (p *progressLine) start() {
	p.t0 = time.Now()
	p.done = make(chan struct{})
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-p.done:
				fmt.Fprintf(p.w, "\r\033[Kdone in %.1fs\n", time.Since(p.t0).Seconds())
				return
			case <-tick.C:
				p.mu.Lock()
				fmt.Fprintf(p.w, "\r\033[K%6.1fs  %s (%.1fs)", time.Since(p.t0).Seconds(), p.label, time.Since(p.since).Seconds())
				p.mu.Unlock()
			}
		}
	}()
}

func (p *progressLine) stop() {
	close(p.done)
	p.wg.Wait()
}
