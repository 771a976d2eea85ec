package main

// Tests of an outside attack on the command: odd flags and hostile
// servers, each a finding that failed before its fix.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	goruntime "runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolscope/toolscope/load"
)

// TestAttack_LoadMCP_OutputsCheckedBeforeTheRun: a report or page the
// command cannot write, or -out naming the page -html auto makes, is
// refused before the server is reached (exit 2, naming the flag) — it was
// found only after the whole run, whose report was then lost or
// overwritten by the page.
func TestAttack_LoadMCP_OutputsCheckedBeforeTheRun(t *testing.T) {
	sc := writeFile(t, "s.json", smallScenario)
	dir := t.TempDir()
	missing := filepath.Join(dir, "no", "such", "dir", "report.json")
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"out in a missing dir", []string{"-out", missing}, "-out: cannot write"},
		{"html in a missing dir", []string{"-out", "", "-html", missing}, "-html: cannot write"},
		{"out is the page", []string{"-out", filepath.Join(dir, "r.html")}, "the same file as -out"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"-scenario", sc, "-progress", "0", "-url", "http://127.0.0.1:9/mcp"}, mapping...)
			code, _, stderr := runCmd(t, append(args, c.args...)...)
			if code != 2 || !strings.Contains(stderr, c.want) || strings.Contains(stderr, "connecting to") {
				t.Fatalf("exit %d, want 2 and %q before connecting; stderr:\n%s", code, c.want, stderr)
			}
		})
	}
}

// hostileServer is an MCP server over streamable HTTP on loopback with
// the two tools of the mapping (read, lint) whose calls misbehave as
// told: after the first `healthy` calls, "hang" never answers (until the
// request ends), "die" hangs up on every request (the server is gone),
// and "garbage" answers 200 with a body that is not JSON-RPC. It counts
// the calls it saw start; entered gets one value per call.
type hostileServer struct {
	url     string
	entered chan struct{}
	calls   atomic.Int64
	stop    func()
}

func newHostileServer(t *testing.T, how string, healthy int64) *hostileServer {
	t.Helper()
	h := &hostileServer{entered: make(chan struct{}, 1024)}
	release := make(chan struct{})
	srv := sdk.NewServer(&sdk.Implementation{Name: "hostile", Version: "0"}, nil)
	for _, name := range []string{"read", "lint"} {
		srv.AddTool(&sdk.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				if how == "hang" && h.calls.Load() > healthy {
					select {
					case <-ctx.Done():
					case <-release:
					}
					return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "released"}}}, nil
				}
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ok"}}}, nil
			})
	}
	inner := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{Stateless: true})
	hs := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		r.Body = io.NopCloser(bytes.NewReader(body))
		if how == "hang-list" && bytes.Contains(body, []byte(`"tools/list"`)) {
			select {
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		if bytes.Contains(body, []byte(`"tools/call"`)) {
			n := h.calls.Add(1)
			select {
			case h.entered <- struct{}{}:
			default:
			}
			if n > healthy {
				switch how {
				case "die":
					if hj, ok := w.(http.Hijacker); ok {
						if c, _, err := hj.Hijack(); err == nil {
							_ = c.Close()
							return
						}
					}
					panic(http.ErrAbortHandler)
				case "garbage":
					w.Header().Set("Content-Type", "application/json")
					_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":<script>alert(1)</script>` + strings.Repeat("[", 10000)))
					return
				}
			}
		}
		inner.ServeHTTP(w, r)
	}))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs.Listener = l
	hs.Start()
	h.url = hs.URL
	var once sync.Once
	h.stop = func() { once.Do(func() { close(release); hs.CloseClientConnections(); hs.Close() }) }
	t.Cleanup(h.stop)
	return h
}

