package mcp_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	goruntime "runtime"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolscope/toolscope/mcp"
	"github.com/toolscope/toolscope/runtime"
)

// bound is how long a test waits for anything before it fails.
const bound = 10 * time.Second

// dumpGoroutines logs every goroutine's stack (for a wait that timed out).
func dumpGoroutines(t testing.TB) {
	t.Helper()
	buf := make([]byte, 1<<20)
	n := goruntime.Stack(buf, true)
	t.Logf("goroutines:\n%s", buf[:n])
}

// eventually polls cond until it holds, failing after bound.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(bound)
	defer deadline.Stop()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			dumpGoroutines(t)
			t.Fatalf("timed out after %v waiting for %s", bound, what)
		case <-tick.C:
		}
	}
}

// recv waits for a value on ch, failing after bound.
func recv[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(bound):
		dumpGoroutines(t)
		t.Fatalf("timed out after %v waiting for %s", bound, what)
		panic("unreachable")
	}
}

// transport connects a go-sdk client (with mcp.ToolListChangedHandler
// wired) to server; name is the subtest name.
type transport struct {
	name    string
	connect func(t *testing.T, server *sdk.Server) *conn
}

// conn is one client session and the means to kill its server.
type conn struct {
	session *sdk.ClientSession
	// kill makes the server go away (abruptly, except for
	// connectInMemory's, which closes the server session gracefully).
	kill func()
}

var transports = []transport{
	{"inmemory", connectInMemory},
	{"http", connectHTTP},
}

func newClient() *sdk.Client {
	return sdk.NewClient(&sdk.Implementation{Name: "toolscope-test", Version: "v0"},
		&sdk.ClientOptions{ToolListChangedHandler: mcp.ToolListChangedHandler})
}

func connectInMemory(t *testing.T, server *sdk.Server) *conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	st, ct := sdk.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		t.Fatalf("server connect: %v", err)
	}
	cs, err := newClient().Connect(ctx, ct, nil)
	if err != nil {
		t.Fatalf("client connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close(); _ = ss.Close() })
	return &conn{session: cs, kill: func() { _ = ss.Close() }}
}

// connectPipe is connectInMemory over a net.Pipe whose server end kill
// closes at once, as a crashed server would leave it (ServerSession.Close
// is graceful: it waits for the calls in flight).
func connectPipe(t *testing.T, server *sdk.Server) *conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	serverEnd, clientEnd := net.Pipe()
	ss, err := server.Connect(ctx, &sdk.IOTransport{Reader: serverEnd, Writer: serverEnd}, nil)
	if err != nil {
		t.Fatalf("server connect: %v", err)
	}
	cs, err := newClient().Connect(ctx, &sdk.IOTransport{Reader: clientEnd, Writer: clientEnd}, nil)
	if err != nil {
		t.Fatalf("client connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close(); _ = serverEnd.Close(); _ = ss.Close() })
	return &conn{session: cs, kill: func() { _ = serverEnd.Close() }}
}

func connectHTTP(t *testing.T, server *sdk.Server) *conn {
	t.Helper()
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return server }, nil))
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	cs, err := newClient().Connect(ctx, &sdk.StreamableClientTransport{Endpoint: ts.URL}, nil)
	if err != nil {
		ts.Close()
		t.Fatalf("client connect: %v", err)
	}
	var once sync.Once
	kill := func() {
		once.Do(func() {
			ts.CloseClientConnections()
			ts.Close()
		})
	}
	t.Cleanup(func() { _ = cs.Close(); kill() })
	return &conn{session: cs, kill: kill}
}

func newServer(opts *sdk.ServerOptions) *sdk.Server {
	return sdk.NewServer(&sdk.Implementation{Name: "test-server", Version: "v0"}, opts)
}

func newRegistry(t testing.TB, opts ...runtime.Option) *runtime.Registry {
	t.Helper()
	reg, err := runtime.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		defer cancel()
		_ = reg.Close(ctx)
	})
	return reg
}

func mustImport(t *testing.T, scope *runtime.Scope, cs *sdk.ClientSession, opts ...mcp.ImportOption) *mcp.Imported {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	im, err := mcp.Import(ctx, scope, cs, opts...)
	if err != nil {
		t.Fatalf("Import: %v", err)
	}
	t.Cleanup(im.Close)
	return im
}

var objectSchema = json.RawMessage(`{"type":"object"}`)

// textTool adds a tool answering with one text block.
func textTool(s *sdk.Server, name, text string) {
	s.AddTool(&sdk.Tool{Name: name, Description: "says " + text, InputSchema: objectSchema},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}, nil
		})
}

func execute(t testing.TB, scope *runtime.Scope, name string, args string) *runtime.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	call := runtime.Call{ID: "c1", Name: name}
	if args != "" {
		call.Arguments = json.RawMessage(args)
	}
	return scope.Execute(ctx, call)
}

// changeCounter counts change notifications.
type changeCounter struct {
	mu sync.Mutex
	n  int
}

func (c *changeCounter) hear(context.Context) error { c.mu.Lock(); c.n++; c.mu.Unlock(); return nil }
func (c *changeCounter) count() int                 { c.mu.Lock(); defer c.mu.Unlock(); return c.n }

func subscribe(t testing.TB, scope *runtime.Scope) *changeCounter {
	t.Helper()
	c := &changeCounter{}
	if _, err := scope.OnChange(c.hear); err != nil {
		t.Fatal(err)
	}
	return c
}
