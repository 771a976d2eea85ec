package runtime

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The pure steps of the pipeline (fold.go), without a registry.

var (
	foldCtxA    = ContextMessage{Role: "r", Text: "a"}
	foldCtxB    = ContextMessage{Role: "r", Text: "b"}
	foldCtxD    = ContextMessage{Role: "r", Text: "deferred"}
	foldBadData = Block{Type: "image", Data: json.RawMessage(`{`)}
	foldOwn     = &execState{} // the execution whose dispatch stamped a result
)

// foldSuccess is a success as success creation makes it, stamped by foldOwn.
func foldSuccess() *Result {
	return &Result{value: []byte(`"v"`), content: []Block{Text("v")}, meta: []byte(`{"m":1}`),
		contexts: []ContextMessage{foldCtxA}, concludes: true, stamp: foldOwn}
}

// foldFailure is a coded failure with wrapper metadata and contexts.
func foldFailure() *Result {
	res := codedFailure(NameAbort, CodeAborted, "boom")
	res.meta, res.contexts = []byte(`{"m":2}`), []ContextMessage{foldCtxA}
	return res
}

// TestNormalize_R65 is R65 for each kind of result an around hook may
// return, and the context merge in front.
func TestNormalize_R65(t *testing.T) {
	foreignSuccess := foldSuccess()
	foreignSuccess.stamp = nil
	valuedFailure := foldFailure()
	valuedFailure.value, valuedFailure.concludes = []byte(`1`), true // cannot be built, but must not leak
	lossy := Success(struct{}{})
	require.True(t, lossy.lossyValue())
	cases := []struct {
		name    string
		out     *Result
		own     bool
		rebuild bool
		want    *Result // nil: out itself
	}{
		{"own success passes through", foldSuccess(), true, false, nil},
		{"own failure passes through", foldFailure(), true, false, nil},
		{"foreign success is rebuilt", foreignSuccess, false, true, nil},
		{"derived own success is foreign", foldSuccess().WithContexts(foldCtxB), false, true, nil},
		{"lossy Success is a foreign success", lossy, false, true, nil},
		{"foreign failure keeps all but value and mark", valuedFailure, false, false, foldFailure()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, rebuild := normalized(tc.out, tc.own)
			assert.Equal(t, tc.rebuild, rebuild)
			switch {
			case tc.rebuild:
				assert.Nil(t, res)
			case tc.want == nil:
				assert.Same(t, tc.out, res)
			default:
				assert.Equal(t, tc.want, res)
				assert.NotSame(t, tc.out, res, "the given result is not changed")
			}
		})
	}

	t.Run("deferred contexts go first", func(t *testing.T) {
		out := foldSuccess()
		got := withContextsFirst([]ContextMessage{foldCtxD}, out)
		assert.Equal(t, []ContextMessage{foldCtxD, foldCtxA}, got.contexts)
		assert.Equal(t, []ContextMessage{foldCtxA}, out.contexts, "the given result is not changed")
		assert.Same(t, out, withContextsFirst(nil, out), "nothing deferred: the result itself")
	})
}

