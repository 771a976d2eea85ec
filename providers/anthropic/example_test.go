package anthropic_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/toolscope/toolscope/agent"
	"github.com/toolscope/toolscope/providers/anthropic"
	"github.com/toolscope/toolscope/runtime"
)

// ExampleTools: a scope's schemas as Anthropic tools.
func ExampleTools() {
	tools, skipped := anthropic.Tools([]runtime.ToolSchema{{
		Name:        "read",
		Description: "Read a file",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`),
	}, {
		Name:       "fs.stat", // an MCP name: sent mapped
		Parameters: json.RawMessage(`{"type":"object"}`),
	}, {
		Name:       "scalar", // not an object schema: left out
		Parameters: json.RawMessage(`{"type":"string"}`),
	}})
	b, _ := json.Marshal(tools)
	fmt.Println(string(b))
	fmt.Printf("%+v\n", skipped)
	// Output:
	// [{"input_schema":{"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"},"name":"read","description":"Read a file"},{"input_schema":{"properties":{},"type":"object"},"name":"fs_stat_145f9ce76c"}]
	// [{Name:scalar Reason:input_schema type must be "object", got "string"}]
}

// ExampleToolResults: one user message answering every call in order, a
// failure with is_error and its code, then the turn's contexts.
func ExampleToolResults() {
	calls := []runtime.TurnCall{{ID: "toolu_1", Name: "read"}, {ID: "toolu_2", Name: "read"}}
	res := &runtime.TurnResult{
		Results: []*runtime.Result{
			runtime.Success("hi").WithContent(runtime.Text("hi")),
			runtime.Failure(runtime.NewError(runtime.NameAbort, runtime.CodeAbortedBeforeDispatch, "tool call aborted before dispatch")),
		},
		Contexts: []runtime.ContextMessage{{Role: "user", Text: "a.txt is new"}},
	}
	msg, err := anthropic.ToolResults(calls, res)
	if err != nil {
		log.Fatal(err)
	}
	b, _ := json.MarshalIndent(msg, "", "  ")
	fmt.Println(string(b))
	// Output:
	// {
	//   "content": [
	//     {
	//       "tool_use_id": "toolu_1",
	//       "content": [
	//         {
	//           "text": "hi",
	//           "type": "text"
	//         }
	//       ],
	//       "type": "tool_result"
	//     },
	//     {
	//       "tool_use_id": "toolu_2",
	//       "is_error": true,
	//       "content": [
	//         {
	//           "text": "Error: tool call aborted before dispatch",
	//           "type": "text"
	//         },
	//         {
	//           "text": "[code: ABORTED_BEFORE_DISPATCH]",
	//           "type": "text"
	//         }
	//       ],
	//       "type": "tool_result"
	//     },
	//     {
	//       "text": "a.txt is new",
	//       "type": "text"
	//     }
	//   ],
	//   "role": "user"
	// }
}

// ExampleModel runs agent.Run with the official client against a scripted
// Messages API on loopback: the model reads two files in parallel, then
// answers.
func ExampleModel() {
	replies := []string{
		reply("msg_1", "tool_use",
			toolUse("toolu_1", "read", `{"path":"a.txt"}`),
			toolUse("toolu_2", "read", `{"path":"b.txt"}`)),
		reply("msg_2", "end_turn", text("a.txt says A, b.txt says B.")),
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

	client := sdk.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("no-key-needed"), option.WithMaxRetries(0))
	model, err := anthropic.New(client, sdk.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 1024})
	if err != nil {
		log.Fatal(err)
	}
	out, err := agent.Run(context.Background(), reg.Global(), model,
		[]sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("What do a.txt and b.txt say?"))})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(out.Stop, "after", out.Steps, "steps")
	for _, m := range out.Transcript {
		b, _ := json.Marshal(m)
		fmt.Println(string(b))
	}
	// Output:
	// answered after 2 steps
	// {"content":[{"text":"What do a.txt and b.txt say?","type":"text"}],"role":"user"}
	// {"content":[{"id":"toolu_1","input":{"path":"a.txt"},"name":"read","type":"tool_use"},{"id":"toolu_2","input":{"path":"b.txt"},"name":"read","type":"tool_use"}],"role":"assistant"}
	// {"content":[{"tool_use_id":"toolu_1","content":[{"text":"A","type":"text"}],"type":"tool_result"},{"tool_use_id":"toolu_2","content":[{"text":"B","type":"text"}],"type":"tool_result"}],"role":"user"}
	// {"content":[{"text":"a.txt says A, b.txt says B.","type":"text"}],"role":"assistant"}
}
