package gemini_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"

	"github.com/toolscope/toolscope/agent"
	"github.com/toolscope/toolscope/providers/gemini"
	"github.com/toolscope/toolscope/runtime"
	"google.golang.org/genai"
)

// ExampleTools: a scope's schemas as one Gemini tool of function
// declarations.
func ExampleTools() {
	tools, skipped := gemini.Tools([]runtime.ToolSchema{{
		Name:        "read",
		Description: "Read a file",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`),
	}, {
		Name: "9lives", // may not start with a digit: declared mapped
	}, {
		Name:       "scalar", // not an object schema: left out
		Parameters: json.RawMessage(`{"type":"string"}`),
	}})
	b, _ := json.Marshal(tools)
	fmt.Println(string(b))
	fmt.Printf("%+v\n", skipped)
	// Output:
	// [{"functionDeclarations":[{"description":"Read a file","name":"read","parametersJsonSchema":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}},{"name":"_9lives_bc867356de"}]}]
	// [{Name:scalar Reason:its parameter schema's type must be "object", got "string"}]
}

// ExampleToolResults: one user content answering every call in order (a
// failure under "error", with its code), then the contexts in a content of
// their own.
func ExampleToolResults() {
	calls := []runtime.TurnCall{{ID: "call_1_0", Name: "read"}, {ID: "call_1_1", Name: "read"}}
	res := &runtime.TurnResult{
		Results: []*runtime.Result{
			runtime.Success("hi").WithContent(runtime.Text("hi")),
			runtime.Failure(runtime.NewError(runtime.NameAbort, runtime.CodeAbortedBeforeDispatch, "tool call aborted before dispatch")),
		},
		Contexts: []runtime.ContextMessage{{Role: "user", Text: "a.txt is new"}},
	}
	contents, err := gemini.ToolResults(calls, res)
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range contents {
		b, _ := json.Marshal(c)
		fmt.Println(string(b))
	}
	// Output:
	// {"parts":[{"functionResponse":{"id":"call_1_0","name":"read","response":{"output":"hi"}}},{"functionResponse":{"id":"call_1_1","name":"read","response":{"error":{"code":"ABORTED_BEFORE_DISPATCH","message":"tool call aborted before dispatch"}}}}],"role":"user"}
	// {"parts":[{"text":"a.txt is new"}],"role":"user"}
}

// ExampleModel runs agent.Run with the official client (Gemini API
// backend) against a scripted generateContent on loopback: the model reads
// two files in parallel, sending no call ids, then answers.
func ExampleModel() {
	replies := []string{
		reply("STOP", call("read", `{"path":"a.txt"}`), call("read", `{"path":"b.txt"}`)),
		reply("STOP", text("a.txt says A, b.txt says B.")),
	}
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, replies[0])
		replies = replies[1:]
	}))
	defer srv.Close()

	reg, err := runtime.New()
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close(context.Background())
	read, err := runtime.NewTool("read", "Read a file", func(ctx context.Context, in struct {
		Path string `json:"path"`
	}, _ *runtime.RunContext) (string, error) {
		return strings.ToUpper(strings.TrimSuffix(in.Path, ".txt")), nil
	}, runtime.WithParallel())
	if err != nil {
		log.Fatal(err)
	}
	if _, err := reg.Global().Register(read); err != nil {
		log.Fatal(err)
	}

	client, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		APIKey: "no-key-needed", Backend: genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: srv.URL}})
	if err != nil {
		log.Fatal(err)
	}
	model, err := gemini.New(client, "gemini-2.5-flash", nil)
	if err != nil {
		log.Fatal(err)
	}
	out, err := agent.Run(context.Background(), reg.Global(), model,
		[]*genai.Content{genai.NewContentFromText("What do a.txt and b.txt say?", genai.RoleUser)})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(out.Stop, "after", out.Steps, "steps")
	for _, c := range out.Transcript {
		b, _ := json.Marshal(c)
		fmt.Println(string(b))
	}
	// Output:
	// answered after 2 steps
	// {"parts":[{"text":"What do a.txt and b.txt say?"}],"role":"user"}
	// {"parts":[{"functionCall":{"id":"call_1_0","args":{"path":"a.txt"},"name":"read"}},{"functionCall":{"id":"call_1_1","args":{"path":"b.txt"},"name":"read"}}],"role":"model"}
	// {"parts":[{"functionResponse":{"id":"call_1_0","name":"read","response":{"output":"A"}}},{"functionResponse":{"id":"call_1_1","name":"read","response":{"output":"B"}}}],"role":"user"}
	// {"parts":[{"text":"a.txt says A, b.txt says B."}],"role":"model"}
}

// ExampleBoundedHTTPClient: the client the SDK is given bounds each reply
// by the Model's WithMaxReplyBytes; this reply is over the bound.
func ExampleBoundedHTTPClient() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, reply("STOP", text(strings.Repeat("many words ", 1000))))
	}))
	defer srv.Close()

	client, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		APIKey: "no-key-needed", Backend: genai.BackendGeminiAPI,
		HTTPClient:  gemini.BoundedHTTPClient(nil),
		HTTPOptions: genai.HTTPOptions{BaseURL: srv.URL}})
	if err != nil {
		log.Fatal(err)
	}
	model, err := gemini.New(client, "gemini-2.5-flash", nil)
	if err != nil {
		log.Fatal(err)
	}
	_, err = model.WithMaxReplyBytes(4<<10).Generate(context.Background(),
		[]*genai.Content{genai.NewContentFromText("Say a lot.", genai.RoleUser)}, nil, false)
	fmt.Println(errors.Is(err, agent.ErrReplyTooLarge))
	// Output: true
}
