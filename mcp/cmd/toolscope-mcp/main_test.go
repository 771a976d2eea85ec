package main

import (
	"context"
	"io"
	"net"
	"net/http"
	neturl "net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

var servingRe = regexp.MustCompile(`serving MCP \(streamable HTTP\) at (http://\S+/mcp)`)

// serve runs the binary's run with args until the test ends, and returns
// the URL it serves and what it wrote on stderr up to then.
func serve(t *testing.T, args ...string) (string, *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stderr syncBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, args, strings.NewReader(""), &strings.Builder{}, &stderr) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("run did not return after its ctx ended")
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		if m := servingRe.FindStringSubmatch(stderr.String()); m != nil {
			return m[1], &stderr
		}
		select {
		case err := <-done:
			t.Fatalf("run returned %v; stderr %q", err, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no serving line on stderr: %q", stderr.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func initialize(t *testing.T, url, token string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Logf("POST %s: %d %s", url, res.StatusCode, b)
	}
	return res.StatusCode
}

// TestRun_HTTPOffLoopbackWarnsAndTokenAuthenticates: the binary warns when
// -http is reachable from other machines (and says so louder without a
// token), stays quiet on loopback, and with -token (or its environment
// variable) refuses requests without the token, over real HTTP (issue 20,
// item 28).
func TestRun_HTTPOffLoopbackWarnsAndTokenAuthenticates(t *testing.T) {
	t.Run("all interfaces, no token", func(t *testing.T) {
		t.Setenv(tokenEnv, "")
		_, stderr := serve(t, "-http", ":0")
		if !strings.Contains(stderr.String(), "warning") || !strings.Contains(stderr.String(), "WITHOUT authentication") {
			t.Errorf("no warning for :0 without a token: %q", stderr.String())
		}
	})
	t.Run("loopback, token from the environment", func(t *testing.T) {
		t.Setenv(tokenEnv, "envtok")
		url, stderr := serve(t, "-http", "127.0.0.1:0")
		if strings.Contains(stderr.String(), "warning") {
			t.Errorf("warning on loopback: %q", stderr.String())
		}
		if code := initialize(t, url, ""); code != http.StatusUnauthorized {
			t.Errorf("without the token: status %d", code)
		}
		if code := initialize(t, url, "envtok"); code != http.StatusOK {
			t.Errorf("with the token: status %d", code)
		}
	})
	t.Run("0.0.0.0 with -token", func(t *testing.T) {
		t.Setenv(tokenEnv, "")
		url, stderr := serve(t, "-http", "0.0.0.0:0", "-token", "flagtok")
		if !strings.Contains(stderr.String(), "warning") || strings.Contains(stderr.String(), "WITHOUT") {
			t.Errorf("warning for 0.0.0.0 with a token: %q", stderr.String())
		}
		u, err := neturl.Parse(url)
		if err != nil {
			t.Fatal(err)
		}
		u.Host = net.JoinHostPort("127.0.0.1", u.Port())
		url = u.String()
		if code := initialize(t, url, "wrong"); code != http.StatusUnauthorized {
			t.Errorf("with a wrong token: status %d", code)
		}
		if code := initialize(t, url, "flagtok"); code != http.StatusOK {
			t.Errorf("with the token: status %d", code)
		}
	})
}

func TestListenAddr_BarePortIsLoopback(t *testing.T) {
	for in, want := range map[string]bool{"8080": true, "127.0.0.1:1": true, "[::1]:1": true, "localhost:1": true, ":8080": false, "0.0.0.0:1": false, "[::]:1": false, "10.0.0.1:1": false, "example.com:1": false} {
		if got := isLoopback(listenAddr(in)); got != want {
			t.Errorf("isLoopback(listenAddr(%q)) = %v, want %v", in, got, want)
		}
	}
}
