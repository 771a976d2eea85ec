package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http/httptest"
	"runtime/pprof"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolscope/toolscope/runtime"
)

// wait bounds every wait of these tests.
const wait = 10 * time.Second

// waitFor receives from ch within the bound, or fails the test with a
// goroutine dump.
func waitFor[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		var sb strings.Builder
		_ = pprof.Lookup("goroutine").WriteTo(&sb, 1)
		t.Fatalf("timed out waiting for %s\n%s", what, sb.String())
		panic("unreachable")
	}
}

// eventually polls cond within the bound.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			var sb strings.Builder
			_ = pprof.Lookup("goroutine").WriteTo(&sb, 1)
			t.Fatalf("timed out waiting for %s\n%s", what, sb.String())
		}
		time.Sleep(2 * time.Millisecond)
	}
}

type textIn struct {
	Text string `json:"text"`
}

type weather struct {
	City  string  `json:"city"`
	TempC float64 `json:"temp_c"`
}

// fixture is a registry with one tool of every kind the tests call.
type fixture struct {
	reg       *runtime.Registry
	started   chan struct{} // "slow" reached its body
	bodyErr   chan error    // what "slow"'s body saw when its ctx ended
	release   chan struct{} // closed: "slow" returns even if its ctx never ends
	approvals atomic.Int64  // calls of the registry's approver
}

