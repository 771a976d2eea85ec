package mcp

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolscope/toolscope/runtime"
)

// sessionIDHeader is the streamable HTTP transport's session header.
const sessionIDHeader = "Mcp-Session-Id"

// MetaCode is the _meta key under which an error result carries its
// toolscope failure code (e.g. "UNKNOWN_TOOL", "INVALID_ARGS"), when it has
// one.
const MetaCode = "toolscope/code"

// ErrServerClosed is returned by Connect and Run after Close.
var ErrServerClosed = errors.New("mcp: server closed")

// A Server serves a toolscope scope to MCP clients. Create it with
// NewServer, then run it over any go-sdk transport: Run or Connect for
// stdio, in-memory or command transports, StreamableHTTPHandler for
// streamable HTTP. See the package documentation for what is mapped.
type Server struct {
	scope *runtime.Scope
	cfg   serverConfig

	shared   *toolSet // shared mode: the one tool set every session sees
	undoHook func()   // the approval hook's disposer
	calls    atomic.Int64
	keys     atomic.Int64
	resyncs  atomic.Int64 // tool-list syncs run (tests)
	// resyncHook, if set (tests), runs before each re-sync a registry
	// change started.
	resyncHook func()
	key        [32]byte // seals approval questions (seal)

	mu     sync.Mutex
	closed bool
	live   map[*toolSet]struct{} // per-session tool sets, bound and not ended
	byID   map[string]*toolSet   // streamable HTTP sessions by id
	// ending: the ctx of each session's calls, cancelled when the session
	// is ended (endSession, Close, a DELETE), forgotten when it has ended.
	ending map[*sdk.ServerSession]*sessionCalls
	// pending: the calls waiting on approval round trips, by id
	// (roundtrip.go); closing ends with Close and cancels them.
	pending   map[string]*pendingCall
	closing   context.Context
	endClosed context.CancelFunc
}

// sessionCalls is the ctx every call of one session derives from.
type sessionCalls struct {
	ctx    context.Context
	cancel context.CancelFunc
	user   string // the authenticated user of the session's first call (auth.TokenInfo), if any
}

// closeGrace bounds how long Close and Run wait for a session to end after
// its calls were cancelled: a body that ignores its ctx delays neither
// beyond it (its session then ends in the background when it returns).
const closeGrace = 5 * time.Second

// errSessionEnded is the cancellation cause of the calls of a session
// that was ended (Close, Run's ctx, an HTTP DELETE).
var errSessionEnded = errors.New("mcp: the session ended")

// SessionInfo describes the client session whose scope is being set up.
type SessionInfo struct {
	// Request is the HTTP request that opened the session over streamable
	// HTTP (its headers carry the client's credentials, if any); nil for
	// other transports.
	Request *http.Request
}

// ServerOption configures NewServer.
type ServerOption func(*serverConfig)

type serverConfig struct {
	impl         *sdk.Implementation
	sdkOpts      sdk.ServerOptions
	shared       bool
	sessionScope func(ctx context.Context, scope *runtime.Scope, info SessionInfo) error
	logger       *slog.Logger
}

// WithImplementation sets the name and version the server reports to
// clients (default "toolscope", "0").
func WithImplementation(impl *sdk.Implementation) ServerOption {
	return func(c *serverConfig) { c.impl = impl }
}

// WithSDKOptions sets the go-sdk server options each underlying server is
// created with (instructions, logger, keep-alive, page size, ...). The
// tools capability is always advertised with listChanged, and
// GetSessionID is replaced for streamable HTTP sessions.
func WithSDKOptions(opts sdk.ServerOptions) ServerOption {
	return func(c *serverConfig) { c.sdkOpts = opts }
}

// WithSharedScope serves the scope given to NewServer itself to every
// session, instead of a fresh agent scope per session. Every session then
// sees the same tools, and a registration in the scope is announced to all
// of them.
func WithSharedScope() ServerOption {
	return func(c *serverConfig) { c.shared = true }
}

// WithSessionScope sets a hook that configures each session's own scope
// (restrictions, guards, hooks, session tools) before the session sees its
// tools. An error refuses the session. It has no effect with
// WithSharedScope.
func WithSessionScope(f func(ctx context.Context, scope *runtime.Scope, info SessionInfo) error) ServerOption {
	return func(c *serverConfig) { c.sessionScope = f }
}

