package mcp

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolscope/toolscope/runtime"
)

// Approval over a multi round-trip (protocol 2026-07-28, SEP-2322). The
// server may not send the client a request while serving one, so an
// approval question is an input_required result, and the client answers by
// calling again with the answer and the request state. An execution must
// not end at the question: a body that already ran part of its work and
// asks for a nested call's approval would otherwise run again on every
// retry. So a call from such a client executes in the background, as a
// pending call: its approval hook hands each question to the tools/call
// handler waiting for it and blocks until the retry that answers it; the
// handler returns the question, and the retry delivers the answer and
// waits for the next question or the result. Each question is answered
// once and every body runs once, however deep the nesting.
//
// A pending call outlives the request that started it (over streamable
// HTTP on 2026-07-28 every request is its own session), so it lives in the
// Server, found by the id in the request state, and holds its session's
// scope until it ends. It is bounded: an unanswered question denies the
// call after roundTripWait, at most maxPendingCalls run at once, a client
// that cancels a call it waits for cancels the execution, and Close
// cancels them all.

// roundTripWait bounds how long a pending call waits for the answer to one
// question (and for a handler to take the question).
const roundTripWait = 5 * time.Minute

// maxPendingCalls bounds the pending calls of one server.
const maxPendingCalls = 256

// errTooManyPending refuses a call when maxPendingCalls are pending.
var errTooManyPending = errors.New("mcp: too many tool calls wait for approval; retry later")

// A pendingCall is one tools/call executing in the background while its
// approvals go back and forth with the client.
type pendingCall struct {
	id     string
	name   string
	args   []byte // compact JSON, as first called
	user   string // the authenticated user (auth.TokenInfo) of the first request, if any
	cancel context.CancelCauseFunc

	questions chan *question // approval hook → the handler waiting for an event
	done      chan struct{}  // closed when the execution ended
	result    *sdk.CallToolResult

	mu      sync.Mutex
	current *question // handed to the client, not answered yet
	seq     int
}

// A question is one approval put to the client.
type question struct {
	params *sdk.ElicitParams
	answer chan *sdk.ElicitResult // buffered: the retry never blocks
	seq    int
}

// roundTrip serves a tools/call from a client that answers approvals by
// retrying: the retry of a pending call delivers its answer and waits for
// what comes next; any other call starts a pending call.
func (ts *toolSet) roundTrip(ctx context.Context, req *sdk.CallToolRequest, args json.RawMessage, user string) (*sdk.CallToolResult, error) {
	s := ts.srv
	compact := compactJSON(args)
	if p, seq := s.pendingFor(req.Params.RequestState, req.Params.Name, compact, user); p != nil {
		p.mu.Lock()
		q := p.current
		if q != nil && q.seq == seq {
			if ans, ok := req.Params.InputResponses[approvalInput].(*sdk.ElicitResult); ok {
				p.current = nil
				q.answer <- ans
				q = nil
			}
		}
		p.mu.Unlock()
		if q != nil { // no answer to the question outstanding: ask it again
			return s.inputRequired(p, q), nil
		}
		return s.nextEvent(ctx, p)
	}
	p, err := ts.startPending(ctx, req, args, compact, user)
	if err != nil {
		return nil, err
	}
	return s.nextEvent(ctx, p)
}

// startPending starts the execution of a new pending call.
func (ts *toolSet) startPending(ctx context.Context, req *sdk.CallToolRequest, args, compact json.RawMessage, user string) (*pendingCall, error) {
	s := ts.srv
	p := &pendingCall{
		id: rand.Text(), name: req.Params.Name, args: compact, user: user,
		questions: make(chan *question), done: make(chan struct{}),
	}
	s.mu.Lock()
	switch {
	case s.closed:
		s.mu.Unlock()
		return nil, ErrServerClosed
	case len(s.pending) >= maxPendingCalls:
		s.mu.Unlock()
		return nil, errTooManyPending
	}
	s.pending[p.id] = p
	s.mu.Unlock()
	ts.hold()
	// The execution outlives this request: its values stay, its
	// cancellation is the pending call's own (and Close's).
	ectx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	p.cancel = cancel
	stop := context.AfterFunc(s.closing, func() { cancel(ErrServerClosed) })
	ectx = context.WithValue(ectx, callStateKey{}, &callState{session: req.Session, elicit: elicitRoundTrip, pending: p})
	go func() {
		defer ts.release()
		defer stop()
		defer cancel(nil)
		res := ts.scope.Execute(ectx, runtime.Call{
			ID:        "mcp-" + strconv.FormatInt(s.calls.Add(1), 10),
			Name:      p.name,
			Arguments: args,
		})
		p.result = toCallToolResult(res, ts.hasStructuredOutput(p.name))
		s.mu.Lock()
		delete(s.pending, p.id)
		s.mu.Unlock()
		close(p.done)
	}()
	return p, nil
}

