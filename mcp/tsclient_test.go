package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestTypeScriptClient runs a client nobody here wrote — the official MCP
// TypeScript SDK (@modelcontextprotocol/sdk, pinned in
// testdata/tsclient/package-lock.json) — against cmd/toolscope-mcp over
// stdio and over streamable HTTP: it lists the tools, calls one that
// succeeds, one a guard denies, one that fails and one that needs an
// approval it cannot give, registers a tool through the binary's
// -installer tool and hears notifications/tools/list_changed. It skips
// only when node or npm is missing, and never in CI (CI set), where
// .ci/run installs them. npm ci runs when node_modules is missing.
func TestTypeScriptClient(t *testing.T) {
	node, errNode := exec.LookPath("node")
	npm, errNpm := exec.LookPath("npm")
	if errNode != nil || errNpm != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("node/npm missing in CI (.ci/run installs them): %v %v", errNode, errNpm)
		}
		t.Skipf("TypeScript-client test skipped: node and npm are needed (apt-get install nodejs npm): %v %v", errNode, errNpm)
	}
	dir, err := filepath.Abs(filepath.Join("testdata", "tsclient"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci: %v\n%s", err, out)
		}
	}
	bin := filepath.Join(t.TempDir(), "toolscope-mcp")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/toolscope/toolscope/mcp/cmd/toolscope-mcp").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	runClient := func(t *testing.T, mode, target string) {
		t.Helper()
		cctx, ccancel := context.WithTimeout(ctx, time.Minute)
		defer ccancel()
		cmd := exec.CommandContext(cctx, node, "client.mjs", mode, target)
		cmd.Dir = dir
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("node client.mjs %s: %v\nstdout:\n%s\nstderr:\n%s", mode, err, out, stderr.String())
		}
		var seen struct {
			Mode, Server, Read, Denied, Failed, Unapproved, Installed string
			Tools                                                     []string
			ListChanged                                               int
		}
		if err := json.Unmarshal(out, &seen); err != nil {
			t.Fatalf("client output %q: %v", out, err)
		}
		if seen.Mode != mode || seen.Server != "toolscope-mcp" || seen.ListChanged < 1 ||
			seen.Installed != "hi from a new tool" || !strings.Contains(seen.Denied, "refused") {
			t.Errorf("the client saw %+v", seen)
		}
		t.Logf("%s", out)
	}

	t.Run("stdio", func(t *testing.T) { runClient(t, "stdio", bin) })

	t.Run("streamable-http", func(t *testing.T) {
		cmd := exec.CommandContext(ctx, bin, "-http", "127.0.0.1:0", "-installer")
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
			case <-time.After(wait):
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
			for sc.Scan() { // keep draining, so the binary never blocks on stderr
			}
		}()
		runClient(t, "http", waitFor(t, urls, "the URL on toolscope-mcp's stderr"))
	})
}
