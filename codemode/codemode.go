package codemode

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"go.starlark.net/starlark"

	"github.com/toolscope/toolscope/runtime"
)

// Limits bound one program run. A zero field takes its default. Each limit
// hit ends the run as a failure coded CODE_LIMIT whose message names the
// limit and its value.
type Limits struct {
	// Steps bounds the interpreter's execution steps (default 1,000,000).
	Steps uint64
	// Calls bounds the tool calls one program makes, each entry of a
	// parallel list counting as one (default 100).
	Calls int
	// Parallel is the default bound of a parallel list's overlapping
	// dispatches (default 10); parallel(..., limit=n) may lower or raise it.
	Parallel int
	// Time bounds the run's wall time (default 60 s); the call's ctx bounds
	// it too. Either ending stops the thread and cancels its inner calls.
	Time time.Duration
	// Output bounds the bytes of printed output and, separately, of the
	// program's value as JSON (default 64 KiB each).
	Output int
	// Program bounds the program text in bytes (default 64 KiB).
	Program int
	// Size bounds a value built by + or * (elements of a list or tuple,
	// bytes of a string or an int) and the length of a range (default
	// 1,048,576): the interpreter bounds steps, not memory (see guard.go).
	Size int
}

// The defaults of Limits.
const (
	DefaultSteps    = 1_000_000
	DefaultCalls    = 100
	DefaultParallel = 10
	DefaultTime     = 60 * time.Second
	DefaultOutput   = 64 << 10
	DefaultProgram  = 64 << 10
	DefaultSize     = 1 << 20
)

func (l Limits) withDefaults() Limits {
	if l.Steps == 0 {
		l.Steps = DefaultSteps
	}
	if l.Calls <= 0 {
		l.Calls = DefaultCalls
	}
	if l.Parallel <= 0 {
		l.Parallel = DefaultParallel
	}
	if l.Time <= 0 {
		l.Time = DefaultTime
	}
	if l.Output <= 0 {
		l.Output = DefaultOutput
	}
	if l.Program <= 0 {
		l.Program = DefaultProgram
	}
	if l.Size <= 0 {
		l.Size = DefaultSize
	}
	return l
}

// Config configures run_code.
type Config struct {
	// Limits bound each run.
	Limits Limits
}

// The codes of run_code's own failures (a tool's failure inside a program
// keeps its own code in the message).
const (
	// CodeLimit: the program hit one of its Limits.
	CodeLimit runtime.Code = "CODE_LIMIT"
	// CodeError: the program did not parse, or failed while running
	// (including an uncaught tool failure).
	CodeError runtime.Code = "CODE_ERROR"
	// CodeArgs: run_code's own arguments are not {"code": "<program>"}.
	CodeArgs runtime.Code = "INVALID_ARGS"
)

// The error names of run_code's own failures.
const (
	NameLimit = "CodeLimitError"
	NameError = "CodeError"
)

// Option returns the registry option installing run_code with cfg:
// runtime.New(codemode.Option(codemode.Config{})). A scope then presents
// it with SetPresentation(runtime.PresentationCode) or
// (runtime.PresentationBoth).
func Option(cfg Config) runtime.Option { return runtime.WithCodeMode(Tool(cfg)) }

// Tool returns WithCodeMode's factory for run_code with cfg.
func Tool(cfg Config) func(*runtime.Registry) (runtime.RunCodeTool, error) {
	lim := cfg.Limits.withDefaults()
	return func(reg *runtime.Registry) (runtime.RunCodeTool, error) {
		if reg == nil {
			return runtime.RunCodeTool{}, fmt.Errorf("codemode: nil registry")
		}
		e := &engine{reg: reg, lim: lim}
		return runtime.RunCodeTool{
			Definition: runtime.Definition{
				Name:        runtime.RunCodeName,
				Description: e.describe("", nil),
				Parameters:  json.RawMessage(paramsSchema),
				Output: &runtime.Output{
					Schema: json.RawMessage(outputSchema),
					Render: render,
				},
				Execute: e.execute,
			},
			Describe: e.describe,
		}, nil
	}
}

const paramsSchema = `{"type":"object","properties":{"code":{"type":"string","description":"the Starlark program"}},"required":["code"],"additionalProperties":false}`

