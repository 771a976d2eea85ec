package runtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/toolscope/toolscope/runtime"
)

// R80/N5: a call's ctx is done once the call has ended, however the ending
// races with someone first asking the ctx for Done: the call's release and
// the ctx's lazily built cancel link meet without a lock, and either side
// ends the link. A goroutine started by the body asks for Done while the
// call ends; every such Done channel must close.
func TestCallCtx_R80_DoneAskedWhileTheCallEndsStillCloses(t *testing.T) {
	reg := mustNew(t)
	got := make(chan (<-chan struct{}), 1)
	tool, err := runtime.NewTool("t", "t", func(ctx context.Context, _ struct{}, _ *runtime.RunContext) (string, error) {
		go func() { got <- ctx.Done() }()
		return "ok", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Global().Register(tool); err != nil {
		t.Fatal(err)
	}
	for i := range 2000 {
		if res := reg.Global().Execute(context.Background(), runtime.Call{Name: "t", Arguments: map[string]any{}}); res.IsError() {
			t.Fatal(res.ErrorMessage())
		}
		var done <-chan struct{}
		select {
		case done = <-got:
		case <-time.After(waitLimit):
			failHung(t, "the body's goroutine never asked for Done")
			t.FailNow()
		}
		select {
		case <-done:
		case <-time.After(waitLimit):
			failHung(t, "a call's ctx stayed live after the call ended")
			t.Fatalf("iteration %d: ctx not done", i)
		}
	}
}
