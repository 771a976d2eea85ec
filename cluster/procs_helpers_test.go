//go:build !race

// The multi-process tests start member processes (cmd/toolscope-member)
// and run protoactor's cluster in the test process (a client-only member):
// like the in-process cluster tests (cluster_test.go) they are left out of
// -race builds for protoactor-go's own races; .ci/run's non-race cluster
// step runs them.

package cluster_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	protocluster "github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/identitylookup/disthash"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolscope/toolscope/cluster"
	"github.com/toolscope/toolscope/cluster/internal/kvkey"
)

// procWait bounds each wait of the process tests (a process to start, to
// exit, membership to settle); a wait that runs out dumps every goroutine.
const procWait = 60 * time.Second

func procHung(t testing.TB, what string) {
	t.Helper()
	var b strings.Builder
	if p := pprof.Lookup("goroutine"); p != nil {
		_ = p.WriteTo(&b, 2)
	}
	t.Fatalf("hang: %s\n--- goroutines ---\n%s", what, b.String())
}

var (
	memberBinOnce sync.Once
	memberBin     string
	memberBinErr  error
	memberBinDir  string
)

// buildMember builds cmd/toolscope-member once per test binary run.
func buildMember(t *testing.T) string {
	t.Helper()
	memberBinOnce.Do(func() {
		memberBinDir, memberBinErr = os.MkdirTemp("", "toolscope-member-")
		if memberBinErr != nil {
			return
		}
		memberBin = filepath.Join(memberBinDir, "toolscope-member")
		out, err := exec.Command("go", "build", "-o", memberBin, "github.com/toolscope/toolscope/cluster/cmd/toolscope-member").CombinedOutput()
		if err != nil {
			memberBinErr = fmt.Errorf("go build toolscope-member: %v\n%s", err, out)
		}
	})
	if memberBinErr != nil {
		t.Fatal(memberBinErr)
	}
	return memberBin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if memberBinDir != "" {
		_ = os.RemoveAll(memberBinDir)
	}
	os.Exit(code)
}

// proc is one member process.
type proc struct {
	i      int
	cmd    *exec.Cmd
	calls  string // its calls file
	health string // its health endpoint
	addr   string // its actor system address (from "ready <addr>")
	stderr *bytes.Buffer
	done   chan struct{} // closed when it exited
	err    error         // its exit (after done)
}

// procCluster is an embedded NATS server, n member processes and a
// client-only member in the test process.
type procCluster struct {
	t      *testing.T
	dir    string
	emb    *cluster.Embedded
	js     jetstream.JetStream
	kv     jetstream.KeyValue
	procs  []*proc
	client *protocluster.Cluster
}

func startProcCluster(t *testing.T, n int, lease time.Duration) *procCluster {
	t.Helper()
	bin := buildMember(t)
	pc := &procCluster{t: t, dir: t.TempDir()}
	emb, err := cluster.StartEmbedded(filepath.Join(pc.dir, "nats"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(emb.Close)
	pc.emb = emb
	nc, err := nats.Connect(emb.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	if pc.js, err = jetstream.New(nc); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), procWait)
	defer cancel()
	if _, err := cluster.NewJetStreamStore(ctx, pc.js); err != nil { // creates the bucket
		t.Fatal(err)
	}
	if pc.kv, err = pc.js.KeyValue(ctx, cluster.DefaultBucket); err != nil {
		t.Fatal(err)
	}

	// Every health port is bound here and handed down: no window for
	// another process to take one between choosing and binding.
	lns := make([]*net.TCPListener, n)
	var hosts []string
	for i := range lns {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[i] = ln.(*net.TCPListener)
		hosts = append(hosts, ln.Addr().String())
	}
	t.Cleanup(pc.killAll) // registered after the NATS cleanups: runs before them
	name := "procs" + fmt.Sprint(time.Now().UnixNano())
	for i := range n {
		f, err := lns[i].File()
		if err != nil {
			t.Fatal(err)
		}
		_ = lns[i].Close() // the child holds its own copy
		p := &proc{i: i, calls: filepath.Join(pc.dir, fmt.Sprintf("calls-%d.txt", i)), health: hosts[i], stderr: &bytes.Buffer{}, done: make(chan struct{})}
		p.cmd = exec.Command(bin, "-name", name, "-health-fd", "3", "-peers", strings.Join(hosts, ","),
			"-nats", emb.URL(), "-calls", p.calls, "-lease", lease.String())
		p.cmd.ExtraFiles = []*os.File{f}
		p.cmd.Stderr = p.stderr
		stdout, err := p.cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		_ = f.Close()
		pc.procs = append(pc.procs, p)
		ready := make(chan string, 1)
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				if a, ok := strings.CutPrefix(sc.Text(), "ready "); ok {
					ready <- a
				}
			}
			_, _ = io.Copy(io.Discard, stdout)
		}()
		go func() { p.err = p.cmd.Wait(); close(p.done) }()
		select {
		case p.addr = <-ready:
		case <-p.done:
			t.Fatalf("member %d exited before it was ready: %v\n%s", i, p.err, p.stderr)
		case <-time.After(procWait):
			procHung(t, fmt.Sprintf("member %d to print ready", i))
		}
	}

	// The client-only member, in this process.
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	prov := cluster.AutoManagedListener(sys, ln, 200*time.Millisecond, hosts...)
	c := protocluster.New(sys, protocluster.Configure(name, prov, disthash.New(), remote.Configure("127.0.0.1", 0)))
	c.StartClient()
	pc.client = c
	t.Cleanup(func() {
		done := make(chan struct{})
		go func() {
			_ = cluster.ShutdownClient(c)
			_ = prov.Shutdown(true)
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(procWait):
			procHung(t, "the client-only member to shut down")
		}
	})
	pc.waitMembers(n)
	return pc
}

