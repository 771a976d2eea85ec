package mcp

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

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
	key      [32]byte // seals approval questions (seal)

	mu     sync.Mutex
	closed bool
	live   map[*toolSet]struct{} // per-session tool sets, bound and not ended
	byID   map[string]*toolSet   // streamable HTTP sessions by id
}

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
	s := &Server{scope: scope, live: map[*toolSet]struct{}{}, byID: map[string]*toolSet{}}
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
// (see sdk.Server.Run).
func (s *Server) Run(ctx context.Context, t sdk.Transport) error {
	ss, err := s.Connect(ctx, t, nil)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- ss.Wait() }()
	select {
	case <-ctx.Done():
		_ = ss.Close()
		<-done
		return ctx.Err()
	case err := <-done:
		return err
	}
}

// StreamableHTTPHandler returns an http.Handler serving the MCP streamable
// HTTP transport, one scope per session (see sdk.NewStreamableHTTPHandler
// for opts). Set opts.SessionTimeout so that sessions whose client vanished
// without closing them end, and their scopes with them; Close ends the
// rest. With opts.Stateless every request is its own session.
func (s *Server) StreamableHTTPHandler(opts *sdk.StreamableHTTPOptions) *sdk.StreamableHTTPHandler {
	return sdk.NewStreamableHTTPHandler(s.serverFor, opts)
}

// serverFor is the HTTP handler's getServer. The go-sdk calls it for every
// request, not only for the one that opens a session, so a request without
// a known session id gets a fresh unbound tool set: it is bound (its scope
// created) only when the handler asks it for a session id, just before it
// connects the new session, or at the session's first message when no id
// is asked for (stateless). An unbound tool set holds nothing.
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
	return s.newToolSet(req).sdk
}

