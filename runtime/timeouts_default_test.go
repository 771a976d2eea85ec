package runtime_test

import (
	"context"
	"encoding/json"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolscope/toolscope/runtime"
)

// R83 (issue 25, item 7): a declared timeout applies by default;
// WithoutTimeouts opts out, WithTimeouts (deprecated) turns it back on, the
// last option given wins, and TimeoutHook registered by hand enforces it
// whatever the option. The table is (declared, registry options, hook by
// hand) → applies. No timing is asserted: a body that is timed out waits
// for its ctx (bounded by nestTimeout); one that is not returns after five
// times the declared timeout, which only a deadline could cut short.
func TestTimeouts_R83_DeclaredTimeoutsApplyByDefault(t *testing.T) {
	const declared = 10 * time.Millisecond
	cases := []struct {
		name     string
		declared bool
		opts     []runtime.Option
		hook     bool
		applies  bool
	}{
		{"declared, default", true, nil, false, true},
		{"declared, WithoutTimeouts", true, []runtime.Option{runtime.WithoutTimeouts()}, false, false},
		{"declared, WithTimeouts", true, []runtime.Option{runtime.WithTimeouts()}, false, true},
		{"declared, WithoutTimeouts then WithTimeouts", true, []runtime.Option{runtime.WithoutTimeouts(), runtime.WithTimeouts()}, false, true},
		{"declared, WithTimeouts then WithoutTimeouts", true, []runtime.Option{runtime.WithTimeouts(), runtime.WithoutTimeouts()}, false, false},
		{"declared, WithoutTimeouts, TimeoutHook by hand", true, []runtime.Option{runtime.WithoutTimeouts()}, true, true},
		{"declared, default, TimeoutHook by hand too", true, nil, true, true},
		{"not declared, default", false, nil, false, false},
		{"not declared, TimeoutHook by hand", false, nil, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reg := r3Reg(t, tc.opts...)
			def := r3Tool("slow", func(ctx context.Context, _ json.RawMessage, _ *runtime.RunContext) (any, error) {
				wait := nestTimeout // a timed-out body waits for its deadline
				if !tc.applies {
					wait = 5 * declared
				}
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-time.After(wait):
					return "ran to the end", nil
				}
			})
			if tc.declared {
				d := declared
				def.Timeout = &d
			}
			r3M(reg.Global().Register(def))
			if tc.hook {
				r3M(reg.Global().OnExecute(reg.TimeoutHook()))
			}
			res := nestAwait(t, nestGo(reg.Global(), context.Background(), runtime.Call{ID: "c", Name: "slow", Arguments: json.RawMessage(`{}`)}))
			if tc.applies {
				assert.Equal(t, runtime.CodeToolTimeout, res.Code(), res.ErrorMessage())
				assert.Equal(t, "tool call timed out after 10ms", res.ErrorMessage())
				return
			}
			nestOK(t, res)
		})
	}
}

// R83: a declared timeout is counted from dispatch, not from entry: a call
// that waited for its scope's admission far longer than its timeout still
// gets the whole declared time for its body. synctest's clock makes the
// waits exact without real sleeping.
func TestTimeouts_R83_CountedFromDispatchNotEntry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg, err := runtime.New()
		require.NoError(t, err)
		defer func() { _ = reg.Close(context.Background()) }()
		s, err := reg.NewScope("a")
		require.NoError(t, err)
		release := make(chan struct{})
		r3M(s.Register(r3Tool("hold", func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) {
			<-release
			return "held", nil
		})))
		work := r3Tool("work", func(ctx context.Context, _ json.RawMessage, _ *runtime.RunContext) (any, error) {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(80 * time.Millisecond): // within its 100 ms
				return "done", nil
			}
		})
		d := 100 * time.Millisecond
		work.Timeout = &d
		r3M(s.Register(work))

		held := make(chan *runtime.Result, 1)
		go func() {
			held <- s.Execute(context.Background(), runtime.Call{ID: "h", Name: "hold", Arguments: json.RawMessage(`{}`)})
		}()
		synctest.Wait() // hold runs, exclusive
		got := make(chan *runtime.Result, 1)
		go func() {
			got <- s.Execute(context.Background(), runtime.Call{ID: "w", Name: "work", Arguments: json.RawMessage(`{}`)})
		}()
		synctest.Wait()             // work waits for the scope
		time.Sleep(5 * time.Second) // fifty times its timeout, waiting
		close(release)
		nestOK(t, <-held)
		res := <-got
		require.False(t, res.IsError(), "a call that waited for admission lost its timeout: %s", res.ErrorMessage())
	})
}
