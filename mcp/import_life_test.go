package mcp_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"reflect"
	goruntime "runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolscope/toolscope/mcp"
	"github.com/toolscope/toolscope/runtime"
)

// fastBackoff retries at once, a few times.
var fastBackoff = mcp.Backoff{Attempts: 3, Initial: time.Millisecond, Max: 4 * time.Millisecond}

// pipes connects clients to servers over net.Pipe, each with a kill that
// breaks the connection as a crashed server would, and closes everything
// at cleanup.
type pipes struct {
	mu    sync.Mutex
	kills []func()
}

func newPipes(t *testing.T) *pipes {
	p := &pipes{}
	t.Cleanup(p.closeAll)
	return p
}

// closeAll closes every connection made so far.
func (p *pipes) closeAll() {
	p.mu.Lock()
	kills := p.kills
	p.kills = nil
	p.mu.Unlock()
	for _, k := range kills {
		k()
	}
}

// connect returns a client session to server and the kill of its pipe.
func (p *pipes) connect(ctx context.Context, server *sdk.Server) (*sdk.ClientSession, func(), error) {
	serverEnd, clientEnd := net.Pipe()
	ss, err := server.Connect(ctx, &sdk.IOTransport{Reader: serverEnd, Writer: serverEnd}, nil)
	if err != nil {
		return nil, nil, err
	}
	cs, err := newClient().Connect(ctx, &sdk.IOTransport{Reader: clientEnd, Writer: clientEnd}, nil)
	if err != nil {
		_ = serverEnd.Close()
		_ = ss.Close()
		return nil, nil, err
	}
	kill := func() { _ = serverEnd.Close(); _ = ss.Close(); _ = cs.Close() }
	p.mu.Lock()
	p.kills = append(p.kills, kill)
	p.mu.Unlock()
	return cs, func() { _ = serverEnd.Close() }, nil
}

// mustConnect is connect within the test's bound; an error fails the test.
func (p *pipes) mustConnect(t *testing.T, server *sdk.Server) (*sdk.ClientSession, func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	cs, kill, err := p.connect(ctx, server)
	if err != nil {
		t.Fatal(err)
	}
	return cs, kill
}

// fineServer is a server with one tool, fine, answering "fine".
func fineServer() *sdk.Server {
	s := newServer(nil)
	textTool(s, "fine", "fine")
	return s
}

// dialer is a WithReconnect connect over pipes: its nth attempt (from 1)
// connects to server(n) while n ≤ max, and later ones fail ("no server").
// It keeps the kill of the newest session, starting with first's.
type dialer struct {
	p      *pipes
	max    int32
	server func(n int32) *sdk.Server
	made   atomic.Int32
	mu     sync.Mutex
	newest func()
}

func (p *pipes) dialer(first func(), max int32, server func(n int32) *sdk.Server) *dialer {
	return &dialer{p: p, max: max, server: server, newest: first}
}

func (d *dialer) connect(ctx context.Context) (*sdk.ClientSession, error) {
	n := d.made.Add(1)
	if n > d.max {
		return nil, errors.New("no server")
	}
	cs, kill, err := d.p.connect(ctx, d.server(n))
	if err == nil {
		d.mu.Lock()
		d.newest = kill
		d.mu.Unlock()
	}
	return cs, err
}

// killNewest breaks the connection of the newest session.
func (d *dialer) killNewest() {
	d.mu.Lock()
	k := d.newest
	d.mu.Unlock()
	k()
}

// returns runs f and waits for it to return, within the bound (recv).
func returns(t testing.TB, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	recv(t, done, what)
}

