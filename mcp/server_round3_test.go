package mcp

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	goruntime "runtime"
	"strconv"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolscope/toolscope/runtime"
)

// liveSessionScopes counts the session scopes the server created that are
// still live in reg.
func liveSessionScopes(srv *Server, reg *runtime.Registry) int {
	n := 0
	for i := int64(1); i <= srv.keys.Load(); i++ {
		if _, live := reg.Scope("mcp-" + strconv.FormatInt(i, 10)); live {
			n++
		}
	}
	return n
}

// postMCP sends one streamable-HTTP POST with the headers a client sends,
// and no session id.
func postMCP(t *testing.T, hc *http.Client, url, body string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	res, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	return res.StatusCode
}

// TestServer_UnauthenticatedRequestsLeaveNoScope: streamable-HTTP POSTs
// without a session id whose body is not an initialize request
// (malformed JSON, another method, a notification, an empty batch, a
// ping) open no session, so they leave no session scope and no goroutine
// behind (issue 20, item 14).
func TestServer_UnauthenticatedRequestsLeaveNoScope(t *testing.T) {
	f := newFixture(t)
	srv := newServer(t, f.reg.Global())
	hs := httptest.NewServer(srv.StreamableHTTPHandler(nil))
	t.Cleanup(hs.Close)
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	baseline := goruntime.NumGoroutine()
	bodies := []string{
		`{not json`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
		`[]`,
		`{"jsonrpc":"2.0","id":3,"method":"ping"}`,
	}
	for range 20 {
		for _, b := range bodies {
			postMCP(t, hc, hs.URL, b)
		}
	}
	eventually(t, "no session scope to be live", func() bool {
		return srv.Sessions() == 0 && liveSessionScopes(srv, f.reg) == 0
	})
	eventually(t, "goroutines back to the baseline", func() bool {
		return goruntime.NumGoroutine() <= baseline
	})
	// A real session still works.
	cs := transports[1].connect(t, srv, client(nil), legacy)
	if r := callText(t, cs, "echo", map[string]any{"text": "hi"}); text(r) != "echo: hi" {
		t.Errorf("echo after the probes: %q", text(r))
	}
}

// TestServer_EndingSessionCancelsItsCalls: ending a session — Close, the
// end of Run's ctx, an HTTP DELETE — cancels the ctx of its calls in
// flight and returns within a bound, for a body that waits for its ctx
// (issue 20, item 15).
func TestServer_EndingSessionCancelsItsCalls(t *testing.T) {
	startSlow := func(t *testing.T, f *fixture, cs *sdk.ClientSession) {
		t.Helper()
		go func() {
			_, _ = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "slow", Arguments: map[string]any{"text": "x"}})
		}()
		waitFor(t, f.started, "the body to start")
	}
	bodyCancelled := func(t *testing.T, f *fixture) {
		t.Helper()
		if err := waitFor(t, f.bodyErr, "the body's ctx to end"); !errors.Is(err, context.Canceled) {
			t.Errorf("the body saw %v, want context.Canceled", err)
		}
	}
	for _, tr := range transports {
		t.Run("Close/"+tr.name, func(t *testing.T) {
			f := newFixture(t)
			defer close(f.release)
			srv := newServer(t, f.reg.Global())
			startSlow(t, f, tr.connect(t, srv, client(nil), legacy))
			closed := make(chan error, 1)
			go func() { closed <- srv.Close() }()
			bodyCancelled(t, f)
			waitFor(t, closed, "Close to return")
			if n := liveSessionScopes(srv, f.reg); n != 0 {
				t.Errorf("%d session scopes live after Close", n)
			}
		})
	}
	t.Run("Close/shared", func(t *testing.T) {
		f := newFixture(t)
		defer close(f.release)
		srv := newServer(t, f.reg.Global(), WithSharedScope())
		startSlow(t, f, transports[0].connect(t, srv, client(nil), legacy))
		closed := make(chan error, 1)
		go func() { closed <- srv.Close() }()
		bodyCancelled(t, f)
		waitFor(t, closed, "Close to return")
	})
	t.Run("Run", func(t *testing.T) {
		f := newFixture(t)
		defer close(f.release)
		srv := newServer(t, f.reg.Global())
		ct, st := sdk.NewInMemoryTransports()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		ran := make(chan error, 1)
		go func() { ran <- srv.Run(ctx, st) }()
		cs, err := client(nil).Connect(context.Background(), ct, legacy)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		startSlow(t, f, cs)
		cancel()
		bodyCancelled(t, f)
		if err := waitFor(t, ran, "Run to return"); !errors.Is(err, context.Canceled) {
			t.Errorf("Run: %v", err)
		}
		eventually(t, "the session's scope to be disposed", func() bool { return liveSessionScopes(srv, f.reg) == 0 })
	})
	t.Run("DELETE", func(t *testing.T) {
		f := newFixture(t)
		defer close(f.release)
		srv := newServer(t, f.reg.Global())
		hs := httptest.NewServer(srv.StreamableHTTPHandler(nil))
		t.Cleanup(hs.Close)
		cs, err := client(nil).Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: hs.URL}, legacy)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		startSlow(t, f, cs)
		deleted := make(chan int, 1)
		go func() {
			req, _ := http.NewRequest(http.MethodDelete, hs.URL, nil)
			req.Header.Set(sessionIDHeader, cs.ID())
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				deleted <- -1
				return
			}
			_ = res.Body.Close()
			deleted <- res.StatusCode
		}()
		bodyCancelled(t, f)
		if code := waitFor(t, deleted, "the DELETE's answer"); code != http.StatusNoContent {
			t.Errorf("DELETE: status %d", code)
		}
		eventually(t, "the session's scope to be disposed", func() bool {
			return srv.Sessions() == 0 && liveSessionScopes(srv, f.reg) == 0
		})
	})
}