// outputSchema: the program's value (any JSON) and its printed output.
const outputSchema = `{"type":"object","properties":{"value":{},"output":{"type":"string"},"calls":{"type":"integer"}},"required":["value","output","calls"]}`

// render shows the printed output, then the value as JSON (unless null).
func render(_ context.Context, _, value json.RawMessage) ([]runtime.Block, error) {
	var out struct {
		Value  json.RawMessage `json:"value"`
		Output string          `json:"output"`
	}
	if o, v, ok := splitOutput(value); ok {
		out.Output, out.Value = o, v
	} else if err := json.Unmarshal(value, &out); err != nil {
		return nil, err
	}
	var sb strings.Builder
	sb.WriteString(out.Output)
	if v := string(out.Value); v != "" && v != "null" {
		if sb.Len() > 0 && !strings.HasSuffix(sb.String(), "\n") {
			sb.WriteByte('\n')
		}
		sb.WriteString(v)
	}
	if sb.Len() == 0 {
		sb.WriteString("(no output)")
	}
	return []runtime.Block{runtime.Text(sb.String())}, nil
}

// splitOutput is render's fast path: it reads run_code's value in the
// form run.output writes, {"calls":N,"output":"...","value":V}, and
// reports false for any other form (render then decodes it in full).
func splitOutput(b []byte) (output string, value []byte, ok bool) {
	rest, ok := bytes.CutPrefix(b, []byte(`{"calls":`))
	if !ok {
		return "", nil, false
	}
	i := 0
	for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
		i++
	}
	if rest, ok = bytes.CutPrefix(rest[i:], []byte(`,"output":`)); !ok || len(rest) == 0 || rest[0] != '"' {
		return "", nil, false
	}
	esc := false
	for i = 1; i < len(rest) && rest[i] != '"'; i++ {
		if rest[i] == '\\' {
			esc = true
			i++ // the escaped byte
		}
	}
	if i >= len(rest) {
		return "", nil, false
	}
	quoted := rest[:i+1]
	if rest, ok = bytes.CutPrefix(rest[i+1:], []byte(`,"value":`)); !ok || len(rest) < 2 || rest[len(rest)-1] != '}' || !json.Valid(rest[:len(rest)-1]) {
		return "", nil, false
	}
	if !esc {
		output = string(quoted[1 : len(quoted)-1])
	} else if json.Unmarshal(quoted, &output) != nil {
		return "", nil, false
	}
	return output, rest[:len(rest)-1], true
}

// engine is run_code installed in one registry.
type engine struct {
	reg   *runtime.Registry
	lim   Limits
	cache programCache

	fnMu sync.Mutex
	fns  map[string]*starlark.Builtin // the tool functions, by name (toolFunc)
}

// execute is run_code's body: one fresh interpreter per run.
func (e *engine) execute(ctx context.Context, args json.RawMessage, rc *runtime.RunContext) (any, error) {
	code, ok := codeArg(args)
	if !ok {
		return nil, runtime.NewError("ToolArgsError", CodeArgs, `run_code takes {"code": "<program>"}`)
	}
	r := newRun(e, ctx, rc.Execution())
	return r.exec(code)
}

// codeArg reads run_code's arguments, {"code": "<program>"}: the compact
// form directly (only the string is decoded), any other in full.
func codeArg(args json.RawMessage) (string, bool) {
	if rest, ok := bytes.CutPrefix(args, []byte(`{"code":`)); ok && len(rest) >= 3 && rest[0] == '"' && rest[len(rest)-1] == '}' && rest[len(rest)-2] == '"' {
		quoted := rest[:len(rest)-1]
		esc := false
		i := 1
		for ; i < len(quoted)-1 && quoted[i] != '"'; i++ {
			if quoted[i] == '\\' {
				esc = true
				i++
			}
		}
		if i == len(quoted)-1 { // the string ends where the object does
			if !esc && utf8.Valid(quoted[1:i]) {
				return string(quoted[1:i]), true
			}
			var code string
			if json.Unmarshal(quoted, &code) == nil {
				return code, true
			}
		}
	}
	var in struct {
		Code *string `json:"code"`
	}
	if err := json.Unmarshal(args, &in); err != nil || in.Code == nil {
		return "", false
	}
	return *in.Code, true
}
