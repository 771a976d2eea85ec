// Package wire is a scripted OpenAI API server on loopback for the
// adapter's tests and its runnable example: it answers POST
// /chat/completions and POST /responses with bodies in the API's JSON wire
// format (written from the API reference), one scripted reply per request,
// and records every request body the official client sends.
package wire

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
)

// Reply answers one request: it gets the decoded request body and returns
// the response body (a JSON value) to send with status 200.
type Reply func(req map[string]any) any

// Server is a scripted model server. Requests are answered by the replies
// in order; a request beyond the script gets a 500 with an API error body
// (the client reports it; nothing hangs).
type Server struct {
	srv *httptest.Server

	mu       sync.Mutex
	replies  []Reply
	requests []Request
}

// Request is one recorded request.
type Request struct {
	Path string
	Body json.RawMessage
}

// New starts a server on loopback with the given script.
func New(replies ...Reply) *Server {
	s := &Server{replies: replies}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// URL is the base URL to give option.WithBaseURL.
func (s *Server) URL() string { return s.srv.URL + "/v1/" }

// Client is an HTTP client for the server (option.WithHTTPClient).
func (s *Server) Client() *http.Client { return s.srv.Client() }

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// Requests returns the request bodies received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		apiError(w, http.StatusBadRequest, "cannot read body: "+err.Error())
		return
	}
	if r.Method != http.MethodPost || (r.URL.Path != "/v1/chat/completions" && r.URL.Path != "/v1/responses") {
		apiError(w, http.StatusNotFound, fmt.Sprintf("no route %s %s", r.Method, r.URL.Path))
		return
	}
	var req map[string]any
	if err := json.Unmarshal(body, &req); err != nil {
		apiError(w, http.StatusBadRequest, "body is not a JSON object: "+err.Error())
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, Request{Path: r.URL.Path, Body: body})
	var next Reply
	if len(s.replies) > 0 {
		next, s.replies = s.replies[0], s.replies[1:]
	}
	s.mu.Unlock()
	if next == nil {
		apiError(w, http.StatusInternalServerError, "script exhausted")
		return
	}
	reply := next(req)
	if ev, ok := reply.(Events); ok {
		ev.write(w)
		return
	}
	out, err := json.Marshal(reply)
	if err != nil {
		apiError(w, http.StatusInternalServerError, "script reply: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

func apiError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"message": msg, "type": "server_error", "param": nil, "code": nil,
	}})
}

// Call is one scripted tool call.
type Call struct {
	ID, Name, Arguments string
}

// Chat returns a chat.completion body with one choice: an assistant
// message with content (null when empty) and tool calls, and the finish
// reason ("stop", "tool_calls", "length", ...).
func Chat(finish, content string, calls ...Call) Reply {
	return func(req map[string]any) any {
		msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil, "annotations": []any{}}
		if content != "" {
			msg["content"] = content
		}
		if len(calls) > 0 {
			tcs := make([]any, len(calls))
			for i, c := range calls {
				tcs[i] = map[string]any{
					"id": c.ID, "type": "function",
					"function": map[string]any{"name": c.Name, "arguments": c.Arguments},
				}
			}
			msg["tool_calls"] = tcs
		}
		return map[string]any{
			"id": "chatcmpl-scripted", "object": "chat.completion", "created": 1741570283,
			"model": modelOf(req, "gpt-4o-2024-08-06"),
			"choices": []any{map[string]any{
				"index": 0, "message": msg, "logprobs": nil, "finish_reason": finish,
			}},
			"usage": map[string]any{
				"prompt_tokens": 82, "completion_tokens": 17, "total_tokens": 99,
				"prompt_tokens_details":     map[string]any{"cached_tokens": 64, "audio_tokens": 0},
				"completion_tokens_details": map[string]any{"reasoning_tokens": 5, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0},
			},
			"service_tier": "default", "system_fingerprint": "fp_scripted",
		}
	}
}

// Item is one output item of a scripted response.
type Item map[string]any

// FunctionCall is a function_call output item.
func FunctionCall(id string, c Call) Item {
	return Item{"type": "function_call", "id": id, "call_id": c.ID, "name": c.Name, "arguments": c.Arguments, "status": "completed"}
}

