package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
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

// TestServer_SchemaTheGoSDKRejectsIsLeftOut: a tool whose parameters the
// go-sdk refuses (its AddTool panics) is left out with a warning, whether
// registered before a session opens or while sessions are open; the
// registration itself succeeds and the other tools are listed (issue 20,
// item 16).
func TestServer_SchemaTheGoSDKRejectsIsLeftOut(t *testing.T) {
	rejected := map[string]string{
		"capital_type":  `{"Type":"object","properties":{}}`,
		"type_twice":    `{"type":"string","Type":"object"}`,
		"header_object": `{"type":"object","properties":{"a":{"type":"object","x-mcp-header":"X-A"}}}`,
		"header_empty":  `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":""}}}`,
		"header_bad":    `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"X A"}}}`,
		"header_twice":  `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"X-A"},"b":{"type":"object","properties":{"c":{"type":"integer","x-mcp-header":"x-a"}}}}}`,
	}
	def := func(name, params string) runtime.Definition {
		return runtime.Definition{
			Name: name, Description: "odd", Parameters: json.RawMessage(params),
			Output: &runtime.Output{Schema: map[string]any{"type": "string"}, Render: func(_ context.Context, _, v json.RawMessage) ([]runtime.Block, error) {
				return []runtime.Block{runtime.Text(string(v))}, nil
			}},
			Execute: func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) { return "odd", nil },
		}
	}
	registerAll := func(t *testing.T, sc *runtime.Scope, suffix string) {
		t.Helper()
		for name, params := range rejected {
			if _, err := sc.Register(def(name+suffix, params)); err != nil {
				t.Fatalf("Register %s: %v", name+suffix, err)
			}
		}
		// An accepted header annotation is listed.
		if _, err := sc.Register(def("header_ok"+suffix, `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"X-A"}}}`)); err != nil {
			t.Fatal(err)
		}
	}
	for _, mode := range []string{"per-session", "shared"} {
		for _, tr := range transports {
			t.Run(mode+"/"+tr.name, func(t *testing.T) {
				f := newFixture(t)
				var logged syncBuffer
				opts := []ServerOption{WithLogger(slog.New(slog.NewTextHandler(&logged, nil)))}
				if mode == "shared" {
					opts = append(opts, WithSharedScope())
				}
				registerAll(t, f.reg.Global(), "")
				srv := newServer(t, f.reg.Global(), opts...)
				changed := make(chan struct{}, 16)
				cs := tr.connect(t, srv, client(&sdk.ClientOptions{
					ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} },
				}), legacy)
				names := toolNames(t, cs)
				for name := range rejected {
					if slices.Contains(names, name) {
						t.Errorf("%s listed", name)
					}
				}
				if !slices.Contains(names, "echo") || !slices.Contains(names, "header_ok") {
					t.Errorf("tools %v", names)
				}
				// Registered while the session is open: Register succeeds.
				registerAll(t, f.reg.Global(), "_late")
				late, err := runtime.NewTool("late", "late", func(context.Context, textIn, *runtime.RunContext) (string, error) { return "late", nil })
				if err != nil {
					t.Fatal(err)
				}
				if _, err := f.reg.Global().Register(late); err != nil {
					t.Fatal(err)
				}
				waitFor(t, changed, "list_changed")
				eventually(t, "late to be listed", func() bool { return slices.Contains(toolNames(t, cs), "late") })
				names = toolNames(t, cs)
				for name := range rejected {
					if slices.Contains(names, name+"_late") {
						t.Errorf("%s_late listed", name)
					}
				}
				if r := callText(t, cs, "echo", map[string]any{"text": "ok"}); text(r) != "echo: ok" {
					t.Errorf("echo: %q", text(r))
				}
				for name := range rejected {
					if !strings.Contains(logged.String(), "tool="+name+"_late") {
						t.Errorf("no warning for %s_late", name)
					}
				}
			})
		}
	}
}

// syncBuffer is a strings.Builder safe for concurrent writers (loggers).
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