// WithLogger sets the logger for the server's warnings (a tool that cannot
// be listed over MCP, a failed re-sync). Default: slog.Default().
func WithLogger(l *slog.Logger) ServerOption {
	return func(c *serverConfig) { c.logger = l }
}

// NewServer returns a server for scope. By default each client session
// gets its own agent scope under scope, created when the session opens and
// disposed when it ends; WithSharedScope serves scope itself.
//
// NewServer registers one pre-execute hook on scope, with
// runtime.WithPrepend, that answers Ask decisions through MCP elicitation
// when the calling session's client supports it; Close removes it.
func NewServer(scope *runtime.Scope, opts ...ServerOption) (*Server, error) {
	if scope == nil {
		return nil, errors.New("mcp: NewServer needs a scope")
	}
	s := &Server{scope: scope, live: map[*toolSet]struct{}{}, byID: map[string]*toolSet{}, ending: map[*sdk.ServerSession]*sessionCalls{}, pending: map[string]*pendingCall{}}
	s.closing, s.endClosed = context.WithCancel(context.Background())
	_, _ = rand.Read(s.key[:])
	for _, o := range opts {
		o(&s.cfg)
	}
	if s.cfg.impl == nil {
		s.cfg.impl = &sdk.Implementation{Name: "toolscope", Version: "0"}
	}
	if s.cfg.logger == nil {
		s.cfg.logger = slog.Default()
	}
	undo, err := scope.OnPreExecute(s.approve, runtime.WithPrepend())
	if err != nil {
		return nil, fmt.Errorf("mcp: registering the approval hook: %w", err)
	}
	s.undoHook = undo
	if s.cfg.shared {
		ts := s.newToolSet(nil)
		ts.scope = scope
		if ts.unsub, err = scope.OnChange(ts.onChange); err != nil {
			undo()
			return nil, fmt.Errorf("mcp: subscribing to changes: %w", err)
		}
		ts.sync()
		ts.bound.Do(func() {})
		s.shared = ts
	}
	return s, nil
}

// Connect connects one client session over t (see sdk.Server.Connect). The
// session's scope exists and its tools are listed before the first message
// is read; the scope is disposed when the session ends.
func (s *Server) Connect(ctx context.Context, t sdk.Transport, opts *sdk.ServerSessionOptions) (*sdk.ServerSession, error) {
	if s.isClosed() {
		return nil, ErrServerClosed
	}
	if s.shared != nil {
		return s.shared.sdk.Connect(ctx, t, opts)
	}
	ts := s.newToolSet(nil)
	if err := ts.bind(ctx, SessionInfo{}); err != nil {
		ts.end()
		return nil, err
	}
	ss, err := ts.sdk.Connect(ctx, t, opts)
	if err != nil {
		ts.end()
		return nil, err
	}
	ts.attach(ss)
	return ss, nil
}

// Run serves one session over t until the client disconnects or ctx ends
// (see sdk.Server.Run). When ctx ends, the ctx of the session's calls in
// flight is cancelled and Run returns once the session ended, or after a
// few seconds at most.
func (s *Server) Run(ctx context.Context, t sdk.Transport) error {
	ss, err := s.Connect(ctx, t, nil)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- ss.Wait() }()
	select {
	case <-ctx.Done():
		s.endSession(ss)
		timer := time.NewTimer(closeGrace)
		defer timer.Stop()
		select {
		case <-done:
		case <-timer.C:
		}
		return ctx.Err()
	case err := <-done:
		return err
	}
}

// sessionContext is the ctx the calls of session ss derive from; ended
// when the session is ended by the server.
func (s *Server) sessionContext(ss *sdk.ServerSession, user string) context.Context {
	return s.sessionCalls(ss, user).ctx
}

func (s *Server) sessionCalls(ss *sdk.ServerSession, user string) *sessionCalls {
	s.mu.Lock()
	defer s.mu.Unlock()
	sc := s.ending[ss]
	if sc == nil {
		ctx, cancel := context.WithCancelCause(context.Background())
		sc = &sessionCalls{ctx: ctx, cancel: func() { cancel(errSessionEnded) }, user: user}
		s.ending[ss] = sc
		if s.closed {
			sc.cancel()
		}
		go func() {
			_ = ss.Wait()
			s.mu.Lock()
			delete(s.ending, ss)
			s.mu.Unlock()
			sc.cancel()
		}()
	}
	return sc
}

