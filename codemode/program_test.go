package codemode_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toolscope/toolscope/codemode"
	"github.com/toolscope/toolscope/otelscope"
	"github.com/toolscope/toolscope/runtime"
)

// setup is a registry with read and list_files global and a code-mode
// scope "agent".
func setup(t *testing.T, cfg codemode.Config, opts ...runtime.Option) (*runtime.Registry, *runtime.Scope) {
	t.Helper()
	reg := newReg(t, cfg, opts...)
	d, err := readTool(t)
	mustRegister(t, reg.Global(), d, err)
	d, err = listTool(t)
	mustRegister(t, reg.Global(), d, err)
	return reg, codeScope(t, reg, "agent", runtime.PresentationCode)
}

func TestProgram_LoopOverToolResults(t *testing.T) {
	_, s := setup(t, codemode.Config{})
	res := runCode(t, s, `
out = []
for f in list_files()["files"]:
    if f.endswith(".txt"):
        out.append(read(path=f))
print("read", len(out))
out
`)
	v := valueOf(t, res)
	assert.Equal(t, `["contents of a.txt","contents of b.txt"]`, string(v.Value))
	assert.Equal(t, "read 2\n", v.Output)
	assert.Equal(t, 3, v.Calls)
	assert.Equal(t, "read 2\n[\"contents of a.txt\",\"contents of b.txt\"]", res.Text())
}

func TestProgram_ValueIsLastExpressionElseResult(t *testing.T) {
	_, s := setup(t, codemode.Config{})
	assert.Equal(t, `{"n":2,"f":1.5,"big":123456789012345678901234567890}`,
		string(valueOf(t, runCode(t, s, `{"n": 1 + 1, "f": 1.5, "big": 123456789012345678901234567890}`)).Value))
	assert.Equal(t, `"r"`, string(valueOf(t, runCode(t, s, "result = 'r'\nprint('x')")).Value))
	assert.Equal(t, `null`, string(valueOf(t, runCode(t, s, "x = 1")).Value))
	res := runCode(t, s, "print('only output')")
	assert.Equal(t, "only output\n", res.Text())
}

func TestProgram_FreshInterpreterPerRun(t *testing.T) {
	_, s := setup(t, codemode.Config{})
	valueOf(t, runCode(t, s, "x = 1"))
	res := runCode(t, s, "x")
	require.True(t, res.IsError())
	assert.Equal(t, codemode.CodeError, res.Code())
	assert.Contains(t, res.ErrorMessage(), "undefined: x")
}

func TestProgram_InnerCallsAreChildrenOfRunCode(t *testing.T) {
	reg, s := setup(t, codemode.Config{})
	var mu sync.Mutex
	var runTok runtime.Token
	var seen []string
	_, err := reg.Global().OnPreExecute(func(ctx context.Context, e runtime.Execution, next func() (runtime.Decision, error)) (runtime.Decision, error) {
		mu.Lock()
		defer mu.Unlock()
		if e.Name() == "run_code" {
			runTok = e.Token()
		} else {
			seen = append(seen, fmt.Sprintf("%s parent=%v root=%s id=%s agent=%s", e.Name(), e.Parent() == runTok, e.RootCallID(), e.CallID(), e.Agent()))
		}
		return next()
	})
	require.NoError(t, err)
	valueOf(t, runCode(t, s, `read(path="a")
parallel([("read", {"path": "b"})])`))
	assert.Equal(t, []string{
		"read parent=true root=rc id=rc/1 agent=agent",
		// A turn's calls have no RootID of their own (TurnCall has none):
		// their root is their id; the parent links them to run_code.
		"read parent=true root=rc/2 id=rc/2 agent=agent",
	}, seen)
}

