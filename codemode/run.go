package codemode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	starmath "go.starlark.net/lib/math"
	"go.starlark.net/resolve"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"github.com/toolscope/toolscope/runtime"
)

// fileName is the program's name in positions.
const fileName = "program"

// valueName is the hidden global the program's last expression is
// assigned to.
const valueName = "__value__"

// fileOptions: top-level loops and reassignment (a program is a script),
// while and set; no recursion (a deep recursion would grow the Go stack
// within the step limit).
var fileOptions = &syntax.FileOptions{Set: true, While: true, TopLevelControl: true, GlobalReassign: true}

// run is one program run: a fresh thread, its limits' state, its output.
type run struct {
	e      *engine
	ctx    context.Context // the run's: the call's ctx bounded by Limits.Time
	parent runtime.Execution
	thread *starlark.Thread
	src    string
	out    strings.Builder
	calls  int
	turns  int // parallel lists run so far

	idPrefix []byte     // the inner calls' ids: the run_code call's id and "/"
	args     jsonWriter // a call's arguments: Execute copies them, so one buffer serves every call

	mu  sync.Mutex
	hit *limitError // the first limit hit
}

// limitError is a limit hit: it names the limit and its value.
type limitError struct{ limit, value string }

func (l *limitError) Error() string {
	return fmt.Sprintf("run_code stopped: the %s limit (%s) was reached", l.limit, l.value)
}

func newRun(e *engine, ctx context.Context, parent runtime.Execution) *run {
	return &run{e: e, ctx: ctx, parent: parent}
}

// limit records the first limit hit and stops the thread.
func (r *run) limit(name, value string) *limitError {
	r.mu.Lock()
	if r.hit == nil {
		r.hit = &limitError{limit: name, value: value}
	}
	hit := r.hit
	r.mu.Unlock()
	if r.thread != nil {
		r.thread.Cancel(hit.Error())
	}
	return hit
}

func (r *run) limitHit() *limitError {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.hit
}

// exec runs src and returns run_code's value, or its failure.
func (r *run) exec(src string) (any, error) {
	lim := r.e.lim
	if len(src) > lim.Program {
		return nil, codeLimit(&limitError{"program size", fmt.Sprintf("%d bytes; this program has %d", lim.Program, len(src))})
	}
	r.src = src
	for name := range helperNames {
		if strings.HasPrefix(name, "__") && strings.Contains(src, name) {
			return nil, runtime.NewError(NameError, CodeError, fmt.Sprintf("run_code: the name %s is reserved", name))
		}
	}
	if strings.Contains(src, valueName) {
		return nil, runtime.NewError(NameError, CodeError, fmt.Sprintf("run_code: the name %s is reserved", valueName))
	}
	// The run's own deadline, unless the caller's comes first (then the
	// caller's ends the run, as its cancellation does).
	if d, ok := r.ctx.Deadline(); !ok || time.Until(d) > lim.Time {
		ctx, cancel := context.WithTimeoutCause(r.ctx, lim.Time, errWallTime)
		defer cancel()
		r.ctx = ctx
	}
	ctx := r.ctx

	prog, fns, err := r.compile(src)
	if err != nil {
		return nil, err
	}

	th := &starlark.Thread{Name: "run_code", Print: threadPrint}
	th.SetLocal(runKey, r)
	// The thread looks at ctx every pollSteps steps (OnMaxSteps, raising
	// the mark each time until the step limit): a thread waiting in a tool
	// call is woken by that call's own ctx, so no watcher is needed.
	th.SetMaxExecutionSteps(min(pollSteps, lim.Steps))
	th.OnMaxSteps = threadMaxSteps
	r.thread = th
	globals, err := prog.Init(th, fns)
	if hit := r.limitHit(); hit != nil {
		return nil, codeLimit(hit)
	}
	if cerr := r.ctx.Err(); cerr != nil {
		if context.Cause(ctx) == errWallTime {
			return nil, codeLimit(r.limit("time", lim.Time.String()))
		}
		return nil, fmt.Errorf("run_code: the call was cancelled: %w", cerr)
	}
	if err != nil {
		return nil, r.codeError(err)
	}
	val := globals[valueName]
	if val == nil || val == starlark.None {
		if v, ok := globals["result"]; ok {
			val = v
		}
	}
	if val == nil {
		val = starlark.None
	}
	b, err := toJSON(val, lim.Output)
	if errors.Is(err, errTooLarge) {
		return nil, codeLimit(&limitError{"output", fmt.Sprintf("%d bytes of value", lim.Output)})
	}
	if err != nil {
		return nil, runtime.NewError(NameError, CodeError, "run_code: the program's value: "+err.Error())
	}
	return r.output(b), nil
}

