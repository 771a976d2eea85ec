package codemode_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolscope/toolscope/codemode"
	"github.com/toolscope/toolscope/runtime"
)

// assertLimit checks a CODE_LIMIT failure naming the limit and its value.
func assertLimit(t *testing.T, res *runtime.Result, limit, value string) {
	t.Helper()
	require.True(t, res.IsError(), "want a limit failure, got %s", res.Text())
	assert.Equal(t, codemode.CodeLimit, res.Code(), res.ErrorMessage())
	name, _, _ := res.ErrorInfo()
	assert.Equal(t, codemode.NameLimit, name)
	assert.Contains(t, res.ErrorMessage(), "the "+limit+" limit ("+value)
}

func TestLimits_Steps(t *testing.T) {
	_, s := setup(t, codemode.Config{Limits: codemode.Limits{Steps: 5000}})
	assertLimit(t, runCode(t, s, "while True:\n    pass\n"), "steps", "5000")
	// A program within the limit runs.
	valueOf(t, runCode(t, s, "sum([i for i in range(100)])"))
}

func TestLimits_ToolCalls(t *testing.T) {
	_, s := setup(t, codemode.Config{Limits: codemode.Limits{Calls: 3}})
	assertLimit(t, runCode(t, s, `[read(path=str(i)) for i in range(4)]`), "tool calls", "3")
	assertLimit(t, runCode(t, s, `[call("read", path=str(i)) for i in range(4)]`), "tool calls", "3")
	assertLimit(t, runCode(t, s, `parallel([("read", {"path": str(i)}) for i in range(4)])`), "tool calls", "3")
	assertLimit(t, runCode(t, s, "read(path='a')\nparallel([('read', {}), ('read', {}), ('read', {})])"), "tool calls", "3")
	v := valueOf(t, runCode(t, s, `[read(path=str(i)) for i in range(3)]`))
	assert.Equal(t, 3, v.Calls)
}

func TestLimits_Output(t *testing.T) {
	_, s := setup(t, codemode.Config{Limits: codemode.Limits{Output: 100}})
	assertLimit(t, runCode(t, s, "for i in range(50):\n    print('line', i)\n"), "output", "100 bytes of print output")
	assertLimit(t, runCode(t, s, `"x" * 200`), "output", "100 bytes of value")
	valueOf(t, runCode(t, s, `print("x" * 50)`))
}

func TestLimits_ProgramSize(t *testing.T) {
	_, s := setup(t, codemode.Config{Limits: codemode.Limits{Program: 16}})
	assertLimit(t, runCode(t, s, "x = 1\ny = 2\nz = 3\n"), "program size", "16 bytes; this program has 18")
}

func TestLimits_WallTime(t *testing.T) {
	reg, s := setup(t, codemode.Config{Limits: codemode.Limits{Time: 20 * time.Millisecond}})
	ended := make(chan struct{})
	d, err := runtime.NewTool("block", "Blocks until cancelled", func(ctx context.Context, in struct{}, rc *runtime.RunContext) (string, error) {
		<-ctx.Done() // the run's wall time ends it
		close(ended)
		return "", ctx.Err()
	})
	mustRegister(t, reg.Global(), d, err)
	assertLimit(t, runCode(t, s, "block()"), "time", "20ms")
	await(t, ended, "the inner call's end")
	// A compute loop is stopped by the same limit.
	_, s2 := setup(t, codemode.Config{Limits: codemode.Limits{Time: 20 * time.Millisecond, Steps: 1 << 62}})
	assertLimit(t, runCode(t, s2, "while True:\n    pass\n"), "time", "20ms")
}

func TestLimits_CtxCancelledMidProgram(t *testing.T) {
	reg, s := setup(t, codemode.Config{Limits: codemode.Limits{Steps: 1 << 62}})
	entered, ended := make(chan struct{}), make(chan struct{})
	d, err := runtime.NewTool("block", "Blocks until cancelled", func(ctx context.Context, in struct{}, rc *runtime.RunContext) (string, error) {
		close(entered)
		<-ctx.Done()
		close(ended)
		return "", ctx.Err()
	})
	mustRegister(t, reg.Global(), d, err)
	started := make(chan struct{})
	d, err = runtime.NewTool("started", "Says the loop starts", func(ctx context.Context, in struct{}, rc *runtime.RunContext) (string, error) {
		close(started)
		return "", nil
	})
	mustRegister(t, reg.Global(), d, err)

	for _, tc := range []struct {
		name, program string
		inside        chan struct{}
	}{
		{"inside a tool call", "block()\nprint('not reached')", entered},
		{"in a compute loop", "started()\nwhile True:\n    pass\n", started},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan *runtime.Result, 1)
			args, _ := json.Marshal(map[string]string{"code": tc.program})
			go func() {
				done <- s.Execute(ctx, runtime.Call{ID: "rc", Name: "run_code", Arguments: json.RawMessage(args)})
			}()
			await(t, tc.inside, "the program to start")
			cancel()
			select {
			case res := <-done:
				require.True(t, res.IsError())
				assert.True(t, strings.Contains(res.ErrorMessage(), "cancelled") || res.Code() == runtime.CodeAborted, res.ErrorMessage())
				assert.NotContains(t, res.Text(), "not reached")
			case <-timeAfter():
				t.Fatalf("run_code did not stop after cancellation\n%s", goroutineDump())
			}
		})
	}
	select {
	case <-ended:
	default:
		t.Fatal("the inner call had not ended when run_code returned")
	}
}