// waitMembers waits until the client sees n members.
func (pc *procCluster) waitMembers(n int) {
	pc.t.Helper()
	deadline := time.Now().Add(procWait)
	for pc.client.MemberList.Members().Len() != n {
		if time.Now().After(deadline) {
			procHung(pc.t, fmt.Sprintf("membership: the client sees %d of %d members", pc.client.MemberList.Members().Len(), n))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// signal sends sig to member i.
func (pc *procCluster) signal(i int, sig syscall.Signal) {
	pc.t.Helper()
	if err := pc.procs[i].cmd.Process.Signal(sig); err != nil {
		pc.t.Fatalf("signal %v to member %d: %v", sig, i, err)
	}
	if sig == syscall.SIGSTOP {
		pc.awaitStopped(i)
	}
}

// awaitStopped waits until every thread of member i is stopped: kill(2)
// returns before a thread running on another core has taken the signal,
// and a thread still running then could take a request sent "after the
// pause" (a CI run saw the paused member claim such a call). Linux only
// (/proc); elsewhere it returns at once.
func (pc *procCluster) awaitStopped(i int) {
	pc.t.Helper()
	dir := fmt.Sprintf("/proc/%d/task", pc.procs[i].cmd.Process.Pid)
	if _, err := os.Stat(dir); err != nil {
		return
	}
	deadline := time.Now().Add(procWait)
	for {
		tasks, err := os.ReadDir(dir)
		stopped := err == nil && len(tasks) > 0
		for _, task := range tasks {
			b, err := os.ReadFile(filepath.Join(dir, task.Name(), "stat"))
			if err != nil {
				stopped = false
				break
			}
			// pid (comm) state ...: the state follows the last ')'.
			st := string(b)
			if k := strings.LastIndexByte(st, ')'); k < 0 || k+2 >= len(st) || (st[k+2] != 'T' && st[k+2] != 't') {
				stopped = false
				break
			}
		}
		if stopped {
			return
		}
		if time.Now().After(deadline) {
			procHung(pc.t, fmt.Sprintf("member %d to stop", i))
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// awaitExit waits for member i to exit.
func (pc *procCluster) awaitExit(i int) {
	pc.t.Helper()
	select {
	case <-pc.procs[i].done:
	case <-time.After(procWait):
		procHung(pc.t, fmt.Sprintf("member %d to exit", i))
	}
}

// killAll SIGKILLs every member still running (SIGCONT first: a stopped
// process dies on SIGKILL too, but is continued for good measure) and
// checks each has exited: no process is left behind.
func (pc *procCluster) killAll() {
	for _, p := range pc.procs {
		select {
		case <-p.done:
			continue
		default:
		}
		_ = p.cmd.Process.Signal(syscall.SIGCONT)
		_ = p.cmd.Process.Kill()
	}
	for _, p := range pc.procs {
		select {
		case <-p.done:
		case <-time.After(procWait):
			procHung(pc.t, fmt.Sprintf("member %d (pid %d) to exit after SIGKILL", p.i, p.cmd.Process.Pid))
		}
		if pc.t.Failed() && p.stderr.Len() > 0 {
			pc.t.Logf("member %d stderr:\n%s", p.i, p.stderr)
		}
	}
}

// holder returns tree's lease holder and epoch as stored ("" when none or
// released).
func (pc *procCluster) holder(ctx context.Context, tree string) (string, uint64) {
	pc.t.Helper()
	tok, err := kvkey.Token("tree", tree)
	if err != nil {
		pc.t.Fatal(err)
	}
	e, err := pc.kv.Get(ctx, "l."+tok)
	if err != nil {
		return "", 0
	}
	var v struct {
		Holder string `json:"holder"`
		Epoch  uint64 `json:"epoch"`
	}
	if err := json.Unmarshal(e.Value(), &v); err != nil {
		pc.t.Fatalf("lease of %s: %v", tree, err)
	}
	return v.Holder, v.Epoch
}

// hostOf returns the index of the member whose activation holds tree (-1:
// none).
func (pc *procCluster) hostOf(ctx context.Context, tree string) int {
	h, _ := pc.holder(ctx, tree)
	for _, p := range pc.procs {
		if strings.HasPrefix(h, p.addr+"/") {
			return p.i
		}
	}
	return -1
}

// callsRun reads every member's calls file: call id → the members whose
// body ran it, once per line.
func (pc *procCluster) callsRun() map[string][]int {
	pc.t.Helper()
	ran := map[string][]int{}
	for _, p := range pc.procs {
		b, err := os.ReadFile(p.calls)
		if err != nil && !os.IsNotExist(err) {
			pc.t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if line != "" {
				ran[line] = append(ran[line], p.i)
			}
		}
	}
	return ran
}