func newFixture(t *testing.T, opts ...runtime.Option) *fixture {
	t.Helper()
	f := &fixture{started: make(chan struct{}, 1), bodyErr: make(chan error, 1), release: make(chan struct{})}
	reg, err := runtime.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Bounded: a body left waiting by a failed test must not hang the run.
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		_ = reg.Close(ctx)
	})
	f.reg = reg
	must := func(d runtime.Definition, err error) runtime.Definition {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	defs := []runtime.Definition{
		must(runtime.NewTool("echo", "Echo the text", func(ctx context.Context, in textIn, rc *runtime.RunContext) (string, error) {
			return "echo: " + in.Text, nil
		}, runtime.WithParallel())),
		must(runtime.NewTool("fail", "Always fails", func(ctx context.Context, in textIn, rc *runtime.RunContext) (string, error) {
			return "", errors.New("disk on fire")
		})),
		must(runtime.NewTool("weather", "Weather in a city", func(ctx context.Context, in struct {
			City string `json:"city"`
		}, rc *runtime.RunContext) (weather, error) {
			return weather{City: in.City, TempC: 21.5}, nil
		})),
		must(runtime.NewTool("slow", "Waits for its ctx", func(ctx context.Context, in textIn, rc *runtime.RunContext) (string, error) {
			f.started <- struct{}{}
			select {
			case <-ctx.Done():
				f.bodyErr <- ctx.Err()
				return "", ctx.Err()
			case <-f.release:
				return "released", nil
			}
		})),
		must(runtime.NewTool("write", "Write a file", func(ctx context.Context, in textIn, rc *runtime.RunContext) (string, error) {
			return "wrote " + in.Text, nil
		})),
		must(runtime.NewTool("deploy", "Deploy (asks for approval)", func(ctx context.Context, in textIn, rc *runtime.RunContext) (string, error) {
			return "deployed " + in.Text, nil
		})),
	}
	g := reg.Global()
	for _, d := range defs {
		if _, err := g.Register(d); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := g.Guard(func(ctx context.Context, e runtime.Execution) (string, bool) {
		if e.Name() != "write" {
			return "", false
		}
		a, _ := e.Arguments()
		if strings.Contains(string(a), "/etc") {
			return "writes under /etc are refused", true
		}
		return "", false
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := g.OnPreExecute(func(ctx context.Context, e runtime.Execution, next func() (runtime.Decision, error)) (runtime.Decision, error) {
		if e.Name() == "deploy" {
			return runtime.Ask("deploys to production"), nil
		}
		return next()
	}); err != nil {
		t.Fatal(err)
	}
	return f
}

// transport connects a go-sdk client to srv one way.
type transport struct {
	name    string
	connect func(t *testing.T, srv *Server, c *sdk.Client, opts *sdk.ClientSessionOptions) *sdk.ClientSession
}

var transports = []transport{
	{"in-memory", func(t *testing.T, srv *Server, c *sdk.Client, opts *sdk.ClientSessionOptions) *sdk.ClientSession {
		t.Helper()
		ct, st := sdk.NewInMemoryTransports()
		ctx := context.Background()
		if _, err := srv.Connect(ctx, st, nil); err != nil {
			t.Fatal(err)
		}
		cs, err := c.Connect(ctx, ct, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}},
	{"streamable-http", func(t *testing.T, srv *Server, c *sdk.Client, opts *sdk.ClientSessionOptions) *sdk.ClientSession {
		t.Helper()
		hs := httptest.NewServer(srv.StreamableHTTPHandler(nil))
		t.Cleanup(hs.Close)
		cs, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: hs.URL}, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}},
}

// legacy is the last protocol version with sessions and server-sent
// requests (initialize handshake).
var legacy = &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"}

// protocols: the go-sdk client's default (2026-07-28, server/discover, no
// sessions on HTTP) and the legacy handshake.
var protocols = []struct {
	name string
	opts *sdk.ClientSessionOptions
}{{"latest", nil}, {"2025-11-25", legacy}}

func newServer(t *testing.T, scope *runtime.Scope, opts ...ServerOption) *Server {
	t.Helper()
	srv, err := NewServer(scope, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

func client(opts *sdk.ClientOptions) *sdk.Client {
	return sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, opts)
}

func callText(t *testing.T, cs *sdk.ClientSession, name string, args any) *sdk.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return res
}

func text(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func toolNames(t *testing.T, cs *sdk.ClientSession) []string {
	t.Helper()
	var names []string
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

func TestServer_ListAndCall(t *testing.T) {
	for _, tr := range transports {
		for _, p := range protocols {
			t.Run(tr.name+"/"+p.name, func(t *testing.T) {
				f := newFixture(t)
				srv := newServer(t, f.reg.Global())
				cs := tr.connect(t, srv, client(nil), p.opts)

				res, err := cs.ListTools(context.Background(), nil)
				if err != nil {
					t.Fatal(err)
				}
				var names []string
				for _, tool := range res.Tools {
					names = append(names, tool.Name)
					schema, _ := json.Marshal(tool.InputSchema)
					if !strings.Contains(string(schema), `"type":"object"`) {
						t.Errorf("%s: input schema %s", tool.Name, schema)
					}
					switch tool.Name {
					case "weather":
						out, _ := json.Marshal(tool.OutputSchema)
						if !strings.Contains(string(out), `"temp_c"`) {
							t.Errorf("weather's outputSchema = %s, want the weather object", out)
						}
					case "echo":
						if tool.OutputSchema != nil {
							t.Errorf("echo (string output) declares outputSchema %v", tool.OutputSchema)
						}
					}
				}
				slices.Sort(names)
				if want := []string{"deploy", "echo", "fail", "slow", "weather", "write"}; !slices.Equal(names, want) {
					t.Fatalf("tools = %v, want %v", names, want)
				}

				if r := callText(t, cs, "echo", map[string]any{"text": "hi"}); r.IsError || text(r) != "echo: hi" {
					t.Errorf("echo: isError=%v text=%q", r.IsError, text(r))
				}
				if r := callText(t, cs, "fail", map[string]any{"text": "x"}); !r.IsError || !strings.Contains(text(r), "disk on fire") {
					t.Errorf("fail: isError=%v text=%q", r.IsError, text(r))
				}
				if r := callText(t, cs, "write", map[string]any{"text": "/etc/passwd"}); !r.IsError || text(r) != "Error: writes under /etc are refused" {
					t.Errorf("guard-denied write: isError=%v text=%q", r.IsError, text(r))
				}
				if r := callText(t, cs, "write", map[string]any{"text": "/tmp/a"}); r.IsError || text(r) != "wrote /tmp/a" {
					t.Errorf("allowed write: isError=%v text=%q", r.IsError, text(r))
				}
				r := callText(t, cs, "echo", map[string]any{"text": 3})
				if !r.IsError || r.Meta[MetaCode] != string(runtime.CodeInvalidArgs) {
					t.Errorf("bad arguments: isError=%v meta=%v text=%q", r.IsError, r.Meta, text(r))
				}
				r = callText(t, cs, "weather", map[string]any{"city": "Oslo"})
				sc, _ := json.Marshal(r.StructuredContent)
				if r.IsError || string(sc) != `{"city":"Oslo","temp_c":21.5}` || !strings.Contains(text(r), "Oslo") {
					t.Errorf("weather: isError=%v structured=%s text=%q", r.IsError, sc, text(r))
				}
			})
		}
	}
}

func TestServer_CancellationReachesBody(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			f := newFixture(t)
			srv := newServer(t, f.reg.Global())
			cs := tr.connect(t, srv, client(nil), legacy)
			defer close(f.release) // runs before the cleanups, even after a failure
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "slow", Arguments: map[string]any{"text": "x"}})
				done <- err
			}()
			waitFor(t, f.started, "the body to start")
			cancel() // the go-sdk client sends notifications/cancelled
			if err := waitFor(t, f.bodyErr, "the body's ctx to end"); !errors.Is(err, context.Canceled) {
				t.Errorf("body saw %v, want context.Canceled", err)
			}
			if err := waitFor(t, done, "the call to return"); err == nil {
				t.Error("the cancelled call returned no error")
			}
		})
	}
}

