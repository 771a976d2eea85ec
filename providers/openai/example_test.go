package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/toolscope/toolscope/agent"
	"github.com/toolscope/toolscope/providers/openai"
	"github.com/toolscope/toolscope/providers/openai/internal/wire"
	"github.com/toolscope/toolscope/runtime"
)

// A schema whose properties are all required is closed and sent strict;
// one with an optional property is sent as it is, strict: false.
func ExampleStrictParameters() {
	for _, p := range []string{
		`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`,
		`{"type":"object","properties":{"city":{"type":"string"},"units":{"type":"string"}},"required":["city"]}`,
	} {
		schema, strict, err := openai.StrictParameters(json.RawMessage(p))
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(strict, string(schema))
	}
	// Output:
	// true {"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}
	// false {"type":"object","properties":{"city":{"type":"string"},"units":{"type":"string"}},"required":["city"]}
}

// Every call gets its tool message, in model order, errors with their
// code; the turn's contexts follow.
func ExampleChatToolMessages() {
	calls := []runtime.TurnCall{{ID: "call_1", Name: "read"}, {ID: "call_2", Name: "read"}}
	res := &runtime.TurnResult{
		Results: []*runtime.Result{
			runtime.Success("hello").WithContent(runtime.Text("hello")),
			runtime.Failure(codedErr{"AbortError", "ABORTED_BEFORE_DISPATCH", "tool call aborted before dispatch"}),
		},
		Contexts: []runtime.ContextMessage{{Role: "system", Text: "files changed"}},
	}
	msgs, err := openai.ChatToolMessages(calls, res)
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range msgs {
		b, _ := json.Marshal(m)
		fmt.Println(string(b))
	}
	// Output:
	// {"content":"hello","tool_call_id":"call_1","role":"tool"}
	// {"content":"Error: tool call aborted before dispatch\n[code: ABORTED_BEFORE_DISPATCH]","tool_call_id":"call_2","role":"tool"}
	// {"content":"files changed","role":"system"}
}

// The loop on Chat Completions, against a scripted server on loopback.
func ExampleChatModel() {
	srv := wire.New(
		wire.Chat("tool_calls", "", wire.Call{ID: "call_1", Name: "weather", Arguments: `{"city":"Paris"}`}),
		wire.Chat("stop", "It is sunny in Paris."))
	defer srv.Close()
	client := oai.NewClient(option.WithBaseURL(srv.URL()), option.WithAPIKey("k"), option.WithMaxRetries(0))

	reg, err := runtime.New()
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close(context.Background())
	weather, err := runtime.NewTool("weather", "Weather in a city", func(ctx context.Context, in struct {
		City string `json:"city"`
	}, rc *runtime.RunContext) (string, error) {
		return "sunny in " + in.City, nil
	})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := reg.Global().Register(weather); err != nil {
		log.Fatal(err)
	}

	model := openai.NewChatModel(&client, oai.ChatCompletionNewParams{Model: "gpt-test"})
	out, err := agent.Run(context.Background(), reg.Global(), model,
		[]oai.ChatCompletionMessageParamUnion{oai.UserMessage("Weather in Paris?")})
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range out.Transcript {
		switch {
		case m.OfUser != nil:
			fmt.Println("user:", m.OfUser.Content.OfString.Value)
		case m.OfAssistant != nil && len(m.OfAssistant.ToolCalls) > 0:
			fn := m.OfAssistant.ToolCalls[0].OfFunction
			fmt.Println("assistant calls:", fn.ID, fn.Function.Name, fn.Function.Arguments)
		case m.OfAssistant != nil:
			fmt.Println("assistant:", m.OfAssistant.Content.OfString.Value)
		case m.OfTool != nil:
			fmt.Println("tool", m.OfTool.ToolCallID+":", m.OfTool.Content.OfString.Value)
		}
	}
	fmt.Println(out.Stop, out.LastStopReason)
	// Output:
	// user: Weather in Paris?
	// assistant calls: call_1 weather {"city":"Paris"}
	// tool call_1: sunny in Paris
	// assistant: It is sunny in Paris.
	// answered stop
}

// The loop on the Responses API: output items go back as input items,
// results as function_call_output items.
func ExampleResponsesModel() {
	srv := wire.New(
		wire.Response("completed", "", wire.FunctionCall("fc_1", wire.Call{ID: "call_1", Name: "fail", Arguments: `{}`})),
		wire.Response("completed", "", wire.Message("msg_1", "The tool failed.")))
	defer srv.Close()
	client := oai.NewClient(option.WithBaseURL(srv.URL()), option.WithAPIKey("k"), option.WithMaxRetries(0))

	reg, err := runtime.New()
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close(context.Background())
	fail, err := runtime.NewTool("fail", "Always fails", func(ctx context.Context, _ struct{}, rc *runtime.RunContext) (string, error) {
		return "", errors.New("disk full")
	})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := reg.Global().Register(fail); err != nil {
		log.Fatal(err)
	}
	model := openai.NewResponsesModel(&client, responses.ResponseNewParams{Model: "gpt-test"})
	out, err := agent.Run(context.Background(), reg.Global(), model, []responses.ResponseInputItemUnionParam{
		responses.ResponseInputItemParamOfMessage("Try it.", responses.EasyInputMessageRoleUser)})
	if err != nil {
		log.Fatal(err)
	}
	for _, item := range out.Transcript {
		switch {
		case item.OfFunctionCall != nil:
			fmt.Println("function_call", item.OfFunctionCall.CallID, item.OfFunctionCall.Name)
		case item.OfFunctionCallOutput != nil:
			fmt.Printf("function_call_output %s %q\n", item.OfFunctionCallOutput.CallID.Value, item.OfFunctionCallOutput.Output.OfString.Value)
		}
	}
	fmt.Println(out.Stop, out.LastStopReason, len(out.Transcript), "items")
	// Output:
	// function_call call_1 fail
	// function_call_output call_1 "Error: disk full"
	// answered completed 4 items
}

// With a Text hook the loop streams the model's text as it arrives; the
// outcome (transcript, usage) is the one the loop builds without it.
func ExampleChatModel_GenerateStream() {
	srv := wire.New(wire.ChatStream("stop", []string{"Hello", ", ", "world."}))
	defer srv.Close()
	client := oai.NewClient(option.WithBaseURL(srv.URL()), option.WithAPIKey("test-key"),
		option.WithHTTPClient(srv.Client()), option.WithMaxRetries(0))
	reg, err := runtime.New()
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close(context.Background())

	model := openai.NewChatModel(&client, oai.ChatCompletionNewParams{Model: "gpt-4o"})
	out, err := agent.Run(context.Background(), reg.Global(), model,
		[]oai.ChatCompletionMessageParamUnion{oai.UserMessage("greet")},
		agent.WithHooks(agent.Hooks[oai.ChatCompletionMessageParamUnion]{
			Text: func(_ *agent.Step[oai.ChatCompletionMessageParamUnion], delta string) { fmt.Printf("%q\n", delta) },
		}))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(out.Stop, out.Usage.TotalTokens, out.Usage.CachedInputTokens)
	// Output:
	// "Hello"
	// ", "
	// "world."
	// answered 99 64
}