func TestBackoff_Item10a_Validation(t *testing.T) {
	server := fineServer()
	c := connectInMemory(t, server)
	reg := newRegistry(t)
	connect := func(context.Context) (*sdk.ClientSession, error) { return nil, errors.New("no") }
	for _, b := range []mcp.Backoff{{}, {Attempts: 1, Initial: -1}, {Attempts: 1, Initial: time.Second, Max: time.Millisecond}} {
		if _, err := mcp.Import(context.Background(), reg.Global(), c.session, mcp.WithReconnect(connect, b)); err == nil {
			t.Fatalf("Backoff %+v accepted", b)
		}
	}
	if _, err := mcp.Import(context.Background(), reg.Global(), c.session, mcp.WithReconnect(nil, mcp.DefaultBackoff)); err == nil {
		t.Fatal("a nil connect accepted")
	}
	if len(reg.Global().Tools()) != 0 {
		t.Fatal("a refused Import registered tools")
	}
}

// With WithReconnect, a server that dies mid-call: the call in flight is
// MCP_UNAVAILABLE; a new session is made, the tools are listed on it and
// the differences applied (a tool the new server no longer has is
// disposed, a new one registered, change subscribers hear both); later
// calls go to the new server. Close then ends the import and closes the
// session it made.
func TestImport_Item10a_ReconnectRelistsAndSyncs(t *testing.T) {
	p := newPipes(t)
	first := newServer(nil)
	started := make(chan struct{}, 1)
	first.AddTool(&sdk.Tool{Name: "block", InputSchema: objectSchema},
		func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			started <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		})
	textTool(first, "fine", "old fine")
	second := newServer(nil)
	textTool(second, "fine", "new fine")
	textTool(second, "fresh", "fresh")

	cs, kill := p.mustConnect(t, first)
	var made []*sdk.ClientSession
	var mu sync.Mutex
	connect := func(ctx context.Context) (*sdk.ClientSession, error) {
		cs, _, err := p.connect(ctx, second)
		if err == nil {
			mu.Lock()
			made = append(made, cs)
			mu.Unlock()
		}
		return cs, err
	}
	reg := newRegistry(t)
	changes := subscribe(t, reg.Global())
	ended := make(chan error, 1)
	im := mustImport(t, reg.Global(), cs, mcp.WithReconnect(connect, fastBackoff), mcp.WithEndHandler(func(err error) { ended <- err }))
	before := changes.count()

	done := make(chan *runtime.Result, 1)
	go func() { done <- execute(t, reg.Global(), "block", `{}`) }()
	recv(t, started, "the call to reach the server")
	kill()
	if res := recv(t, done, "the call in flight"); res.Code() != mcp.CodeUnavailable {
		t.Fatalf("call in flight: code %q (%s)", res.Code(), res.ErrorMessage())
	}
	eventually(t, "the tools of the new server", func() bool {
		return reflect.DeepEqual(im.Tools(), []string{"fine", "fresh"})
	})
	if got := execute(t, reg.Global(), "fine", `{}`); got.IsError() || got.Text() != "new fine" {
		t.Fatalf("after reconnecting: %q %s", got.Code(), got.Text())
	}
	if got := execute(t, reg.Global(), "fresh", `{}`); got.IsError() || got.Text() != "fresh" {
		t.Fatalf("new tool: %q %s", got.Code(), got.Text())
	}
	if im.Session() == cs || im.Err() != nil {
		t.Fatalf("session not replaced (%v), Err %v", im.Session() == cs, im.Err())
	}
	if changes.count()-before < 3 { // block and fine disposed, fine and fresh registered
		t.Fatalf("%d changes heard", changes.count()-before)
	}
	select {
	case <-im.Done():
		t.Fatal("Done closed while reconnected")
	case err := <-ended:
		t.Fatalf("end handler called: %v", err)
	default:
	}
	im.Close()
	recv(t, im.Done(), "Done after Close")
	if !errors.Is(im.Err(), mcp.ErrImportClosed) {
		t.Fatalf("Err after Close: %v", im.Err())
	}
	mu.Lock()
	own := made[len(made)-1]
	mu.Unlock()
	returns(t, "the session the import made to be closed", func() { _ = own.Wait() })
}

