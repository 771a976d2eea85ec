package openai_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/toolscope/toolscope/providers/openai"
	"github.com/toolscope/toolscope/runtime"
)

type codedErr struct{ name, code, msg string }

func (e codedErr) Error() string { return e.msg }
func (e codedErr) Name() string  { return e.name }
func (e codedErr) Code() string  { return e.code }

var roles = []string{"system", "developer", "user", "assistant", "", "reminder"}

func randText(r *rand.Rand) string {
	const alphabet = "ab c\"\\\n\té€😀<>{}"
	runes := []rune(alphabet)
	n := r.IntN(12)
	var sb strings.Builder
	for range n {
		sb.WriteRune(runes[r.IntN(len(runes))])
	}
	return sb.String()
}

func randBlocks(r *rand.Rand) []runtime.Block {
	n := r.IntN(4)
	blocks := make([]runtime.Block, n)
	for i := range blocks {
		switch r.IntN(5) {
		case 0, 1:
			blocks[i] = runtime.Text(randText(r))
		case 2:
			blocks[i] = runtime.Block{Type: "image", Data: json.RawMessage(`{"data":"AAAA","mimeType":"image/jpeg"}`)}
		case 3:
			blocks[i] = runtime.Block{Type: "image", Data: json.RawMessage(`{"url":"https://example.com/` + fmt.Sprint(r.IntN(9)) + `.png"}`)}
		default:
			blocks[i] = runtime.Block{Type: "json", Data: json.RawMessage(`{"k":[1,2]}`)}
		}
	}
	return blocks
}

func randResult(r *rand.Rand) *runtime.Result {
	var res *runtime.Result
	switch r.IntN(4) {
	case 0:
		res = runtime.Success(randText(r)).WithContent(randBlocks(r)...)
	case 1:
		res = runtime.Failure(codedErr{"AbortError", "ABORTED_BEFORE_DISPATCH", "tool call aborted before dispatch"})
	case 2:
		res = runtime.Failure(errors.New(randText(r)))
	default: // a failure whose content a hook replaced
		res = runtime.Failure(codedErr{"ToolArgsError", "INVALID_ARGS", "invalid arguments: x"}).WithContent(randBlocks(r)...)
	}
	for range r.IntN(2) {
		res = res.WithContexts(runtime.ContextMessage{Role: roles[r.IntN(len(roles))], Text: randText(r)})
	}
	return res
}

// randTurn is a random turn: calls with distinct ids and one result each,
// and the contexts of the results in order (as ExecuteTurn collects them).
func randTurn(r *rand.Rand) ([]runtime.TurnCall, *runtime.TurnResult) {
	n := r.IntN(10)
	calls := make([]runtime.TurnCall, n)
	res := &runtime.TurnResult{Results: make([]*runtime.Result, n)}
	for i := range calls {
		calls[i] = runtime.TurnCall{ID: fmt.Sprintf("call_%d_%s", i, randText(r)), Name: "t"}
		res.Results[i] = randResult(r)
		res.Contexts = append(res.Contexts, res.Results[i].AdditionalContexts()...)
	}
	return calls, res
}

func checkErrorMarks(t *testing.T, r *runtime.Result, first, last string) {
	t.Helper()
	if !r.IsError() {
		return
	}
	if !strings.HasPrefix(first, "Error") {
		t.Errorf("error result starts %q", first)
	}
	if c := r.Code(); c != "" && !strings.HasSuffix(last, "[code: "+string(c)+"]") {
		t.Errorf("error result ends %q, want code %s", last, c)
	}
}

func wantRole(m runtime.ContextMessage) (string, string) {
	switch m.Role {
	case "system", "developer", "user", "assistant":
		return m.Role, m.Text
	case "":
		return "user", m.Text
	}
	return "user", "[" + m.Role + "] " + m.Text
}

// TestRoundTrip_OneToolResultPerCall: for random turns, what the adapters
// produce decodes, through the SDK's own param types, to one tool result
// per call in model order with the call's id and the error marks, then the
// contexts.
func TestRoundTrip_OneToolResultPerCall(t *testing.T) {
	for seed := range uint64(400) {
		r := rand.New(rand.NewPCG(seed, 15))
		calls, res := randTurn(r)

		chat, err := openai.ChatToolMessages(calls, res)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if len(chat) != len(calls)+len(res.Contexts) {
			t.Fatalf("seed %d: %d chat messages for %d calls + %d contexts", seed, len(chat), len(calls), len(res.Contexts))
		}
		for i, m := range chat {
			b, err := json.Marshal(m)
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			var back oai.ChatCompletionMessageParamUnion
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatalf("seed %d: %s: %v", seed, b, err)
			}
			if i < len(calls) {
				tm := back.OfTool
				if tm == nil || tm.ToolCallID != calls[i].ID {
					t.Fatalf("seed %d: message %d is not the tool message of %q: %s", seed, i, calls[i].ID, b)
				}
				txt := tm.Content.OfString.Value
				if txt != openai.ResultText(res.Results[i]) || txt == "" {
					t.Fatalf("seed %d: text %q", seed, txt)
				}
				checkErrorMarks(t, res.Results[i], txt, txt)
				continue
			}
			role, want := wantRole(res.Contexts[i-len(calls)])
			if got := *back.GetRole(); got != role {
				t.Fatalf("seed %d: context role %q, want %q", seed, got, role)
			}
			if got := contentString(t, b); got != want {
				t.Fatalf("seed %d: context %q, want %q", seed, got, want)
			}
		}

		items, err := openai.ResponseToolOutputs(calls, res)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if len(items) != len(calls)+len(res.Contexts) {
			t.Fatalf("seed %d: %d items", seed, len(items))
		}
		for i, it := range items {
			b, err := json.Marshal(it)
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			var back responses.ResponseInputItemUnionParam
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatalf("seed %d: %s: %v", seed, b, err)
			}
			if i >= len(calls) {
				role, want := wantRole(res.Contexts[i-len(calls)])
				if back.OfMessage == nil || string(back.OfMessage.Role) != role || back.OfMessage.Content.OfString.Value != want {
					t.Fatalf("seed %d: context item %s", seed, b)
				}
				continue
			}
			out := back.OfFunctionCallOutput
			if out == nil || out.CallID.Value != calls[i].ID {
				t.Fatalf("seed %d: item %d is not the output of %q: %s", seed, i, calls[i].ID, b)
			}
			if s := out.Output.OfString; s.Valid() {
				checkErrorMarks(t, res.Results[i], s.Value, s.Value)
				continue
			}
			parts := out.Output.OfResponseFunctionCallOutputItemArray
			if len(parts) == 0 {
				t.Fatalf("seed %d: empty output %s", seed, b)
			}
			var first, last string
			if p := parts[0].OfInputText; p != nil {
				first = p.Text
			}
			if p := parts[len(parts)-1].OfInputText; p != nil {
				last = p.Text
			}
			checkErrorMarks(t, res.Results[i], first, last)
		}
	}
}

func contentString(t *testing.T, b []byte) string {
	t.Helper()
	var m struct {
		Content string `json:"content"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return m.Content
}
