package mcp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// StreamableHTTPHandler returns an http.Handler serving the MCP streamable
// HTTP transport, one scope per session (see sdk.NewStreamableHTTPHandler
// for opts). Set opts.SessionTimeout so that sessions whose client vanished
// without closing them end, and their scopes with them; Close ends the
// rest. With opts.Stateless every request is its own session.
//
// A session's scope is created when the session really opens: by its
// initialize request (or, without one, by its first tools request). A
// request that opens no session (malformed JSON, a notification, another
// method without a session id) leaves nothing behind.
//
// The handler has no authentication of its own: serve it on loopback, or
// give it WithBearerToken or WithHTTPMiddleware (your own authentication),
// and WithAllowedHosts on any other interface. Checks run in that order:
// the Host allow-list, the bearer token, the middlewares, then MCP.
func (s *Server) StreamableHTTPHandler(opts *sdk.StreamableHTTPOptions, hopts ...HTTPOption) http.Handler {
	var c httpConfig
	for _, o := range hopts {
		o(&c)
	}
	limit := int64(sdk.DefaultMaxRequestBodyBytes)
	var o sdk.StreamableHTTPOptions
	if opts != nil {
		o = *opts
	}
	if o.MaxRequestBodyBytes != 0 {
		limit = o.MaxRequestBodyBytes
	}
	if len(c.hosts) > 0 {
		// The allow-list is the Host check, on every interface; the
		// go-sdk's (loopback only, loopback names only) would refuse an
		// allowed name behind a local reverse proxy.
		o.DisableLocalhostProtection = true
	}
	var h http.Handler = &httpHandler{srv: s, inner: sdk.NewStreamableHTTPHandler(s.serverFor, &o), limit: limit}
	for i := len(c.middleware) - 1; i >= 0; i-- {
		h = c.middleware[i](h)
	}
	if c.token != "" {
		h = bearerToken(c.token, h)
	}
	if len(c.hosts) > 0 {
		h = allowHosts(c.hosts, h)
	}
	return h
}

// HTTPOption configures StreamableHTTPHandler.
type HTTPOption func(*httpConfig)

type httpConfig struct {
	token      string
	middleware []func(http.Handler) http.Handler
	hosts      map[string]bool
}

// WithBearerToken requires every request to carry the header
// "Authorization: Bearer <token>"; any other request is refused with 401
// Unauthorized (and "WWW-Authenticate: Bearer") before the MCP handler
// sees it. The comparison takes constant time. An empty token is ignored.
func WithBearerToken(token string) HTTPOption {
	return func(c *httpConfig) { c.token = token }
}

// WithHTTPMiddleware wraps the MCP handler in mw, for authentication of
// your own (the go-sdk's auth.RequireBearerToken, say, whose TokenInfo
// then ties each session to its user) or anything else. Several wrap in
// the order given: the first is outermost. They run after the Host
// allow-list and the bearer token.
func WithHTTPMiddleware(mw func(http.Handler) http.Handler) HTTPOption {
	return func(c *httpConfig) {
		if mw != nil {
			c.middleware = append(c.middleware, mw)
		}
	}
}

// WithAllowedHosts refuses, with 403 Forbidden, every request whose Host
// header (without its port, ignoring case) is none of hosts, whatever the
// interface it arrived on: the check that stops DNS rebinding, which the
// go-sdk applies only to requests arriving on loopback (and which this
// allow-list then replaces). List the names clients use to reach the
// server (e.g. "mcp.example.com", "localhost", "127.0.0.1").
func WithAllowedHosts(hosts ...string) HTTPOption {
	return func(c *httpConfig) {
		if c.hosts == nil {
			c.hosts = map[string]bool{}
		}
		for _, h := range hosts {
			c.hosts[strings.ToLower(hostOnly(h))] = true
		}
	}
}

// hostOnly is host without its port (and an IPv6 literal without its
// brackets).
func hostOnly(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		return h
	}
	return strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
}