// TestFoldPost_R69_R70_R71 is what each post-execute decision makes of a
// success and of a failure, contexts included.
func TestFoldPost_R69_R70_R71(t *testing.T) {
	hookErr := NewError(NameToolOutput, CodeInvalidToolOutput, "post failed")
	feedback := []Block{Text("no"), {Type: "image", Data: json.RawMessage(`{}`)}}
	type want struct {
		rebuild  bool
		same     bool // the given result itself
		isError  bool
		msg      string
		code     Code
		value    string // "" none
		content  []Block
		meta     bool
		contexts []ContextMessage
		concl    bool
	}
	cases := []struct {
		name string
		res  *Result
		dec  PostDecision
		err  error
		want want
	}{
		{"Accept keeps a success", foldSuccess(), Accept(), nil,
			want{same: true, value: `"v"`, content: []Block{Text("v")}, meta: true, contexts: []ContextMessage{foldCtxA}, concl: true}},
		{"Accept with contexts appends them", foldSuccess(), Accept().WithContexts(foldCtxB), nil,
			want{value: `"v"`, content: []Block{Text("v")}, meta: true, contexts: []ContextMessage{foldCtxA, foldCtxB}, concl: true}},
		{"AcceptContent replaces the content only", foldSuccess(), AcceptContent(Text("c")), nil,
			want{value: `"v"`, content: []Block{Text("c")}, meta: true, contexts: []ContextMessage{foldCtxA}, concl: true}},
		{"AcceptContent on a failure keeps it a failure", foldFailure(), AcceptContent(Text("c")), nil,
			want{isError: true, msg: "boom", code: CodeAborted, content: []Block{Text("c")}, meta: true, contexts: []ContextMessage{foldCtxA}}},
		{"AcceptContent empty is empty content", foldSuccess(), AcceptContent(), nil,
			want{value: `"v"`, content: []Block{}, meta: true, contexts: []ContextMessage{foldCtxA}, concl: true}},
		{"AcceptContent not JSON-safe", foldSuccess(), AcceptContent(foldBadData), nil,
			want{isError: true, msg: "tool result must be losslessly JSON-serializable", content: []Block{Text("Error: tool result must be losslessly JSON-serializable")}}},
		{"AcceptValue on a success is rebuilt", foldSuccess(), AcceptValue(nil), nil, want{rebuild: true}},
		{"AcceptValue on a failure is a misuse", foldFailure(), AcceptValue(1), nil,
			want{isError: true, msg: "post-execute hook cannot replace the value of a failed result",
				content: []Block{Text("Error: post-execute hook cannot replace the value of a failed result")}}},
		{"content and value together is a misuse", foldSuccess(), PostDecision{Content: []Block{Text("c")}, Value: 1, HasValue: true}, nil,
			want{isError: true, msg: "post-execute hook: an accept decision cannot replace both value and content",
				content: []Block{Text("Error: post-execute hook: an accept decision cannot replace both value and content")}}},
		{"Blocked: feedback, its message, the decision's contexts only", foldSuccess(), Blocked(feedback...).WithContexts(foldCtxB), nil,
			want{isError: true, msg: "no\n[image content]", content: feedback, contexts: []ContextMessage{foldCtxB}}},
		{"Blocked with no feedback", foldFailure(), Blocked(), nil,
			want{isError: true, msg: "tool result blocked by post-execute policy", content: []Block{}}},
		{"a failing hook: its failure, no contexts", foldSuccess(), Accept().WithContexts(foldCtxB), hookErr,
			want{isError: true, msg: "post failed", code: CodeInvalidToolOutput, content: []Block{Text("Error: post failed")}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			given := *tc.res
			out, rebuild := foldPost(tc.res, tc.dec, tc.err)
			assert.Equal(t, given, *tc.res, "the given result is not changed")
			w := tc.want
			require.Equal(t, w.rebuild, rebuild)
			if w.rebuild {
				assert.Nil(t, out)
				return
			}
			if w.same {
				assert.Same(t, tc.res, out)
			} else {
				assert.NotSame(t, tc.res, out)
				assert.Nil(t, out.stamp, "a new result is no execution's own")
			}
			assert.Equal(t, w.isError, out.IsError())
			assert.Equal(t, w.msg, out.ErrorMessage())
			assert.Equal(t, w.code, out.Code())
			v, ok := out.Value()
			assert.Equal(t, w.value != "", ok)
			if ok {
				assert.JSONEq(t, w.value, string(v))
			}
			assert.Equal(t, w.content, out.Content())
			_, hasMeta := out.Meta()
			assert.Equal(t, w.meta, hasMeta)
			assert.Equal(t, w.contexts, out.AdditionalContexts())
			assert.Equal(t, w.concl, out.ConcludesTurn())
		})
	}

	t.Run("a rebuilt success: the result's contexts, then the decision's", func(t *testing.T) {
		res, rebuilt := foldSuccess(), &Result{value: []byte(`2`), content: []Block{Text("2")}}
		out := acceptedContexts(res, rebuilt, []ContextMessage{foldCtxB})
		assert.Equal(t, []ContextMessage{foldCtxA, foldCtxB}, out.contexts)
		assert.Equal(t, []byte(`2`), out.value)
		assert.Nil(t, rebuilt.contexts, "the given result is not changed")
		none := acceptedContexts(&Result{}, &Result{value: []byte(`2`)}, nil)
		assert.Nil(t, none.contexts, "no contexts at all: none (R70)")
	})
}

// TestFinish_R72_R74 is materialization and what the finalizer's return
// makes of a result: content only, or a failure.
func TestFinish_R72_R74(t *testing.T) {
	t.Run("materialize", func(t *testing.T) {
		res := foldSuccess()
		assert.Same(t, res, materialized(res))
		bad := &Result{value: []byte(`1`), content: []Block{foldBadData}}
		got := materialized(bad)
		assert.True(t, got.IsError())
		assert.Equal(t, "tool result must be losslessly JSON-serializable", got.ErrorMessage())
		assert.Nil(t, got.contexts, "materialization failure drops contexts (R77)")
	})
	cases := []struct {
		name    string
		res     *Result
		blocks  []Block
		err     error
		same    bool
		isError bool
		msg     string
		code    Code
		content []Block
	}{
		{"nil keeps the result", foldSuccess(), nil, nil, true, false, "", "", []Block{Text("v")}},
		{"blocks replace a success's content", foldSuccess(), []Block{Text("f")}, nil, false, false, "", "", []Block{Text("f")}},
		{"blocks replace a failure's content", foldFailure(), []Block{Text("f")}, nil, false, true, "boom", CodeAborted, []Block{Text("f")}},
		{"empty blocks are empty content", foldSuccess(), []Block{}, nil, false, false, "", "", []Block{}},
		{"blocks not JSON-safe: a failure", foldSuccess(), []Block{foldBadData}, nil, false, true,
			"tool result must be losslessly JSON-serializable", "", []Block{Text("Error: tool result must be losslessly JSON-serializable")}},
		{"a failing finalizer: its failure", foldSuccess(), []Block{Text("f")}, errors.New("fin"), false, true,
			"fin", "", []Block{Text("Error: fin")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			given := *tc.res
			out := finalized(tc.res, tc.blocks, tc.err)
			assert.Equal(t, given, *tc.res, "the given result is not changed")
			if tc.same {
				assert.Same(t, tc.res, out)
			}
			assert.Equal(t, tc.isError, out.IsError())
			assert.Equal(t, tc.msg, out.ErrorMessage())
			assert.Equal(t, tc.code, out.Code())
			assert.Equal(t, tc.content, out.Content())
			if !tc.isError || tc.res.isError && tc.err == nil && blocksSafe(tc.blocks) {
				// R74: everything but the content is the result's.
				n := *out
				n.content = tc.res.content
				assert.Equal(t, *tc.res, n)
			}
		})
	}
}