// endSession ends session ss: the ctx of its calls in flight is cancelled
// first (the go-sdk's ServerSession.Close waits for them to return), then
// the session is closed. It returns at once; the close completes in the
// background.
func (s *Server) endSession(ss *sdk.ServerSession) <-chan struct{} {
	s.sessionCalls(ss, "").cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = ss.Close()
	}()
	return done
}

// serverFor is the HTTP handler's getServer. The go-sdk calls it for every
// request, not only for the one that opens a session, so a request without
// a known session id gets a fresh unbound tool set: it is bound (its scope
// created) only by the session's first message that needs the scope
// (initialize, a tools method), after the session's end is watched. An
// unbound tool set holds nothing but its go-sdk server.
func (s *Server) serverFor(req *http.Request) *sdk.Server {
	if s.isClosed() {
		return nil
	}
	if s.shared != nil {
		return s.shared.sdk
	}
	if id := req.Header.Get(sessionIDHeader); id != "" {
		s.mu.Lock()
		ts := s.byID[id]
		s.mu.Unlock()
		if ts != nil {
			return ts.sdk
		}
	}
	op, _ := req.Context().Value(openingKey{}).(*opening)
	if op == nil {
		return s.newToolSet(req).sdk
	}
	if op.ts == nil { // the go-sdk asks twice per request: one tool set
		op.ts = s.newToolSet(req)
		op.ts.eager = op.initialize
	}
	return op.ts.sdk
}

// Close ends every session, disposes their scopes and removes the
// approval hook. It cancels the ctx of every call in flight first, and
// waits for the sessions to end at most a few seconds (a body that ignores
// its ctx ends in the background). It does not dispose the scope given to
// NewServer.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	live := make([]*toolSet, 0, len(s.live))
	for ts := range s.live {
		live = append(live, ts)
	}
	ending := make([]*sessionCalls, 0, len(s.ending))
	for _, sc := range s.ending {
		ending = append(ending, sc)
	}
	pending := make([]*pendingCall, 0, len(s.pending))
	for _, p := range s.pending {
		pending = append(pending, p)
	}
	s.mu.Unlock()
	// Cancel every call first, then end the sessions side by side, each
	// within closeGrace.
	s.endClosed()
	for _, sc := range ending {
		sc.cancel()
	}
	var wg sync.WaitGroup
	for _, p := range pending {
		wg.Go(func() { <-p.done })
	}
	for _, ts := range live {
		wg.Go(func() {
			if ss := ts.session.Load(); ss != nil {
				<-s.endSession(ss)
			}
			ts.end()
		})
	}
	if s.shared != nil {
		for ss := range s.shared.sdk.Sessions() {
			wg.Go(func() { <-s.endSession(ss) })
		}
		s.shared.unsub()
		s.shared.mu.Lock()
		s.shared.ended = true // a re-sync still running stops
		s.shared.mu.Unlock()
	}
	all := make(chan struct{})
	go func() { wg.Wait(); close(all) }()
	timer := time.NewTimer(closeGrace)
	defer timer.Stop()
	select {
	case <-all:
	case <-timer.C:
		s.cfg.logger.Warn("mcp: Close: a session's calls did not return within the grace period; it ends in the background", "grace", closeGrace)
	}
	s.undoHook()
	return nil
}

// Sessions returns the number of sessions whose own scope is live (always
// 0 with WithSharedScope).
func (s *Server) Sessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.live)
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// newSessionScope creates the agent scope of a new session under s.scope.
func (s *Server) newSessionScope() (*runtime.Scope, error) {
	prefix := "mcp-"
	if k := s.scope.Key(); k != "" {
		prefix = k + ".mcp-"
	}
	for {
		sc, err := s.scope.NewScope(prefix + strconv.FormatInt(s.keys.Add(1), 10))
		if errors.Is(err, runtime.ErrScopeExists) {
			continue // a key the user took: the counter moves past it
		}
		return sc, err
	}
}