func TestProgram_ToolErrorRaisesOrIsCaughtWithCall(t *testing.T) {
	reg, s := setup(t, codemode.Config{})
	d, err := runtime.NewTool("flaky", "Fails", func(ctx context.Context, in struct{}, rc *runtime.RunContext) (string, error) {
		return "", runtime.NewError("FlakyError", "FLAKY", "boom")
	})
	mustRegister(t, reg.Global(), d, err)
	v := valueOf(t, runCode(t, s, `r = call("flaky")
ok = call("read", path="x")
[r.ok, r.error, r.code, r.value, bool(r), ok.ok, ok.value, ok.text, ok.error, ok.code]`))
	assert.Equal(t, `[false,"boom","FLAKY",null,false,true,"contents of x","contents of x","",""]`, string(v.Value))

	res := runCode(t, s, "a = 1\nflaky()\n")
	require.True(t, res.IsError())
	assert.Equal(t, codemode.CodeError, res.Code())
	assert.Contains(t, res.ErrorMessage(), "line 2:")
	assert.Contains(t, res.ErrorMessage(), "tool flaky failed [FLAKY]: boom")
	assert.Contains(t, res.ErrorMessage(), "\n  flaky()")
}

func TestProgram_GuardDeniesOneInnerCall(t *testing.T) {
	reg, s := setup(t, codemode.Config{})
	_, err := s.Guard(func(ctx context.Context, e runtime.Execution) (string, bool) {
		if e.Name() == "read" && strings.Contains(string(mustArgs(e)), "secret") {
			return "no secrets", true
		}
		return "", false
	})
	require.NoError(t, err)
	_ = reg
	v := valueOf(t, runCode(t, s, `[call("read", path=p) for p in ["a", "secret", "b"]]`))
	var out []struct {
		OK    bool            `json:"ok"`
		Value json.RawMessage `json:"value"`
		Error string          `json:"error"`
	}
	require.NoError(t, json.Unmarshal(v.Value, &out))
	require.Len(t, out, 3)
	assert.True(t, out[0].OK)
	assert.False(t, out[1].OK)
	assert.Equal(t, "no secrets", out[1].Error)
	assert.True(t, out[2].OK)

	res := runCode(t, s, `read(path="secret")`)
	assert.Equal(t, codemode.CodeError, res.Code())
	assert.Contains(t, res.ErrorMessage(), "tool read failed: no secrets")
}

func mustArgs(e runtime.Execution) json.RawMessage {
	a, _ := e.Arguments()
	return a
}

func TestProgram_ApprovalAskedInsideProgram(t *testing.T) {
	var asked []string
	var mu sync.Mutex
	approver := func(ctx context.Context, req runtime.ApprovalRequest) (runtime.ApprovalOutcome, error) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, req.Agent+"/"+req.Tool+"/"+req.CallID)
		if strings.HasSuffix(req.CallID, "/1") {
			return runtime.ApprovalAllowedOnce, nil
		}
		return runtime.ApprovalRejected, nil
	}
	reg, s := setup(t, codemode.Config{}, runtime.WithApprover(approver))
	_, err := reg.Global().OnPreExecute(func(ctx context.Context, e runtime.Execution, next func() (runtime.Decision, error)) (runtime.Decision, error) {
		if e.Name() == "read" {
			return runtime.Ask("reading needs approval"), nil
		}
		return next()
	})
	require.NoError(t, err)
	v := valueOf(t, runCode(t, s, `a = call("read", path="a")
b = call("read", path="b")
[a.ok, a.value, b.ok, b.error]`))
	assert.Equal(t, `[true,"contents of a",false,"approval for tool \"read\" was refused"]`, string(v.Value))
	assert.Equal(t, []string{"agent/read/rc/1", "agent/read/rc/2"}, asked)
}

