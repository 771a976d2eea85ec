// Command demo-cluster shows a toolscope cluster on one machine: it starts
// an embedded NATS server (the store) and N member processes on loopback
// (itself, re-executed as "demo-cluster member ..."; each hosts agent trees
// as grains), joins them as a client-only member, gives every agent its
// rules (a mounted catalog tool, a guard, a restriction), runs a load of
// Executes and turns across them, SIGKILLs one member a third of the way
// in, and prints a summary: what every call ended as, the calls that ended
// with an unknown outcome, the agents that moved and how long until they
// were served again, and a check that no body ran twice.
//
//	go run ./cluster/cmd/demo-cluster -members 3 -agents 300
//
// Everything listens on 127.0.0.1; the store lives in a temporary directory
// removed at exit.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	protocluster "github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/identitylookup/disthash"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolscope/toolscope/cluster"
	"github.com/toolscope/toolscope/cluster/internal/fixture"
	"github.com/toolscope/toolscope/cluster/internal/kvkey"
	"github.com/toolscope/toolscope/cluster/internal/member"
	"github.com/toolscope/toolscope/runtime"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "member" {
		if err := member.Main(os.Args[2:], os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "demo-cluster member:", err)
			os.Exit(1)
		}
		return
	}
	members := flag.Int("members", 3, "member processes (2–9); the last is killed mid-run")
	agents := flag.Int("agents", 300, "agent trees (1–10000)")
	lease := flag.Duration("lease", 3*time.Second, "the members' lease TTL: bounds how long a dead member's trees stay unavailable")
	flag.Parse()
	switch {
	case flag.NArg() > 0:
		fmt.Fprintf(os.Stderr, "demo-cluster: unexpected arguments %q\n", flag.Args())
		os.Exit(2)
	case *members < 2 || *members > 9:
		fmt.Fprintln(os.Stderr, "demo-cluster: -members must be 2 to 9 (one is killed)")
		os.Exit(2)
	case *agents < 1 || *agents > 10000:
		fmt.Fprintln(os.Stderr, "demo-cluster: -agents must be 1 to 10000")
		os.Exit(2)
	case *lease < 500*time.Millisecond:
		fmt.Fprintln(os.Stderr, "demo-cluster: -lease must be at least 500ms")
		os.Exit(2)
	}
	if err := run(*members, *agents, *lease); err != nil {
		fmt.Fprintln(os.Stderr, "demo-cluster:", err)
		os.Exit(1)
	}
}

type proc struct {
	cmd   *exec.Cmd
	calls string
	addr  string
	done  chan struct{}
}

