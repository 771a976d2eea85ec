package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolscope/toolscope/runtime"
)

// TestServer_NestedRoundTripApprovalsCompleteOnce: on protocol 2026-07-28
// an approval is an input_required result answered by a retry; a tool
// that needs approval and whose body makes a nested call needing approval
// too completes once the client has answered each question once, and no
// body runs twice (issue 20, item 18).
func TestServer_NestedRoundTripApprovalsCompleteOnce(t *testing.T) {
	type setup struct {
		name    string
		shared  bool
		connect func(t *testing.T, srv *Server, c *sdk.Client) *sdk.ClientSession
	}
	inMemory := func(t *testing.T, srv *Server, c *sdk.Client) *sdk.ClientSession {
		return transports[0].connect(t, srv, c, nil)
	}
	httpLatest := func(t *testing.T, srv *Server, c *sdk.Client) *sdk.ClientSession {
		t.Helper()
		hs := httptest.NewServer(srv.StreamableHTTPHandler(&sdk.StreamableHTTPOptions{Stateless: true}))
		t.Cleanup(hs.Close)
		cs, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: hs.URL}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	for _, su := range []setup{{"in-memory", false, inMemory}, {"in-memory/shared", true, inMemory}, {"stateless-http", false, httpLatest}} {
		t.Run(su.name, func(t *testing.T) {
			f := newFixture(t)
			var releaseRuns, deployRuns atomic.Int64
			g := f.reg.Global()
			deploy2, err := runtime.NewTool("deploy2", "Deploy (asks)", func(ctx context.Context, in textIn, rc *runtime.RunContext) (string, error) {
				deployRuns.Add(1)
				return "deployed " + in.Text, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			release, err := runtime.NewTool("release", "Release: deploys (asks, and its deploy asks too)", func(ctx context.Context, in textIn, rc *runtime.RunContext) (string, error) {
				releaseRuns.Add(1)
				res := g.Execute(ctx, runtime.Call{ID: "nested", Name: "deploy2", Arguments: json.RawMessage(`{"text":"` + in.Text + `"}`)})
				if res.IsError() {
					return "", errors.New("nested deploy: " + res.ErrorMessage())
				}
				return "released after " + res.Text(), nil
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range []runtime.Definition{deploy2, release} {
				if _, err := g.Register(d); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := g.OnPreExecute(func(ctx context.Context, e runtime.Execution, next func() (runtime.Decision, error)) (runtime.Decision, error) {
				if e.Name() == "release" || e.Name() == "deploy2" {
					return runtime.Ask(e.Name() + " needs a human"), nil
				}
				return next()
			}); err != nil {
				t.Fatal(err)
			}
			var opts []ServerOption
			if su.shared {
				opts = append(opts, WithSharedScope())
			}
			srv := newServer(t, g, opts...)
			var mu atomic.Int64
			asked := map[string]*atomic.Int64{"release": {}, "deploy2": {}}
			cs := su.connect(t, srv, client(&sdk.ClientOptions{
				ElicitationHandler: func(ctx context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
					mu.Add(1)
					for name, n := range asked {
						if strings.Contains(req.Params.Message, `"`+name+`"`) {
							n.Add(1)
						}
					}
					return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
				},
			}))
			r := callText(t, cs, "release", map[string]any{"text": "v9"})
			if r.IsError || text(r) != "released after deployed v9" {
				t.Errorf("release: isError=%v %q", r.IsError, text(r))
			}
			for name, n := range asked {
				if n.Load() != 1 {
					t.Errorf("the client was asked about %s %d times, want 1", name, n.Load())
				}
			}
			if mu.Load() != 2 {
				t.Errorf("%d questions, want 2", mu.Load())
			}
			if releaseRuns.Load() != 1 || deployRuns.Load() != 1 {
				t.Errorf("bodies ran: release %d, deploy2 %d; want 1 each", releaseRuns.Load(), deployRuns.Load())
			}
			eventually(t, "no call pending and no request's scope left", func() bool {
				return srv.pendingApprovals() == 0 && (su.shared || su.name == "in-memory" || liveSessionScopes(srv, f.reg) == 0)
			})
		})
	}
}

// TestServer_UnansweredRoundTripApprovalIsBounded: a call waiting for an
// approval the client never gives holds nothing past Close: Close cancels
// it and returns, and its scope is disposed (issue 20, item 18).
func TestServer_UnansweredRoundTripApprovalIsBounded(t *testing.T) {
	f := newFixture(t)
	srv := newServer(t, f.reg.Global())
	hs := httptest.NewServer(srv.StreamableHTTPHandler(&sdk.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(hs.Close)
	cs, err := client(&sdk.ClientOptions{
		MultiRoundTrip: &sdk.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			return nil, errors.New("not called")
		},
	}).Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: hs.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	r := callText(t, cs, "deploy", map[string]any{"text": "v2"})
	if !r.NeedsInput() {
		t.Fatalf("want an approval question, got isError=%v %q", r.IsError, text(r))
	}
	if srv.pendingApprovals() != 1 {
		t.Fatalf("%d calls pending", srv.pendingApprovals())
	}
	closed := make(chan error, 1)
	go func() { closed <- srv.Close() }()
	waitFor(t, closed, "Close to return")
	eventually(t, "the pending call and its scope to be gone", func() bool {
		return srv.pendingApprovals() == 0 && liveSessionScopes(srv, f.reg) == 0
	})
}