func TestProgram_SyntaxErrorHasPosition(t *testing.T) {
	_, s := setup(t, codemode.Config{})
	res := runCode(t, s, "a = 1\nb = a +* 2\n")
	require.True(t, res.IsError())
	assert.Equal(t, codemode.CodeError, res.Code())
	assert.Equal(t, "run_code: line 2:8: syntax error: got '*', want primary expression\n  b = a +* 2\n         ^", res.ErrorMessage())

	res = runCode(t, s, "x = 1\ny = nope + 1\n")
	assert.Equal(t, "run_code: line 2:5: undefined: nope\n  y = nope + 1\n      ^", res.ErrorMessage())

	res = runCode(t, s, "d = {}\n\nv = d[\"k\"]\n")
	assert.Contains(t, res.ErrorMessage(), "run_code: line 3:6: key \"k\" not in dict\n  v = d[\"k\"]")
}

func TestProgram_KeywordArgumentsOnly(t *testing.T) {
	_, s := setup(t, codemode.Config{})
	res := runCode(t, s, `read("a")`)
	assert.Contains(t, res.ErrorMessage(), "read() takes keyword arguments only")
	res = runCode(t, s, `call("run_code", code="1")`)
	assert.Contains(t, res.ErrorMessage(), "run_code cannot be called from a program")
	res = runCode(t, s, `read(path=float("nan"))`)
	assert.Contains(t, res.ErrorMessage(), "cannot convert float NaN to JSON")
	res = runCode(t, s, "l = []\nl.append(l)\nread(path=l)")
	assert.Contains(t, res.ErrorMessage(), "nested deeper than")
}

func TestProgram_NonIdentifierToolThroughCall(t *testing.T) {
	reg, s := setup(t, codemode.Config{})
	d, err := runtime.NewTool("fs.stat", "Stat a file", func(ctx context.Context, in pathIn, rc *runtime.RunContext) (map[string]int, error) {
		return map[string]int{"size": len(in.Path)}, nil
	})
	mustRegister(t, reg.Global(), d, err)
	v := valueOf(t, runCode(t, s, `call("fs.stat", path="abcd").value["size"]`))
	assert.Equal(t, "4", string(v.Value))
	sc, err := s.Schemas()
	require.NoError(t, err)
	assert.Contains(t, sc[len(sc)-1].Description, `call("fs.stat", path: str): Stat a file`)
}

// gated is a tool that records its start and end and waits for its gate.
type gated struct {
	mu      sync.Mutex
	log     []string
	entered chan string
	gates   map[string]chan struct{}
}

func newGated() *gated {
	return &gated{entered: make(chan string, 16), gates: map[string]chan struct{}{}}
}

func (g *gated) gate(id string) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	c, ok := g.gates[id]
	if !ok {
		c = make(chan struct{})
		g.gates[id] = c
	}
	return c
}

func (g *gated) record(s string) {
	g.mu.Lock()
	g.log = append(g.log, s)
	g.mu.Unlock()
}

type idIn struct {
	ID string `json:"id"`
}

func (g *gated) tool(name string, parallel bool) (runtime.Definition, error) {
	var opts []runtime.ToolOption
	if parallel {
		opts = append(opts, runtime.WithParallel())
	}
	return runtime.NewTool(name, "gated", func(ctx context.Context, in idIn, rc *runtime.RunContext) (string, error) {
		g.record("start " + in.ID)
		g.entered <- in.ID
		select {
		case <-g.gate(in.ID):
		case <-ctx.Done():
			return "", ctx.Err()
		}
		g.record("end " + in.ID)
		return "done " + in.ID, nil
	}, opts...)
}

func (g *gated) awaitEntered(t *testing.T, want ...string) {
	t.Helper()
	got := map[string]bool{}
	for len(got) < len(want) {
		select {
		case id := <-g.entered:
			got[id] = true
		case <-timeAfter():
			t.Fatalf("waiting for %v to start, got %v\n%s", want, got, goroutineDump())
		}
	}
	for _, w := range want {
		if !got[w] {
			t.Fatalf("want %v started, got %v", want, got)
		}
	}
}

