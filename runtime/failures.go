package runtime

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// The result constructors: failures worded per the contract's failure
// results (docs/contract.md#failures), denials, aborts, blocked results.

func failureFromMessage(msg string, c Coded) *Result {
	res := &Result{isError: true, errMsg: msg, content: []Block{Text("Error: " + msg)}}
	if c != nil {
		res.errName, res.errCode, res.hasInfo = safeName(c), safeCode(c), true
	}
	return res
}

func codedFailure(name string, code Code, msg string) *Result {
	return failureFromMessage(msg, NewError(name, code, msg))
}

// failureFrom derives a failure from err: its message per the contract's
// failure results, its name and code if it is coded.
func failureFrom(err error) *Result {
	var c Coded
	if !errors.As(err, &c) {
		c = nil
	}
	return failureFromMessage(messageOf(err), c)
}

func safeName(c Coded) (s string) {
	defer func() {
		if recover() != nil {
			s = ""
		}
	}()
	return c.Name()
}

func safeCode(c Coded) (s Code) {
	defer func() {
		if recover() != nil {
			s = ""
		}
	}()
	return Code(c.Code())
}

// argsFailure is R48's failure: the argument text was over bound bytes long
// (n > 0: its length), or the arguments are not lossless JSON (why, when
// not empty, says how: argsRefusal).
func argsFailure(n, bound int, why string) *Result {
	if n > 0 {
		return argsTooLarge(n, bound)
	}
	const msg = "tool execution arguments must be losslessly JSON-serializable"
	if why != "" {
		return failureFromMessage(msg+": "+why, nil)
	}
	return failureFromMessage(msg, nil)
}

// argsRefusal says why arguments v failed the snapshot, for R48's message:
// a Go type outside R47's set is named, JSON text that does not parse
// says where. A value of an accepted type that holds something refused
// (NaN, -0, a cycle, a typed map inside a map[string]any) gets "".
func argsRefusal(v any) string {
	switch a := v.(type) {
	case json.RawMessage:
		return syntaxNote(a)
	case nil, bool, string, float64, json.Number, []any, map[string]any,
		int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, uintptr:
		return ""
	}
	return fmt.Sprintf("arguments of type %T are not lossless JSON (use map[string]any, []any or json.RawMessage)", v)
}

// syntaxNote says where JSON text breaks, so whoever wrote it (a model, a
// caller) can fix it; "" when encoding/json parses it.
func syntaxNote(text []byte) string {
	var v any
	var se *json.SyntaxError
	if err := json.Unmarshal(text, &v); !errors.As(err, &se) {
		return ""
	}
	if se.Error() == "unexpected end of JSON input" {
		return fmt.Sprintf("the argument text is not valid JSON: it ends at byte %d before the value is complete (truncated?)", len(text))
	}
	// Offset counts the bytes read, the bad one included.
	return fmt.Sprintf("the argument text is not valid JSON: %s at byte offset %d", se.Error(), se.Offset-1)
}

// denial is R57's result: an uncoded failure whose outcome is
// OutcomeDenied.
func denial(reason string) *Result {
	r := failureFromMessage(reason, nil)
	r.denied = true
	return r
}

// deny returns the denial result of s (R57).
func (s *execState) deny(reason string) *Result { return denial(reason) }

func abortedBeforeDispatch() *Result {
	return codedFailure(NameAbort, CodeAbortedBeforeDispatch, "tool call aborted before dispatch")
}

func aborted() *Result { return codedFailure(NameAbort, CodeAborted, "tool call aborted") }

func unknownTool(name string) *Result {
	return codedFailure(NameToolNotFound, CodeUnknownTool, fmt.Sprintf("unknown tool %q", name))
}

func invalidOutput(name string, violations ...string) *Result {
	return codedFailure(NameToolOutput, CodeInvalidToolOutput,
		fmt.Sprintf("tool %q returned invalid output: %s", name, strings.Join(violations, "; ")))
}

// blocked is R69's Block: the feedback is the content, the message is
// derived from it.
func blocked(feedback []Block) *Result {
	parts := make([]string, 0, len(feedback))
	for _, b := range feedback {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		} else {
			parts = append(parts, "["+b.Type+" content]")
		}
	}
	msg := strings.Join(parts, "\n")
	if msg == "" {
		msg = "tool result blocked by post-execute policy"
	}
	content := cloneBlocks(feedback)
	if content == nil {
		content = []Block{}
	}
	return &Result{isError: true, errMsg: msg, content: content}
}

func blocksSafe(bs []Block) bool {
	for _, b := range bs {
		if b.Data != nil && !validJSON(b.Data) {
			return false
		}
	}
	return true
}

func cloneMessages(m []ContextMessage) []ContextMessage {
	if len(m) == 0 {
		return nil
	}
	return append([]ContextMessage(nil), m...)
}
