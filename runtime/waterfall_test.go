package runtime

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolscope/toolscope/internal/core"
)

// traceHook is a hook of the test waterfall: it is told its next and
// returns a decision (a string).
type traceHook func(next func() (string, error)) (string, error)

// traceHooks calls traceHook hooks (the hooks record themselves).
type traceHooks struct{}

func (c traceHooks) call(hook any, next func() (string, error)) (string, error) {
	return hook.(traceHook)(next)
}

func (traceHooks) innermost() string { return "default" }

// TestWaterfall_R52_R68 runs the one waterfall both pre-execute and
// post-execute use, without a registry: hooks run outermost first, the
// innermost next gives the default, a hook that does not call next vetoes
// the later ones, an outer hook may override the inner decision, next runs
// the rest at most once, and an error is the waterfall's.
func TestWaterfall_R52_R68(t *testing.T) {
	errInner := errors.New("inner failed")
	type mk func(ran *[]int) []traceHook
	delegate := func(id int, ran *[]int) traceHook {
		return func(next func() (string, error)) (string, error) {
			*ran = append(*ran, id)
			return next()
		}
	}
	decide := func(id int, d string, ran *[]int) traceHook {
		return func(func() (string, error)) (string, error) {
			*ran = append(*ran, id)
			return d, nil
		}
	}
	cases := []struct {
		name  string
		hooks mk
		want  string
		err   error
		ran   []int
	}{
		{"no hooks: the default", func(*[]int) []traceHook { return nil }, "default", nil, nil},
		{"all delegate: the default, outermost first", func(ran *[]int) []traceHook {
			return []traceHook{delegate(0, ran), delegate(1, ran), delegate(2, ran)}
		}, "default", nil, []int{0, 1, 2}},
		{"a veto stops the later hooks", func(ran *[]int) []traceHook {
			return []traceHook{delegate(0, ran), decide(1, "deny", ran), delegate(2, ran)}
		}, "deny", nil, []int{0, 1}},
		{"the outer overrides the inner", func(ran *[]int) []traceHook {
			return []traceHook{func(next func() (string, error)) (string, error) {
				*ran = append(*ran, 0)
				if d, _ := next(); d == "deny" {
					return "allow", nil
				}
				return "?", nil
			}, decide(1, "deny", ran)}
		}, "allow", nil, []int{0, 1}},
		{"next twice runs the rest once", func(ran *[]int) []traceHook {
			return []traceHook{func(next func() (string, error)) (string, error) {
				*ran = append(*ran, 0)
				a, _ := next()
				b, _ := next()
				return a + "+" + b, nil
			}, decide(1, "ask", ran)}
		}, "ask+ask", nil, []int{0, 1}},
		{"an inner error reaches the outer's next", func(ran *[]int) []traceHook {
			return []traceHook{delegate(0, ran), func(func() (string, error)) (string, error) {
				*ran = append(*ran, 1)
				return "", errInner
			}}
		}, "", errInner, []int{0, 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var ran []int
			hooks := tc.hooks(&ran)
			list := make([]core.Entry, len(hooks))
			for i, h := range hooks {
				list[i] = core.Entry{Seq: int64(i), Payload: h}
			}
			got, err := runWaterfall[string](traceHooks{}, list)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.ran, ran, fmt.Sprintf("hooks run: %v", ran))
		})
	}
}