// A toolSet is one go-sdk server whose tool list follows one scope's
// visible tools: a session's own scope, or the shared scope.
type toolSet struct {
	srv *Server
	sdk *sdk.Server
	req *http.Request // the request that will open the session, for SessionInfo
	// eager: the request opening the session is an initialize request, so
	// the scope is bound when the go-sdk asks for the session's id.
	eager bool

	bound   sync.Once
	bindErr error
	scope   *runtime.Scope // set by bind
	unsub   func()         // the change subscription (shared mode; per session it dies with the scope)
	own     bool           // scope belongs to this session
	session atomic.Pointer[sdk.ServerSession]
	waiting sync.Once
	endOnce sync.Once // end

	mu    sync.Mutex
	known map[string]listing // the scope's visible tools at the last sync, by name
	id    string             // the streamable HTTP session id, if any
	ended bool

	// holds: pending calls executing in the scope (roundtrip.go); a
	// session that ends meanwhile disposes its scope at the last release.
	holds        int
	disposeLater bool

	rmu     sync.Mutex
	running bool // a re-sync goroutine runs
	pending bool // a change arrived while it ran
}

func (s *Server) newToolSet(req *http.Request) *toolSet {
	ts := &toolSet{srv: s, req: req}
	o := s.cfg.sdkOpts
	if o.Capabilities == nil {
		o.Capabilities = &sdk.ServerCapabilities{}
	} else {
		c := *o.Capabilities
		o.Capabilities = &c
	}
	o.Capabilities.Tools = &sdk.ToolCapabilities{ListChanged: true}
	if req != nil && !s.cfg.shared {
		o.GetSessionID = ts.sessionID
	}
	ts.sdk = sdk.NewServer(s.cfg.impl, &o)
	ts.sdk.AddReceivingMiddleware(ts.middleware)
	return ts
}

// sessionID is the HTTP handler's GetSessionID for a new session. The
// go-sdk asks for an id for every POST without one, whatever its body
// (malformed JSON, a notification, a method other than initialize), and
// drops such a session after the request; so only an initialize request
// binds the scope here, and any other binds it at its first message that
// needs it (middleware). Either way the handler settles the tool set once
// the request is served.
func (ts *toolSet) sessionID() string {
	id := rand.Text()
	ts.mu.Lock()
	ts.id = id
	ts.mu.Unlock()
	if ts.eager {
		// An initialize request opens the session: its scope is created
		// and its tools listed now, before the session is connected (so
		// listing them announces nothing). settle watches its end.
		ctx := context.Background()
		if ts.req != nil {
			ctx = ts.req.Context()
		}
		if err := ts.bind(ctx, SessionInfo{Request: ts.req}); err != nil {
			ts.srv.cfg.logger.Warn("mcp: session refused", "error", err)
		}
	}
	return id
}

// needsScope reports whether a method reaching the server needs the
// session's scope: the session's opening (initialize, where the session
// hook may refuse it) and the tools methods. Pings, notifications and the
// rest are served without one.
func needsScope(method string) bool {
	return method == "initialize" || strings.HasPrefix(method, "tools/")
}

func (ts *toolSet) middleware(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if ss, ok := req.GetSession().(*sdk.ServerSession); ok && !ts.srv.cfg.shared {
			ts.attach(ss) // first: a scope bound below is disposed when the session ends
		}
		if needsScope(method) {
			if err := ts.bind(ctx, SessionInfo{Request: ts.req}); err != nil {
				return nil, err
			}
		}
		return next(ctx, method, req)
	}
}

// bind creates the session's scope once, runs the session hook and lists
// the scope's tools.
func (ts *toolSet) bind(ctx context.Context, info SessionInfo) error {
	ts.bound.Do(func() { ts.bindErr = ts.doBind(ctx, info) })
	return ts.bindErr
}

func (ts *toolSet) doBind(ctx context.Context, info SessionInfo) error {
	s := ts.srv
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrServerClosed
	}
	s.live[ts] = struct{}{}
	ts.mu.Lock()
	if ts.id != "" {
		s.byID[ts.id] = ts
	}
	ts.mu.Unlock()
	s.mu.Unlock()
	sc, err := s.newSessionScope()
	if err != nil {
		return fmt.Errorf("mcp: creating the session scope: %w", err)
	}
	ts.scope, ts.own = sc, true
	if f := s.cfg.sessionScope; f != nil {
		if err := f(ctx, sc, info); err != nil {
			return fmt.Errorf("mcp: session scope hook: %w", err)
		}
	}
	if _, err := sc.OnChange(ts.onChange); err != nil {
		return fmt.Errorf("mcp: subscribing to changes: %w", err)
	}
	ts.sync()
	return nil
}

