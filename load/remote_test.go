package load

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolscope/toolscope/runtime"
)

// seenCall is one call as a run's tools saw it.
type seenCall struct{ agent, tool, args string }

// registryRemote is a Remote over a registry of its own: the scenario's
// tools built by SimulatedTool in its global scope, the agents its scopes.
// It records every call its tools ran, by call id.
type registryRemote struct {
	reg      *runtime.Registry
	failNew  string // NewAgent of this key fails
	mu       sync.Mutex
	scopes   map[string]*runtime.Scope
	restrict map[string]runtime.Restriction
	seen     map[string]seenCall
	closed   int
}

func (r *registryRemote) Start(_ context.Context, sc *Scenario) error {
	r.scopes, r.restrict, r.seen = map[string]*runtime.Scope{}, map[string]runtime.Restriction{}, map[string]seenCall{}
	reg, err := runtime.New(runtime.WithHooks(runtime.Hooks{CallFinished: func(ex runtime.Execution, _ runtime.CallDone) {
		args, _ := ex.Arguments()
		r.mu.Lock()
		r.seen[ex.CallID()] = seenCall{ex.Agent(), ex.Name(), string(args)}
		r.mu.Unlock()
	}}))
	if err != nil {
		return err
	}
	r.reg = reg
	for _, t := range sc.Tools {
		d, err := SimulatedTool(t)
		if err != nil {
			return err
		}
		if _, err := reg.Global().Register(d); err != nil {
			return err
		}
	}
	return nil
}

type scopeAgent struct{ s *runtime.Scope }

func (a scopeAgent) ExecuteTurn(ctx context.Context, id string, calls []runtime.TurnCall) (*runtime.TurnResult, error) {
	return a.s.ExecuteTurn(ctx, calls, runtime.WithTurnID(id))
}

func (r *registryRemote) NewAgent(_ context.Context, key, parent string, restrict *runtime.Restriction) (RemoteAgent, error) {
	if key == r.failNew {
		return nil, errors.New("no room for " + key)
	}
	r.mu.Lock()
	p := r.scopes[parent]
	r.mu.Unlock()
	var s *runtime.Scope
	var err error
	if parent == "" {
		s, err = r.reg.NewScope(key)
	} else {
		s, err = p.NewScope(key)
	}
	if err != nil {
		return nil, err
	}
	if restrict != nil {
		if _, err := s.Restrict(*restrict); err != nil {
			return nil, err
		}
		r.mu.Lock()
		r.restrict[key] = *restrict
		r.mu.Unlock()
	}
	r.mu.Lock()
	r.scopes[key] = s
	r.mu.Unlock()
	return scopeAgent{s}, nil
}

func (r *registryRemote) Close(ctx context.Context) error {
	r.closed++
	if r.reg == nil {
		return nil
	}
	return r.reg.Close(ctx)
}