// output is run_code's value as JSON text, written directly (the keys in
// encoding/json's order, which render's fast path reads back): the
// registry then checks and keeps it without building and sorting a map.
func (r *run) output(value []byte) json.RawMessage {
	w := &jsonWriter{}
	w.buf.Grow(len(value) + r.out.Len() + 40)
	w.buf.WriteString(`{"calls":`)
	w.buf.WriteString(strconv.Itoa(r.calls))
	w.buf.WriteString(`,"output":`)
	w.str(r.out.String())
	w.buf.WriteString(`,"value":`)
	w.buf.Write(value)
	w.buf.WriteByte('}')
	return json.RawMessage(w.buf.Bytes())
}

var errWallTime = errors.New("run_code wall time limit")

// pollSteps is how many execution steps a thread runs between two looks
// at the run's ctx.
const pollSteps = 256

// threadPrint and threadMaxSteps are every thread's Print and
// OnMaxSteps: they find the run through the thread, as the helpers do.
func threadPrint(th *starlark.Thread, msg string) { runOf(th).print(th, msg) }
func threadMaxSteps(th *starlark.Thread)          { runOf(th).onMaxSteps(th) }

// onMaxSteps is the thread's OnMaxSteps: at the step limit it stops the
// run; before it, the thread has run pollSteps more steps, and it stops
// when the run's ctx has ended (the wall time, or the caller's
// cancellation), else runs on to the next mark.
func (r *run) onMaxSteps(th *starlark.Thread) {
	lim := r.e.lim
	if th.Steps >= lim.Steps {
		r.limit("steps", strconv.FormatUint(lim.Steps, 10))
		return
	}
	if r.ctx.Err() != nil {
		if context.Cause(r.ctx) == errWallTime {
			r.limit("time", lim.Time.String())
		} else {
			th.Cancel("the call was cancelled")
		}
		return
	}
	th.SetMaxExecutionSteps(min(th.Steps+pollSteps, lim.Steps))
}

func codeLimit(l *limitError) error { return runtime.NewError(NameLimit, CodeLimit, l.Error()) }

// captureLastExpr assigns the program's last statement, when it is an
// expression, to valueName: the program's value.
func captureLastExpr(f *syntax.File) {
	n := len(f.Stmts)
	if n == 0 {
		return
	}
	es, ok := f.Stmts[n-1].(*syntax.ExprStmt)
	if !ok {
		return
	}
	pos, _ := es.X.Span()
	f.Stmts[n-1] = &syntax.AssignStmt{OpPos: pos, Op: syntax.EQ, LHS: &syntax.Ident{NamePos: pos, Name: valueName}, RHS: es.X}
}

// print captures the program's print output, bounded by Limits.Output.
func (r *run) print(_ *starlark.Thread, msg string) {
	if r.out.Len()+len(msg)+1 > r.e.lim.Output {
		r.limit("output", fmt.Sprintf("%d bytes of print output", r.e.lim.Output))
		return
	}
	r.out.WriteString(msg)
	r.out.WriteByte('\n')
}

