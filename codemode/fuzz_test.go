package codemode_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/toolscope/toolscope/codemode"
	"github.com/toolscope/toolscope/runtime"
)

// fuzzLimits are small, so each input runs quickly.
var fuzzLimits = codemode.Limits{Steps: 20000, Calls: 5, Parallel: 3, Time: 2 * time.Second, Output: 2000, Program: 4000, Size: 4000}

// FuzzProgram runs arbitrary program text: never a panic (a body panic
// would surface as an uncoded failure), never a hang (each run ends
// within its wall-time limit; the test's bound catches the rest), every
// run within its limits.
func FuzzProgram(f *testing.F) {
	for _, seed := range []string{
		"read(path='a')",
		"[read(path=str(i)) for i in range(3)]",
		"r = call('flaky')\n[r.ok, r.code]",
		"parallel([('read', {'path': 'a'}), ('list_files', {})])",
		"while True:\n    pass",
		"print('x' * 100)",
		"def f(x):\n    return f(x)\nf(1)",
		"x = (1 +\n",
		"json.decode(json.encode({'a': [1, 2.5, None]}))",
		"s = 'ab'\nfor i in range(20):\n    s = s + s",
		"sum([1, 2]) + math.floor(2.5)",
		"call('nope', a=1).error",
		"read(path=[[[[]]]])",
	} {
		f.Add(seed)
	}
	reg, err := runtime.New(codemode.Option(codemode.Config{Limits: fuzzLimits}))
	if err != nil {
		f.Fatal(err)
	}
	defer reg.Close(context.Background())
	for _, mk := range []func(testing.TB) (runtime.Definition, error){readTool, listTool} {
		d, err := mk(f)
		if err != nil {
			f.Fatal(err)
		}
		if _, err := reg.Global().Register(d); err != nil {
			f.Fatal(err)
		}
	}
	flaky, err := runtime.NewTool("flaky", "Fails", func(ctx context.Context, in struct{}, rc *runtime.RunContext) (string, error) {
		return "", runtime.NewError("FlakyError", "FLAKY", "boom")
	}, runtime.WithParallel())
	if err != nil {
		f.Fatal(err)
	}
	if _, err := reg.Global().Register(flaky); err != nil {
		f.Fatal(err)
	}
	s, err := reg.NewScope("agent")
	if err != nil {
		f.Fatal(err)
	}
	if err := s.SetPresentation(runtime.PresentationCode); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, program string) {
		args, err := json.Marshal(map[string]string{"code": program})
		if err != nil {
			return
		}
		done := make(chan *runtime.Result, 1)
		go func() {
			done <- s.Execute(context.Background(), runtime.Call{ID: "rc", Name: "run_code", Arguments: json.RawMessage(args)})
		}()
		var res *runtime.Result
		select {
		case res = <-done:
		case <-time.After(fuzzLimits.Time + waitLimit):
			t.Fatalf("run_code did not return for %q\n%s", program, goroutineDump())
		}
		if res.IsError() {
			if c := res.Code(); c != codemode.CodeLimit && c != codemode.CodeError {
				t.Fatalf("program %q: failure %q [%s] is neither a limit nor a program error", program, res.ErrorMessage(), c)
			}
			return
		}
		b, _ := res.Value()
		var v programValue
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("program %q: value %s: %v", program, b, err)
		}
		if v.Calls > fuzzLimits.Calls || len(v.Output) > fuzzLimits.Output || len(v.Value) > fuzzLimits.Output {
			t.Fatalf("program %q: past its limits: %d calls, %d bytes of output, %d bytes of value", program, v.Calls, len(v.Output), len(v.Value))
		}
	})
}
