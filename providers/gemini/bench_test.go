package gemini_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/toolscope/toolscope/providers/gemini"
	"github.com/toolscope/toolscope/runtime"
	"google.golang.org/genai"
)

// benchTurn is one step of 16 calls: the scope's 16 schemas, the model's
// content with 16 function calls without ids (decoded by the SDK), and the
// turn's 16 results.
type benchTurn struct {
	schemas []runtime.ToolSchema
	content *genai.Content
	res     *runtime.TurnResult
	prompt  *genai.Content
}

const benchCalls = 16

func newBenchTurn(b *testing.B) *benchTurn {
	bt := &benchTurn{res: &runtime.TurnResult{}, prompt: genai.NewContentFromText("tidy the notes in the project folder", genai.RoleUser)}
	var parts []string
	for i := range benchCalls {
		bt.schemas = append(bt.schemas, runtime.ToolSchema{
			Name:        fmt.Sprintf("tool_%02d", i),
			Description: "Reads a slice of a file in the project and returns its lines.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"file path"},` +
				`"offset":{"type":"integer","minimum":0},"limit":{"type":"integer","minimum":1,"maximum":2000}},` +
				`"required":["path"],"additionalProperties":false}`),
		})
		parts = append(parts, call(fmt.Sprintf("tool_%02d", i), fmt.Sprintf(`{"path":"notes/%02d.md","offset":0,"limit":200}`, i)))
		bt.res.Results = append(bt.res.Results, runtime.Success("ok").WithContent(
			runtime.Text(strings.Repeat(fmt.Sprintf("line %d of the note, some words. ", i), 8))))
	}
	bt.res.Contexts = []runtime.ContextMessage{{Role: "user", Text: "note 3 changed since the last read"}}
	var resp genai.GenerateContentResponse
	if err := json.Unmarshal([]byte(reply("STOP", parts...)), &resp); err != nil {
		b.Fatal(err)
	}
	bt.content = resp.Candidates[0].Content
	return bt
}

// adapter is the adapter's own work for the step: schemas → declarations,
// the content's function calls → TurnCalls (with generated ids), results →
// the response contents.
func (bt *benchTurn) adapter(b *testing.B) ([]*genai.Tool, *genai.Content, []*genai.Content) {
	tools, skipped := gemini.Tools(bt.schemas)
	if len(skipped) != 0 {
		b.Fatal(skipped)
	}
	calls, withIDs, err := gemini.Calls(bt.content, 1)
	if err != nil {
		b.Fatal(err)
	}
	out, err := gemini.ToolResults(calls, bt.res)
	if err != nil {
		b.Fatal(err)
	}
	return tools, withIDs, out
}

// sdkEncode is what the SDK's GenerateContent does to build the request
// body, in its exported steps: the parameters deep-marshalled into a map
// (InternalDeepMarshal), then that map to JSON. (The Gemini API converter
// between the two is unexported; it only moves keys.)
func sdkEncode(b *testing.B, contents []*genai.Content, config *genai.GenerateContentConfig) int {
	m := map[string]any{}
	if err := genai.InternalDeepMarshal(map[string]any{"model": testModel, "contents": contents, "config": config}, &m); err != nil {
		b.Fatal(err)
	}
	body, err := json.Marshal(m)
	if err != nil {
		b.Fatal(err)
	}
	return len(body)
}

// BenchmarkTurn16 measures the adapter's cost per 16-call turn against the
// SDK's own JSON encoding of the request that carries it, interleaved in
// one goroutine (the order alternates each iteration). adapter/sdk is the
// ratio of the two.
func BenchmarkTurn16(b *testing.B) {
	bt := newBenchTurn(b)
	tools, withIDs, results := bt.adapter(b)
	contents := append([]*genai.Content{bt.prompt, withIDs}, results...)
	config := &genai.GenerateContentConfig{Tools: tools}
	var sink int
	encode := func() { sink += sdkEncode(b, contents, config) }
	adapt := func() {
		_, _, out := bt.adapter(b)
		sink += len(out)
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
	tools, withIDs, results := bt.adapter(b)
	contents := append([]*genai.Content{bt.prompt, withIDs}, results...)
	config := &genai.GenerateContentConfig{Tools: tools}
	b.ReportAllocs()
	for b.Loop() {
		sdkEncode(b, contents, config)
	}
}