// goroutinesBack waits (bounded) for the goroutine count to fall back to
// base, dumping the goroutines if it does not.
func goroutinesBack(t *testing.T, base int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for goruntime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			var b strings.Builder
			_ = pprof.Lookup("goroutine").WriteTo(&b, 1)
			t.Fatalf("%d goroutines, %d before the run: leaked\n%s", goruntime.NumGoroutine(), base, b.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestAttack_LoadMCP_HostileServerEndsWithAReport: a server that hangs
// (the run is then interrupted, as Ctrl-C does), hangs up mid-run, or
// answers garbage: the command returns with a report of what ran — every
// call started answered once, the summary's counts equal to the calls
// made — and leaves no goroutine behind.
func TestAttack_LoadMCP_HostileServerEndsWithAReport(t *testing.T) {
	for _, how := range []string{"hang", "die", "garbage"} {
		t.Run(how, func(t *testing.T) {
			base := goruntime.NumGoroutine()
			h := newHostileServer(t, how, 5)
			out := filepath.Join(t.TempDir(), "report.json")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if how == "hang" {
				go func() { // interrupt once a call hangs
					for range 6 {
						select {
						case <-h.entered:
						case <-ctx.Done():
							return
						}
					}
					cancel()
				}()
			}
			args := append([]string{"-scenario", writeFile(t, "s.json", smallScenario), "-out", out, "-progress", "0", "-url", h.url}, mapping...)
			var stdout, stderr syncBuffer
			done := make(chan int, 1)
			go func() { done <- run(ctx, args, &stdout, &stderr) }()
			var code int
			select {
			case code = <-done:
			case <-time.After(time.Minute):
				var b strings.Builder
				_ = pprof.Lookup("goroutine").WriteTo(&b, 2)
				t.Fatalf("did not return in a minute; stderr:\n%s\ngoroutines:\n%s", stderr.String(), b.String())
			}
			if code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
			}
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			var r load.Report
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatal(err)
			}
			wantStop := load.StoppedComplete
			if how == "hang" {
				wantStop = load.StoppedInterrupted
			}
			failed := int64(0)
			for _, n := range r.Failures {
				failed += n
			}
			if r.Stopped != wantStop || r.Calls != r.Results || r.Calls != r.TurnsStarted*2 || r.Events.Finished != r.Calls || failed == 0 || r.TurnErrors != 0 {
				t.Fatalf("report: stopped %s, turns started %d, calls %d, results %d, events %d, failures %v, turn errors %d",
					r.Stopped, r.TurnsStarted, r.Calls, r.Results, r.Events.Finished, r.Failures, r.TurnErrors)
			}
			if how != "hang" && (r.TurnsDone != 12 || r.Calls != 24) {
				t.Fatalf("turns done %d, calls %d: want all 12 turns, 24 calls", r.TurnsDone, r.Calls)
			}
			if want := fmt.Sprintf("%d made, %d results, %d failed", r.Calls, r.Results, failed); !strings.Contains(stdout.String(), want) {
				t.Fatalf("summary lacks %q:\n%s", want, stdout.String())
			}
			t.Logf("%s: %d calls, failures %v", how, r.Calls, r.Failures)
			h.stop()
			goroutinesBack(t, base)
		})
	}
}

// TestAttack_LoadMCP_ServerNeverListsItsTools: a server that accepts the
// session and never answers tools/list hung the command for ever, before
// the first call and with no progress to show; listing is now bounded
// like connecting: exit 1 naming tools/list, no goroutine left.
func TestAttack_LoadMCP_ServerNeverListsItsTools(t *testing.T) {
	defer func(d time.Duration) { setupTimeout = d }(setupTimeout)
	setupTimeout = 2 * time.Second
	base := goruntime.NumGoroutine()
	h := newHostileServer(t, "hang-list", 0)
	args := append([]string{"-scenario", writeFile(t, "s.json", smallScenario), "-out", "", "-progress", "0", "-url", h.url}, mapping...)
	code, _, stderr := runCmd(t, args...)
	if code != 1 || !strings.Contains(stderr, "no answer to tools/list in 2s") {
		t.Fatalf("exit %d, want 1 naming tools/list; stderr:\n%s", code, stderr)
	}
	h.stop()
	goroutinesBack(t, base)
}