func TestServer_ListChangedAfterRegistration(t *testing.T) {
	for _, tr := range transports {
		for _, p := range protocols {
			t.Run(tr.name+"/"+p.name, func(t *testing.T) {
				f := newFixture(t)
				srv := newServer(t, f.reg.Global())
				changed := make(chan struct{}, 16)
				cs := tr.connect(t, srv, client(&sdk.ClientOptions{
					ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} },
				}), p.opts)
				if slices.Contains(toolNames(t, cs), "late") {
					t.Fatal("late listed before it was registered")
				}
				late, err := runtime.NewTool("late", "Registered later", func(ctx context.Context, in textIn, rc *runtime.RunContext) (string, error) {
					return "late " + in.Text, nil
				})
				if err != nil {
					t.Fatal(err)
				}
				dispose, err := f.reg.Global().Register(late)
				if err != nil {
					t.Fatal(err)
				}
				waitFor(t, changed, "tools/list_changed after Register")
				if !slices.Contains(toolNames(t, cs), "late") {
					t.Fatal("late not listed after list_changed")
				}
				if r := callText(t, cs, "late", map[string]any{"text": "x"}); text(r) != "late x" {
					t.Errorf("late: %q", text(r))
				}
				dispose()
				waitFor(t, changed, "tools/list_changed after the disposer")
				eventually(t, "late to leave the list", func() bool { return !slices.Contains(toolNames(t, cs), "late") })
			})
		}
	}
}

func TestServer_PerSessionScopes(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			f := newFixture(t)
			var scopes = make(chan *runtime.Scope, 2)
			var n atomic.Int64
			srv := newServer(t, f.reg.Global(), WithSessionScope(func(ctx context.Context, sc *runtime.Scope, info SessionInfo) error {
				scopes <- sc
				if n.Add(1) == 1 {
					// The first session may not fail.
					_, err := sc.Restrict(runtime.Restriction{Deny: []string{"fail"}})
					return err
				}
				return nil
			}))
			changedA := make(chan struct{}, 16)
			changedB := make(chan struct{}, 16)
			a := tr.connect(t, srv, client(&sdk.ClientOptions{
				ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changedA <- struct{}{} },
			}), legacy)
			scopeA := waitFor(t, scopes, "session A's scope")
			b := tr.connect(t, srv, client(&sdk.ClientOptions{
				ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changedB <- struct{}{} },
			}), legacy)
			scopeB := waitFor(t, scopes, "session B's scope")
			if scopeA.Key() == scopeB.Key() {
				t.Fatalf("both sessions got scope %q", scopeA.Key())
			}
			if got := srv.Sessions(); got != 2 {
				t.Errorf("Sessions() = %d, want 2", got)
			}
			if slices.Contains(toolNames(t, a), "fail") || !slices.Contains(toolNames(t, b), "fail") {
				t.Errorf("restriction not per session: A %v, B %v", toolNames(t, a), toolNames(t, b))
			}

			// A tool registered in B's scope is B's alone.
			mine, err := runtime.NewTool("mine", "B's own", func(ctx context.Context, in textIn, rc *runtime.RunContext) (string, error) {
				return "B", nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := scopeB.Register(mine); err != nil {
				t.Fatal(err)
			}
			waitFor(t, changedB, "B's list_changed")
			if !slices.Contains(toolNames(t, b), "mine") || slices.Contains(toolNames(t, a), "mine") {
				t.Errorf("mine: A %v, B %v", toolNames(t, a), toolNames(t, b))
			}
			select {
			case <-changedA:
				t.Error("A heard a change it cannot see")
			case <-time.After(50 * time.Millisecond): // the go-sdk debounces by 10 ms
			}

			// Ending B's session disposes its scope.
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
			eventually(t, "B's scope to be disposed", func() bool {
				_, live := f.reg.Scope(scopeB.Key())
				return !live
			})
			if _, live := f.reg.Scope(scopeA.Key()); !live {
				t.Error("A's scope went with B's")
			}
			eventually(t, "Sessions() to drop to 1", func() bool { return srv.Sessions() == 1 })
			_ = srv.Close()
			eventually(t, "Close to dispose A's scope", func() bool {
				_, live := f.reg.Scope(scopeA.Key())
				return !live
			})
		})
	}
}