func run(n, agents int, lease time.Duration) (err error) {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "toolscope-demo-cluster-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	emb, err := cluster.StartEmbedded(filepath.Join(dir, "nats"))
	if err != nil {
		return err
	}
	defer emb.Close()
	fmt.Printf("store: embedded NATS JetStream at %s\n", emb.URL())

	// Health ports are bound here and handed to the members.
	var hosts []string
	var files []*os.File
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		f, err := ln.(*net.TCPListener).File()
		_ = ln.Close()
		if err != nil {
			return err
		}
		hosts = append(hosts, ln.Addr().String())
		files = append(files, f)
	}
	name := fmt.Sprintf("demo%d", time.Now().UnixNano())
	var procs []*proc
	defer func() {
		for _, p := range procs { // survivors leave gracefully
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
		}
		for _, p := range procs {
			select {
			case <-p.done:
			case <-time.After(20 * time.Second):
				_ = p.cmd.Process.Kill()
				<-p.done
			}
		}
	}()
	for i := range n {
		p := &proc{calls: filepath.Join(dir, fmt.Sprintf("calls-%d.txt", i)), done: make(chan struct{})}
		p.cmd = exec.Command(self, "member", "-name", name, "-health-fd", "3", "-peers", strings.Join(hosts, ","),
			"-nats", emb.URL(), "-calls", p.calls, "-lease", lease.String())
		p.cmd.ExtraFiles = []*os.File{files[i]}
		p.cmd.Stderr = os.Stderr
		out, err := p.cmd.StdoutPipe()
		if err != nil {
			return err
		}
		if err := p.cmd.Start(); err != nil {
			return err
		}
		_ = files[i].Close()
		procs = append(procs, p)
		ready := make(chan string, 1)
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				if a, ok := strings.CutPrefix(sc.Text(), "ready "); ok {
					ready <- a
				}
			}
		}()
		go func() { _ = p.cmd.Wait(); close(p.done) }()
		select {
		case p.addr = <-ready:
			fmt.Printf("member %d: pid %d, %s (health %s)\n", i, p.cmd.Process.Pid, p.addr, hosts[i])
		case <-p.done:
			return fmt.Errorf("member %d exited before it was ready", i)
		case <-time.After(60 * time.Second):
			return fmt.Errorf("member %d not ready in 60s", i)
		}
	}

	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	prov := cluster.AutoManagedListener(sys, ln, 200*time.Millisecond, hosts...)
	c := protocluster.New(sys, protocluster.Configure(name, prov, disthash.New(), remote.Configure("127.0.0.1", 0)))
	c.StartClient()
	defer func() {
		_ = cluster.ShutdownClient(c)
		_ = prov.Shutdown(true)
	}()
	for deadline := time.Now().Add(60 * time.Second); c.MemberList.Members().Len() != n; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("membership: the client sees %d of %d members", c.MemberList.Members().Len(), n)
		}
	}
	nc, err := nats.Connect(emb.URL())
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ctx := context.Background()
	kv, err := js.KeyValue(ctx, cluster.DefaultBucket)
	if err != nil {
		return err
	}
	hostOf := func(tree string) int {
		tok, _ := kvkey.Token("tree", tree)
		e, err := kv.Get(ctx, "l."+tok)
		if err != nil {
			return -1
		}
		var v struct{ Holder string }
		_ = json.Unmarshal(e.Value(), &v)
		for i, p := range procs {
			if strings.HasPrefix(v.Holder, p.addr+"/") {
				return i
			}
		}
		return -1
	}

	const callTimeout = 30 * time.Second
	cl := cluster.NewClient(c, cluster.WithResend(500*time.Millisecond), cluster.WithDefaultTimeout(callTimeout))
	trees := make([]string, agents)
	for i := range trees {
		trees[i] = fmt.Sprintf("agent-%04d", i)
	}
	began := time.Now()
	if err := parallel(16, len(trees), func(k int) error {
		id := trees[k]
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		root := cl.Tree(id)
		if _, err := root.Mount(cctx, fixture.EntryEcho, json.RawMessage(`{"name":"say","prefix":"`+id+`:"}`)); err != nil {
			return fmt.Errorf("%s: Mount: %w", id, err)
		}
		if _, err := root.AddGuard(cctx, fixture.EntryDeny, json.RawMessage(`{"tool":"g2","reason":"no g2 here"}`)); err != nil {
			return fmt.Errorf("%s: AddGuard: %w", id, err)
		}
		if _, err := root.Restrict(cctx, runtime.Restriction{Deny: []string{"g3"}}); err != nil {
			return fmt.Errorf("%s: Restrict: %w", id, err)
		}
		return nil
	}); err != nil {
		return err
	}
	victim := n - 1
	before := map[string]int{}
	perMember := make([]int, n)
	for _, id := range trees {
		before[id] = hostOf(id)
		if h := before[id]; h >= 0 {
			perMember[h]++
		}
	}
	fmt.Printf("setup: %d agents, each with a mounted tool, a guard and a restriction, in %s; trees per member %v\n", agents, time.Since(began).Round(time.Millisecond), perMember)

	// The load: per agent two turns of say, record, slow, g2, g3.
	type req struct{ tree, id string }
	var reqs []req
	for _, id := range trees {
		reqs = append(reqs, req{id, id + ".t1"}, req{id, id + ".t2"})
	}
	rand.Shuffle(len(reqs), func(i, j int) { reqs[i], reqs[j] = reqs[j], reqs[i] })
	names := []string{"say", fixture.ToolRecord, fixture.ToolSlow, fixture.ToolG2, fixture.ToolG3}
	var (
		killAt   atomic.Pointer[time.Time]
		mu       sync.Mutex
		counts   = map[string]int{}
		unknown  []string
		unavail  []string
		served   = map[string]time.Duration{} // moved tree → first success after the kill, since the kill
		slowest  time.Duration
		requests atomic.Int64
	)
	began = time.Now()
	err = parallel(24, len(reqs), func(k int) error {
		if k == len(reqs)/3 {
			_ = procs[victim].cmd.Process.Kill()
			now := time.Now()
			killAt.Store(&now)
			fmt.Printf("killed member %d (SIGKILL) after %d of %d requests\n", victim, k, len(reqs))
		}
		r := reqs[k]
		var calls []runtime.TurnCall
		for i, nm := range names {
			args := "{}"
			if nm == "say" {
				args = `{"text":"hi"}`
			}
			calls = append(calls, runtime.TurnCall{ID: fmt.Sprintf("%s.%d", r.id, i), Name: nm, ArgumentsText: args})
		}
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		t0 := time.Now()
		tr, err := cl.Tree(r.tree).ExecuteTurn(cctx, calls, cluster.TurnCallID(r.id))
		cancel()
		if err != nil {
			return fmt.Errorf("turn %s: %w", r.id, err)
		}
		requests.Add(1)
		mu.Lock()
		defer mu.Unlock()
		slowest = max(slowest, time.Since(t0))
		for i, res := range tr.Results {
			switch {
			case !res.IsError():
				counts["ok"]++
				if ka := killAt.Load(); ka != nil && before[r.tree] == victim {
					if _, seen := served[r.tree]; !seen && t0.After(*ka) {
						served[r.tree] = time.Since(*ka)
					}
				}
			case res.Code() == cluster.CodeOutcomeUnknown:
				counts["unknown outcome"]++
				unknown = append(unknown, calls[i].ID)
			case res.Code() == cluster.CodeScopeUnavailable:
				counts["unavailable"]++
				unavail = append(unavail, calls[i].ID)
			case res.Code() == "":
				counts["refused by the tree's guard"]++
			default:
				counts["refused by the tree's rules ("+string(res.Code())+")"]++
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Printf("load: %d turns (%d calls) in %s, slowest answer %s\n", requests.Load(), requests.Load()*int64(len(names)), time.Since(began).Round(time.Millisecond), slowest.Round(time.Millisecond))
	var keys []string
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Printf("  %-44s %d\n", k, counts[k])
	}
	sort.Strings(unknown)
	fmt.Printf("calls that ended unknown-outcome (they were running on the killed member; never run again): %d\n", len(unknown))
	for i, id := range unknown {
		if i == 25 {
			fmt.Printf("  ... and %d more\n", len(unknown)-25)
			break
		}
		fmt.Printf("  %s\n", id)
	}
	if len(unavail) > 0 {
		sort.Strings(unavail)
		fmt.Printf("calls that ended unavailable (not served before their deadline; nothing ran): %d %v\n", len(unavail), unavail)
	}
	var moved []string
	for _, id := range trees {
		if before[id] == victim {
			moved = append(moved, id)
		}
	}
	var takeover []time.Duration
	for _, d := range served {
		takeover = append(takeover, d)
	}
	slices.Sort(takeover)
	fmt.Printf("agents that moved off member %d: %d", victim, len(moved))
	if len(takeover) > 0 {
		fmt.Printf("; first served again %s after the kill", takeover[0].Round(time.Millisecond))
	}
	fmt.Println()
	for i, id := range moved {
		if i == 10 {
			fmt.Printf("  ... and %d more\n", len(moved)-10)
			break
		}
		if h := hostOf(id); h != victim && h >= 0 {
			fmt.Printf("  %s: member %d → member %d\n", id, victim, h)
		} else {
			fmt.Printf("  %s: member %d → not called since the kill (activates on a live member at its next call)\n", id, victim)
		}
	}

	// No body ran twice: the members' calls files, compared.
	ran := map[string]int{}
	for _, p := range procs {
		b, err := os.ReadFile(p.calls)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		for _, line := range strings.Fields(string(b)) {
			ran[line]++
		}
	}
	twice := 0
	for _, c := range ran {
		if c > 1 {
			twice++
		}
	}
	fmt.Printf("bodies run: %d, none twice: %v\n", len(ran), twice == 0)
	if twice > 0 {
		return fmt.Errorf("%d calls ran twice", twice)
	}
	return nil
}

// parallel runs f(0..n-1) on w workers and returns the first error.
func parallel(w, n int, f func(int) error) error {
	var (
		next  atomic.Int64
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				k := int(next.Add(1)) - 1
				if k >= n {
					return
				}
				if err := f(k); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return first
}
