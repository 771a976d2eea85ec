package load

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// randomScenario builds a scenario from r: a few agents (sometimes with
// sub-agents), parallel, exclusive and by-argument tools with latencies of
// seconds, failures and timeouts, MaxParallel 1–4, closed loop with think
// time or open loop with overlapping turns of one agent.
func randomScenario(r *rand.Rand) string {
	var tools []string
	modes := []string{ModeParallel, ModeExclusive, ModeByArgument}
	for i := range 1 + r.IntN(4) {
		mode := modes[r.IntN(3)]
		t := fmt.Sprintf(`{"name":"t%d","mode":%q,"latency":{"kind":"uniform","min":"%ds","max":"%ds"}`, i, mode, r.IntN(3), 3+r.IntN(20))
		if mode == ModeByArgument {
			t += fmt.Sprintf(`,"parallelFraction":%.2f`, r.Float64())
		}
		if r.IntN(2) == 0 {
			t += fmt.Sprintf(`,"timeout":"30s","timeoutRate":%.2f`, r.Float64()*0.3)
		}
		if r.IntN(2) == 0 {
			t += fmt.Sprintf(`,"failureRate":%.2f`, r.Float64()*0.3)
		}
		tools = append(tools, t+`,"outputBytes":8}`)
	}
	agents := fmt.Sprintf(`{"count":%d}`, 1+r.IntN(4))
	if r.IntN(3) == 0 {
		agents = fmt.Sprintf(`{"count":%d,"subAgents":%d,"depth":1}`, 1+r.IntN(3), 1+r.IntN(2))
	}
	turns := fmt.Sprintf(`"perAgent":%d,"callsPerTurn":{"min":1,"max":%d}`, 1+r.IntN(5), 1+r.IntN(6))
	load := `{"model":"closed"}`
	if r.IntN(2) == 0 {
		load = fmt.Sprintf(`{"model":"open","rate":%.3f,"arrival":"poisson","maxInFlight":%d}`, 0.05+r.Float64(), 1+r.IntN(6))
	} else {
		turns += `,"thinkTime":{"kind":"uniform","min":"0s","max":"5s"}`
	}
	return fmt.Sprintf(`{"name":"random","seed":%d,"registry":{"maxParallel":%d},"agents":%s,"tools":[%s],"turns":{%s},"load":%s}`,
		r.IntN(1000), 1+r.IntN(4), agents, strings.Join(tools, ","), turns, load)
}

// TestVirtual_RandomScenariosChecker: random scenarios on virtual time.
// Invariants: the run completes (no stall, no hang); every call is
// answered once; every dispatched call's service lasts exactly its drawn
// latency on the clock (its timeout for a hang) — nothing moved the clock
// early or late; an exclusive call overlaps no other call of its scope on
// the clock; and a second run gives the same log.
func TestVirtual_RandomScenariosChecker(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 3))
	n := 12
	if testing.Short() {
		n = 4
	}
	for i := range n {
		doc := randomScenario(r)
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			rep, log := recordRun(t, doc, true)
			if rep.Stopped != StoppedComplete || rep.Results != rep.Calls || rep.Calls == 0 {
				t.Fatalf("stopped %s (%s), calls %d results %d\n%s", rep.Stopped, rep.Stall, rep.Calls, rep.Results, doc)
			}
			l, err := ReadLog(bytes.NewReader(log))
			if err != nil {
				t.Fatal(err)
			}
			if int64(len(l.Calls)) != rep.Results {
				t.Fatalf("log has %d calls, the run %d results", len(l.Calls), rep.Results)
			}
			timeouts := map[string]time.Duration{}
			for _, tool := range l.Scenario.Tools {
				timeouts[tool.Name] = tool.Timeout.D()
			}
			type span struct {
				from, to int64
				excl     bool
				id       string
			}
			byScope := map[string][]span{}
			for _, c := range l.Calls {
				var a callArgs
				if err := json.Unmarshal(c.Arguments, &a); err != nil {
					t.Fatal(err)
				}
				want := time.Duration(a.SleepNs)
				if a.Hang {
					want = timeouts[c.Tool]
				}
				id := callID(c.Agent, c.Turn, c.Call)
				if got := time.Duration(c.DispatchDone - c.Admitted); got != want {
					t.Fatalf("call %s (%s, hang %v): service %v on the clock, want exactly %v\n%s", id, c.Tool, a.Hang, got, want, doc)
				}
				byScope[c.Agent] = append(byScope[c.Agent], span{c.Admitted, c.DispatchDone, c.Mode == "exclusive", id})
			}
			for _, spans := range byScope {
				for x, a := range spans {
					for _, b := range spans[x+1:] {
						if (a.excl || b.excl) && a.from < b.to && b.from < a.to {
							t.Fatalf("exclusive overlap on the clock: %s [%d,%d) and %s [%d,%d)\n%s", a.id, a.from, a.to, b.id, b.from, b.to, doc)
						}
					}
				}
			}
			_, again := recordRun(t, doc, true)
			if canonical(log) != canonical(again) {
				t.Fatalf("a second run gave another log\n%s", doc)
			}
		})
	}
}