func TestServer_SharedScope(t *testing.T) {
	f := newFixture(t)
	srv := newServer(t, f.reg.Global(), WithSharedScope())
	changed := make(chan struct{}, 16)
	c := client(&sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} },
	})
	a := transports[0].connect(t, srv, c, legacy)
	b := transports[1].connect(t, srv, c, legacy)
	late, err := runtime.NewTool("late", "Registered later", func(ctx context.Context, in textIn, rc *runtime.RunContext) (string, error) {
		return "late", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.reg.Global().Register(late); err != nil {
		t.Fatal(err)
	}
	waitFor(t, changed, "the first session's list_changed")
	waitFor(t, changed, "the second session's list_changed")
	for _, cs := range []*sdk.ClientSession{a, b} {
		if r := callText(t, cs, "late", map[string]any{"text": ""}); text(r) != "late" {
			t.Errorf("late: %q", text(r))
		}
	}
	if srv.Sessions() != 0 {
		t.Errorf("Sessions() = %d with a shared scope", srv.Sessions())
	}
}

func TestServer_ElicitationApproval(t *testing.T) {
	for _, tr := range transports {
		for _, p := range protocols {
			for _, action := range []string{"accept", "decline", "cancel", "accept-false"} {
				t.Run(tr.name+"/"+p.name+"/"+action, func(t *testing.T) {
					f := newFixture(t)
					srv := newServer(t, f.reg.Global())
					asked := make(chan string, 1)
					cs := tr.connect(t, srv, client(&sdk.ClientOptions{
						ElicitationHandler: func(ctx context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
							asked <- req.Params.Message
							switch action {
							case "accept":
								return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
							case "accept-false":
								return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": false}}, nil
							}
							return &sdk.ElicitResult{Action: action}, nil
						},
					}), p.opts)
					r := callText(t, cs, "deploy", map[string]any{"text": "v2"})
					msg := waitFor(t, asked, "the elicitation")
					if !strings.Contains(msg, "deploy") || !strings.Contains(msg, "deploys to production") || !strings.Contains(msg, "v2") {
						t.Errorf("elicitation message %q", msg)
					}
					switch action {
					case "accept":
						if r.IsError || text(r) != "deployed v2" {
							t.Errorf("approved deploy: isError=%v %q", r.IsError, text(r))
						}
					case "cancel":
						if !r.IsError || !strings.HasSuffix(text(r), `approval for tool "deploy" was cancelled`) {
							t.Errorf("cancelled: isError=%v %q", r.IsError, text(r))
						}
					default:
						if !r.IsError || !strings.HasSuffix(text(r), `the user rejected tool "deploy"`) {
							t.Errorf("declined: isError=%v %q", r.IsError, text(r))
						}
					}
				})
			}
		}
	}
}

func TestServer_ApprovalFailsClosed(t *testing.T) {
	t.Run("no elicitation, no approver", func(t *testing.T) {
		f := newFixture(t)
		srv := newServer(t, f.reg.Global())
		for _, p := range protocols {
			cs := transports[0].connect(t, srv, client(nil), p.opts)
			if r := callText(t, cs, "deploy", map[string]any{"text": "v2"}); !r.IsError || text(r) != `Error: tool "deploy" requires approval (deploys to production), and no approver is set up to grant it; the call was not run` {
				t.Errorf("%s: isError=%v %q", p.name, r.IsError, text(r))
			}
		}
	})
	t.Run("no elicitation, the registry's approver", func(t *testing.T) {
		var f *fixture
		f = newFixture(t, runtime.WithApprover(func(ctx context.Context, req runtime.ApprovalRequest) (runtime.ApprovalOutcome, error) {
			f.approvals.Add(1)
			if strings.HasPrefix(req.Agent, "mcp-") {
				return runtime.ApprovalAllowedOnce, nil
			}
			return runtime.ApprovalRejected, nil
		}))
		srv := newServer(t, f.reg.Global())
		cs := transports[0].connect(t, srv, client(nil), legacy)
		if r := callText(t, cs, "deploy", map[string]any{"text": "v2"}); r.IsError || text(r) != "deployed v2" {
			t.Errorf("isError=%v %q", r.IsError, text(r))
		}
		if f.approvals.Load() != 1 {
			t.Errorf("approver called %d times", f.approvals.Load())
		}
	})
	t.Run("elicitation fails", func(t *testing.T) {
		f := newFixture(t)
		srv := newServer(t, f.reg.Global())
		cs := transports[0].connect(t, srv, client(&sdk.ClientOptions{
			ElicitationHandler: func(ctx context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
				return nil, errors.New("no user at the keyboard")
			},
		}), legacy)
		r := callText(t, cs, "deploy", map[string]any{"text": "v2"})
		if !r.IsError || !strings.Contains(text(r), "asking the MCP client failed") {
			t.Errorf("isError=%v %q", r.IsError, text(r))
		}
	})
}

// TestServer_RoundTripApprovalIsSealed: on protocol 2026-07-28 the
// approval is an input_required result the client answers by calling
// again; an answer counts only with the request state of the question it
// answers, so a client cannot pre-approve a call, nor reuse an approval for
// other arguments.
func TestServer_RoundTripApprovalIsSealed(t *testing.T) {
	f := newFixture(t)
	srv := newServer(t, f.reg.Global())
	cs := transports[0].connect(t, srv, client(&sdk.ClientOptions{
		MultiRoundTrip: &sdk.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			return nil, errors.New("not called: the test answers by hand")
		},
	}), nil)
	yes := sdk.InputResponseMap{approvalInput: &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}}
	call := func(args any, responses sdk.InputResponseMap, state string) *sdk.CallToolResult {
		t.Helper()
		r, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "deploy", Arguments: args, InputResponses: responses, RequestState: state})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	v2 := map[string]any{"text": "v2"}
	if r := call(v2, yes, "forged"); !r.NeedsInput() {
		t.Fatalf("a forged pre-approval was taken: isError=%v %q", r.IsError, text(r))
	}
	first := call(v2, nil, "")
	if !first.NeedsInput() || first.RequestState == "" {
		t.Fatalf("want an input request, got isError=%v %q", first.IsError, text(first))
	}
	q, ok := first.InputRequests[approvalInput].(*sdk.ElicitParams)
	if !ok || !strings.Contains(q.Message, "deploys to production") {
		t.Fatalf("input requests %#v", first.InputRequests)
	}
	if r := call(map[string]any{"text": "v3"}, yes, first.RequestState); !r.NeedsInput() {
		t.Fatalf("v2's approval ran v3: isError=%v %q", r.IsError, text(r))
	}
	if r := call(v2, yes, first.RequestState); r.NeedsInput() || r.IsError || text(r) != "deployed v2" {
		t.Fatalf("the answered retry: needsInput=%v isError=%v %q", r.NeedsInput(), r.IsError, text(r))
	}
}

