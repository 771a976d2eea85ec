package codemode_test

import (
	"context"
	"encoding/json"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/toolscope/toolscope/codemode"
	"github.com/toolscope/toolscope/runtime"
)

// waitLimit bounds every wait of these tests.
const waitLimit = 30 * time.Second

func goroutineDump() string {
	var b strings.Builder
	if p := pprof.Lookup("goroutine"); p != nil {
		_ = p.WriteTo(&b, 2)
	}
	return b.String()
}

// await waits up to waitLimit for ch, failing with a goroutine dump.
func await(t testing.TB, ch <-chan struct{}, what string) bool {
	t.Helper()
	select {
	case <-ch:
		return true
	case <-time.After(waitLimit):
		t.Errorf("hang: %s\n--- goroutines ---\n%s", what, goroutineDump())
		return false
	}
}

// bounded runs f on its own goroutine and fails if it has not returned
// within waitLimit.
func bounded(t testing.TB, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	if !await(t, done, what) {
		t.FailNow()
	}
}

// newReg is a registry with run_code installed (cfg) and opts.
func newReg(t testing.TB, cfg codemode.Config, opts ...runtime.Option) *runtime.Registry {
	t.Helper()
	reg, err := runtime.New(append([]runtime.Option{codemode.Option(cfg)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Close(context.Background()) })
	return reg
}

// codeScope is a scope of reg presenting mode p.
func codeScope(t testing.TB, reg *runtime.Registry, key string, p runtime.Presentation) *runtime.Scope {
	t.Helper()
	s, err := reg.NewScope(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetPresentation(p); err != nil {
		t.Fatal(err)
	}
	return s
}

// mustRegister registers def in s.
func mustRegister(t testing.TB, s *runtime.Scope, def runtime.Definition, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Register(def); err != nil {
		t.Fatal(err)
	}
}

type pathIn struct {
	Path string `json:"path"`
}

// readTool answers "contents of <path>".
func readTool(t testing.TB) (runtime.Definition, error) {
	return runtime.NewTool("read", "Read a file", func(ctx context.Context, in pathIn, rc *runtime.RunContext) (string, error) {
		return "contents of " + in.Path, nil
	}, runtime.WithParallel())
}

type listOut struct {
	Files []string `json:"files"`
}

// listTool returns a structured value.
func listTool(t testing.TB) (runtime.Definition, error) {
	return runtime.NewTool("list_files", "List files", func(ctx context.Context, in struct{}, rc *runtime.RunContext) (listOut, error) {
		return listOut{Files: []string{"a.txt", "b.txt", "c.md"}}, nil
	})
}

// runCode runs program through s's run_code.
func runCode(t testing.TB, s *runtime.Scope, program string) *runtime.Result {
	t.Helper()
	args, _ := json.Marshal(map[string]string{"code": program})
	var res *runtime.Result
	bounded(t, "run_code", func() {
		res = s.Execute(context.Background(), runtime.Call{ID: "rc", Name: "run_code", Arguments: json.RawMessage(args)})
	})
	return res
}

// programValue decodes run_code's value.
type programValue struct {
	Value  json.RawMessage `json:"value"`
	Output string          `json:"output"`
	Calls  int             `json:"calls"`
}

func valueOf(t testing.TB, res *runtime.Result) programValue {
	t.Helper()
	if res.IsError() {
		t.Fatalf("run_code failed: %s [%s]", res.ErrorMessage(), res.Code())
	}
	b, _ := res.Value()
	var v programValue
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func timeAfter() <-chan time.Time { return time.After(waitLimit) }

type ctxT = context.Context
