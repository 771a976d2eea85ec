package anthropic_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/toolscope/toolscope/runtime"
)

// server is a scripted Messages API on loopback: each POST /v1/messages is
// answered with the next scripted body (in the API's wire format) and its
// request body is kept for the test to inspect.
type server struct {
	*httptest.Server
	mu      sync.Mutex
	replies []string
	bodies  [][]byte
}

func newServer(t testing.TB, replies ...string) *server {
	t.Helper()
	s := &server{replies: replies}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, `{"type":"error","error":{"type":"not_found_error","message":"no route %s %s"}}`, r.Method, r.URL.Path)
		return
	}
	s.bodies = append(s.bodies, body)
	if len(s.replies) == 0 {
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"type":"error","error":{"type":"invalid_request_error","message":"script exhausted"}}`)
		return
	}
	reply := s.replies[0]
	s.replies = s.replies[1:]
	if strings.HasPrefix(reply, "event:") {
		// A streamed reply; with cutMark at its end the connection is
		// dropped there, without the stream's end.
		w.Header().Set("Content-Type", "text/event-stream")
		body, cut := strings.CutSuffix(reply, cutMark)
		io.WriteString(w, body)
		if cut {
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		}
		return
	}
	io.WriteString(w, reply)
}

// cutMark ends a streamed reply that is cut mid-stream.
const cutMark = "\x00cut"

// requests returns the request bodies received so far, decoded.
func (s *server) requests(t testing.TB) []wireRequest {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]wireRequest, len(s.bodies))
	for i, b := range s.bodies {
		if err := json.Unmarshal(b, &out[i]); err != nil {
			t.Fatalf("request %d is not JSON: %v\n%s", i, err, b)
		}
	}
	return out
}

func (s *server) client() sdk.Client {
	return sdk.NewClient(option.WithBaseURL(s.URL), option.WithAPIKey("test-key"),
		option.WithMaxRetries(0), option.WithHTTPClient(s.Server.Client()))
}

// The request as it travelled, decoded independently of the SDK's types.
type wireRequest struct {
	Model      string          `json:"model"`
	MaxTokens  int             `json:"max_tokens"`
	Messages   []wireMessage   `json:"messages"`
	Tools      []wireTool      `json:"tools"`
	ToolChoice *wireToolChoice `json:"tool_choice"`
}

type wireMessage struct {
	Role    string      `json:"role"`
	Content []wireBlock `json:"content"`
}

type wireBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	IsError   *bool           `json:"is_error"`
	Content   []wireBlock     `json:"content"`
	Source    json.RawMessage `json:"source"`
}

type wireTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type wireToolChoice struct {
	Type                   string `json:"type"`
	DisableParallelToolUse *bool  `json:"disable_parallel_tool_use"`
}

// within runs f, failing the test with every goroutine's stack if it does
// not return within d.
func within(t testing.TB, d time.Duration, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		buf := make([]byte, 1<<20)
		n := goruntime.Stack(buf, true)
		t.Fatalf("still running after %v; goroutines:\n%s", d, buf[:n])
	}
}

// fixture is a registry with real tools: read (parallel), write (exclusive:
// a barrier; denied by a pre-execute hook outside the project), fail (a
// coded error), picture (text and an image block, and a context), stop
// (exclusive; cancels the step ctx given to it), and learn (registers a
// new tool, recall, in the scope).
type fixture struct {
	reg   *runtime.Registry
	scope *runtime.Scope
	mu    sync.Mutex
	order []string // tool bodies in the order they ran
	stop  context.CancelFunc
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	reg, err := runtime.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		reg.Close(ctx)
	})
	f := &fixture{reg: reg}
	type path struct {
		Path string `json:"path"`
	}
	read, err := runtime.NewTool("read", "Read a file", func(ctx context.Context, in path, _ *runtime.RunContext) (string, error) {
		f.ran("read " + in.Path)
		return "contents of " + in.Path, nil
	}, runtime.WithParallel())
	must(t, err)
	write, err := runtime.NewTool("write", "Write a file", func(ctx context.Context, in struct {
		Path string `json:"path"`
		Text string `json:"text"`
	}, _ *runtime.RunContext) (string, error) {
		f.ran("write " + in.Path)
		return "wrote " + in.Path, nil
	})
	must(t, err)
	fail, err := runtime.NewTool("fail", "Always fails", func(ctx context.Context, _ struct{}, _ *runtime.RunContext) (string, error) {
		f.ran("fail")
		return "", runtime.NewError("QuotaError", "QUOTA_EXCEEDED", "quota exceeded")
	})
	must(t, err)
	stop, err := runtime.NewTool("stop", "Stops the conversation", func(ctx context.Context, _ struct{}, _ *runtime.RunContext) (string, error) {
		f.ran("stop")
		f.mu.Lock()
		cancel := f.stop
		f.mu.Unlock()
		if cancel != nil {
			cancel()
		}
		return "stopping", nil
	})
	must(t, err)
	picture := runtime.Definition{
		Name:        "picture",
		Description: "Draws a picture",
		Parameters:  json.RawMessage(`{"type":"object","properties":{}}`),
		Output: &runtime.Output{
			Schema: json.RawMessage(`{"type":"string"}`),
			Render: func(_ context.Context, args, value json.RawMessage) ([]runtime.Block, error) {
				return []runtime.Block{runtime.Text("a red dot"),
					{Type: "image", Data: json.RawMessage(`{"media_type":"image/png","data":"iVBORw0KGgo="}`)}}, nil
			},
		},
		Execute: func(ctx context.Context, args json.RawMessage, rc *runtime.RunContext) (any, error) {
			f.ran("picture")
			rc.DeferContext(runtime.ContextMessage{Role: "user", Text: "the picture is 1x1"})
			return "dot", nil
		},
	}
	learn, err := runtime.NewTool("learn", "Learns a new tool", func(ctx context.Context, _ struct{}, _ *runtime.RunContext) (string, error) {
		f.ran("learn")
		recall, err := runtime.NewTool("recall", "Recalls what was learnt", func(ctx context.Context, _ struct{}, _ *runtime.RunContext) (string, error) {
			f.ran("recall")
			return "remembered", nil
		})
		if err != nil {
			return "", err
		}
		if _, err := f.scope.Register(recall); err != nil {
			return "", err
		}
		return "learnt recall", nil
	})
	must(t, err)
	scope, err := reg.NewScope("agent")
	must(t, err)
	f.scope = scope
	for _, d := range []runtime.Definition{read, write, fail, stop, picture, learn} {
		if _, err := scope.Register(d); err != nil {
			t.Fatal(err)
		}
	}
	// Writes outside the project are denied before they run.
	_, err = scope.OnPreExecute(func(ctx context.Context, e runtime.Execution, next func() (runtime.Decision, error)) (runtime.Decision, error) {
		if args, ok := e.Arguments(); ok && e.Name() == "write" && bytes.Contains(args, []byte(`"/etc/`)) {
			return runtime.Deny("writes outside the project are denied"), nil
		}
		return next()
	})
	must(t, err)
	return f
}

func (f *fixture) ran(s string) {
	f.mu.Lock()
	f.order = append(f.order, s)
	f.mu.Unlock()
}

func (f *fixture) ranOrder() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.order...)
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// compact returns s with insignificant JSON whitespace removed.
func compact(t testing.TB, s []byte) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, s); err != nil {
		t.Fatalf("not JSON: %v: %s", err, s)
	}
	return b.String()
}