// TestRemote_TurnsRunOnTheRemoteWithTheSameDraws: with a Remote, every
// agent is made there with its level's restriction, every turn runs
// there, and every call carries what the in-process run's same call
// carries (same seed: same agent, tool and arguments by call id); the
// report counts exactly the calls the remote ran, the injected failures
// and timeouts under their codes; Close runs once.
func TestRemote_TurnsRunOnTheRemoteWithTheSameDraws(t *testing.T) {
	local := map[string]seenCall{}
	var mu sync.Mutex
	spy := runtime.WithHooks(runtime.Hooks{CallFinished: func(ex runtime.Execution, _ runtime.CallDone) {
		args, _ := ex.Arguments()
		mu.Lock()
		local[ex.CallID()] = seenCall{ex.Agent(), ex.Name(), string(args)}
		mu.Unlock()
	}})
	sim := runBounded(t, context.Background(), mustParse(t, countsScenario), Options{RegistryOptions: []runtime.Option{spy}})
	rm := &registryRemote{}
	r := runBounded(t, context.Background(), mustParse(t, countsScenario), Options{Remote: rm})

	const want = 9 * 4 * 3
	if r.Calls != want || r.Results != want || r.Events.Finished != want || r.Events.Missing != 0 || len(rm.seen) != want {
		t.Fatalf("calls %d results %d finished %d missing %d; the remote ran %d; want %d", r.Calls, r.Results, r.Events.Finished, r.Events.Missing, len(rm.seen), want)
	}
	if len(local) != want {
		t.Fatalf("the in-process run ran %d calls", len(local))
	}
	for id, c := range local {
		if rm.seen[id] != c {
			t.Errorf("call %s: in process %+v, on the remote %+v", id, c, rm.seen[id])
		}
	}
	var broken, slow int64
	for _, c := range rm.seen {
		switch c.tool {
		case "broken":
			broken++
		case "slow":
			slow++
		}
	}
	if r.Failures[CodeInjectedFailure] != broken || r.Failures["TOOL_TIMEOUT"] != slow || len(r.Failures) != 2 {
		t.Errorf("failures %v; the remote ran broken %d times, slow %d", r.Failures, broken, slow)
	}
	for k, sf := range sim.Failures {
		if r.Failures[k] != sf {
			t.Errorf("failures %s: %d remote, %d in process", k, r.Failures[k], sf)
		}
	}
	if len(rm.restrict) != 6 || rm.restrict["a0.1"].Deny[0] != "broken" {
		t.Errorf("restrictions made: %v (want the 6 sub-agents denied broken)", rm.restrict)
	}
	if rm.closed != 1 {
		t.Errorf("Close ran %d times", rm.closed)
	}
	if r.CallLatency.Count != want || r.TurnLatency.Count != 36 {
		t.Errorf("latencies: %d calls, %d turns", r.CallLatency.Count, r.TurnLatency.Count)
	}
}

// TestRemote_FiguresOutOfSightAreAbsentNotZero: a Remote's run reports
// admission wait, call service and parallelism as not measured — absent
// from report.json, "not measured" in the summary and the page — and an
// in-process run still has them.
func TestRemote_FiguresOutOfSightAreAbsentNotZero(t *testing.T) {
	r := runBounded(t, context.Background(), mustParse(t, countsScenario), Options{Remote: &registryRemote{}})
	if r.Measured(FigureAdmissionWait) || r.Measured(FigureCallService) || r.Measured(FigureParallelism) || !r.Measured("callLatency") {
		t.Fatalf("NotMeasured = %v", r.NotMeasured)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"admissionWait", "callService", "parallelism"} {
		if _, ok := m[k]; ok {
			t.Errorf("report.json has %s: %s", k, m[k])
		}
	}
	if !strings.Contains(string(m["notMeasured"]), "admissionWait") {
		t.Errorf("notMeasured: %s", m["notMeasured"])
	}
	var sum bytes.Buffer
	if err := r.WriteSummary(&sum); err != nil {
		t.Fatal(err)
	}
	flat := strings.Join(strings.Fields(sum.String()), " ")
	for _, want := range []string{"admission wait not measured", "call service not measured", "parallelism not measured"} {
		if !strings.Contains(flat, want) {
			t.Errorf("summary lacks %q:\n%s", want, sum.String())
		}
	}
	var page bytes.Buffer
	if err := r.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), "admission wait (not measured)") || !strings.Contains(page.String(), "not measured: admission happens") {
		t.Errorf("the page does not say admission wait was not measured")
	}

	in := runBounded(t, context.Background(), mustParse(t, countsScenario), Options{})
	b, _ = json.Marshal(in)
	if !bytes.Contains(b, []byte(`"admissionWait":{`)) || !bytes.Contains(b, []byte(`"parallelism":{`)) || bytes.Contains(b, []byte("notMeasured")) {
		t.Errorf("the in-process report.json lost a figure: %s", b)
	}
	if d := Compare(r, in, DefaultNoise); len(d) == 0 {
		t.Error("no comparison")
	} else {
		for _, x := range d {
			if strings.HasPrefix(x.Metric, "admission wait") {
				t.Errorf("compare set a measured admission wait against an absent one: %+v", x)
			}
		}
	}
}