func TestProgram_ParallelOverlapsAndKeepsOrder(t *testing.T) {
	reg, s := setup(t, codemode.Config{})
	g := newGated()
	d, err := g.tool("par", true)
	mustRegister(t, reg.Global(), d, err)
	d, err = g.tool("excl", false)
	mustRegister(t, reg.Global(), d, err)

	done := make(chan *runtime.Result, 1)
	go func() {
		args, _ := json.Marshal(map[string]string{"code": `rs = parallel([("par", {"id": "p0"}), ("par", {"id": "p1"}), ("excl", {"id": "x"}), ("par", {"id": "p2"})])
[r.value for r in rs]`})
		done <- s.Execute(context.Background(), runtime.Call{ID: "rc", Name: "run_code", Arguments: json.RawMessage(args)})
	}()
	// p0 and p1 both start while neither may finish: they overlap.
	g.awaitEntered(t, "p0", "p1")
	close(g.gate("p1"))
	close(g.gate("p0"))
	// The exclusive call is a barrier: it starts after both ended, and p2
	// after it ended.
	g.awaitEntered(t, "x")
	close(g.gate("x"))
	g.awaitEntered(t, "p2")
	close(g.gate("p2"))
	var res *runtime.Result
	select {
	case res = <-done:
	case <-timeAfter():
		t.Fatalf("run_code did not return\n%s", goroutineDump())
	}
	assert.Equal(t, `["done p0","done p1","done x","done p2"]`, string(valueOf(t, res).Value))
	g.mu.Lock()
	log := strings.Join(g.log, ",")
	g.mu.Unlock()
	ix := func(s string) int { return strings.Index(log, s) }
	assert.Less(t, ix("end p0"), ix("start x"), log)
	assert.Less(t, ix("end p1"), ix("start x"), log)
	assert.Less(t, ix("end x"), ix("start p2"), log)
}

func TestProgram_ParallelLimit(t *testing.T) {
	reg, s := setup(t, codemode.Config{})
	var inflight, peak atomic.Int64
	d, err := runtime.NewTool("busy", "busy", func(ctx context.Context, in idIn, rc *runtime.RunContext) (string, error) {
		n := inflight.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		inflight.Add(-1)
		return in.ID, nil
	}, runtime.WithParallel())
	mustRegister(t, reg.Global(), d, err)
	v := valueOf(t, runCode(t, s, `[r.value for r in parallel([("busy", {"id": str(i)}) for i in range(12)], limit=2)]`))
	assert.Equal(t, `["0","1","2","3","4","5","6","7","8","9","10","11"]`, string(v.Value))
	assert.LessOrEqual(t, peak.Load(), int64(2), "at most limit dispatches at once")
	assert.Equal(t, 12, v.Calls)
	res := runCode(t, s, `parallel([("busy", {})], limit=0)`)
	assert.Contains(t, res.ErrorMessage(), "limit must be at least 1")
	res = runCode(t, s, `parallel(["busy"])`)
	assert.Contains(t, res.ErrorMessage(), "entry 0 is a string")
}

// The inner calls are children of the run_code call in the typed events
// (what a timeline or a replay reads).
func TestProgram_InnerCallsAreChildrenInEvents(t *testing.T) {
	reg, s := setup(t, codemode.Config{})
	events := make(chan runtime.Event, 64)
	sub, err := reg.Subscribe(func(e runtime.Event) {
		if e.Kind == runtime.ExecutionFinished {
			events <- e
		}
	})
	require.NoError(t, err)
	defer sub.Close()
	valueOf(t, runCode(t, s, `read(path="a")
parallel([("read", {"path": "b"}), ("list_files", {})])`))
	byID := map[string]runtime.Event{}
	for len(byID) < 4 {
		select {
		case e := <-events:
			byID[e.CallID] = e
		case <-timeAfter():
			t.Fatalf("events: got %v\n%s", byID, goroutineDump())
		}
	}
	rc := byID["rc"]
	require.Equal(t, "run_code", rc.Tool)
	assert.True(t, rc.Parent.IsZero())
	for _, id := range []string{"rc/1", "rc/2", "rc/3"} {
		e, ok := byID[id]
		require.True(t, ok, id)
		assert.Equal(t, rc.Token, e.Parent, "%s is a child of run_code", id)
		assert.Equal(t, "agent", e.Scope)
	}
	assert.Equal(t, "rc/p1", byID["rc/2"].TurnID, "parallel's calls are one turn's")
	assert.Equal(t, "rc/p1", byID["rc/3"].TurnID)
	assert.Empty(t, byID["rc/1"].TurnID)
}

