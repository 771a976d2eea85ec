package load

import (
	"context"
	"fmt"
	goruntime "runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/toolscope/toolscope/runtime"
)

// BenchmarkOverhead_ZeroLatency compares the load tool's calls/s with a
// zero-latency tool against bare ExecuteTurn loops doing the same turns
// (8 agents, 4 parallel calls per turn) on the same machine; the issue's
// goal is a ratio ≥ 0.8 (TestOverhead_Interleaved measures it
// interleaved, the way to read it on a noisy machine). Timings are
// reported, never asserted.
func BenchmarkOverhead_ZeroLatency(b *testing.B) {
	const agents, calls = 8, 4
	b.Run("bare", func(b *testing.B) {
		b.ReportMetric(bareTurns(b, agents, max(b.N/agents, 1), calls, b.ResetTimer), "calls/s")
	})
	b.Run("bare+hooks", func(b *testing.B) {
		b.ReportMetric(bareTurns(b, agents, max(b.N/agents, 1), calls, b.ResetTimer, nopHooks()), "calls/s")
	})
	b.Run("load.Run", func(b *testing.B) {
		r := zeroLatencyRun(b, agents, max(b.N/agents, 1), calls, b.ResetTimer)
		b.ReportMetric(r.Throughput.CallsPerSecond, "calls/s")
	})
}