// nextEvent waits for the pending call's next question or its result. A
// ctx that ends (the client cancelled the call) cancels the execution.
func (s *Server) nextEvent(ctx context.Context, p *pendingCall) (*sdk.CallToolResult, error) {
	select {
	case q := <-p.questions:
		p.mu.Lock()
		p.seq++
		q.seq = p.seq
		p.current = q
		p.mu.Unlock()
		return s.inputRequired(p, q), nil
	case <-p.done:
		return p.result, nil
	case <-ctx.Done():
		p.cancel(context.Cause(ctx))
		return nil, ctx.Err()
	}
}

// inputRequired is the input_required result asking question q.
func (s *Server) inputRequired(p *pendingCall, q *question) *sdk.CallToolResult {
	return &sdk.CallToolResult{
		InputRequests: sdk.InputRequestMap{approvalInput: q.params},
		RequestState:  p.id + "." + strconv.Itoa(q.seq) + "." + s.seal(p, q.seq),
	}
}

// seal is the MAC, under the server's own key, of one question of a
// pending call: its id, the question's number, the tool and arguments.
func (s *Server) seal(p *pendingCall, seq int) string {
	m := hmac.New(sha256.New, s.key[:])
	m.Write([]byte(p.id))
	m.Write([]byte{0})
	m.Write([]byte(strconv.Itoa(seq)))
	m.Write([]byte{0})
	m.Write([]byte(p.name))
	m.Write([]byte{0})
	m.Write(p.args)
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// pendingFor is the pending call a retry continues, and the number of the
// question it answers: the request state must be one the server sealed,
// and the retry must call the same tool with the same arguments for the
// same user. Anything else is a new call.
func (s *Server) pendingFor(state, name string, args []byte, user string) (*pendingCall, int) {
	id, rest, ok := strings.Cut(state, ".")
	if !ok {
		return nil, 0
	}
	n, mac, ok := strings.Cut(rest, ".")
	if !ok {
		return nil, 0
	}
	seq, err := strconv.Atoi(n)
	if err != nil {
		return nil, 0
	}
	s.mu.Lock()
	p := s.pending[id]
	s.mu.Unlock()
	if p == nil || p.name != name || !bytes.Equal(p.args, args) || p.user != user ||
		!hmac.Equal([]byte(mac), []byte(s.seal(p, seq))) {
		return nil, 0
	}
	return p, seq
}

// ask is the approval hook's side of a pending call: it hands the question
// to the client and waits for the answer, bounded by ctx and
// roundTripWait.
func (p *pendingCall) ask(ctx context.Context, name string, params *sdk.ElicitParams) (*sdk.ElicitResult, error) {
	q := &question{params: params, answer: make(chan *sdk.ElicitResult, 1)}
	timer := time.NewTimer(roundTripWait)
	defer timer.Stop()
	select {
	case p.questions <- q:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	case <-timer.C:
		return nil, fmt.Errorf("no MCP request took the approval question for tool %q within %v", name, roundTripWait)
	}
	select {
	case res := <-q.answer:
		return res, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	case <-timer.C:
		return nil, fmt.Errorf("the MCP client did not answer the approval question for tool %q within %v", name, roundTripWait)
	}
}

// pendingApprovals is the number of pending calls (tests).
func (s *Server) pendingApprovals() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pending)
}

func compactJSON(b []byte) []byte {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return b
	}
	return buf.Bytes()
}

// hold keeps the tool set's scope while a pending call executes in it;
// release lets it go, disposing it if the session ended meanwhile.
func (ts *toolSet) hold() {
	ts.mu.Lock()
	ts.holds++
	ts.mu.Unlock()
}

func (ts *toolSet) release() {
	ts.mu.Lock()
	ts.holds--
	dispose := ts.holds == 0 && ts.disposeLater && ts.own && ts.scope != nil
	ts.disposeLater = ts.disposeLater && !dispose
	ts.mu.Unlock()
	if dispose {
		ts.scope.Dispose()
	}
}
