package runtime

import (
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
// (n > 0: its length), or the arguments are not lossless JSON.
func argsFailure(n, bound int) *Result {
	if n > 0 {
		return argsTooLarge(n, bound)
	}
	return failureFromMessage("tool execution arguments must be losslessly JSON-serializable", nil)
}

func denial(reason string) *Result { return failureFromMessage(reason, nil) }

// deny marks s denied (for the outcome of its execution events) and
// returns the denial result (R57).
func (s *execState) deny(reason string) *Result {
	s.denied = true
	return denial(reason)
}

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
