//go:build !race

package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/toolscope/toolscope/cluster"
	"github.com/toolscope/toolscope/cluster/internal/fixture"
	"github.com/toolscope/toolscope/runtime"
)

// Timings of the process tests. None is asserted: each bounds a wait.
const (
	procLease   = 3 * time.Second  // the members' lease TTL (-lease)
	callTimeout = 30 * time.Second // each call's deadline
	cancelGrace = 5 * time.Second  // the client's WithCancelGrace
	// callBound: every call is answered within its deadline, the cancel
	// grace and a margin for a loaded machine (the lease TTL is inside the
	// deadline: a moved tree is served once its lease expires).
	callBound = callTimeout + cancelGrace + procLease + 15*time.Second
)

func raw(s string) json.RawMessage { return json.RawMessage(s) }

// setupTree gives tree id its rules: the catalog's echo tool mounted as
// "say" (prefix "<id>:"), the deny guard on g2, and a restriction hiding g3.
func setupTree(ctx context.Context, root *cluster.Scope) error {
	id := root.Tree()
	if _, err := root.Mount(ctx, fixture.EntryEcho, raw(`{"name":"say","prefix":"`+id+`:"}`)); err != nil {
		return fmt.Errorf("%s: Mount: %w", id, err)
	}
	if _, err := root.AddGuard(ctx, fixture.EntryDeny, raw(`{"tool":"g2","reason":"no g2 for `+id+`"}`)); err != nil {
		return fmt.Errorf("%s: AddGuard: %w", id, err)
	}
	if _, err := root.Restrict(ctx, runtime.Restriction{Deny: []string{"g3"}}); err != nil {
		return fmt.Errorf("%s: Restrict: %w", id, err)
	}
	return nil
}

// lost reports whether r is a coded result a call on a dead member may
// end with: the outcome is unknown, or the tree was not served in time.
func lost(r *runtime.Result) bool {
	return r.IsError() && (r.Code() == cluster.CodeOutcomeUnknown || r.Code() == cluster.CodeScopeUnavailable)
}

// checkRules checks the results of tree id's calls as its rules say:
// say echoes with the tree's prefix, record answers its id, g2 is denied
// by the guard, g3 is hidden by the restriction. It returns the call ids
// that succeeded (their bodies ran) and an error for the first result
// that is neither right nor (when mayBeLost) a coded lost result.
func checkRules(id string, names, ids []string, rs []*runtime.Result, mayBeLost bool) (ran []string, err error) {
	for i, r := range rs {
		if mayBeLost && lost(r) {
			continue
		}
		ok := false
		switch names[i] {
		case "say":
			ok = !r.IsError() && r.Text() == id+":hi"
			ran = append(ran, ids[i])
		case fixture.ToolRecord, fixture.ToolSlow:
			ok = !r.IsError() && r.Text() == "ok "+ids[i]
			ran = append(ran, ids[i])
		case fixture.ToolG2:
			ok = r.IsError() && r.ErrorMessage() == "no g2 for "+id
		case fixture.ToolG3:
			ok = r.IsError() && r.Code() == runtime.CodeUnknownTool
		}
		if !ok && err == nil {
			err = fmt.Errorf("%s call %s (%s): error %v code %q text %q message %q", id, ids[i], names[i], r.IsError(), r.Code(), r.Text(), r.ErrorMessage())
		}
	}
	return ran, err
}