// attach starts watching the session's end, once.
func (ts *toolSet) attach(ss *sdk.ServerSession) {
	ts.waiting.Do(func() {
		ts.session.Store(ss)
		go func() {
			_ = ss.Wait()
			ts.end()
		}()
	})
}

// end disposes the session's scope (once) and forgets the session. A
// second caller — Close and the session's own end watcher race for it —
// returns only once the first has finished (sync.Once), so Close never
// returns while the session's scope is still being disposed.
func (ts *toolSet) end() { ts.endOnce.Do(ts.doEnd) }

func (ts *toolSet) doEnd() {
	ts.bound.Do(func() { ts.bindErr = errors.New("mcp: session ended") })
	ts.mu.Lock()
	if ts.ended {
		ts.mu.Unlock()
		return
	}
	ts.ended = true
	id := ts.id
	later := ts.holds > 0 // a pending call still executes in the scope
	ts.disposeLater = later
	ts.mu.Unlock()
	s := ts.srv
	s.mu.Lock()
	delete(s.live, ts)
	if id != "" && s.byID[id] == ts {
		delete(s.byID, id)
	}
	s.mu.Unlock()
	if ts.own && ts.scope != nil && !later {
		ts.scope.Dispose()
	}
}

func (ts *toolSet) onChange(context.Context) error {
	ts.resync()
	return nil
}

// resync re-syncs the tool list off the changing call's path: in a
// goroutine of the tool set's own, started if none runs; a change while
// one runs leaves one re-sync pending (coalesced), so a burst of changes
// costs two re-syncs, not one per change.
func (ts *toolSet) resync() {
	ts.rmu.Lock()
	if ts.running {
		ts.pending = true
		ts.rmu.Unlock()
		return
	}
	ts.running = true
	ts.rmu.Unlock()
	go ts.resyncLoop()
}

func (ts *toolSet) resyncLoop() {
	for {
		if h := ts.srv.resyncHook; h != nil {
			h()
		}
		ts.sync()
		ts.rmu.Lock()
		if !ts.pending {
			ts.running = false
			ts.rmu.Unlock()
			return
		}
		ts.pending = false
		ts.rmu.Unlock()
	}
}

// listing is what the tool set knows of one visible tool.
type listing struct {
	key    string // what the MCP tool is made from (description, parameters, output schema)
	listed bool   // in the go-sdk server's list (false: left out, with a warning)
	typed  bool   // declares an outputSchema
}

// sync makes the go-sdk server's tool list the scope's visible tools:
// tools that appeared or changed are added (replacing), tools that went
// away removed. A tool whose description, parameters and output schema
// are what they were is neither rebuilt nor re-added, so a sync costs
// one pass over the view plus what changed. The go-sdk announces each
// change to the session with notifications/tools/list_changed
// (debounced), and answers tools/list from this list, with its
// pagination.
func (ts *toolSet) sync() {
	ts.srv.resyncs.Add(1)
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.ended {
		return
	}
	schemas, err := ts.scope.Schemas()
	if err != nil {
		ts.srv.cfg.logger.Warn("mcp: listing the scope's tools", "scope", ts.scope.Key(), "error", err)
		return
	}
	next := make(map[string]listing, len(schemas))
	var add []*sdk.Tool
	for _, sc := range schemas {
		def, _ := ts.scope.Get(sc.Name)
		var out []byte
		if def.Output != nil && def.Output.Schema != nil {
			out, _ = json.Marshal(def.Output.Schema)
		}
		parallel := def.AlwaysParallel()
		key := sc.Description + "\x00" + string(sc.Parameters) + "\x00" + string(out) + "\x00" + strconv.FormatBool(parallel)
		if prev, ok := ts.known[sc.Name]; ok && prev.key == key {
			next[sc.Name] = prev
			continue
		}
		tool, err := mcpTool(sc, out, parallel)
		if err != nil {
			ts.srv.cfg.logger.Warn("mcp: tool not listed", "tool", sc.Name, "error", err)
			next[sc.Name] = listing{key: key}
			continue
		}
		next[sc.Name] = listing{key: key, listed: true, typed: tool.OutputSchema != nil}
		add = append(add, tool)
	}
	var gone []string
	for name, prev := range ts.known {
		if prev.listed && !next[name].listed {
			gone = append(gone, name)
		}
	}
	ts.known = next
	if len(gone) > 0 {
		ts.sdk.RemoveTools(gone...)
	}
	for _, t := range add {
		if err := ts.addTool(t); err != nil {
			ts.srv.cfg.logger.Warn("mcp: tool not listed", "tool", t.Name, "error", err)
			l := next[t.Name]
			l.listed, l.typed = false, false
			next[t.Name] = l
		}
	}
}