// Message is an assistant message output item with one output_text part.
func Message(id, text string) Item {
	return Item{"type": "message", "id": id, "status": "completed", "role": "assistant",
		"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}, "logprobs": []any{}}}}
}

// Reasoning is a reasoning output item with one summary line.
func Reasoning(id, summary string) Item {
	return Item{"type": "reasoning", "id": id, "summary": []any{map[string]any{"type": "summary_text", "text": summary}}}
}

// Response returns a response body with the given status ("completed",
// "incomplete", "failed"), incomplete reason (for "incomplete") and output
// items. It echoes the request's tools and parallel_tool_calls, as the API
// does.
func Response(status, incomplete string, items ...Item) Reply {
	return func(req map[string]any) any {
		var details any
		if incomplete != "" {
			details = map[string]any{"reason": incomplete}
		}
		var errBody any
		if status == "failed" {
			errBody = map[string]any{"code": "server_error", "message": "scripted failure"}
		}
		tools := req["tools"]
		if tools == nil {
			tools = []any{}
		}
		ptc := req["parallel_tool_calls"]
		if ptc == nil {
			ptc = true
		}
		output := make([]any, len(items))
		for i, it := range items {
			output[i] = map[string]any(it)
		}
		return map[string]any{
			"id": "resp_scripted", "object": "response", "created_at": 1741476542,
			"status": status, "error": errBody, "incomplete_details": details,
			"instructions": nil, "max_output_tokens": nil, "model": modelOf(req, "gpt-4.1-2025-04-14"),
			"output": output, "parallel_tool_calls": ptc, "previous_response_id": nil,
			"reasoning": map[string]any{"effort": nil, "summary": nil}, "store": false,
			"temperature": 1.0, "text": map[string]any{"format": map[string]any{"type": "text"}},
			"tool_choice": "auto", "tools": tools, "top_p": 1.0, "truncation": "disabled",
			"usage": map[string]any{
				"input_tokens": 291, "input_tokens_details": map[string]any{"cached_tokens": 256},
				"output_tokens": 23, "output_tokens_details": map[string]any{"reasoning_tokens": 7},
				"total_tokens": 314,
			},
			"user": nil, "metadata": map[string]any{},
		}
	}
}

func modelOf(req map[string]any, def string) string {
	if m, ok := req["model"].(string); ok && m != "" {
		return m
	}
	return def
}

// Events is a reply sent as a text/event-stream (what the client reads
// when it asked with "stream": true): each event is written and flushed
// in order; a string Data is sent as it is (so a test can send text that
// is not JSON), anything else as its JSON. With Cut the connection is
// dropped after the events, without the stream's end.
type Events struct {
	Events []Event
	Cut    bool
}

// Event is one server-sent event: its name ("" for none) and data.
type Event struct {
	Name string
	Data any
}

func (e Events) write(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	f, _ := w.(http.Flusher)
	for _, ev := range e.Events {
		data, ok := ev.Data.(string)
		if !ok {
			b, err := json.Marshal(ev.Data)
			if err != nil {
				panic(err)
			}
			data = string(b)
		}
		if ev.Name != "" {
			fmt.Fprintf(w, "event: %s\n", ev.Name)
		}
		fmt.Fprintf(w, "data: %s\n\n", data)
		if f != nil {
			f.Flush()
		}
	}
	if e.Cut {
		panic(http.ErrAbortHandler) // drops the connection mid-stream
	}
}

// ChatStream is Chat's reply as chat.completion.chunk events: the content
// in the given pieces, each call's arguments in two pieces, the finish
// reason, a usage chunk (as with stream_options.include_usage) and
// [DONE]. The reply it completes is Chat(finish, join(pieces), calls...).
func ChatStream(finish string, pieces []string, calls ...Call) Reply {
	return func(req map[string]any) any {
		whole := Chat(finish, "", calls...)(req).(map[string]any)
		chunk := func(delta map[string]any, finish any) Event {
			return Event{Data: map[string]any{
				"id": whole["id"], "object": "chat.completion.chunk", "created": whole["created"],
				"model": whole["model"], "system_fingerprint": whole["system_fingerprint"],
				"choices": []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}},
			}}
		}
		evs := []Event{chunk(map[string]any{"role": "assistant", "content": ""}, nil)}
		for _, p := range pieces {
			evs = append(evs, chunk(map[string]any{"content": p}, nil))
		}
		for i, c := range calls {
			half := len(c.Arguments) / 2
			evs = append(evs,
				chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": c.ID, "type": "function",
					"function": map[string]any{"name": c.Name, "arguments": c.Arguments[:half]}}}}, nil),
				chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i,
					"function": map[string]any{"arguments": c.Arguments[half:]}}}}, nil))
		}
		evs = append(evs, chunk(map[string]any{}, finish))
		evs = append(evs, Event{Data: map[string]any{
			"id": whole["id"], "object": "chat.completion.chunk", "created": whole["created"],
			"model": whole["model"], "choices": []any{}, "usage": whole["usage"],
		}})
		evs = append(evs, Event{Data: "[DONE]"})
		return Events{Events: evs}
	}
}

// ResponseStream is Response's reply as Responses streaming events:
// response.created, the text of every message item as
// response.output_text.delta events in the given pieces, and the final
// event (response.completed, response.incomplete or response.failed)
// carrying the response Response(status, incomplete, items...) returns.
func ResponseStream(status, incomplete string, pieces []string, items ...Item) Reply {
	return func(req map[string]any) any {
		whole := Response(status, incomplete, items...)(req).(map[string]any)
		seq := 0
		ev := func(typ string, body map[string]any) Event {
			body["type"], body["sequence_number"] = typ, seq
			seq++
			return Event{Name: typ, Data: body}
		}
		created := map[string]any{}
		for k, v := range whole {
			created[k] = v
		}
		created["status"], created["output"] = "in_progress", []any{}
		evs := []Event{ev("response.created", map[string]any{"response": created})}
		for _, p := range pieces {
			evs = append(evs, ev("response.output_text.delta", map[string]any{
				"item_id": "msg_stream", "output_index": 0, "content_index": 0, "delta": p, "logprobs": []any{}}))
		}
		final := "response.completed"
		switch status {
		case "incomplete":
			final = "response.incomplete"
		case "failed":
			final = "response.failed"
		}
		evs = append(evs, ev(final, map[string]any{"response": whole}))
		return Events{Events: evs}
	}
}