// TestRemote_WallClockAndItsOwnTools: Virtual, Record, Replay and a Target
// are refused with a Remote; nothing is started.
func TestRemote_WallClockAndItsOwnTools(t *testing.T) {
	sc := mustParse(t, countsScenario)
	for _, opts := range []Options{
		{Virtual: true},
		{Record: io.Discard},
		{Replay: &Log{Scenario: sc}},
		{Target: &countingTarget{}},
	} {
		rm := &registryRemote{}
		opts.Remote = rm
		if _, err := Run(context.Background(), sc, opts); err == nil || !strings.Contains(err.Error(), "a Remote runs on the wall clock") {
			t.Errorf("Run with a Remote and %+v: error %v", opts, err)
		}
		if rm.reg != nil {
			t.Errorf("the remote was started")
		}
	}
}

// TestRemote_AgentRefusedIsAnErrorAndCloses: a NewAgent failure fails Run
// with an error naming the agent, and the remote is closed.
func TestRemote_AgentRefusedIsAnErrorAndCloses(t *testing.T) {
	rm := &registryRemote{failNew: "a1.0"}
	_, err := Run(context.Background(), mustParse(t, countsScenario), Options{Remote: rm})
	if err == nil || !strings.Contains(err.Error(), "remote agent a1.0: no room for a1.0") {
		t.Fatalf("error %v", err)
	}
	if rm.closed != 1 {
		t.Fatalf("Close ran %d times", rm.closed)
	}
}

// TestSimulatedTool_RefusesBadConfig: the tool a remote builds from
// configuration is checked.
func TestSimulatedTool_RefusesBadConfig(t *testing.T) {
	for _, c := range []struct {
		tool Tool
		want string
	}{
		{Tool{Name: "", Mode: ModeParallel}, "a tool name is"},
		{Tool{Name: "x y", Mode: ModeParallel}, "a tool name is"},
		{Tool{Name: "x", Mode: "sometimes"}, "mode"},
		{Tool{Name: "x", Mode: ModeParallel, Timeout: -1}, "timeout"},
		{Tool{Name: "x", Mode: ModeParallel, OutputBytes: MaxOutputBytes + 1}, "outputBytes"},
	} {
		if _, err := SimulatedTool(c.tool); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one containing %q", c.tool, err, c.want)
		}
	}
	if _, err := SimulatedTool(Tool{Name: "x", Mode: ModeByArgument, OutputBytes: 3}); err != nil {
		t.Fatal(err)
	}
}

// remoteScenario builds a small wall-clock scenario for a Remote from r: a few agents
// (sometimes with sub-agents and a level denying a tool), tools of every
// mode with sub-millisecond latencies, failures and hangs under a 50 ms
// timeout, a closed loop or a fast open one.
func remoteScenario(r *rand.Rand) string {
	var tools []string
	modes := []string{ModeParallel, ModeExclusive, ModeByArgument}
	n := 1 + r.IntN(4)
	for i := range n {
		mode := modes[r.IntN(3)]
		t := fmt.Sprintf(`{"name":"t%d","mode":%q,"latency":{"kind":"uniform","min":"0s","max":"%dus"}`, i, mode, 1+r.IntN(800))
		if mode == ModeByArgument {
			t += fmt.Sprintf(`,"parallelFraction":%.2f`, r.Float64())
		}
		if r.IntN(2) == 0 {
			t += fmt.Sprintf(`,"timeout":"50ms","timeoutRate":%.2f`, r.Float64()*0.2)
		}
		if r.IntN(2) == 0 {
			t += fmt.Sprintf(`,"failureRate":%.2f`, r.Float64()*0.3)
		}
		tools = append(tools, t+`,"outputBytes":8}`)
	}
	agents := fmt.Sprintf(`{"count":%d}`, 1+r.IntN(4))
	if r.IntN(2) == 0 {
		levels := ""
		if n > 1 {
			levels = fmt.Sprintf(`,"levels":[{},{"deny":["t%d"]}]`, r.IntN(n))
		}
		agents = fmt.Sprintf(`{"count":%d,"subAgents":%d,"depth":1%s}`, 1+r.IntN(3), 1+r.IntN(2), levels)
	}
	turns := fmt.Sprintf(`"perAgent":%d,"callsPerTurn":{"min":1,"max":%d}`, 1+r.IntN(5), 1+r.IntN(6))
	model := `{"model":"closed"}`
	if r.IntN(2) == 0 {
		model = fmt.Sprintf(`{"model":"open","rate":%d,"arrival":"poisson","maxInFlight":%d}`, 200+r.IntN(2000), 1+r.IntN(6))
	}
	return fmt.Sprintf(`{"name":"random","seed":%d,"registry":{"maxParallel":%d},"agents":%s,"tools":[%s],"turns":{%s},"load":%s}`,
		r.IntN(1000), 1+r.IntN(4), agents, strings.Join(tools, ","), turns, model)
}

