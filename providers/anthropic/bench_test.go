package anthropic_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/toolscope/toolscope/providers/anthropic"
	"github.com/toolscope/toolscope/runtime"
)

// benchTurn is one step of 16 calls: the scope's 16 schemas, the model's
// message with 16 tool_use blocks (decoded by the SDK), and the turn's 16
// results.
type benchTurn struct {
	schemas []runtime.ToolSchema
	msg     *sdk.Message
	res     *runtime.TurnResult
	prompt  sdk.MessageParam
}

const benchCalls = 16

func newBenchTurn(b *testing.B) *benchTurn {
	bt := &benchTurn{res: &runtime.TurnResult{}, prompt: userText("tidy the notes in the project folder")}
	var uses []string
	for i := range benchCalls {
		bt.schemas = append(bt.schemas, runtime.ToolSchema{
			Name:        fmt.Sprintf("tool_%02d", i),
			Description: "Reads a slice of a file in the project and returns its lines.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"file path"},` +
				`"offset":{"type":"integer","minimum":0},"limit":{"type":"integer","minimum":1,"maximum":2000}},` +
				`"required":["path"],"additionalProperties":false}`),
		})
		uses = append(uses, toolUse(fmt.Sprintf("toolu_01A%02dXYZ", i), fmt.Sprintf("tool_%02d", i),
			fmt.Sprintf(`{"path":"notes/%02d.md","offset":0,"limit":200}`, i)))
		bt.res.Results = append(bt.res.Results, runtime.Success("ok").WithContent(
			runtime.Text(strings.Repeat(fmt.Sprintf("line %d of the note, some words. ", i), 8))))
	}
	bt.res.Contexts = []runtime.ContextMessage{{Role: "user", Text: "note 3 changed since the last read"}}
	bt.msg = new(sdk.Message)
	if err := json.Unmarshal([]byte(reply("msg_b", "tool_use", uses...)), bt.msg); err != nil {
		b.Fatal(err)
	}
	return bt
}

// adapter is the adapter's own work for the step: schemas → tools, the
// message's tool_use blocks → TurnCalls, results → the tool result message.
func (bt *benchTurn) adapter(b *testing.B) ([]sdk.ToolUnionParam, sdk.MessageParam) {
	tools, skipped := anthropic.Tools(bt.schemas)
	if len(skipped) != 0 {
		b.Fatal(skipped)
	}
	calls := anthropic.Calls(bt.msg)
	m, err := anthropic.ToolResults(calls, bt.res)
	if err != nil {
		b.Fatal(err)
	}
	return tools, m
}

// request is the next request of the step, as the SDK sends it.
func (bt *benchTurn) request(tools []sdk.ToolUnionParam, results sdk.MessageParam) sdk.MessageNewParams {
	return sdk.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 1024, Tools: tools,
		ToolChoice: sdk.ToolChoiceUnionParam{OfAuto: &sdk.ToolChoiceAutoParam{DisableParallelToolUse: sdk.Bool(false)}},
		Messages:   []sdk.MessageParam{bt.prompt, bt.msg.ToParam(), results}}
}

// BenchmarkTurn16 measures the adapter's cost per 16-call turn against the
// SDK's own JSON encoding of the request that carries it, interleaved in
// one goroutine (the order alternates each iteration). adapter/sdk is the
// ratio of the two.
func BenchmarkTurn16(b *testing.B) {
	bt := newBenchTurn(b)
	req := bt.request(bt.adapter(b))
	var sink int
	encode := func() {
		body, err := json.Marshal(req)
		if err != nil {
			b.Fatal(err)
		}
		sink += len(body)
	}
	adapt := func() {
		_, m := bt.adapter(b)
		sink += len(m.OfUser.Content)
	}
	var ta, ts time.Duration
	n := 0
	for b.Loop() {
		if n%2 == 0 {
			t0 := time.Now()
			adapt()
			t1 := time.Now()
			encode()
			ta, ts = ta+t1.Sub(t0), ts+time.Since(t1)
		} else {
			t0 := time.Now()
			encode()
			t1 := time.Now()
			adapt()
			ts, ta = ts+t1.Sub(t0), ta+time.Since(t1)
		}
		n++
	}
	b.ReportMetric(float64(ta.Nanoseconds())/float64(n), "adapter-ns/turn")
	b.ReportMetric(float64(ts.Nanoseconds())/float64(n), "sdk-encode-ns/turn")
	b.ReportMetric(float64(ta)/float64(ts), "adapter/sdk")
	if sink == 0 {
		b.Fatal("nothing measured")
	}
}

// BenchmarkAdapter16 is the adapter's part alone, for its allocations.
func BenchmarkAdapter16(b *testing.B) {
	bt := newBenchTurn(b)
	b.ReportAllocs()
	for b.Loop() {
		bt.adapter(b)
	}
}

// BenchmarkSDKEncode16 is the SDK's encoding alone, for its allocations.
func BenchmarkSDKEncode16(b *testing.B) {
	bt := newBenchTurn(b)
	req := bt.request(bt.adapter(b))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(req); err != nil {
			b.Fatal(err)
		}
	}
}
