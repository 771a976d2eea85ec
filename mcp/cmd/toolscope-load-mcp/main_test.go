package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolscope/toolscope/load"
)

// serverBin is toolscope-mcp, built once for the tests that load it.
var (
	buildOnce sync.Once
	serverBin string
	buildErr  error
)

func server(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "toolscope-load-mcp-test-")
		if err != nil {
			buildErr = err
			return
		}
		serverBin = filepath.Join(dir, "toolscope-mcp")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if out, err := exec.CommandContext(ctx, "go", "build", "-o", serverBin, "github.com/toolscope/toolscope/mcp/cmd/toolscope-mcp").CombinedOutput(); err != nil {
			buildErr = &buildError{err, out}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return serverBin
}

type buildError struct {
	err error
	out []byte
}

func (e *buildError) Error() string {
	return "building toolscope-mcp: " + e.err.Error() + "\n" + string(e.out)
}

func TestMain(m *testing.M) {
	code := m.Run()
	if serverBin != "" {
		_ = os.RemoveAll(filepath.Dir(serverBin))
	}
	os.Exit(code)
}

// runCmd runs the command, bounded, dumping goroutines if it hangs.
func runCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() { done <- run(context.Background(), args, &stdout, &stderr) }()
	select {
	case code := <-done:
		return code, stdout.String(), stderr.String()
	case <-time.After(2 * time.Minute):
		var b strings.Builder
		_ = pprof.Lookup("goroutine").WriteTo(&b, 2)
		t.Fatalf("toolscope-load-mcp did not return in 2 minutes; goroutines:\n%s", b.String())
		return 0, "", ""
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// smallScenario: 3 agents × 4 turns × exactly 2 calls of two tools whose
// names are not the server's (mapped with -tool): 24 calls.
const smallScenario = `{"name": "mcp-small", "seed": 4, "agents": {"count": 3},
  "tools": [
    {"name": "lookup", "mode": "parallel", "latency": {"kind": "constant", "value": "0s"}},
    {"name": "check", "mode": "exclusive", "latency": {"kind": "constant", "value": "0s"}}],
  "turns": {"perAgent": 4, "callsPerTurn": {"min": 2, "max": 2}},
  "load": {"model": "closed"}}`

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// checkCounts: every call the scenario made got a successful result from
// the server, one finished event each, and the per-tool counts (under the
// server's names) add up.
func checkCounts(t *testing.T, out string) {
	t.Helper()
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var r load.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	const calls = 3 * 4 * 2
	if r.Stopped != load.StoppedComplete || r.TurnsDone != 12 || r.Calls != calls || r.Results != calls || r.Events.Finished != calls || len(r.Failures) != 0 {
		t.Fatalf("report: stopped %s turns %d calls %d results %d events %d failures %v; want %d calls, none failed",
			r.Stopped, r.TurnsDone, r.Calls, r.Results, r.Events.Finished, r.Failures, calls)
	}
	if len(r.Tools) != 2 || r.Tools["read"] == nil || r.Tools["lint"] == nil || r.Tools["read"].Calls+r.Tools["lint"].Calls != calls {
		t.Fatalf("per tool: %+v", r.Tools)
	}
	if _, err := os.Stat(strings.TrimSuffix(out, ".json") + ".html"); err != nil {
		t.Fatalf("no report.html: %v", err)
	}
}

var mapping = []string{"-tool", "lookup=read", "-tool", "check=lint",
	"-args", `lookup={"path":"/workspace/a.go"}`, "-args", `check={"path":"/workspace/b.go"}`}

// TestLoadMCP_Stdio_CountsEqualCallsMade loads the project's own MCP
// server (toolscope-mcp) over stdio.
func TestLoadMCP_Stdio_CountsEqualCallsMade(t *testing.T) {
	bin := server(t)
	out := filepath.Join(t.TempDir(), "report.json")
	args := append([]string{"-scenario", writeFile(t, "s.json", smallScenario), "-out", out, "-progress", "0"}, mapping...)
	code, stdout, stderr := runCmd(t, append(args, "--", bin)...)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "24 made, 24 results, 0 failed") {
		t.Errorf("summary:\n%s", stdout)
	}
	checkCounts(t, out)
}

// TestLoadMCP_StreamableHTTP_CountsEqualCallsMade: the same against
// toolscope-mcp serving streamable HTTP on loopback, with a bearer token.
func TestLoadMCP_StreamableHTTP_CountsEqualCallsMade(t *testing.T) {
	bin := server(t)
	cmd := exec.Command(bin, "-http", "127.0.0.1:0", "-token", "s3cret")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			t.Error("toolscope-mcp did not stop on SIGINT")
		}
	}()
	urls := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`http://\S+`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if u := re.FindString(sc.Text()); u != "" {
				urls <- u
				break
			}
		}
		for sc.Scan() { // keep draining
		}
	}()
	var url string
	select {
	case url = <-urls:
	case <-time.After(time.Minute):
		t.Fatal("no URL on toolscope-mcp's stderr in a minute")
	}
	out := filepath.Join(t.TempDir(), "report.json")
	args := append([]string{"-scenario", writeFile(t, "s.json", smallScenario), "-out", out, "-progress", "0", "-url", url}, mapping...)
	if code, stdout, errs := runCmd(t, append(args, "-token", "wrong")...); code != 1 || !strings.Contains(errs, "connecting to") {
		t.Fatalf("a wrong token: exit %d\n%s\n%s", code, stdout, errs)
	}
	code, stdout, errs := runCmd(t, append(args, "-token", "s3cret")...)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, errs)
	}
	checkCounts(t, out)
}

// TestLoadMCP_BadMappingNamesWhatIsWrong: a mapping the scenario or the
// server cannot honour is refused (exit 2) naming the tool.
func TestLoadMCP_BadMappingNamesWhatIsWrong(t *testing.T) {
	sc := writeFile(t, "s.json", smallScenario)
	byArg := writeFile(t, "b.json", strings.Replace(smallScenario, `"mode": "exclusive"`, `"mode": "by-argument", "parallelFraction": 0.5`, 1))
	for _, c := range []struct {
		name   string
		args   []string
		server bool
		want   string
	}{
		{"unknown scenario tool", []string{"-scenario", sc, "-tool", "nope=read", "-url", "http://127.0.0.1:9/mcp"}, false, `the scenario has no tool "nope"`},
		{"shared server tool", []string{"-scenario", sc, "-tool", "lookup=read", "-tool", "check=read", "-url", "http://127.0.0.1:9/mcp"}, false, `both map to the server tool "read"`},
		{"arguments not an object", []string{"-scenario", sc, "-args", "lookup=[1]", "-url", "http://127.0.0.1:9/mcp"}, false, "-args lookup: not a JSON object"},
		{"by-argument", []string{"-scenario", byArg, "-url", "http://127.0.0.1:9/mcp"}, false, `tool "check": mode by-argument`},
		{"no server", []string{"-scenario", sc}, false, "give the server as -url URL or as a command"},
		{"server lacks the tool", []string{"-scenario", sc, "-tool", "lookup=read", "-tool", "check=frobnicate"}, true, `server tools not imported: "frobnicate"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append(c.args, "-out", "", "-progress", "0")
			if c.server {
				args = append(args, "--", server(t))
			}
			code, _, stderr := runCmd(t, args...)
			if code != 2 || !strings.Contains(stderr, c.want) {
				t.Fatalf("exit %d, want 2 and %q in:\n%s", code, c.want, stderr)
			}
		})
	}
}