// The interpreter bounds steps, not memory: + and *, augmented assignment
// and range are checked against Limits.Size, so no one-line program can
// allocate without bound (the host would die of a fatal out-of-memory).
func TestLimits_ValueSize(t *testing.T) {
	_, s := setup(t, codemode.Config{Limits: codemode.Limits{Size: 1000}})
	for _, p := range []string{
		"list(range(1 << 40))",
		"sum(range(1 << 60))",
		`"x" * (1 << 29)`,
		`(1 << 29) * [0]`,
		"s = 'x'\nfor i in range(40):\n    s = s + s\n",
		"s = [1]\nfor i in range(40):\n    s += s\n",
		"s = [1]\nfor i in range(40):\n    s *= 2\n",
		"x = 3\nfor i in range(40):\n    x = x * x\n",
		"def f(x):\n    return [x] * 2000\nf(1)",
		"[1 for _ in range(2000)]",
		// Growth through methods, and text built from shared values.
		"l = [1]\nfor i in range(40):\n    l.extend(l)\n",
		"s = 'ab'\nfor i in range(40):\n    s = ''.join([s, s])\n",
		"s = 'ab'\nfor i in range(40):\n    s = s.replace('a', 'aa')\n",
		"s = 'x' * 900\n'{0}{0}{0}'.format(s)",
		"s = 'x' * 900\n'%s%s' % (s, s)",
		"s = 'x' * 900\nl = [s] * 900\nstr(l)",
		"s = 'x' * 900\nl = [s] * 900\njson.encode(l)",
		"s = 'x' * 900\nfail([s] * 900)",
	} {
		assertLimit(t, runCode(t, s, p), "value size", "1000 elements or bytes")
	}
	assertLimit(t, runCode(t, s, "s = 'x' * 900\nprint([s] * 900)"), "output", "65536 bytes of print output")
	v := valueOf(t, runCode(t, s, "x = [1]\nx += [2]\nx *= 2\nx.extend([3])\n"+
		"[x, 'ab' * 2, 2 * 3, [0] + [1], (1,) * 2, 7 % 3, '%d-%s' % (1, 'a'), '{}/{k}'.format(1, k=2), '-'.join(['a', 'b']), 'aXa'.replace('X', 'YY'), str([1]), json.encode({'a': 1})]"))
	assert.Equal(t, `[[1,2,1,2,3],"abab",6,[0,1],[1,1],1,"1-a","1/2","a-b","aYYa","[1]","{\"a\":1}"]`, string(v.Value))
}

// A program cannot rebind the hidden helpers the size checks go through.
func TestLimits_HiddenHelpersAreReserved(t *testing.T) {
	_, s := setup(t, codemode.Config{})
	for _, name := range []string{"__add__", "__mul__", "__method__", "__value__"} {
		res := runCode(t, s, "def "+name+"(a, b):\n    return a\n1 + 2")
		assert.Equal(t, codemode.CodeError, res.Code())
		assert.Contains(t, res.ErrorMessage(), "the name "+name+" is reserved")
	}
}

// A caller's deadline sooner than Limits.Time ends the run in its place (the
// run then sets no deadline of its own): a compute loop stops, as an inner
// call does, and the failure is the caller's cancellation, not the run's
// time limit.
func TestLimits_CallerDeadlineSoonerThanWallTimeStopsTheRun(t *testing.T) {
	_, s := setup(t, codemode.Config{Limits: codemode.Limits{Steps: 1 << 62}})
	for _, program := range []string{"while True:\n    pass\n", "x = 0\nfor i in range(1000000):\n    for j in range(1000000):\n        x += 1\n"} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		done := make(chan *runtime.Result, 1)
		args, _ := json.Marshal(map[string]string{"code": program})
		go func() {
			done <- s.Execute(ctx, runtime.Call{ID: "rc", Name: "run_code", Arguments: json.RawMessage(args)})
		}()
		select {
		case res := <-done:
			require.True(t, res.IsError(), program)
			assert.NotEqual(t, codemode.CodeLimit, res.Code(), res.ErrorMessage())
			assert.True(t, strings.Contains(res.ErrorMessage(), "cancelled") || res.Code() == runtime.CodeAborted, res.ErrorMessage())
		case <-timeAfter():
			t.Fatalf("run_code did not stop at the caller's deadline\n%s", goroutineDump())
		}
		cancel()
	}
}