// Every attempt failing: the import ends as without WithReconnect, and the
// end handler hears the last attempt's error.
func TestImport_Item10a_ReconnectGivesUp(t *testing.T) {
	p := newPipes(t)
	server := fineServer()
	cs, kill := p.mustConnect(t, server)
	var attempts atomic.Int32
	connect := func(context.Context) (*sdk.ClientSession, error) {
		return nil, fmt.Errorf("refused %d", attempts.Add(1))
	}
	reg := newRegistry(t)
	ended := make(chan error, 1)
	im := mustImport(t, reg.Global(), cs, mcp.WithReconnect(connect, fastBackoff), mcp.WithEndHandler(func(err error) { ended <- err }))
	kill()
	err := recv(t, ended, "the end handler")
	if !errors.Is(err, mcp.ErrServerGone) || attempts.Load() != 3 {
		t.Fatalf("end: %v after %d attempts", err, attempts.Load())
	}
	t.Logf("end: %v", err)
	recv(t, im.Done(), "Done")
	requireGone(t, reg.Global(), im)
}

// Close during a reconnect attempt ends the attempt (its ctx) and returns.
func TestImport_Item10a_CloseWhileReconnecting(t *testing.T) {
	p := newPipes(t)
	server := fineServer()
	cs, kill := p.mustConnect(t, server)
	entered := make(chan struct{}, 1)
	left := make(chan error, 1)
	connect := func(ctx context.Context) (*sdk.ClientSession, error) {
		entered <- struct{}{}
		<-ctx.Done()
		left <- ctx.Err()
		return nil, ctx.Err()
	}
	reg := newRegistry(t)
	im := mustImport(t, reg.Global(), cs, mcp.WithReconnect(connect, mcp.Backoff{Attempts: 1, Max: time.Hour}), mcp.WithEndHandler(func(err error) {
		t.Errorf("end handler called after Close: %v", err)
	}))
	kill()
	recv(t, entered, "the reconnect attempt")
	returns(t, "Close", im.Close)
	recv(t, left, "the attempt's ctx to end")
	if !errors.Is(im.Err(), mcp.ErrImportClosed) {
		t.Fatalf("Err: %v", im.Err())
	}
}

// The handlers may call Close: the end handler, a change subscriber
// hearing the end's removals, and (a trap before issue 25) the sync error
// handler — none deadlocks.
func TestImport_Item10a_HandlersMayClose(t *testing.T) {
	t.Run("end handler", func(t *testing.T) {
		p := newPipes(t)
		server := fineServer()
		cs, kill, err := p.connect(context.Background(), server)
		if err != nil {
			t.Fatal(err)
		}
		reg := newRegistry(t)
		returned := make(chan struct{})
		var im *mcp.Imported
		ready := make(chan struct{})
		im = mustImport(t, reg.Global(), cs, mcp.WithEndHandler(func(error) {
			<-ready
			im.Close()
			close(returned)
		}))
		close(ready)
		kill()
		recv(t, returned, "Close called from the end handler to return")
	})
	t.Run("change subscriber", func(t *testing.T) {
		p := newPipes(t)
		server := newServer(nil)
		textTool(server, "a", "a")
		textTool(server, "b", "b")
		cs, kill, err := p.connect(context.Background(), server)
		if err != nil {
			t.Fatal(err)
		}
		reg := newRegistry(t)
		scope, err := reg.NewScope("s")
		if err != nil {
			t.Fatal(err)
		}
		var im atomic.Pointer[mcp.Imported]
		heard := make(chan struct{}, 8)
		if _, err := scope.OnChange(func(context.Context) error {
			if x := im.Load(); x != nil {
				x.Close() // while the end disposes the tools
				heard <- struct{}{}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		im.Store(mustImport(t, scope, cs))
		kill()
		recv(t, heard, "a subscriber's Close to return")
		recv(t, im.Load().Done(), "the end")
	})
	t.Run("sync error handler", func(t *testing.T) {
		server := newServer(nil)
		var fail atomic.Bool
		server.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
			return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
				if method == "tools/list" && fail.Load() {
					return nil, errors.New("listing refused")
				}
				return next(ctx, method, req)
			}
		})
		textTool(server, "a", "a")
		c := connectInMemory(t, server)
		reg := newRegistry(t)
		returned := make(chan error, 1)
		var im *mcp.Imported
		ready := make(chan struct{})
		im = mustImport(t, reg.Global(), c.session, mcp.WithSyncErrorHandler(func(err error) {
			<-ready
			im.Close()
			returned <- err
		}))
		close(ready)
		fail.Store(true)
		// tools/list_changed: a re-sync that fails. The go-sdk opens the
		// client's notification stream (subscriptions/listen) in the
		// background after connecting, and a change made before the server
		// has it is not sent; so change the list again until one is heard.
		var err error
		got := false
		for i := 0; !got; i++ {
			textTool(server, fmt.Sprint("b", i), "b")
			select {
			case err = <-returned:
				got = true
			case <-time.After(100 * time.Millisecond):
				if i == int(bound/(100*time.Millisecond)) {
					dumpGoroutines(t)
					t.Fatalf("timed out after %v waiting for Close called from the sync error handler to return", bound)
				}
			}
		}
		if err == nil {
			t.Fatal("no error")
		}
		recv(t, im.Done(), "Done")
	})
}