// mcpTool is the MCP tool for one schema of the scope: name, description,
// the parameters as inputSchema (MCP requires an object schema), the
// output schema (out, its JSON) as outputSchema when it is an object
// schema, and, for a tool that is parallel whatever its arguments
// (runtime.Definition.AlwaysParallel), the annotation readOnlyHint, so an
// importer that trusts it (WithReadOnlyParallel) keeps the tool parallel.
// Other tools carry no annotations: MCP's defaults (not read-only, maybe
// destructive) fail closed. It fails for a tool the go-sdk would refuse.
func mcpTool(sc runtime.ToolSchema, out []byte, parallel bool) (*sdk.Tool, error) {
	t := &sdk.Tool{Name: sc.Name, Description: sc.Description, InputSchema: sc.Parameters}
	if parallel {
		t.Annotations = &sdk.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true}
	}
	if out != nil && isObjectSchema(out) && !tooDeep(out) {
		t.OutputSchema = json.RawMessage(out)
	}
	if err := sdkRefuses(t); err != nil {
		return nil, err
	}
	return t, nil
}

// call is every listed tool's handler: the call runs through the scope's
// whole pipeline, with what the approval hook needs in its ctx. A call
// from a client that answers approvals by multi round-trip (protocol
// 2026-07-28) runs as a pending call (roundTrip): the result may be an
// approval question instead, answered by a retry.
func (ts *toolSet) call(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	args := req.Params.Arguments
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	var user string
	if req.Extra != nil && req.Extra.TokenInfo != nil {
		user = req.Extra.TokenInfo.UserID
	}
	st := &callState{session: req.Session}
	if caps := req.ClientCapabilities(); caps != nil && caps.Elicitation != nil {
		st.elicit = elicitDirect
		if req.ProtocolVersion() >= roundTripVersion {
			return ts.roundTrip(ctx, req, args, user)
		}
	}
	ctx = context.WithValue(ctx, callStateKey{}, st)
	// Ending the session (Close, Run's ctx, an HTTP DELETE) cancels the call.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if req.Session != nil {
		stop := context.AfterFunc(ts.srv.sessionContext(req.Session, user), func() { cancel(errSessionEnded) })
		defer stop()
	}
	res := ts.scope.Execute(ctx, runtime.Call{
		ID:        "mcp-" + strconv.FormatInt(ts.srv.calls.Add(1), 10),
		Name:      req.Params.Name,
		Arguments: args,
	})
	return toCallToolResult(res, ts.hasStructuredOutput(req.Params.Name)), nil
}

func (ts *toolSet) hasStructuredOutput(name string) bool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.known[name].typed
}

// toCallToolResult maps a toolscope result to MCP: content blocks, a
// failure as isError with its text (and its code under _meta), a success's
// value as structuredContent when the tool declares an object output.
func toCallToolResult(res *runtime.Result, structured bool) *sdk.CallToolResult {
	out := &sdk.CallToolResult{IsError: res.IsError(), Content: []sdk.Content{}}
	for _, b := range res.Content() {
		out.Content = append(out.Content, toContent(b))
	}
	if res.IsError() {
		if len(out.Content) == 0 {
			out.Content = append(out.Content, &sdk.TextContent{Text: res.ErrorMessage()})
		}
		if code := res.Code(); code != "" {
			out.Meta = sdk.Meta{MetaCode: string(code)}
		}
		return out
	}
	if v, ok := res.Value(); ok && structured && len(v) > 0 && v[0] == '{' {
		out.StructuredContent = v
	}
	return out
}

