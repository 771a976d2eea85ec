package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"

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
func (s *Server) StreamableHTTPHandler(opts *sdk.StreamableHTTPOptions) http.Handler {
	limit := int64(sdk.DefaultMaxRequestBodyBytes)
	if opts != nil && opts.MaxRequestBodyBytes != 0 {
		limit = opts.MaxRequestBodyBytes
	}
	return &httpHandler{srv: s, inner: sdk.NewStreamableHTTPHandler(s.serverFor, opts), limit: limit}
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
	if req.Body == nil {
		return false
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
	type msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	var one msg
	if json.Unmarshal(b, &one) == nil {
		return one.Method == "initialize" && len(one.ID) > 0
	}
	var batch []msg
	if json.Unmarshal(b, &batch) == nil {
		for _, m := range batch {
			if m.Method == "initialize" && len(m.ID) > 0 {
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