// TestServer_StatelessHTTP: with a stateless handler every request is its
// own session, bound at its first message, and its scope is gone once the
// request is answered.
func TestServer_StatelessHTTP(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			f := newFixture(t)
			srv := newServer(t, f.reg.Global())
			hs := httptest.NewServer(srv.StreamableHTTPHandler(&sdk.StreamableHTTPOptions{Stateless: true}))
			t.Cleanup(hs.Close)
			cs, err := client(nil).Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: hs.URL}, p.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if names := toolNames(t, cs); !slices.Contains(names, "echo") {
				t.Fatalf("tools %v", names)
			}
			if r := callText(t, cs, "echo", map[string]any{"text": "s"}); text(r) != "echo: s" {
				t.Errorf("echo: %q", text(r))
			}
			eventually(t, "every request's scope to be disposed", func() bool { return srv.Sessions() == 0 })
		})
	}
}

// TestServer_ListingEdges: a tool whose parameters are not an object
// schema is left out (MCP cannot call it), the rest are listed, and the
// go-sdk's pagination pages through them.
func TestServer_ListingEdges(t *testing.T) {
	f := newFixture(t)
	odd := runtime.Definition{
		Name: "odd", Description: "array parameters", Parameters: json.RawMessage(`{"type":"array"}`),
		Output: &runtime.Output{Schema: map[string]any{"type": "string"}, Render: func(_ context.Context, _, v json.RawMessage) ([]runtime.Block, error) {
			return []runtime.Block{runtime.Text(string(v))}, nil
		}},
		Execute: func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) { return "odd", nil },
	}
	if _, err := f.reg.Global().Register(odd); err != nil {
		t.Fatal(err)
	}
	var logged strings.Builder
	srv := newServer(t, f.reg.Global(), WithSDKOptions(sdk.ServerOptions{PageSize: 2}), WithLogger(slog.New(slog.NewTextHandler(&logged, nil))))
	cs := transports[0].connect(t, srv, client(nil), legacy)
	if !strings.Contains(logged.String(), "tool=odd") {
		t.Errorf("no warning for odd: %q", logged.String())
	}
	first, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Tools) != 2 || first.NextCursor == "" {
		t.Errorf("first page: %d tools, cursor %q", len(first.Tools), first.NextCursor)
	}
	if got, want := toolNames(t, cs), []string{"deploy", "echo", "fail", "slow", "weather", "write"}; !slices.Equal(got, want) {
		t.Errorf("all pages: %v, want %v", got, want)
	}
}