// The randomized checker of item 10a: calls at random moments while the
// server dies and the import reconnects (or, with no server to reconnect
// to, ends). Every call is answered exactly once, with a success or one
// of the codes a dead server gives (MCP_UNAVAILABLE while the tools are
// registered, UNKNOWN_TOOL once they are disposed); nothing waits past
// the bound; after Close and the sessions' end no goroutine is left.
func TestImport_Item10a_RandomizedDeathsAnsweredOnce(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 1))
	baseline := goroutines()
	for round := range 6 {
		func() {
			p := newPipes(t)
			defer p.closeAll()
			server := newServer(nil)
			server.AddTool(&sdk.Tool{Name: "slow", InputSchema: objectSchema, Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
				func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
					select {
					case <-time.After(time.Duration(rand.IntN(3)) * time.Millisecond):
					case <-ctx.Done():
						return nil, ctx.Err()
					}
					return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ok"}}}, nil
				})
			cs, kill := p.mustConnect(t, server)
			reconnects := rng.IntN(3)
			d := p.dialer(kill, int32(reconnects), func(int32) *sdk.Server { return server })
			reg, err := runtime.New()
			if err != nil {
				t.Fatal(err)
			}
			defer reg.Close(context.Background())
			im := mustImport(t, reg.Global(), cs, mcp.WithReconnect(d.connect, fastBackoff), mcp.WithReadOnlyParallel())
			const calls = 60
			var answered [calls]atomic.Int32
			var wg sync.WaitGroup
			codes := make(chan runtime.Code, calls)
			for i := range calls {
				wg.Add(1)
				go func() {
					defer wg.Done()
					time.Sleep(time.Duration(i%7) * time.Millisecond)
					res := execute(t, reg.Global(), "slow", `{}`)
					answered[i].Add(1)
					codes <- res.Code()
				}()
			}
			for range 1 + rng.IntN(3) {
				time.Sleep(time.Duration(rng.IntN(4)) * time.Millisecond)
				d.killNewest()
			}
			returns(t, fmt.Sprintf("round %d: every call to be answered", round), wg.Wait)
			close(codes)
			seen := map[runtime.Code]int{}
			for c := range codes {
				if !slices.Contains([]runtime.Code{"", mcp.CodeUnavailable, runtime.CodeUnknownTool}, c) {
					t.Fatalf("round %d: code %q", round, c)
				}
				seen[c]++
			}
			for i := range answered {
				if n := answered[i].Load(); n != 1 {
					t.Fatalf("round %d: call %d answered %d times", round, i, n)
				}
			}
			t.Logf("round %d: %d reconnects allowed, codes %v", round, reconnects, seen)
			im.Close()
		}()
	}
	eventually(t, "the goroutines of the imports and sessions to end", func() bool { return goroutines() <= baseline })
}