// bareTurns runs turns turns of calls parallel zero-latency calls on each
// of agents scopes of a new registry, in bare ExecuteTurn loops (one
// goroutine per agent, as load.Run's closed model), and returns their
// calls/s; ready is called once the registry and scopes are built.
func bareTurns(tb testing.TB, agents, turns, calls int, ready func(), opts ...runtime.Option) float64 {
	reg, err := runtime.New(opts...)
	if err != nil {
		tb.Fatal(err)
	}
	defer reg.Close(context.Background())
	d, err := toolDefinition(Tool{Name: "z", Mode: ModeParallel}, &runEnv{})
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := reg.Global().Register(d); err != nil {
		tb.Fatal(err)
	}
	args := callArgs{}.text()
	var scopes []*runtime.Scope
	for i := range agents {
		s, err := reg.NewScope(fmt.Sprint("a", i))
		if err != nil {
			tb.Fatal(err)
		}
		scopes = append(scopes, s)
	}
	// The turn's calls are built once per agent and sent again every turn,
	// as bench's turn benchmarks do (a call id need only be unique in its
	// turn): the loops do nothing but ExecuteTurn.
	cs := make([]runtime.TurnCall, calls)
	for i := range cs {
		cs[i] = runtime.TurnCall{ID: "c" + strconv.Itoa(i), Name: "z", ArgumentsText: args}
	}
	ready()
	start := time.Now()
	var wg sync.WaitGroup
	for _, s := range scopes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range turns {
				if _, err := s.ExecuteTurn(context.Background(), cs); err != nil {
					tb.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return float64(turns*agents*calls) / time.Since(start).Seconds()
}

// zeroLatencyRun runs load.Run on the same workload as bareTurns.
func zeroLatencyRun(tb testing.TB, agents, turns, calls int, ready func()) *Report {
	sc, err := Parse([]byte(fmt.Sprintf(`{"name": "zero", "agents": {"count": %d},
	  "tools": [{"name": "z", "mode": "parallel", "latency": {"kind": "constant", "value": "0s"}}],
	  "turns": {"perAgent": %d, "callsPerTurn": {"min": %d, "max": %d}},
	  "load": {"model": "closed"}}`, agents, turns, calls, calls)))
	if err != nil {
		tb.Fatal(err)
	}
	ready()
	r, err := Run(context.Background(), sc, Options{})
	if err != nil {
		tb.Fatal(err)
	}
	if want := int64(agents * turns * calls); r.Results != want || r.CallLatency.Count != want {
		tb.Fatalf("load.Run: %d results, %d call latencies, want %d", r.Results, r.CallLatency.Count, want)
	}
	return r
}

// nopHooks are no-op hooks at the points the collector uses: bare loops
// with them ("bare+hooks") show the part of the cost that is the
// registry's own (with a hook set it reads its clock for the call's
// timestamps).
func nopHooks() runtime.Option {
	return runtime.WithHooks(runtime.Hooks{
		CallFinished: func(runtime.Execution, runtime.CallDone) {},
		TurnStart:    func(ctx context.Context, _ runtime.TurnInfo) context.Context { return ctx },
	})
}

// TestOverhead_Interleaved measures the overhead ratio (goal ≥
// 0.8): load.Run's calls/s with a zero-latency tool ÷ bare ExecuteTurn
// loops' on the same workload (8 agents, 4 parallel calls a turn), in
// -overhead-rounds rounds (0: skipped); one goroutine alternates the two
// sides, the order flipping every round, so the machine's noise lands on
// both alike. It logs the median and range of the per-round ratios and
// asserts nothing (timings are never asserted). It logs the ratio of the
// calls per CPU-second too (the process's CPU time over each side's whole
// run, setup and report included): other processes on a shared machine
// move it less than the wall clock's.
//
//	go test ./load -run Overhead_Interleaved -overhead-rounds 9 -v
func TestOverhead_Interleaved(t *testing.T) {
	if *overheadRounds == 0 {
		t.Skip("set -overhead-rounds N")
	}
	const agents, turns, calls = 8, 4000, 4 // 128,000 calls a side: long enough to even out a busy machine's preemptions
	nop := func() {}
	nopHooks := nopHooks()
	var ratios, hookRatios, cpuRatios, hookCPURatios, bares, loads []float64
	for i := range *overheadRounds {
		var bare, hooked, load float64
		var bareCPU, hookedCPU, loadCPU time.Duration
		runHooked := func() {
			c := cpuTime()
			hooked = bareTurns(t, agents, turns, calls, nop, nopHooks)
			hookedCPU = cpuTime() - c
		}
		runBare := func() {
			c := cpuTime()
			bare = bareTurns(t, agents, turns, calls, nop)
			bareCPU = cpuTime() - c
		}
		runLoad := func() {
			c := cpuTime()
			load = zeroLatencyRun(t, agents, turns, calls, nop).Throughput.CallsPerSecond
			loadCPU = cpuTime() - c
		}
		if i%2 == 0 {
			runBare()
			runHooked()
			runLoad()
		} else {
			runLoad()
			runHooked()
			runBare()
		}
		ratios, hookRatios = append(ratios, load/bare), append(hookRatios, hooked/bare)
		if bareCPU > 0 && loadCPU > 0 {
			cpuRatios = append(cpuRatios, float64(bareCPU)/float64(loadCPU))
		}
		if bareCPU > 0 && hookedCPU > 0 {
			hookCPURatios = append(hookCPURatios, float64(bareCPU)/float64(hookedCPU))
		}
		bares, loads = append(bares, bare), append(loads, load)
	}
	med := func(xs []float64) float64 { s := slices.Clone(xs); slices.Sort(s); return s[len(s)/2] }
	t.Logf("load.Run ÷ bare ExecuteTurn, %d rounds of %d calls a side: median %.3f× [%.3f–%.3f]; calls/s median bare %.0f, load.Run %.0f",
		len(ratios), agents*turns*calls, med(ratios), slices.Min(ratios), slices.Max(ratios), med(bares), med(loads))
	t.Logf("bare+no-op hooks ÷ bare: median %.3f× [%.3f–%.3f]", med(hookRatios), slices.Min(hookRatios), slices.Max(hookRatios))
	if len(cpuRatios) > 0 {
		t.Logf("calls per CPU-second, load.Run ÷ bare: median %.3f× [%.3f–%.3f]", med(cpuRatios), slices.Min(cpuRatios), slices.Max(cpuRatios))
	}
	if len(hookCPURatios) > 0 {
		t.Logf("calls per CPU-second, bare+no-op hooks ÷ bare: median %.3f× [%.3f–%.3f]", med(hookCPURatios), slices.Min(hookCPURatios), slices.Max(hookCPURatios))
	}
}

// TestMemory_ManyAgents reports the heap of a run of -agents agents (0:
// skipped), one turn each: go test ./load -run Memory -agents 100000 -v.
func TestMemory_ManyAgents(t *testing.T) {
	if *agentsFlag == 0 {
		t.Skip("set -agents N")
	}
	sc, err := Parse([]byte(fmt.Sprintf(`{"name": "many", "agents": {"count": %d},
	  "tools": [{"name": "z", "mode": "parallel", "latency": {"kind": "constant", "value": "200ms"}}],
	  "turns": {"perAgent": 1, "callsPerTurn": {"min": 1, "max": 1}},
	  "load": {"model": "closed"}}`, *agentsFlag)))
	if err != nil {
		t.Fatal(err)
	}
	debug.FreeOSMemory()
	var before goruntime.MemStats
	goruntime.ReadMemStats(&before)
	var peak uint64
	r, err := Run(context.Background(), sc, Options{ProgressEvery: 50 * time.Millisecond, Progress: func(Progress) {
		var m goruntime.MemStats
		goruntime.ReadMemStats(&m)
		peak = max(peak, m.HeapInuse+m.StackInuse)
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d agents: %d calls in %.2f s; peak heap+stacks %.0f MB (%.1f KB per agent)", *agentsFlag, r.Results, r.Elapsed,
		float64(peak-before.HeapInuse-before.StackInuse)/1e6, float64(peak-before.HeapInuse-before.StackInuse)/1e3/float64(*agentsFlag))
}
