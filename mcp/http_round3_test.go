package mcp

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolscope/toolscope/runtime"
)

// bearerTransport adds an Authorization header to every request.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(req)
}

// TestServer_HTTPBearerTokenAuthenticates: with WithBearerToken, over real
// loopback HTTP, a request without the token (or with another) is refused
// with 401 before the MCP handler sees it, and opens no session; a client
// sending the token works (issue 20, item 28).
func TestServer_HTTPBearerTokenAuthenticates(t *testing.T) {
	f := newFixture(t)
	srv := newServer(t, f.reg.Global())
	hs := httptest.NewServer(srv.StreamableHTTPHandler(nil, WithBearerToken("s3cret")))
	t.Cleanup(hs.Close)
	for _, auth := range []string{"", "Bearer wrong", "Bearer s3cre", "Basic czNjcmV0", "Bearer s3cret2"} {
		req, _ := http.NewRequest(http.MethodPost, hs.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(res.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("Authorization %q: status %d, WWW-Authenticate %q", auth, res.StatusCode, res.Header.Get("WWW-Authenticate"))
		}
	}
	if n := srv.Sessions(); n != 0 {
		t.Errorf("%d sessions opened without the token", n)
	}
	if _, err := client(nil).Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: hs.URL}, legacy); err == nil {
		t.Error("a client without the token connected")
	}
	cs, err := client(nil).Connect(context.Background(), &sdk.StreamableClientTransport{
		Endpoint: hs.URL, HTTPClient: &http.Client{Transport: bearerTransport{"s3cret"}},
	}, legacy)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if r := callText(t, cs, "echo", map[string]any{"text": "in"}); text(r) != "echo: in" {
		t.Errorf("echo with the token: %q", text(r))
	}
}

// TestServer_HTTPMiddlewareWrapsTheHandler: WithHTTPMiddleware wraps the
// MCP handler, so it can authenticate (here: refuse a request without a
// header) and pass what it learns on (issue 20, item 28).
func TestServer_HTTPMiddlewareWrapsTheHandler(t *testing.T) {
	f := newFixture(t)
	var seen []string
	srv := newServer(t, f.reg.Global(), WithSessionScope(func(ctx context.Context, _ *runtime.Scope, info SessionInfo) error {
		seen = append(seen, info.Request.Header.Get("X-User"))
		return nil
	}))
	mw := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-Key") != "k" {
				http.Error(w, "no key", http.StatusForbidden)
				return
			}
			r = r.Clone(r.Context())
			r.Header.Set("X-User", "alice")
			next.ServeHTTP(w, r)
		})
	}
	hs := httptest.NewServer(srv.StreamableHTTPHandler(nil, WithHTTPMiddleware(mw)))
	t.Cleanup(hs.Close)
	if _, err := client(nil).Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: hs.URL}, legacy); err == nil {
		t.Error("the middleware's refusal did not refuse")
	}
	cs, err := client(nil).Connect(context.Background(), &sdk.StreamableClientTransport{
		Endpoint: hs.URL, HTTPClient: &http.Client{Transport: headerTransport{"X-Key", "k"}},
	}, legacy)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if r := callText(t, cs, "echo", map[string]any{"text": "mw"}); text(r) != "echo: mw" {
		t.Errorf("echo: %q", text(r))
	}
	if len(seen) != 1 || seen[0] != "alice" {
		t.Errorf("session hook saw users %q", seen)
	}
}

type headerTransport struct{ k, v string }

func (h headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set(h.k, h.v)
	return http.DefaultTransport.RoundTrip(req)
}

// TestServer_HTTPAllowedHostsOnAnyInterface: with WithAllowedHosts the Host
// check that stops DNS rebinding applies whatever the interface the
// request arrived on (the go-sdk's own check covers loopback only): a
// request naming another host is refused with 403, one naming an allowed
// host is served — on a non-loopback local address, and over real
// loopback HTTP (issue 20, item 28).
func TestServer_HTTPAllowedHostsOnAnyInterface(t *testing.T) {
	f := newFixture(t)
	srv := newServer(t, f.reg.Global())
	h := srv.StreamableHTTPHandler(nil, WithAllowedHosts("mcp.example.com", "127.0.0.1"))
	post := func(host string, local net.Addr) int {
		req := httptest.NewRequest(http.MethodPost, "http://"+host+"/", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Host = host
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, local))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	public := &net.TCPAddr{IP: net.ParseIP("10.1.2.3"), Port: 8080}
	if code := post("rebound.attacker.example:8080", public); code != http.StatusForbidden {
		t.Errorf("a foreign Host on a non-loopback interface: status %d, want 403", code)
	}
	if code := post("mcp.example.com:8080", public); code == http.StatusForbidden {
		t.Errorf("an allowed Host on a non-loopback interface: status %d", code)
	}
	if code := post("MCP.Example.com", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}); code == http.StatusForbidden {
		t.Errorf("an allowed Host (another case) on loopback: status %d", code)
	}
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	req, _ := http.NewRequest(http.MethodPost, hs.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Host = "rebound.attacker.example"
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("a foreign Host over loopback: status %d", res.StatusCode)
	}
	cs, err := client(nil).Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: hs.URL}, legacy)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if r := callText(t, cs, "echo", map[string]any{"text": "h"}); text(r) != "echo: h" {
		t.Errorf("echo: %q", text(r))
	}
}
