package mcp

import (
	"context"
	"net/http"
	"net/http/httptest"
	goruntime "runtime"
	"strconv"
	"strings"
	"testing"

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
	_ = context.Background
}
