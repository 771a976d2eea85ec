package openai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/toolscope/toolscope/agent"
	"github.com/toolscope/toolscope/providers/openai"
	"github.com/toolscope/toolscope/runtime"
)

// benchTurn is one 16-call turn: the schemas the scope lists, the
// decoded model output, and the turn's result.
type benchTurn struct {
	schemas []runtime.ToolSchema
	chatMsg oai.ChatCompletionMessage
	output  []responses.ResponseOutputItemUnion
	calls   []runtime.TurnCall
	res     *runtime.TurnResult
}

const benchCalls = 16

// newBenchTurn registers `registered` tools; the agent scope is restricted
// to the first 16, so Schemas lists 16 whatever the registry holds.
func newBenchTurn(b *testing.B, registered int) *benchTurn {
	reg, err := runtime.New()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = reg.Close(context.Background()) })
	var allow []string
	for i := range registered {
		name := fmt.Sprintf("tool_%04d", i)
		d, err := runtime.NewTool(name, "Read a range of a file", func(ctx context.Context, in struct {
			Path string `json:"path"`
			From int    `json:"from"`
			To   int    `json:"to"`
		}, rc *runtime.RunContext) (string, error) {
			return fmt.Sprintf("%s lines %d-%d: the quick brown fox jumps over the lazy dog", in.Path, in.From, in.To), nil
		}, runtime.WithParallel())
		if err != nil {
			b.Fatal(err)
		}
		if _, err := reg.Global().Register(d); err != nil {
			b.Fatal(err)
		}
		if i < benchCalls {
			allow = append(allow, name)
		}
	}
	scope, err := reg.NewScope("agent")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := scope.Restrict(runtime.Restriction{Allow: allow}); err != nil {
		b.Fatal(err)
	}
	t := &benchTurn{}
	if t.schemas, err = scope.Schemas(); err != nil || len(t.schemas) != benchCalls {
		b.Fatalf("schemas: %d %v", len(t.schemas), err)
	}
	var chatCalls, items []any
	for i := range benchCalls {
		id, name, args := fmt.Sprintf("call_%02d", i), fmt.Sprintf("tool_%04d", i), fmt.Sprintf(`{"path":"src/file%d.go","from":%d,"to":%d}`, i, i*10, i*10+9)
		chatCalls = append(chatCalls, map[string]any{"id": id, "type": "function", "function": map[string]any{"name": name, "arguments": args}})
		items = append(items, map[string]any{"type": "function_call", "id": "fc_" + id, "call_id": id, "name": name, "arguments": args, "status": "completed"})
	}
	msgJSON, _ := json.Marshal(map[string]any{"role": "assistant", "content": nil, "tool_calls": chatCalls})
	if err := json.Unmarshal(msgJSON, &t.chatMsg); err != nil {
		b.Fatal(err)
	}
	outJSON, _ := json.Marshal(items)
	if err := json.Unmarshal(outJSON, &t.output); err != nil {
		b.Fatal(err)
	}
	t.calls = openai.ChatCalls(t.chatMsg)
	if t.res, err = scope.ExecuteTurn(context.Background(), t.calls); err != nil {
		b.Fatal(err)
	}
	return t
}

// BenchmarkAdapterTurn16 measures the adapter's own work for one turn of
// 16 calls (schemas → tools, model output → TurnCalls, results → tool
// messages) against the SDK's own JSON encoding of the request that
// carries them, interleaved in one goroutine. It reports adapter-ns/turn,
// sdk-encode-ns/turn and their ratio; registered=1024 shows the cost does
// not follow the registry's size, only what Schemas lists.
func BenchmarkAdapterTurn16(b *testing.B) {
	for _, api := range []string{"chat", "responses"} {
		for _, registered := range []int{16, 1024} {
			b.Run(fmt.Sprintf("api=%s/registered=%d", api, registered), func(b *testing.B) {
				t := newBenchTurn(b, registered)
				adapter, encode := chatSteps(b, t)
				if api == "responses" {
					adapter, encode = responsesSteps(b, t)
				}
				var ta, te time.Duration
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; b.Loop(); i++ {
					if i%2 == 0 {
						t0 := time.Now()
						adapter()
						t1 := time.Now()
						encode()
						ta, te = ta+t1.Sub(t0), te+time.Since(t1)
					} else {
						t0 := time.Now()
						encode()
						t1 := time.Now()
						adapter()
						te, ta = te+t1.Sub(t0), ta+time.Since(t1)
					}
				}
				n := float64(b.N)
				b.ReportMetric(float64(ta.Nanoseconds())/n, "adapter-ns/turn")
				b.ReportMetric(float64(te.Nanoseconds())/n, "sdk-encode-ns/turn")
				b.ReportMetric(float64(ta)/float64(te), "adapter/encode")
			})
		}
	}
}

func chatSteps(b *testing.B, t *benchTurn) (adapter, encode func()) {
	var tools []oai.ChatCompletionToolUnionParam
	var msgs []oai.ChatCompletionMessageParamUnion
	adapter = func() {
		var err error
		var skipped []agent.SkippedTool
		if tools, skipped = openai.ChatTools(t.schemas); len(skipped) != 0 {
			b.Fatal(skipped)
		}
		calls := openai.ChatCalls(t.chatMsg)
		if msgs, err = openai.ChatToolMessages(calls, t.res); err != nil {
			b.Fatal(err)
		}
	}
	adapter()
	asst := t.chatMsg.ToParam()
	encode = func() {
		p := oai.ChatCompletionNewParams{Model: "gpt-test", Tools: tools,
			Messages: append([]oai.ChatCompletionMessageParamUnion{oai.UserMessage("go"), asst}, msgs...)}
		if _, err := json.Marshal(p); err != nil {
			b.Fatal(err)
		}
	}
	return adapter, encode
}

func responsesSteps(b *testing.B, t *benchTurn) (adapter, encode func()) {
	var tools []responses.ToolUnionParam
	var items []responses.ResponseInputItemUnionParam
	adapter = func() {
		var skipped []agent.SkippedTool
		if tools, skipped = openai.ResponseTools(t.schemas); len(skipped) != 0 {
			b.Fatal(skipped)
		}
		calls := openai.ResponseCalls(t.output)
		items = openai.ResponseInputItems(t.output)
		out, err := openai.ResponseToolOutputs(calls, t.res)
		if err != nil {
			b.Fatal(err)
		}
		items = append(items, out...)
	}
	adapter()
	encode = func() {
		p := responses.ResponseNewParams{Model: "gpt-test", Tools: tools,
			Input: responses.ResponseNewParamsInputUnion{OfInputItemList: items}}
		if _, err := json.Marshal(p); err != nil {
			b.Fatal(err)
		}
	}
	return adapter, encode
}