// codeError renders a parse, resolve or runtime error with its line,
// column and the line's text.
func (r *run) codeError(err error) error {
	var (
		pos syntax.Position
		msg = err.Error()
	)
	var se syntax.Error
	var rl resolve.ErrorList
	var ee *starlark.EvalError
	switch {
	case errors.As(err, &se):
		pos, msg = se.Pos, "syntax error: "+se.Msg
	case errors.As(err, &rl) && len(rl) > 0:
		pos, msg = rl[0].Pos, rl[0].Msg
		if len(rl) > 1 {
			msg += fmt.Sprintf(" (and %d more)", len(rl)-1)
		}
	case errors.As(err, &ee):
		msg = ee.Msg
		for i := len(ee.CallStack) - 1; i >= 0; i-- {
			if p := ee.CallStack[i].Pos; p.Filename() == fileName {
				pos = p
				break
			}
		}
	}
	if !pos.IsValid() {
		return runtime.NewError(NameError, CodeError, "run_code: "+msg)
	}
	line := r.line(int(pos.Line))
	text := fmt.Sprintf("run_code: line %d:%d: %s\n  %s", pos.Line, pos.Col, msg, line)
	if pos.Col >= 1 {
		text += "\n  " + strings.Repeat(" ", int(pos.Col)-1) + "^"
	}
	return runtime.NewError(NameError, CodeError, text)
}

func (r *run) line(n int) string {
	lines := strings.Split(r.src, "\n")
	if n < 1 || n > len(lines) {
		return ""
	}
	l := strings.TrimRight(lines[n-1], "\r")
	if len(l) > 200 {
		l = l[:200] + "…"
	}
	return l
}

// helper names are the program's predeclared functions besides the tools.
var helperNames = map[string]bool{"call": true, "parallel": true, "json": true, "math": true, "sum": true,
	addName: true, mulName: true, modName: true, addEqName: true, mulEqName: true, modEqName: true, methodName: true}

// helpers is the program's predeclared helpers, shared by every run: a
// builtin finds its run through the thread (runOf).
var helpers = func() starlark.StringDict {
	method := func(name string, f func(r *run, th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error)) *starlark.Builtin {
		return starlark.NewBuiltin(name, func(th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			return f(runOf(th), th, b, args, kwargs)
		})
	}
	d := starlark.StringDict{
		"call":     method("call", (*run).callBuiltin),
		"parallel": method("parallel", (*run).parallelBuiltin),
		"json":     jsonModule(),
		"math":     starmath.Module,
		"sum":      method("sum", (*run).sum),
	}
	guards(d)
	d.Freeze()
	return d
}()

// runKey is the thread-local key of a thread's run.
const runKey = "codemode.run"

// runOf is the run a thread executes.
func runOf(th *starlark.Thread) *run {
	r, _ := th.Local(runKey).(*run)
	return r
}

// compiled is a program in executable form and the predeclared names it
// uses: a *starlark.Program is immutable and holds no values, so one may
// be shared by runs of the same text (each run gets its own globals).
type compiled struct {
	prog  *starlark.Program
	names []string // the helpers and tools the program names
}

// compile returns src's program and its predeclared dict: the helpers and
// the tools it names, each tool bound to this run. A program compiled for
// the same text before is reused when every tool it names is still
// visible to the caller (the resolver's answers, all it depends on besides
// the text, are then the same); otherwise, and for a text not seen, the
// text is compiled afresh.
func (r *run) compile(src string) (*starlark.Program, starlark.StringDict, error) {
	view := r.e.reg.View(r.parent.Agent())
	if c, ok := r.e.cache.get(src); ok {
		fns := make(starlark.StringDict, len(c.names))
		for _, name := range c.names {
			if h, ok := helpers[name]; ok {
				fns[name] = h
				continue
			}
			if _, ok := view.Get(name); !ok {
				fns = nil // the view changed: compile again
				break
			}
			fns[name] = r.e.toolFunc(name)
		}
		if fns != nil {
			return c.prog, fns, nil
		}
	}
	f, err := fileOptions.Parse(fileName, src, 0)
	if err != nil {
		return nil, nil, r.codeError(err)
	}
	captureLastExpr(f)
	guardProgram(f)
	fns := starlark.StringDict{}
	var names []string
	prog, err := starlark.FileProgram(f, func(name string) bool {
		if fns.Has(name) {
			return true
		}
		if h, ok := helpers[name]; ok {
			fns[name] = h
		} else if !callable(name) {
			return false
		} else if _, ok := view.Get(name); !ok {
			return false
		} else {
			fns[name] = r.e.toolFunc(name)
		}
		names = append(names, name)
		return true
	})
	if err != nil {
		return nil, nil, r.codeError(err)
	}
	r.e.cache.put(src, &compiled{prog: prog, names: names})
	return prog, fns, nil
}