func TestProcesses_Item22_KillOneMidLoad(t *testing.T) {
	agents := 1000
	if testing.Short() {
		agents = 150
	}
	start := time.Now()
	pc := startProcCluster(t, 3, procLease)
	cl := cluster.NewClient(pc.client, cluster.WithResend(500*time.Millisecond), cluster.WithCancelGrace(cancelGrace), cluster.WithDefaultTimeout(callTimeout))
	trees := make([]string, agents)
	for i := range trees {
		trees[i] = fmt.Sprintf("agent-%04d", i)
	}
	workers := 24

	// Setup: every tree's rules, persisted before each is acknowledged.
	each(t, workers, trees, func(id string) error {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		defer cancel()
		return setupTree(ctx, cl.Tree(id))
	})
	setupDone := time.Now()

	// The load: per tree an Execute of slow, a turn of say, record, g2, g3
	// and slow, and an Execute of say, in a random order across trees.
	// Slow bodies are the ones a kill catches mid-call.
	type op struct {
		tree string
		turn bool
		name string // Execute's tool
		id   string
	}
	var ops []op
	for _, id := range trees {
		ops = append(ops, op{tree: id, name: fixture.ToolSlow, id: id + ".x1"},
			op{tree: id, turn: true, id: id + ".t1"},
			op{tree: id, name: "say", id: id + ".x2"})
	}
	rand.Shuffle(len(ops), func(i, j int) { ops[i], ops[j] = ops[j], ops[i] })

	// The victim: member 1 (the client is in this process). The trees it
	// hosts when it dies are the ones that move.
	const victim = 1
	// The trees it hosts (their leases, read after setup: nothing moves
	// before the kill) are the ones that move. The kill itself blocks no
	// worker: calls are in flight on the victim when it dies.
	var (
		killAt    atomic.Pointer[time.Time]
		moved     = map[string]bool{}
		completed atomic.Int64
		takeover  = make(chan takeoverProbe, 1)
	)
	ctx := context.Background()
	for _, id := range trees {
		if pc.hostOf(ctx, id) == victim {
			moved[id] = true
		}
	}
	kill := func() {
		pc.signal(victim, syscall.SIGKILL)
		now := time.Now()
		killAt.Store(&now)
		// How long until a moved tree is served again: one call, sent now.
		var first string
		for _, id := range trees {
			if moved[id] {
				first = id
				break
			}
		}
		if first == "" {
			takeover <- takeoverProbe{}
			return
		}
		go func() {
			cctx, cancel := context.WithTimeout(ctx, callTimeout)
			defer cancel()
			r := cl.Tree(first).Execute(cctx, runtime.Call{ID: first + ".takeover", Name: "say", Arguments: raw(`{"text":"hi"}`)})
			takeover <- takeoverProbe{tree: first, r: r, after: time.Since(now)}
		}()
	}
	type outcome struct {
		op      op
		elapsed time.Duration
		names   []string
		ids     []string
		results []*runtime.Result
		err     error
		after   bool // started after the kill
	}
	outcomes := make([]outcome, len(ops))
	var next atomic.Int64
	var wg sync.WaitGroup
	loadStart := time.Now()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				k := int(next.Add(1)) - 1
				if k >= len(ops) {
					return
				}
				if k == len(ops)/3 {
					kill()
				}
				o := op(ops[k])
				out := outcome{op: o}
				out.after = killAt.Load() != nil
				began := time.Now()
				cctx, cancel := context.WithTimeout(ctx, callTimeout)
				if o.turn {
					out.names = []string{"say", fixture.ToolRecord, fixture.ToolG2, fixture.ToolG3, fixture.ToolSlow}
					var calls []runtime.TurnCall
					for i, n := range out.names {
						cid := fmt.Sprintf("%s.%c", o.id, 'a'+i)
						out.ids = append(out.ids, cid)
						args := `{}`
						if n == "say" {
							args = `{"text":"hi"}`
						}
						calls = append(calls, runtime.TurnCall{ID: cid, Name: n, ArgumentsText: args})
					}
					tr, err := cl.Tree(o.tree).ExecuteTurn(cctx, calls, cluster.TurnCallID(o.id))
					out.err = err
					if tr != nil {
						out.results = tr.Results
					}
				} else {
					args := `{}`
					if o.name == "say" {
						args = `{"text":"hi"}`
					}
					out.names, out.ids = []string{o.name}, []string{o.id}
					out.results = []*runtime.Result{cl.Tree(o.tree).Execute(cctx, runtime.Call{ID: o.id, Name: o.name, Arguments: raw(args)})}
				}
				cancel()
				out.elapsed = time.Since(began)
				outcomes[k] = out
				completed.Add(1)
			}
		}()
	}
	waitGroup(t, &wg, time.Duration(len(ops)/workers+1)*callBound, "the load to be answered")
	loadDone := time.Now()
	if killAt.Load() == nil {
		t.Fatal("the member was never killed")
	}
	pc.awaitExit(victim)

	// Every call answered, right or (on a moved tree) coded as lost, within
	// the bound; the bodies that answered success ran.
	var succeeded []string
	lostCodes, slowest := map[runtime.Code]int{}, time.Duration(0)
	for _, o := range outcomes {
		if o.elapsed > callBound {
			t.Errorf("%s: answered after %s, more than the bound %s", o.op.id, o.elapsed, callBound)
		}
		slowest = max(slowest, o.elapsed)
		if o.err != nil {
			t.Errorf("%s: turn error %v", o.op.id, o.err)
			continue
		}
		if len(o.results) != len(o.ids) {
			t.Errorf("%s: %d results for %d calls", o.op.id, len(o.results), len(o.ids))
			continue
		}
		for _, r := range o.results {
			if lost(r) {
				lostCodes[r.Code()]++
			}
		}
		ran, err := checkRules(o.op.tree, o.names, o.ids, o.results, moved[o.op.tree])
		if err != nil {
			t.Error(err)
		}
		succeeded = append(succeeded, ran...)
	}

	// Takeover: how long until a moved tree is served again, and its rules
	// (mount, guard, restriction) hold after re-activation elsewhere.
	var tp takeoverProbe
	select {
	case tp = <-takeover:
	case <-time.After(callBound):
		procHung(t, "the takeover probe")
	}
	if tp.r != nil {
		ran, err := checkRules(tp.tree, []string{"say"}, []string{tp.tree + ".takeover"}, []*runtime.Result{tp.r}, false)
		if err != nil {
			t.Errorf("the first call to a moved tree after the kill: %v", err)
		}
		succeeded = append(succeeded, ran...)
	}
	slowestAfter := time.Duration(0)
	for _, o := range outcomes {
		if o.after && moved[o.op.tree] {
			slowestAfter = max(slowestAfter, o.elapsed)
		}
	}
	var probeIDs []string
	var slowestProbe time.Duration
	var movedList []string
	for id := range moved {
		movedList = append(movedList, id)
	}
	var mu sync.Mutex
	each(t, workers, movedList, func(id string) error {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		root := cl.Tree(id)
		began := time.Now()
		names := []string{"say", fixture.ToolRecord, fixture.ToolG2, fixture.ToolG3}
		var ids []string
		var rs []*runtime.Result
		for _, n := range names {
			cid := id + ".probe." + n
			args := `{}`
			if n == "say" {
				args = `{"text":"hi"}`
			}
			ids = append(ids, cid)
			rs = append(rs, root.Execute(cctx, runtime.Call{ID: cid, Name: n, Arguments: raw(args)}))
		}
		ran, err := checkRules(id, names, ids, rs, false)
		if err != nil {
			return fmt.Errorf("after the move: %w", err)
		}
		if h := pc.hostOf(cctx, id); h == victim || h < 0 {
			return fmt.Errorf("%s is held by member %d after the move", id, h)
		}
		mu.Lock()
		probeIDs = append(probeIDs, ran...)
		slowestProbe = max(slowestProbe, time.Since(began))
		mu.Unlock()
		return nil
	})
	succeeded = append(succeeded, probeIDs...)

	// No body ran twice; every success ran exactly once.
	run := pc.callsRun()
	for id, members := range run {
		if len(members) > 1 {
			t.Errorf("call %s ran %d times, on members %v", id, len(members), members)
		}
	}
	for _, id := range succeeded {
		if len(run[id]) != 1 {
			t.Errorf("call %s succeeded but its body ran %d times", id, len(run[id]))
		}
	}
	t.Logf("%d agents, %d requests (%d calls, %d ran), %d trees moved; setup %s, load %s (kill at %s), calls lost: %v, slowest answer %s (slowest on a moved tree, sent after the kill: %s); a moved tree served %s after the kill; slowest post-load probe %s; whole test %s",
		agents, len(ops), agents*7, len(run), len(moved), setupDone.Sub(start).Round(time.Millisecond), loadDone.Sub(loadStart).Round(time.Millisecond),
		killAt.Load().Sub(loadStart).Round(time.Millisecond), lostCodes, slowest.Round(time.Millisecond), slowestAfter.Round(time.Millisecond), tp.after.Round(time.Millisecond), slowestProbe.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}

type takeoverProbe struct {
	tree  string
	r     *runtime.Result
	after time.Duration
}

// each runs f on every item with n workers, failing the test on the first
// error; bounded.
func each(t *testing.T, n int, items []string, f func(string) error) {
	t.Helper()
	var (
		wg    sync.WaitGroup
		next  atomic.Int64
		mu    sync.Mutex
		first error
	)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				k := int(next.Add(1)) - 1
				if k >= len(items) {
					return
				}
				if err := f(items[k]); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	waitGroup(t, &wg, time.Duration(len(items)/n+1)*callBound, "workers")
	if first != nil {
		t.Fatal(first)
	}
}

func waitGroup(t *testing.T, wg *sync.WaitGroup, limit time.Duration, what string) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(limit):
		procHung(t, what)
	}
}
