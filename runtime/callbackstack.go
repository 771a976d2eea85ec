package runtime

import (
	goruntime "runtime"
	"strings"
)

// onCallbackStack reports whether the current goroutine runs inside a
// toolscope callback: whether its stack, below the frame of entry (the
// exported method asking, e.g. "(*Registry).Close"), holds a frame of
// toolscope's own code (package runtime or internal, test files
// excepted). User code is only ever below such a frame when toolscope
// called it: a tool body, hook, guard, approver, observer or change
// subscriber, on a caller's goroutine or a worker's. Close uses it when its
// ctx carries no execution (context.Background()) to tell that it would
// wait for the call it is made from. It reads the whole stack
// (microseconds), so it is only for paths that are about to wait anyway.
func onCallbackStack(entry string) bool {
	buf := make([]byte, 16<<10)
	for {
		n := goruntime.Stack(buf, false)
		if n < len(buf) || len(buf) >= 8<<20 {
			buf = buf[:n] // a deeper stack is cut: its top frames decide
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	return callbackFrames(string(buf), "github.com/toolscope/toolscope/runtime."+entry+"(")
}

// toolscopeCode are the package prefixes of toolscope's own frames.
var toolscopeCode = []string{
	"github.com/toolscope/toolscope/runtime.",
	"github.com/toolscope/toolscope/internal/",
}

// callbackFrames reports whether the goroutine stack trace st (as printed by
// runtime.Stack: a header, then a function line and a "\tfile:line" line per
// frame) has a toolscope frame below the first frame whose function line
// starts with entry.
func callbackFrames(st, entry string) bool {
	lines := strings.Split(st, "\n")
	below := false
	for i := 1; i+1 < len(lines); i += 2 {
		fn, file := lines[i], strings.TrimSpace(lines[i+1])
		if !below {
			below = strings.HasPrefix(fn, entry)
			continue
		}
		if isToolscopeFrame(fn, file) {
			return true
		}
	}
	return false
}

func isToolscopeFrame(fn, file string) bool {
	if at := strings.LastIndex(file, " +0x"); at >= 0 {
		file = file[:at]
	}
	if colon := strings.LastIndex(file, ":"); colon >= 0 {
		file = file[:colon]
	}
	if strings.HasSuffix(file, "_test.go") {
		return false
	}
	for _, p := range toolscopeCode {
		if strings.HasPrefix(fn, p) {
			return true
		}
	}
	return false
}
