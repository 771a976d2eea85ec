package openai_test

import (
	"context"
	"encoding/json"
	"os"
	"reflect"
	"runtime/pprof"
	"testing"
	"time"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/toolscope/toolscope/providers/openai/internal/wire"
	"github.com/toolscope/toolscope/runtime"
)

// testCtx is a ctx bounded for the whole test; a failed test dumps every
// goroutine, so a hang shows where it waited.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(func() {
		cancel()
		if t.Failed() {
			_ = pprof.Lookup("goroutine").WriteTo(os.Stderr, 2)
		}
	})
	return ctx
}

// newServer starts a scripted server and an official client pointed at it
// (no retries: a scripted failure must surface at once).
func newServer(t *testing.T, replies ...wire.Reply) (*wire.Server, *oai.Client) {
	t.Helper()
	srv := wire.New(replies...)
	t.Cleanup(srv.Close)
	c := oai.NewClient(option.WithBaseURL(srv.URL()), option.WithAPIKey("test-key"),
		option.WithHTTPClient(srv.Client()), option.WithMaxRetries(0))
	return srv, &c
}

// newRegistry returns a registry closed at cleanup.
func newRegistry(t *testing.T) *runtime.Registry {
	t.Helper()
	reg, err := runtime.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := reg.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return reg
}

func register(t *testing.T, s *runtime.Scope, d runtime.Definition, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Register(d); err != nil {
		t.Fatal(err)
	}
}

// echoTool is a parallel tool that answers "echo:<text>".
func echoTool(t *testing.T, s *runtime.Scope) {
	d, err := runtime.NewTool("echo", "Echo the text", func(ctx context.Context, in struct {
		Text string `json:"text"`
	}, rc *runtime.RunContext) (string, error) {
		return "echo:" + in.Text, nil
	}, runtime.WithParallel())
	register(t, s, d, err)
}

// sent is the part of a recorded request body the tests look at, decoded
// as plain JSON (what the SDK put on the wire).
type sent struct {
	Model             string          `json:"model"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls"`
	Tools             []sentTool      `json:"tools"`
	Messages          []sentMessage   `json:"messages"`
	Input             []sentInputItem `json:"input"`
	Raw               map[string]json.RawMessage
}

type sentTool struct {
	Type     string          `json:"type"`
	Name     string          `json:"name"` // Responses
	Strict   *bool           `json:"strict"`
	Params   json.RawMessage `json:"parameters"`
	Function struct {
		Name   string          `json:"name"`
		Strict *bool           `json:"strict"`
		Params json.RawMessage `json:"parameters"`
	} `json:"function"`
}

type sentMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

type sentInputItem struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Output    json.RawMessage `json:"output"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
}

func decodeSent(t *testing.T, r wire.Request) sent {
	t.Helper()
	var s sent
	if err := json.Unmarshal(r.Body, &s); err != nil {
		t.Fatalf("request body: %v\n%s", err, r.Body)
	}
	if err := json.Unmarshal(r.Body, &s.Raw); err != nil {
		t.Fatal(err)
	}
	return s
}

// jsonEqual compares two JSON texts as values (key order aside).
func jsonEqual(a, b []byte) bool {
	var va, vb any
	return json.Unmarshal(a, &va) == nil && json.Unmarshal(b, &vb) == nil && reflect.DeepEqual(va, vb)
}

// text is a JSON string's value ("" for anything else).
func text(raw json.RawMessage) string {
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}