func allowHosts(hosts map[string]bool, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hosts[strings.ToLower(hostOnly(r.Host))] {
			http.Error(w, fmt.Sprintf("Forbidden: Host %q is not allowed", r.Host), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func bearerToken(token string, next http.Handler) http.Handler {
	want := sha256.Sum256([]byte(token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		sum := sha256.Sum256([]byte(got))
		if !ok || subtle.ConstantTimeCompare(sum[:], want[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="mcp"`)
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

type httpHandler struct {
	srv   *Server
	inner *sdk.StreamableHTTPHandler
	limit int64 // the request body bound (negative: none)
}

// opening is what one POST without a session id may open: the tool set
// serverFor made for it, and whether the body is an initialize request.
type opening struct {
	ts         *toolSet
	initialize bool
}

type openingKey struct{}

func (h *httpHandler) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method == http.MethodDelete {
		// The go-sdk's DELETE closes the session, which waits for its
		// calls: cancel them first.
		h.srv.cancelCallsOf(req)
	}
	if req.Method != http.MethodPost || req.Header.Get(sessionIDHeader) != "" {
		h.inner.ServeHTTP(w, req)
		return
	}
	op := &opening{initialize: h.peekInitialize(req)}
	req = req.WithContext(context.WithValue(req.Context(), openingKey{}, op))
	h.inner.ServeHTTP(w, req)
	if op.ts != nil {
		op.ts.settle()
	}
}

// peekInitialize reports whether the body of req holds an initialize
// request, leaving the body as it was for the go-sdk. It reads no more
// than the body bound the go-sdk enforces (plus one byte).
func (h *httpHandler) peekInitialize(req *http.Request) bool {
	if mt, _, err := mime.ParseMediaType(req.Header.Get("Content-Type")); req.Body == nil || err != nil || mt != "application/json" {
		return false // the go-sdk refuses it unread
	}
	r := io.Reader(req.Body)
	if h.limit > 0 {
		r = io.LimitReader(r, h.limit+1)
	}
	b, err := io.ReadAll(r)
	req.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(b), req.Body), req.Body}
	if err != nil || (h.limit > 0 && int64(len(b)) > h.limit) {
		return false
	}
	// Keys are matched exactly, as the go-sdk matches them.
	isInit := func(m map[string]json.RawMessage) bool {
		var method string
		_, hasID := m["id"]
		return hasID && json.Unmarshal(m["method"], &method) == nil && method == "initialize"
	}
	var one map[string]json.RawMessage
	if json.Unmarshal(b, &one) == nil {
		return isInit(one)
	}
	var batch []map[string]json.RawMessage
	if json.Unmarshal(b, &batch) == nil {
		for _, m := range batch {
			if isInit(m) {
				return true
			}
		}
	}
	return false
}

// settle runs after the go-sdk served the request that may have opened
// the tool set's session: a session it kept is watched (its end disposes
// the scope), and a tool set whose session the go-sdk dropped, or never
// made, is ended.
func (ts *toolSet) settle() {
	found := false
	for ss := range ts.sdk.Sessions() {
		ts.attach(ss)
		found = true
	}
	if !found {
		ts.end()
	}
}

// sessionByID is the live streamable-HTTP session with id, or nil.
func (s *Server) sessionByID(id string) *sdk.ServerSession {
	if id == "" {
		return nil
	}
	if s.shared != nil {
		for ss := range s.shared.sdk.Sessions() {
			if ss.ID() == id {
				return ss
			}
		}
		return nil
	}
	s.mu.Lock()
	ts := s.byID[id]
	s.mu.Unlock()
	if ts == nil {
		return nil
	}
	return ts.session.Load()
}

// cancelCallsOf cancels the calls of the session a DELETE request names,
// when the request may end it: the go-sdk refuses a DELETE whose
// authenticated user (auth.TokenInfo) is not the session's, so only the
// session's own user cancels its calls.
func (s *Server) cancelCallsOf(req *http.Request) {
	ss := s.sessionByID(req.Header.Get(sessionIDHeader))
	if ss == nil {
		return
	}
	var user string
	if ti := auth.TokenInfoFromContext(req.Context()); ti != nil {
		user = ti.UserID
	}
	s.mu.Lock()
	sc := s.ending[ss]
	s.mu.Unlock()
	if sc != nil && sc.user == user {
		sc.cancel()
	}
}