// TestServer_SDKRefusesMatchesGoSDK: the exporter's check refuses exactly
// the tools whose AddTool panics in the go-sdk, and addTool turns such a
// panic into an error (issue 20, item 16).
func TestServer_SDKRefusesMatchesGoSDK(t *testing.T) {
	deep := strings.Repeat(`{"type":"object","properties":{"a":`, 600) + `{"type":"string"}` + strings.Repeat(`}}`, 600)
	for _, in := range []string{
		`{"type":"object"}`,
		`{"Type":"object"}`,
		`{"type":"object","Type":"string"}`,
		`{"type":"string","Type":"object"}`,
		`{"type":["object"]}`,
		`{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"X-A"}}}`,
		`{"type":"object","properties":{"a":{"type":"string","X-MCP-Header":"X A"}}}`,
		`{"type":"object","properties":{"a":{"Type":"string","x-mcp-header":"X-A"}}}`,
		`{"type":"object","properties":{"a":{"type":"number","x-mcp-header":"X-A"}}}`,
		`{"type":"object","properties":{"a":{"type":"string","x-mcp-header":null}}}`,
		`{"type":"object","properties":{"a":{"type":"string","x-mcp-header":7}}}`,
		`{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"é"}}}`,
		`{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"X-A"},"b":{"type":"boolean","x-mcp-header":"x-a"}}}`,
		`{"type":"object","properties":{"a":{"type":"object","x-mcp-header":"X-A"},"b":true}}`,
		`{"type":"object","properties":{"a":{"type":["string"],"x-mcp-header":"X A"}}}`,
		`{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"integer","x-mcp-header":"X-B"}}}}}`,
		`{"type":"object","properties":null}`,
		`{"type":"object","properties":{"a":null}}`,
		deep,
	} {
		tool := &sdk.Tool{Name: "t", InputSchema: json.RawMessage(in)}
		var panicked any
		func() {
			defer func() { panicked = recover() }()
			sdk.NewServer(&sdk.Implementation{Name: "x"}, nil).AddTool(tool, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return nil, nil
			})
		}()
		refused := sdkRefuses(tool)
		if (panicked != nil) != (refused != nil) {
			short := in
			if len(short) > 120 {
				short = short[:120] + "…"
			}
			t.Errorf("%s: go-sdk panic %v, exporter's check %v", short, panicked, refused)
		}
	}
	f := newFixture(t)
	srv := newServer(t, f.reg.Global(), WithSharedScope())
	if err := srv.shared.addTool(&sdk.Tool{Name: "no_schema"}); err == nil {
		t.Error("addTool of a tool without an input schema: no error")
	}
}

// TestServer_ResyncIsCoalescedOffTheCallersPath: a registry change does
// not re-list the open sessions inside the changing call; re-syncs run in
// the background, at most one pending per session, so registering many
// tools with many sessions open costs a few re-syncs per session, not one
// per change (issue 20, item 17).
func TestServer_ResyncIsCoalescedOffTheCallersPath(t *testing.T) {
	const sessions, tools = 8, 150
	for _, mode := range []string{"per-session", "shared"} {
		t.Run(mode, func(t *testing.T) {
			f := newFixture(t)
			var opts []ServerOption
			if mode == "shared" {
				opts = append(opts, WithSharedScope())
			}
			srv := newServer(t, f.reg.Global(), opts...)
			var css []*sdk.ClientSession
			for range sessions {
				css = append(css, transports[0].connect(t, srv, client(nil), legacy))
			}
			release := make(chan struct{})
			srv.resyncHook = func() { <-release }
			released := false
			defer func() {
				if !released {
					close(release)
				}
			}()
			before := srv.resyncs.Load()
			registered := make(chan error, 1)
			go func() {
				for i := range tools {
					d, err := runtime.NewTool("bulk_"+strconv.Itoa(i), "bulk", func(context.Context, textIn, *runtime.RunContext) (string, error) { return "", nil })
					if err == nil {
						_, err = f.reg.Global().Register(d)
					}
					if err != nil {
						registered <- err
						return
					}
				}
				registered <- nil
			}()
			if err := waitFor(t, registered, "the registrations (re-syncs are held)"); err != nil {
				t.Fatal(err)
			}
			if n := srv.resyncs.Load() - before; n != 0 {
				t.Errorf("%d re-syncs ran inside the registering calls", n)
			}
			close(release)
			released = true
			for _, cs := range css {
				eventually(t, "every session to list the new tools", func() bool {
					res, err := cs.ListTools(context.Background(), &sdk.ListToolsParams{})
					if err != nil {
						return false
					}
					n := 0
					for _, tool := range res.Tools {
						if strings.HasPrefix(tool.Name, "bulk_") {
							n++
						}
					}
					return n == tools
				})
			}
			want := int64(2 * sessions) // one held, one pending per tool set
			if mode == "shared" {
				want = 2
			}
			if n := srv.resyncs.Load() - before; n > want {
				t.Errorf("%d re-syncs for %d changes, want at most %d", n, tools, want)
			}
		})
	}
}