// ... and in traces: each inner call's span is a child of run_code's.
func TestProgram_InnerCallsAreChildrenInTraces(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	_, s := setup(t, codemode.Config{}, runtime.WithHooks(otelscope.Hooks(otelscope.WithTracerProvider(tp))))
	valueOf(t, runCode(t, s, `read(path="a")
parallel([("read", {"path": "b"})])`))
	byCall := map[string]sdktrace.ReadOnlySpan{}
	var turn sdktrace.ReadOnlySpan
	for _, sp := range rec.Ended() {
		if sp.Name() == "execute_turn" {
			turn = sp
		}
		for _, kv := range sp.Attributes() {
			if kv.Key == "gen_ai.tool.call.id" {
				byCall[kv.Value.AsString()] = sp
			}
		}
	}
	rc, inner := byCall["rc"], byCall["rc/1"]
	require.NotNil(t, rc)
	require.NotNil(t, inner)
	require.NotNil(t, turn)
	assert.Equal(t, rc.SpanContext().SpanID(), inner.Parent().SpanID())
	assert.Equal(t, rc.SpanContext().SpanID(), turn.Parent().SpanID(), "parallel's turn span is run_code's child")
	require.NotNil(t, byCall["rc/2"])
	assert.Equal(t, turn.SpanContext().SpanID(), byCall["rc/2"].Parent().SpanID())
}

// An int past float64's range is not lossless JSON (R47): as the value or
// as an argument it is a program error, not run_code's invalid output
// (found by FuzzProgram).
func TestProgram_IntBeyondFloatRangeIsAProgramError(t *testing.T) {
	_, s := setup(t, codemode.Config{})
	for _, p := range []string{"2" + strings.Repeat("0", 320), "read(path=" + "3" + strings.Repeat("0", 320) + ")"} {
		res := runCode(t, s, p)
		assert.Equal(t, codemode.CodeError, res.Code(), res.ErrorMessage())
		assert.Contains(t, res.ErrorMessage(), "beyond the float64 range")
	}
	assert.Equal(t, "1"+strings.Repeat("0", 300), string(valueOf(t, runCode(t, s, "1"+strings.Repeat("0", 300))).Value))
}

// A program run again reuses its compiled form, never its state, and is
// compiled afresh when a tool it names left the caller's view: the name is
// then undefined, as on the first run of that text.
func TestCompileCache_FreshStateAndViewChange(t *testing.T) {
	reg := newReg(t, codemode.Config{})
	s := codeScope(t, reg, "agent", runtime.PresentationCode)
	def, err := readTool(t)
	mustRegister(t, reg.Global(), def, err)
	const prog = "seen = []\nseen.append(read(path=\"a\"))\nseen"
	for range 3 {
		if v := valueOf(t, runCode(t, s, prog)); string(v.Value) != `["contents of a"]` {
			t.Fatalf("value %s, want one element: state carried between runs?", v.Value)
		}
	}
	undo, err := s.Restrict(runtime.Restriction{Deny: []string{"read"}})
	if err != nil {
		t.Fatal(err)
	}
	res := runCode(t, s, prog)
	if !res.IsError() || res.Code() != codemode.CodeError || !strings.Contains(res.ErrorMessage(), "undefined: read") {
		t.Fatalf("after the restriction: %v [%s] %s, want CODE_ERROR naming read undefined", res.IsError(), res.Code(), res.ErrorMessage())
	}
	undo()
	if v := valueOf(t, runCode(t, s, prog)); string(v.Value) != `["contents of a"]` {
		t.Fatalf("after lifting it: value %s", v.Value)
	}
}