func goroutines() int { return goruntime.NumGoroutine() }

// A real server process killed mid-call, with WithReconnect starting a
// new process: the call in flight is MCP_UNAVAILABLE, and later calls
// reach the new process.
func TestImport_Item10a_ServerProcessKilledReconnects(t *testing.T) {
	start := func(ctx context.Context) (*sdk.ClientSession, *exec.Cmd, <-chan struct{}, error) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperStdioServer$")
		cmd.Env = append(os.Environ(), helperEnv+"=1")
		stderr, err := cmd.StderrPipe()
		if err != nil {
			return nil, nil, nil, err
		}
		started := make(chan struct{}, 1)
		go func() {
			lines := bufio.NewScanner(stderr)
			for lines.Scan() {
				if lines.Text() == blockStarted {
					started <- struct{}{}
				}
			}
		}()
		cs, err := newClient().Connect(ctx, &sdk.CommandTransport{Command: cmd, TerminateDuration: time.Second}, nil)
		return cs, cmd, started, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	cs, cmd, started, err := start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	var second atomic.Pointer[sdk.ClientSession]
	connect := func(ctx context.Context) (*sdk.ClientSession, error) {
		cs, _, _, err := start(ctx)
		if err == nil {
			second.Store(cs)
		}
		return cs, err
	}
	reg := newRegistry(t)
	im := mustImport(t, reg.Global(), cs, mcp.WithReconnect(connect, fastBackoff))
	done := make(chan *runtime.Result, 1)
	go func() { done <- execute(t, reg.Global(), "block", `{}`) }()
	recv(t, started, "the server process to have the call")
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if res := recv(t, done, "the call to end after the server was killed"); res.Code() != mcp.CodeUnavailable {
		t.Fatalf("code %q (%s), want MCP_UNAVAILABLE", res.Code(), res.ErrorMessage())
	}
	eventually(t, "a call to reach the new process", func() bool {
		return execute(t, reg.Global(), "fine", `{}`).Text() == "fine"
	})
	if im.Session() != second.Load() {
		t.Fatal("the import does not use the new session")
	}
	im.Close() // closes the new process's session
}

// A streamable HTTP session whose server is gone stays open on the
// client's side; WithUnreachableAfter(n) calls in a row that cannot reach
// the server count as its end (and an answer in between resets the
// count).
func TestImport_Item10a_UnreachableHTTPServerEnds(t *testing.T) {
	server := fineServer()
	c := connectHTTP(t, server)
	reg := newRegistry(t)
	im := mustImport(t, reg.Global(), c.session, mcp.WithUnreachableAfter(2))
	if res := execute(t, reg.Global(), "fine", `{}`); res.IsError() {
		t.Fatalf("first call: %s", res.ErrorMessage())
	}
	c.kill()
	if res := execute(t, reg.Global(), "fine", `{}`); res.Code() != mcp.CodeUnavailable {
		t.Fatalf("code %q (%s)", res.Code(), res.ErrorMessage())
	}
	select {
	case <-im.Done():
		t.Fatal("ended after one unreachable call of two")
	default:
	}
	if res := execute(t, reg.Global(), "fine", `{}`); res.Code() != mcp.CodeUnavailable {
		t.Fatalf("code %q (%s)", res.Code(), res.ErrorMessage())
	}
	recv(t, im.Done(), "the import to end after two unreachable calls")
	requireGone(t, reg.Global(), im)
	t.Logf("end: %v", im.Err())
}