// TestServer_SessionHookRefuses: an error from WithSessionScope refuses
// the session and leaves no scope behind.
func TestServer_SessionHookRefuses(t *testing.T) {
	f := newFixture(t)
	srv := newServer(t, f.reg.Global(), WithLogger(slog.New(slog.DiscardHandler)), WithSessionScope(func(context.Context, *runtime.Scope, SessionInfo) error {
		return errors.New("no seats left")
	}))
	_, st := sdk.NewInMemoryTransports()
	if _, err := srv.Connect(context.Background(), st, nil); err == nil || !strings.Contains(err.Error(), "no seats left") {
		t.Fatalf("Connect: %v", err)
	}
	if srv.Sessions() != 0 {
		t.Errorf("Sessions() = %d after a refused session", srv.Sessions())
	}
	if _, live := f.reg.Scope("mcp-1"); live {
		t.Error("the refused session's scope is live")
	}
	hs := httptest.NewServer(srv.StreamableHTTPHandler(nil))
	t.Cleanup(hs.Close)
	if _, err := client(nil).Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: hs.URL}, legacy); err == nil {
		t.Fatal("an HTTP session was opened despite the hook's error")
	}
	eventually(t, "the refused HTTP session to be forgotten", func() bool { return srv.Sessions() == 0 })
}

func TestToContent(t *testing.T) {
	for _, c := range []struct {
		in   runtime.Block
		want string
	}{
		{runtime.Text("hi"), `{"type":"text","text":"hi"}`},
		{runtime.Block{Type: "image", Data: json.RawMessage(`{"data":"aGk=","mimeType":"image/png"}`)}, `{"type":"image","mimeType":"image/png","data":"aGk="}`},
		{runtime.Block{Type: "audio", Data: json.RawMessage(`{"data":"aGk=","mimeType":"audio/wav"}`)}, `{"type":"audio","mimeType":"audio/wav","data":"aGk="}`},
		{runtime.Block{Type: "resource_link", Data: json.RawMessage(`{"uri":"file:///a","name":"a"}`)}, `{"type":"resource_link","uri":"file:///a","name":"a"}`},
		{runtime.Block{Type: "chart", Data: json.RawMessage(`{"bars":[1,2]}`)}, `{"type":"text","text":"{\"type\":\"chart\",\"data\":{\"bars\":[1,2]}}"}`},
	} {
		b, err := json.Marshal(toContent(c.in))
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != c.want {
			t.Errorf("%s block: %s, want %s", c.in.Type, b, c.want)
		}
	}
}
