package load

import (
	"context"
	"encoding/json"
	"fmt"
	goruntime "runtime"
	"runtime/debug"
	"sync"
	"testing"
	"time"

	"github.com/toolscope/toolscope/runtime"
)

// BenchmarkOverhead_ZeroLatency compares the load tool's calls/s with a
// zero-latency tool against bare ExecuteTurn loops doing the same turns
// (8 agents, 4 parallel calls per turn) on the same machine; the issue's
// goal is a ratio ≥ 0.8. bare+events subscribes a no-op to the registry's
// events, the part of the cost that is the registry's own (load.Run needs
// the events for admission wait and call latency). Timings are reported,
// never asserted.
func BenchmarkOverhead_ZeroLatency(b *testing.B) {
	const agents, calls = 8, 4
	bare := func(b *testing.B, events bool) {
		reg, err := runtime.New()
		if err != nil {
			b.Fatal(err)
		}
		defer reg.Close(context.Background())
		if events { // what the load tool pays the registry for its measurements
			sub, err := reg.Subscribe(func(runtime.Event) {}, runtime.WithBuffer(1<<16))
			if err != nil {
				b.Fatal(err)
			}
			defer sub.Close()
		}
		d, err := toolDefinition(Tool{Name: "z", Mode: ModeParallel}, &runEnv{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := reg.Global().Register(d); err != nil {
			b.Fatal(err)
		}
		args, _ := json.Marshal(callArgs{})
		var scopes []*runtime.Scope
		for i := range agents {
			s, err := reg.NewScope(fmt.Sprint("a", i))
			if err != nil {
				b.Fatal(err)
			}
			scopes = append(scopes, s)
		}
		turns := max(b.N/agents, 1)
		b.ResetTimer()
		start := time.Now()
		var wg sync.WaitGroup
		for _, s := range scopes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for t := range turns {
					cs := make([]runtime.TurnCall, calls)
					for i := range cs {
						cs[i] = runtime.TurnCall{ID: fmt.Sprint(t, "/", i), Name: "z", ArgumentsText: string(args)}
					}
					if _, err := s.ExecuteTurn(context.Background(), cs); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		b.ReportMetric(float64(turns*agents*calls)/time.Since(start).Seconds(), "calls/s")
	}
	b.Run("bare", func(b *testing.B) { bare(b, false) })
	b.Run("bare+events", func(b *testing.B) { bare(b, true) })
	b.Run("load.Run", func(b *testing.B) {
		sc, err := Parse([]byte(fmt.Sprintf(`{"name": "zero", "agents": {"count": %d},
		  "tools": [{"name": "z", "mode": "parallel", "latency": {"kind": "constant", "value": "0s"}}],
		  "turns": {"perAgent": %d, "callsPerTurn": {"min": %d, "max": %d}},
		  "load": {"model": "closed"}}`, agents, max(b.N/agents, 1), calls, calls)))
		if err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		r, err := Run(context.Background(), sc, Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(r.Throughput.CallsPerSecond, "calls/s")
		b.ReportMetric(float64(r.Events.Dropped), "events-dropped")
	})
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