// programCache holds recently compiled programs by their text, bounded in
// entries and in the text's size: a model that sends the same program
// again (a retry, a loop of similar turns) skips parsing and compiling.
// It caches code, never state: every run still starts from fresh globals.
type programCache struct {
	mu sync.Mutex
	m  map[string]*compiled
}

// The bounds of programCache: entries, and the longest text cached.
const (
	cacheEntries = 64
	cacheMaxText = 4 << 10
)

func (c *programCache) get(src string) (*compiled, bool) {
	if len(src) > cacheMaxText {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.m[src]
	return p, ok
}

func (c *programCache) put(src string, p *compiled) {
	if len(src) > cacheMaxText {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[string]*compiled, cacheEntries)
	}
	if _, ok := c.m[src]; !ok && len(c.m) >= cacheEntries {
		for k := range c.m { // evict one entry, the map's pick
			delete(c.m, k)
			break
		}
	}
	c.m[src] = p
}

// toolFunc is a tool as a program function: keyword arguments, the value
// (else the text), a failure raised. Like the helpers, it finds its run
// through the thread, so the engine keeps one per tool name and every run
// shares it (up to maxToolFuncs names; past them each run makes its own).
func (e *engine) toolFunc(name string) *starlark.Builtin {
	e.fnMu.Lock()
	defer e.fnMu.Unlock()
	if b, ok := e.fns[name]; ok {
		return b
	}
	b := starlark.NewBuiltin(name, func(th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		if len(args) > 0 {
			return nil, fmt.Errorf("%s() takes keyword arguments only, e.g. %s(name=value)", name, name)
		}
		res, err := runOf(th).call(name, kwargs)
		if err != nil {
			return nil, err
		}
		if res.IsError() {
			return nil, &toolError{name: name, msg: res.ErrorMessage(), code: string(res.Code())}
		}
		return valueOf(res)
	})
	if len(e.fns) < maxToolFuncs {
		if e.fns == nil {
			e.fns = make(map[string]*starlark.Builtin)
		}
		e.fns[name] = b
	}
	return b
}

// maxToolFuncs bounds the tool functions an engine keeps.
const maxToolFuncs = 4096

// callable reports whether a tool is a function of its own in programs:
// an identifier that is neither a keyword, a helper, nor run_code itself
// (which a program cannot call), nor a Starlark built-in it would hide.
func callable(name string) bool {
	if name == runtime.RunCodeName || helperNames[name] || starlark.Universe.Has(name) || !isIdent(name) {
		return false
	}
	return true
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return !keywords[s]
}

var keywords = map[string]bool{
	"and": true, "break": true, "continue": true, "def": true, "elif": true, "else": true, "for": true,
	"if": true, "in": true, "lambda": true, "load": true, "not": true, "or": true, "pass": true,
	"return": true, "while": true, "as": true, "assert": true, "async": true, "await": true, "class": true,
	"del": true, "except": true, "finally": true, "from": true, "global": true, "import": true, "is": true,
	"nonlocal": true, "raise": true, "try": true, "with": true, "yield": true,
	"None": true, "True": true, "False": true,
}

// toolError is a tool's failure raised in the program: its message and
// code.
type toolError struct{ name, msg, code string }

func (e *toolError) Error() string {
	if e.code != "" {
		return fmt.Sprintf("tool %s failed [%s]: %s", e.name, e.code, e.msg)
	}
	return fmt.Sprintf("tool %s failed: %s", e.name, e.msg)
}

// reserve counts n calls against Limits.Calls.
func (r *run) reserve(n int) error {
	if r.calls+n > r.e.lim.Calls {
		return r.limit("tool calls", strconv.Itoa(r.e.lim.Calls))
	}
	r.calls += n
	return nil
}

// call runs one tool call as a nested Execute of the run_code execution.
func (r *run) call(name string, kwargs []starlark.Tuple) (*runtime.Result, error) {
	r.args.buf.Reset()
	r.args.max = r.e.lim.Output
	args, err := kwargsJSON(&r.args, name, kwargs)
	if err != nil {
		return nil, err
	}
	if name == runtime.RunCodeName {
		return nil, errors.New("run_code cannot be called from a program")
	}
	if err := r.reserve(1); err != nil {
		return nil, err
	}
	res := r.e.reg.Execute(r.ctx, runtime.Call{
		ID:        r.childID(r.calls),
		RootID:    r.parent.RootCallID(),
		Name:      name,
		Agent:     r.parent.Agent(),
		Parent:    r.parent.Token(),
		Arguments: json.RawMessage(args),
	})
	if err := r.stopped(); err != nil {
		return nil, err
	}
	return res, nil
}