// TestRemote_RandomScenariosChecker: random scenarios through a Remote.
// Invariants: the run completes; every call of the report is answered
// exactly once on the remote, carrying the agent, tool and arguments the
// in-process run of the same scenario gave it; the injected failures are
// the in-process run's (but for calls a busy machine held past a timeout); no goroutine is left behind.
func TestRemote_RandomScenariosChecker(t *testing.T) {
	r := rand.New(rand.NewPCG(29, 4))
	n := 16
	if testing.Short() {
		n = 5
	}
	before := goruntime.NumGoroutine()
	for i := range n {
		doc := remoteScenario(r)
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			local := map[string]seenCall{}
			var mu sync.Mutex
			spy := runtime.WithHooks(runtime.Hooks{CallFinished: func(ex runtime.Execution, _ runtime.CallDone) {
				args, _ := ex.Arguments()
				mu.Lock()
				local[ex.CallID()] = seenCall{ex.Agent(), ex.Name(), string(args)}
				mu.Unlock()
			}})
			in := runBounded(t, context.Background(), mustParse(t, doc), Options{RegistryOptions: []runtime.Option{spy}})
			rm := &registryRemote{}
			rep := runBounded(t, context.Background(), mustParse(t, doc), Options{Remote: rm})
			if rep.Stopped != StoppedComplete || rep.Calls == 0 || rep.Results != rep.Calls || rep.Events.Finished != rep.Calls || int64(len(rm.seen)) != rep.Calls {
				t.Fatalf("stopped %s, calls %d, results %d, finished %d, the remote ran %d\n%s", rep.Stopped, rep.Calls, rep.Results, rep.Events.Finished, len(rm.seen), doc)
			}
			if len(local) != len(rm.seen) {
				t.Fatalf("in process %d calls, remote %d\n%s", len(local), len(rm.seen), doc)
			}
			for id, c := range local {
				if rm.seen[id] != c {
					t.Fatalf("call %s: in process %+v, remote %+v\n%s", id, c, rm.seen[id], doc)
				}
			}
			// The same draws fail the same calls. A call drawn to fail
			// that a busy machine held past its tool's timeout ends
			// TOOL_TIMEOUT instead, so each difference must be such a
			// timeout on one side or the other.
			ri, ii := rep.Failures[CodeInjectedFailure], in.Failures[CodeInjectedFailure]
			to := rep.Failures[string(runtime.CodeToolTimeout)] + in.Failures[string(runtime.CodeToolTimeout)]
			if d := ri - ii; d > to || -d > to {
				t.Fatalf("injected failures: remote %d, in process %d, timeouts %d in all\n%s", ri, ii, to, doc)
			}
			if rm.closed != 1 {
				t.Fatalf("Close ran %d times", rm.closed)
			}
		})
	}
	deadline := time.Now().Add(10 * time.Second)
	for goruntime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("goroutines: %d before, %d after\n%s", before, goruntime.NumGoroutine(), buf[:goruntime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}