// toContent maps one block: text as text; image and audio blocks whose
// Data is {"data": base64, "mimeType": ...} as image and audio content; a
// resource_link block's Data as a resource link; anything else as text
// holding the block's JSON, so nothing is dropped.
func toContent(b runtime.Block) sdk.Content {
	switch b.Type {
	case "text":
		return &sdk.TextContent{Text: b.Text}
	case "image", "audio":
		var m struct {
			Data     []byte `json:"data"`
			MIMEType string `json:"mimeType"`
		}
		if json.Unmarshal(b.Data, &m) == nil && m.MIMEType != "" {
			if b.Type == "image" {
				return &sdk.ImageContent{Data: m.Data, MIMEType: m.MIMEType}
			}
			return &sdk.AudioContent{Data: m.Data, MIMEType: m.MIMEType}
		}
	case "resource_link":
		var l sdk.ResourceLink
		if json.Unmarshal(b.Data, &l) == nil && l.URI != "" {
			return &l
		}
	}
	raw, _ := json.Marshal(struct {
		Type string          `json:"type"`
		Text string          `json:"text,omitempty"`
		Data json.RawMessage `json:"data,omitempty"`
	}{b.Type, b.Text, b.Data})
	return &sdk.TextContent{Text: string(raw)}
}

// roundTripVersion is the first protocol version in which a server may
// not send requests while serving one: elicitation becomes an
// input_required result the client answers by calling again (SEP-2322).
const roundTripVersion = "2026-07-28"

// approvalInput is the id of the approval question in a multi round-trip.
const approvalInput = "toolscope/approval"

type elicitMode int

const (
	elicitNone      elicitMode = iota // the client declared no elicitation
	elicitDirect                      // an elicitation/create request during the call
	elicitRoundTrip                   // an input_required result, answered by a retry
)

type callStateKey struct{}

// callState is what the approval hook knows of one tools/call.
type callState struct {
	session *sdk.ServerSession
	elicit  elicitMode
	pending *pendingCall // round trip: the call's questions go through it
}

// approvalSchema is what an approval elicitation asks for: one boolean.
var approvalSchema = json.RawMessage(`{"type":"object","properties":{"approve":{"type":"boolean","title":"Approve","description":"Run this tool call"}},"required":["approve"]}`)

// approve is the pre-execute hook that answers Ask through MCP
// elicitation. It runs outermost (WithPrepend at NewServer), so it sees the
// decision of every hook registered before it and of every hook
// registered later without WithPrepend. An Ask in a call from a client
// that declared the elicitation capability is put to the user: accept with
// approve=true allows, anything else denies, and a failed elicitation
// denies (fail closed). Other Asks go on to the registry's approver, which
// denies when there is none (R55).
func (s *Server) approve(ctx context.Context, e runtime.Execution, next func() (runtime.Decision, error)) (runtime.Decision, error) {
	dec, err := next()
	if err != nil || dec.Kind != runtime.DecisionAsk {
		return dec, err
	}
	st, _ := ctx.Value(callStateKey{}).(*callState)
	if st == nil || st.elicit == elicitNone {
		return dec, nil
	}
	args, _ := e.Arguments()
	msg := fmt.Sprintf("Allow the tool %q to run?", e.Name())
	if dec.HasReason {
		msg += " " + dec.Reason
	}
	msg += "\nArguments: " + string(args)
	q := &sdk.ElicitParams{Message: msg, RequestedSchema: approvalSchema}
	var res *sdk.ElicitResult
	switch st.elicit {
	case elicitDirect:
		if res, err = st.session.Elicit(ctx, q); err != nil {
			return runtime.Deny(fmt.Sprintf("tool %q requires approval, and asking the MCP client failed: %v", e.Name(), err)), nil
		}
	case elicitRoundTrip:
		// The call waits while the question goes back to the client; the
		// retry that answers it (sealed request state) resumes it.
		if res, err = st.pending.ask(ctx, e.Name(), q); err != nil {
			return runtime.Deny(fmt.Sprintf("tool %q requires approval, and the MCP client gave none: %v", e.Name(), err)), nil
		}
	}
	switch {
	case res.Action == "accept" && res.Content["approve"] == true:
		return runtime.Allow(), nil
	case res.Action == "cancel":
		return runtime.Deny(fmt.Sprintf("approval for tool %q was cancelled", e.Name())), nil
	default:
		return runtime.Deny(fmt.Sprintf("the user rejected tool %q", e.Name())), nil
	}
}