// stopped is the error that ends the program after a call returned: a
// limit hit or the run's ctx ending.
func (r *run) stopped() error {
	if hit := r.limitHit(); hit != nil {
		return hit
	}
	if r.ctx.Err() != nil {
		if context.Cause(r.ctx) == errWallTime {
			return r.limit("time", r.e.lim.Time.String())
		}
		return r.ctx.Err()
	}
	return nil
}

func (r *run) childID(n int) string {
	if r.idPrefix == nil {
		r.idPrefix = append([]byte(r.parent.CallID()), '/')
	}
	return string(strconv.AppendInt(r.idPrefix, int64(n), 10))
}

// kwargsJSON writes keyword arguments as a JSON object with w (the
// interpreter has already refused a repeated keyword); the bytes are w's.
func kwargsJSON(w *jsonWriter, name string, kwargs []starlark.Tuple) ([]byte, error) {
	max := w.max
	w.buf.WriteByte('{')
	var err error
	for i, kv := range kwargs {
		if i > 0 {
			w.buf.WriteByte(',')
		}
		k, _ := kv[0].(starlark.String)
		w.str(string(k))
		w.buf.WriteByte(':')
		if err = w.value(kv[1], 1); err != nil {
			break
		}
	}
	w.buf.WriteByte('}')
	b := w.buf.Bytes()
	if err == nil {
		err = w.check()
	}
	if errors.Is(err, errTooLarge) {
		return nil, fmt.Errorf("%s: arguments larger than %d bytes", name, max)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: arguments: %w", name, err)
	}
	return b, nil
}

// callBuiltin is call(name, **args): the result object, never raising for
// the tool's own failure.
func (r *run) callBuiltin(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var name string
	if err := starlark.UnpackPositionalArgs("call", args, nil, 1, &name); err != nil {
		return nil, err
	}
	res, err := r.call(name, kwargs)
	if err != nil {
		return nil, err
	}
	return newResult(res)
}

// parallelBuiltin is parallel(calls, limit=n): the calls, each a
// (name, {args}) pair, as one nested turn; the results in order.
func (r *run) parallelBuiltin(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var list starlark.Iterable
	limit := r.e.lim.Parallel
	if err := starlark.UnpackArgs("parallel", args, kwargs, "calls", &list, "limit?", &limit); err != nil {
		return nil, err
	}
	if limit < 1 {
		return nil, fmt.Errorf("parallel: limit must be at least 1, got %d", limit)
	}
	var calls []runtime.TurnCall
	if s, ok := list.(starlark.Sequence); ok {
		calls = make([]runtime.TurnCall, 0, min(s.Len(), r.e.lim.Calls))
	}
	// Every entry's arguments, then every call's id, are written into one
	// buffer and become one string, which the calls share slices of.
	w := &jsonWriter{}
	var ends []int // where each entry's arguments end in w
	if cap(calls) > 0 {
		ends = make([]int, 0, cap(calls))
	}
	it := list.Iterate()
	defer it.Done()
	var x starlark.Value
	for it.Next(&x) {
		if len(calls) >= r.e.lim.Calls {
			return nil, r.limit("tool calls", strconv.Itoa(r.e.lim.Calls))
		}
		name, err := r.spec(w, x, len(calls))
		if err != nil {
			return nil, err
		}
		calls = append(calls, runtime.TurnCall{Name: name})
		ends = append(ends, w.buf.Len())
	}
	if err := r.reserve(len(calls)); err != nil {
		return nil, err
	}
	if len(calls) == 0 {
		return starlark.NewList(nil), nil
	}
	if r.idPrefix == nil {
		r.idPrefix = append([]byte(r.parent.CallID()), '/')
	}
	first := r.calls - len(calls) + 1
	var num [20]byte
	for i := range calls {
		w.buf.Write(r.idPrefix)
		w.buf.Write(strconv.AppendInt(num[:0], int64(first+i), 10))
		ends = append(ends, w.buf.Len())
	}
	text := w.buf.String()
	start := 0
	for i := range calls {
		calls[i].ArgumentsText = text[start:ends[i]]
		start = ends[i]
	}
	for i := range calls {
		calls[i].ID = text[start:ends[len(calls)+i]]
		start = ends[len(calls)+i]
	}
	sc := r.e.reg.Global()
	if key := r.parent.Agent(); key != "" {
		s, ok := r.e.reg.Scope(key)
		if !ok {
			return nil, fmt.Errorf("parallel: scope %q is gone", key)
		}
		sc = s
	}
	r.turns++
	tr, err := sc.ExecuteTurn(r.ctx, calls, runtime.WithMaxParallel(limit),
		runtime.WithTurnID(r.parent.CallID()+"/p"+strconv.Itoa(r.turns)))
	if err != nil {
		return nil, fmt.Errorf("parallel: %w", err)
	}
	if err := r.stopped(); err != nil {
		return nil, err
	}
	out := make([]starlark.Value, len(calls))
	rs := make([]result, len(calls)) // every entry's result in one allocation
	for i := range calls {
		if i >= len(tr.Results) {
			rs[i] = result{value: starlark.None, errMsg: "the call did not run (the turn failed)"}
		} else if err := rs[i].set(tr.Results[i]); err != nil {
			return nil, err
		}
		out[i] = &rs[i]
	}
	return starlark.NewList(out), nil
}