// Close ends every session, disposes their scopes and removes the
// approval hook. It does not dispose the scope given to NewServer.
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
	s.mu.Unlock()
	for _, ts := range live {
		if ss := ts.session.Load(); ss != nil {
			_ = ss.Close()
		}
		ts.end()
	}
	if s.shared != nil {
		for ss := range s.shared.sdk.Sessions() {
			_ = ss.Close()
		}
		s.shared.unsub()
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

	bound   sync.Once
	bindErr error
	scope   *runtime.Scope // set by bind
	unsub   func()         // the change subscription (shared mode; per session it dies with the scope)
	own     bool           // scope belongs to this session
	session atomic.Pointer[sdk.ServerSession]
	waiting sync.Once

	mu     sync.Mutex
	listed map[string]string // name → the listed tool's JSON, to tell changes
	typed  map[string]bool   // names whose listed tool declares an outputSchema
	id     string            // the streamable HTTP session id, if any
	ended  bool
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

// sessionID is the HTTP handler's GetSessionID for a new session: the
// session is about to be connected, so its scope is created now and its
// tools listed before its first message.
func (ts *toolSet) sessionID() string {
	id := rand.Text()
	ctx := context.Background()
	if ts.req != nil {
		ctx = ts.req.Context()
	}
	if err := ts.bind(ctx, SessionInfo{Request: ts.req}); err != nil {
		ts.srv.cfg.logger.Warn("mcp: session refused", "error", err)
	}
	ts.srv.mu.Lock()
	ts.srv.byID[id] = ts
	ts.srv.mu.Unlock()
	ts.mu.Lock()
	ts.id = id
	ts.mu.Unlock()
	return id
}

func (ts *toolSet) middleware(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if ss, ok := req.GetSession().(*sdk.ServerSession); ok && !ts.srv.cfg.shared {
			ts.attach(ss)
		}
		if err := ts.bind(ctx, SessionInfo{Request: ts.req}); err != nil {
			return nil, err
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

// end disposes the session's scope (once) and forgets the session.
func (ts *toolSet) end() {
	ts.bound.Do(func() { ts.bindErr = errors.New("mcp: session ended") })
	ts.mu.Lock()
	if ts.ended {
		ts.mu.Unlock()
		return
	}
	ts.ended = true
	id := ts.id
	ts.mu.Unlock()
	s := ts.srv
	s.mu.Lock()
	delete(s.live, ts)
	if id != "" && s.byID[id] == ts {
		delete(s.byID, id)
	}
	s.mu.Unlock()
	if ts.own && ts.scope != nil {
		ts.scope.Dispose()
	}
}

func (ts *toolSet) onChange(context.Context) error {
	ts.sync()
	return nil
}

// sync makes the go-sdk server's tool list the scope's visible tools:
// tools that appeared or changed are added (replacing), tools that went
// away removed. The go-sdk announces each change to the session with
// notifications/tools/list_changed (debounced), and answers tools/list
// from this list, with its pagination.
func (ts *toolSet) sync() {
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
	next := make(map[string]string, len(schemas))
	typed := make(map[string]bool)
	var add []*sdk.Tool
	for _, sc := range schemas {
		tool, err := ts.mcpTool(sc)
		if err != nil {
			ts.srv.cfg.logger.Warn("mcp: tool not listed", "tool", sc.Name, "error", err)
			continue
		}
		b, _ := json.Marshal(tool)
		next[sc.Name] = string(b)
		if tool.OutputSchema != nil {
			typed[sc.Name] = true
		}
		if ts.listed[sc.Name] != string(b) {
			add = append(add, tool)
		}
	}
	var gone []string
	for name := range ts.listed {
		if _, ok := next[name]; !ok {
			gone = append(gone, name)
		}
	}
	ts.listed, ts.typed = next, typed
	if len(gone) > 0 {
		ts.sdk.RemoveTools(gone...)
	}
	for _, t := range add {
		ts.sdk.AddTool(t, ts.call)
	}
}

// mcpTool is the MCP tool for one schema of the scope: name, description,
// the parameters as inputSchema (MCP requires an object schema), and the
// output schema as outputSchema when it is an object schema.
func (ts *toolSet) mcpTool(sc runtime.ToolSchema) (*sdk.Tool, error) {
	if !isObjectSchema(sc.Parameters) {
		return nil, errors.New(`MCP needs an input schema of type "object"`)
	}
	t := &sdk.Tool{Name: sc.Name, Description: sc.Description, InputSchema: sc.Parameters}
	if def, ok := ts.scope.Get(sc.Name); ok && def.Output != nil && def.Output.Schema != nil {
		if b, err := json.Marshal(def.Output.Schema); err == nil && isObjectSchema(b) {
			t.OutputSchema = json.RawMessage(b)
		}
	}
	return t, nil
}

func isObjectSchema(b json.RawMessage) bool {
	var m struct {
		Type any `json:"type"`
	}
	return json.Unmarshal(b, &m) == nil && m.Type == "object"
}

// call is every listed tool's handler: the call runs through the scope's
// whole pipeline, with what the approval hook needs in its ctx. When the
// hook asked the client for approval through a multi round-trip
// (protocol 2026-07-28), the result is that input request instead.
func (ts *toolSet) call(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	args := req.Params.Arguments
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	st := &callState{session: req.Session}
	if caps := req.ClientCapabilities(); caps != nil && caps.Elicitation != nil {
		st.elicit = elicitDirect
		if req.ProtocolVersion() >= roundTripVersion {
			st.elicit = elicitRoundTrip
			st.retryState = req.Params.RequestState
			if r, ok := req.Params.InputResponses[approvalInput].(*sdk.ElicitResult); ok {
				st.answer = r
			}
		}
	}
	ctx = context.WithValue(ctx, callStateKey{}, st)
	res := ts.scope.Execute(ctx, runtime.Call{
		ID:        "mcp-" + strconv.FormatInt(ts.srv.calls.Add(1), 10),
		Name:      req.Params.Name,
		Arguments: args,
	})
	if st.ask != nil {
		return &sdk.CallToolResult{
			InputRequests: sdk.InputRequestMap{approvalInput: st.ask},
			RequestState:  st.askState,
		}, nil
	}
	return toCallToolResult(res, ts.hasStructuredOutput(req.Params.Name)), nil
}

func (ts *toolSet) hasStructuredOutput(name string) bool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.typed[name]
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
	session    *sdk.ServerSession
	elicit     elicitMode
	answer     *sdk.ElicitResult // round trip: the client's answer, on a retry
	retryState string            // round trip: the requestState the retry echoed
	ask        *sdk.ElicitParams // round trip: the question to return instead of a result
	askState   string
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
		// The answer counts only for the question asked: the same tool,
		// arguments and reason, sealed in the request state.
		token := s.seal(e.Name(), args, dec.Reason)
		if st.answer == nil || !hmac.Equal([]byte(st.retryState), []byte(token)) {
			st.ask, st.askState = q, token
			return runtime.Deny(fmt.Sprintf("tool %q waits for approval from the MCP client", e.Name())), nil
		}
		res = st.answer
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

// seal is the request state of an approval question: an HMAC, under the
// server's own key, of what is being approved.
func (s *Server) seal(name string, args json.RawMessage, reason string) string {
	m := hmac.New(sha256.New, s.key[:])
	m.Write([]byte(name))
	m.Write([]byte{0})
	m.Write(args)
	m.Write([]byte{0})
	m.Write([]byte(reason))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}