// spec reads one entry of a parallel list: (name, {args}) or (name,). Its
// arguments are appended to w, which holds the entries before it; each is
// bounded by Limits.Output on its own.
func (r *run) spec(w *jsonWriter, x starlark.Value, i int) (string, error) {
	seq, ok := x.(starlark.Indexable)
	if _, isStr := x.(starlark.String); isStr || !ok || seq.Len() < 1 || seq.Len() > 2 {
		return "", fmt.Errorf("parallel: entry %d is a %s; want (name, {args})", i, x.Type())
	}
	name, ok := seq.Index(0).(starlark.String)
	if !ok {
		return "", fmt.Errorf("parallel: entry %d: the tool name is a %s, want a string", i, seq.Index(0).Type())
	}
	if string(name) == runtime.RunCodeName {
		return "", errors.New("run_code cannot be called from a program")
	}
	if seq.Len() == 1 {
		w.buf.WriteString("{}")
		return string(name), nil
	}
	d, ok := seq.Index(1).(*starlark.Dict)
	if !ok {
		return "", fmt.Errorf("parallel: entry %d: the arguments are a %s, want a dict", i, seq.Index(1).Type())
	}
	w.max = w.buf.Len() + r.e.lim.Output
	err := w.value(d, 0)
	if errors.Is(err, errTooLarge) {
		return "", fmt.Errorf("parallel: entry %d: arguments larger than %d bytes", i, r.e.lim.Output)
	}
	if err != nil {
		return "", fmt.Errorf("parallel: entry %d: arguments: %w", i, err)
	}
	return string(name), nil
}

// sum is Python's sum(iterable, start=0), which Starlark lacks: models
// write it often.
// Each element counts as an execution step, and the loop stops at a limit
// hit or at the run's ctx ending, like the interpreter's own loops.
func (r *run) sum(th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var it starlark.Iterable
	var acc starlark.Value = starlark.MakeInt(0)
	if err := starlark.UnpackPositionalArgs("sum", args, kwargs, 1, &it, &acc); err != nil {
		return nil, err
	}
	iter := it.Iterate()
	defer iter.Done()
	var x starlark.Value
	for iter.Next(&x) {
		th.Steps++
		if th.Steps > r.e.lim.Steps {
			return nil, r.limit("steps", strconv.FormatUint(r.e.lim.Steps, 10))
		}
		if th.Steps%1024 == 0 {
			if err := r.stopped(); err != nil {
				return nil, err
			}
		}
		v, err := starlark.Binary(syntax.PLUS, acc, x)
		if err != nil {
			return nil, fmt.Errorf("sum: %w", err)
		}
		acc = v
	}
	return acc, nil
}
