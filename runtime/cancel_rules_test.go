package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolscope/toolscope/runtime"
)

// Cancellation windows (docs/contract.md §7.9), driven with channels, never sleeps.

func r3Counting(s *runtime.Scope, name string, v any) *atomic.Int32 {
	var n atomic.Int32
	r3M(s.Register(r3Tool(name, func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) {
		n.Add(1)
		return v, nil
	})))
	return &n
}

func TestCancel_R79_PreCancelledEntry(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	var tr r3Trace
	d := r3Tool("t", func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) {
		tr.add("body")
		return 1, nil
	})
	d.FinalizeContent = func(context.Context, runtime.Execution, *runtime.Result) ([]runtime.Block, error) {
		tr.add("finalizer")
		return nil, nil
	}
	r3M(s.Register(d))
	r3M(s.OnPreExecute(func(_ context.Context, e runtime.Execution, next func() (runtime.Decision, error)) (runtime.Decision, error) {
		tr.add("pre")
		return next()
	}))
	r3M(s.Guard(func(context.Context, runtime.Execution) (string, bool) { tr.add("guard"); return "", false }))
	r3M(s.OnExecute(func(ctx context.Context, e runtime.Execution, next func(context.Context) *runtime.Result) (*runtime.Result, error) {
		tr.add("around")
		return next(nil), nil
	}))
	r3M(s.OnPostExecute(func(_ context.Context, e runtime.Execution, _ *runtime.Result, next func() (runtime.PostDecision, error)) (runtime.PostDecision, error) {
		tr.add("post")
		return next()
	}))
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), r3Key{}, "caller"))
	cancel()
	r3M(s.OnResult(func(_ context.Context, e runtime.Execution, r *runtime.Result) error {
		tr.add("observer")
		assert.False(t, e.Token().IsZero(), "observer view has the token")
		assert.Equal(t, "caller", e.Context().Value(r3Key{}), "observer view has the caller ctx")
		assert.Error(t, e.Context().Err())
		_, ok := e.Arguments()
		assert.True(t, ok)
		return nil
	}))
	r3ABD(t, r3Exec(t, s, ctx, r3Call("t", nil)))
	assert.Equal(t, []string{"finalizer", "observer"}, tr.get())
}

func TestCancel_R79_PreCancelledEntryApproverNotCalled(t *testing.T) {
	var asked atomic.Bool
	reg := r3Reg(t, runtime.WithApprover(func(context.Context, runtime.ApprovalRequest) (runtime.ApprovalOutcome, error) {
		asked.Store(true)
		return runtime.ApprovalAllowedOnce, nil
	}))
	s := r3Scope(t, reg, "a")
	r3M(s.Register(r3Const("t", 1)))
	r3M(s.OnPreExecute(func(context.Context, runtime.Execution, func() (runtime.Decision, error)) (runtime.Decision, error) {
		return runtime.Ask(), nil
	}))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r3ABD(t, r3Exec(t, s, ctx, r3Call("t", nil)))
	assert.False(t, asked.Load())
}

// R80 row 1: cancelled during pre-execute / approval / guards, outcome allow.
func TestCancel_R80_DuringGateOutcomeAllow(t *testing.T) {
	for _, where := range []string{"pre-execute", "approval", "guard"} {
		t.Run(where, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			reg := r3Reg(t, runtime.WithApprover(func(context.Context, runtime.ApprovalRequest) (runtime.ApprovalOutcome, error) {
				if where == "approval" {
					cancel()
				}
				return runtime.ApprovalAllowedOnce, nil
			}))
			s := r3Scope(t, reg, "a")
			body := r3Counting(s, "t", 1)
			r3M(s.OnPreExecute(func(_ context.Context, e runtime.Execution, next func() (runtime.Decision, error)) (runtime.Decision, error) {
				switch where {
				case "pre-execute":
					cancel()
				case "approval":
					return runtime.Ask(), nil
				}
				return next()
			}))
			r3M(s.Guard(func(context.Context, runtime.Execution) (string, bool) {
				if where == "guard" {
					cancel()
				}
				return "", false
			}))
			var postSaw atomic.Value
			r3M(s.OnPostExecute(func(_ context.Context, e runtime.Execution, r *runtime.Result, next func() (runtime.PostDecision, error)) (runtime.PostDecision, error) {
				postSaw.Store(r.Code())
				return next()
			}))
			r3ABD(t, r3Exec(t, s, ctx, r3Call("t", nil)))
			assert.Equal(t, runtime.CodeAbortedBeforeDispatch, postSaw.Load(), "post result")
			assert.Equal(t, int32(0), body.Load())
		})
	}
}

// R80 row 2: same windows, outcome deny / guard denial / hook failure: kept.
func TestCancel_R80_DuringGateDenialOrFailureKept(t *testing.T) {
	cases := map[string]struct {
		pre      runtime.PreExecuteHook
		guard    runtime.Guard
		approver runtime.ApprovalOutcome
		want     string
	}{
		"pre-execute deny": {pre: func(context.Context, runtime.Execution, func() (runtime.Decision, error)) (runtime.Decision, error) {
			return runtime.Deny("denied"), nil
		}, want: "denied"},
		"pre-execute failure": {pre: func(context.Context, runtime.Execution, func() (runtime.Decision, error)) (runtime.Decision, error) {
			return runtime.Decision{}, errors.New("pre failed")
		}, want: "pre failed"},
		"guard denial":  {guard: func(context.Context, runtime.Execution) (string, bool) { return "guard denied", true }, want: "guard denied"},
		"guard failure": {guard: func(context.Context, runtime.Execution) (string, bool) { panic("guard failed") }, want: "guard failed"},
		"approval rejected": {pre: func(context.Context, runtime.Execution, func() (runtime.Decision, error)) (runtime.Decision, error) {
			return runtime.Ask(), nil
		}, approver: runtime.ApprovalRejected, want: `approval for tool "t" was refused`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			reg := r3Reg(t, runtime.WithApprover(func(context.Context, runtime.ApprovalRequest) (runtime.ApprovalOutcome, error) {
				cancel()
				return c.approver, nil
			}))
			s := r3Scope(t, reg, "a")
			r3Counting(s, "t", 1)
			if c.pre != nil {
				r3M(s.OnPreExecute(func(_ context.Context, e runtime.Execution, next func() (runtime.Decision, error)) (runtime.Decision, error) {
					cancel()
					return c.pre(e.Context(), e, next)
				}))
			}
			if c.guard != nil {
				r3M(s.Guard(func(_ context.Context, e runtime.Execution) (string, bool) {
					cancel()
					return c.guard(e.Context(), e)
				}))
			}
			r3Plain(t, r3Exec(t, s, ctx, r3Call("t", nil)), c.want)
		})
	}
}

// R80 row 3 is in TestExecute_R55_ApprovalTable ("cancelled and caller cancelled").

// R80 row 4: cancelled inside an around hook before it calls next.
func TestCancel_R80_InsideAroundBeforeNext(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	body := r3Counting(s, "t", 1)
	ctx, cancel := context.WithCancel(context.Background())
	var inner atomic.Value
	r3M(s.OnExecute(func(c context.Context, e runtime.Execution, next func(context.Context) *runtime.Result) (*runtime.Result, error) {
		cancel()
		r := next(nil)
		inner.Store(r.Code())
		return r, nil
	}))
	post := r3PostSpy(t, s)
	r3ABD(t, r3Exec(t, s, ctx, r3Call("t", nil)))
	assert.Equal(t, runtime.CodeAbortedBeforeDispatch, inner.Load(), "base sees a cancelled ctx")
	assert.Equal(t, int32(0), body.Load())
	assert.Equal(t, int32(1), post.Load())
}

// R80 row 5: wrapper short-circuits with success while the caller cancelled.
func TestCancel_R80_ShortCircuitSuccessAfterCancelKeepsWrapperContexts(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	body := r3Counting(s, "t", 1)
	ctx, cancel := context.WithCancel(context.Background())
	w := runtime.ContextMessage{Role: "system", Text: "wrapper"}
	r3M(s.OnExecute(func(c context.Context, e runtime.Execution, next func(context.Context) *runtime.Result) (*runtime.Result, error) {
		cancel()
		return runtime.Success(2).WithContexts(w), nil
	}))
	res := r3Exec(t, s, ctx, r3Call("t", nil))
	r3ABD(t, res)
	assert.Equal(t, []runtime.ContextMessage{w}, res.AdditionalContexts())
	assert.Equal(t, int32(0), body.Load())
}

// R80 row 6: wrapper passes an already-cancelled ctx, caller fine.
func TestCancel_R80_WrapperPassesCancelledCtx(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	body := r3Counting(s, "t", 1)
	r3M(s.OnExecute(func(c context.Context, e runtime.Execution, next func(context.Context) *runtime.Result) (*runtime.Result, error) {
		dead, cancel := context.WithCancel(c)
		cancel()
		return next(dead), nil
	}))
	r3ABD(t, r3Exec(t, s, context.Background(), r3Call("t", nil)))
	assert.Equal(t, int32(0), body.Load())
}

// r3BlockingTool registers a tool whose body signals started, waits for its
// ctx to be cancelled, defers a context and then succeeds or fails.
func r3BlockingTool(s *runtime.Scope, fail bool) (started chan struct{}) {
	started = make(chan struct{})
	r3M(s.Register(r3Tool("t", func(ctx context.Context, _ json.RawMessage, rc *runtime.RunContext) (any, error) {
		rc.DeferContext(runtime.ContextMessage{Role: "system", Text: "deferred"})
		close(started)
		<-ctx.Done()
		if fail {
			return nil, runtime.NewError("BodyErr", "BODY", "body gave up")
		}
		return "done anyway", nil
	})))
	return started
}

// R80 row 7: cancelled during the body, body then succeeds.
func TestCancel_R80_DuringBodyThenSuccess(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	started := r3BlockingTool(s, false)
	post := r3PostSpy(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan *runtime.Result, 1)
	go func() { done <- s.Execute(ctx, r3Call("t", nil)) }()
	r3Await(t, started)
	cancel()
	res := r3Await(t, done)
	r3Aborted(t, res)
	assert.Equal(t, []runtime.ContextMessage{{Role: "system", Text: "deferred"}}, res.AdditionalContexts(), "deferred contexts kept")
	assert.Equal(t, int32(1), post.Load())
}

// R80 row 8: cancelled during the body, body then fails: its failure is kept.
func TestCancel_R80_DuringBodyThenFailure(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	started := r3BlockingTool(s, true)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan *runtime.Result, 1)
	go func() { done <- s.Execute(ctx, r3Call("t", nil)) }()
	r3Await(t, started)
	cancel()
	res := r3Await(t, done)
	r3Coded(t, res, "BodyErr", "BODY", "body gave up")
	assert.Equal(t, []runtime.ContextMessage{{Role: "system", Text: "deferred"}}, res.AdditionalContexts())
}

// R80 row 9: cancelled after the body, while a wrapper or post-execute waits.
func TestCancel_R80_AfterBodyWhileWrapperWaits(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	r3M(s.Register(r3Tool("t", func(_ context.Context, _ json.RawMessage, rc *runtime.RunContext) (any, error) {
		rc.DeferContext(runtime.ContextMessage{Role: "system", Text: "deferred"})
		return 1, nil
	})))
	ctx, cancel := context.WithCancel(context.Background())
	r3M(s.OnExecute(func(c context.Context, e runtime.Execution, next func(context.Context) *runtime.Result) (*runtime.Result, error) {
		r := next(nil)
		assert.False(t, r.IsError())
		cancel()
		return r, nil
	}))
	var postSaw atomic.Value
	r3M(s.OnPostExecute(func(_ context.Context, e runtime.Execution, r *runtime.Result, next func() (runtime.PostDecision, error)) (runtime.PostDecision, error) {
		postSaw.Store(r.Code())
		return next()
	}))
	res := r3Exec(t, s, ctx, r3Call("t", nil))
	r3Aborted(t, res)
	assert.Equal(t, runtime.CodeAborted, postSaw.Load(), "replaced before post-execute")
	assert.Equal(t, []runtime.ContextMessage{{Role: "system", Text: "deferred"}}, res.AdditionalContexts())
}

func TestCancel_R80_AfterBodyWhilePostExecuteWaits(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	r3M(s.Register(r3Tool("t", func(_ context.Context, _ json.RawMessage, rc *runtime.RunContext) (any, error) {
		rc.DeferContext(runtime.ContextMessage{Role: "system", Text: "deferred"})
		return 1, nil
	})))
	ctx, cancel := context.WithCancel(context.Background())
	dec := runtime.ContextMessage{Role: "system", Text: "decision"}
	r3M(s.OnPostExecute(func(_ context.Context, e runtime.Execution, r *runtime.Result, next func() (runtime.PostDecision, error)) (runtime.PostDecision, error) {
		assert.False(t, r.IsError())
		cancel()
		return runtime.Accept().WithContexts(dec), nil
	}))
	res := r3Exec(t, s, ctx, r3Call("t", nil))
	r3Aborted(t, res)
	assert.Equal(t, []runtime.ContextMessage{{Role: "system", Text: "deferred"}, dec}, res.AdditionalContexts(), "post decision's contexts kept too")
}

func TestCancel_R80_ShortCircuitAfterGateBeforeDispatchNoBodyIsABD(t *testing.T) {
	// The replacement after post-execute: body never invoked ⇒ ABORTED_BEFORE_DISPATCH.
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	body := r3Counting(s, "t", 1)
	ctx, cancel := context.WithCancel(context.Background())
	r3M(s.OnExecute(func(c context.Context, e runtime.Execution, next func(context.Context) *runtime.Result) (*runtime.Result, error) {
		return runtime.Success(3), nil
	}))
	r3M(s.OnPostExecute(func(_ context.Context, e runtime.Execution, r *runtime.Result, next func() (runtime.PostDecision, error)) (runtime.PostDecision, error) {
		cancel()
		return next()
	}))
	r3ABD(t, r3Exec(t, s, ctx, r3Call("t", nil)))
	assert.Equal(t, int32(0), body.Load())
}

// R80 row 10: wrapper failure, post failure or TOOL_TIMEOUT after cancellation are kept.
func TestCancel_R80_FailuresAfterCancellationKept(t *testing.T) {
	t.Run("wrapper failure", func(t *testing.T) {
		reg := r3Reg(t)
		s := r3Scope(t, reg, "a")
		r3Counting(s, "t", 1)
		ctx, cancel := context.WithCancel(context.Background())
		r3M(s.OnExecute(func(c context.Context, e runtime.Execution, next func(context.Context) *runtime.Result) (*runtime.Result, error) {
			_ = next(nil)
			cancel()
			return nil, errors.New("wrapper failed")
		}))
		r3Plain(t, r3Exec(t, s, ctx, r3Call("t", nil)), "wrapper failed")
	})
	t.Run("post failure", func(t *testing.T) {
		reg := r3Reg(t)
		s := r3Scope(t, reg, "a")
		r3Counting(s, "t", 1)
		ctx, cancel := context.WithCancel(context.Background())
		r3M(s.OnPostExecute(func(_ context.Context, e runtime.Execution, r *runtime.Result, next func() (runtime.PostDecision, error)) (runtime.PostDecision, error) {
			cancel()
			panic("post failed")
		}))
		r3Plain(t, r3Exec(t, s, ctx, r3Call("t", nil)), "post failed")
	})
	t.Run("TOOL_TIMEOUT", func(t *testing.T) {
		reg := r3Reg(t)
		s := r3Scope(t, reg, "a")
		r3M(s.Register(r3TimeoutTool("t", time.Millisecond)))
		r3M(s.OnExecute(reg.TimeoutHook()))
		ctx, cancel := context.WithCancel(context.Background())
		r3M(s.OnPostExecute(func(_ context.Context, e runtime.Execution, r *runtime.Result, next func() (runtime.PostDecision, error)) (runtime.PostDecision, error) {
			assert.Equal(t, runtime.CodeToolTimeout, r.Code())
			cancel()
			return next()
		}))
		r3Coded(t, r3Exec(t, s, ctx, r3Call("t", nil)), runtime.NameToolTimeout, runtime.CodeToolTimeout, "tool call timed out after 1ms")
	})
}

// R81/R82: hooks and the approver are awaited; cancellation is rechecked after they return.
func TestCancel_R82_HooksAwaitedAndRechecked(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	body := r3Counting(s, "t", 1)
	entered, release := make(chan struct{}), make(chan struct{})
	var hookDone atomic.Bool
	r3M(s.OnPreExecute(func(_ context.Context, e runtime.Execution, next func() (runtime.Decision, error)) (runtime.Decision, error) {
		close(entered)
		<-release
		hookDone.Store(true)
		return next()
	}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan *runtime.Result, 1)
	go func() { done <- s.Execute(ctx, r3Call("t", nil)) }()
	r3Await(t, entered)
	cancel()
	select {
	case <-done:
		t.Fatal("Execute returned while a pre-execute hook still ran")
	default:
	}
	close(release)
	r3ABD(t, r3Await(t, done))
	assert.True(t, hookDone.Load())
	assert.Equal(t, int32(0), body.Load())
}

func TestCancel_R82_ApproverAwaitedAfterCancel(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var approverDone atomic.Bool
	reg := r3Reg(t, runtime.WithApprover(func(ctx context.Context, _ runtime.ApprovalRequest) (runtime.ApprovalOutcome, error) {
		close(entered)
		<-ctx.Done()
		<-release
		approverDone.Store(true)
		return runtime.ApprovalCancelled, nil
	}))
	s := r3Scope(t, reg, "a")
	r3Counting(s, "t", 1)
	r3M(s.OnPreExecute(func(context.Context, runtime.Execution, func() (runtime.Decision, error)) (runtime.Decision, error) {
		return runtime.Ask(), nil
	}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan *runtime.Result, 1)
	go func() { done <- s.Execute(ctx, r3Call("t", nil)) }()
	r3Await(t, entered)
	cancel()
	select {
	case <-done:
		t.Fatal("Execute returned while the approver still ran")
	default:
	}
	close(release)
	r3ABD(t, r3Await(t, done))
	assert.True(t, approverDone.Load())
}

func TestCancel_R81_UncooperativeBodyKeepsExecutePending(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	started, release := make(chan struct{}), make(chan struct{})
	r3M(s.Register(r3Tool("t", func(ctx context.Context, _ json.RawMessage, _ *runtime.RunContext) (any, error) {
		close(started)
		<-release // ignores ctx
		return 1, nil
	})))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan *runtime.Result, 1)
	go func() { done <- s.Execute(ctx, r3Call("t", nil)) }()
	r3Await(t, started)
	cancel()
	select {
	case <-done:
		t.Fatal("Execute returned before the body")
	default:
	}
	close(release)
	r3Aborted(t, r3Await(t, done))
}

// ---------------------------------------------------------------- R83

func r3TimeoutTool(name string, d time.Duration) runtime.Definition {
	def := r3Tool(name, func(ctx context.Context, _ json.RawMessage, _ *runtime.RunContext) (any, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	def.Timeout = &d
	return def
}

func TestCancel_R83_TimeoutHookOwnDeadline(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	r3M(s.Register(r3TimeoutTool("slow", time.Millisecond)))
	r3M(s.OnExecute(reg.TimeoutHook()))
	post := r3PostSpy(t, s)
	res := r3Exec(t, s, context.Background(), r3Call("slow", nil))
	r3Coded(t, res, runtime.NameToolTimeout, runtime.CodeToolTimeout, "tool call timed out after 1ms")
	assert.Equal(t, []runtime.Block{runtime.Text("Error: tool call timed out after 1ms")}, res.Content())
	assert.Equal(t, int32(1), post.Load(), "TOOL_TIMEOUT is a wrapper-authored failure that post-execute sees")
}

func TestCancel_R83_TimeoutHookFastToolSucceeds(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	d := r3Tool("fast", func(ctx context.Context, _ json.RawMessage, _ *runtime.RunContext) (any, error) {
		dl, ok := ctx.Deadline()
		assert.True(t, ok, "a tool with a timeout runs under a deadline")
		assert.False(t, dl.IsZero())
		return 1, nil
	})
	h := time.Hour
	d.Timeout = &h
	r3M(s.Register(d))
	r3M(s.OnExecute(reg.TimeoutHook()))
	r3Success(t, r3Exec(t, s, context.Background(), r3Call("fast", nil)), "1")
}

func TestCancel_R83_CallerCancellationIsNotATimeout(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	started := make(chan struct{})
	d := r3Tool("t", func(ctx context.Context, _ json.RawMessage, _ *runtime.RunContext) (any, error) {
		close(started)
		<-ctx.Done()
		return nil, errors.New("stopped: " + ctx.Err().Error())
	})
	h := time.Hour
	d.Timeout = &h
	r3M(s.Register(d))
	r3M(s.OnExecute(reg.TimeoutHook()))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan *runtime.Result, 1)
	go func() { done <- s.Execute(ctx, r3Call("t", nil)) }()
	r3Await(t, started)
	cancel()
	res := r3Await(t, done)
	require.True(t, res.IsError())
	assert.NotEqual(t, runtime.CodeToolTimeout, res.Code())
	assert.Equal(t, "stopped: context canceled", res.ErrorMessage(), "the body's own failure is kept")
}

func TestCancel_R83_ToolWithoutTimeoutPassesUnchanged(t *testing.T) {
	reg := r3Reg(t)
	s := r3Scope(t, reg, "a")
	r3M(s.Register(r3Tool("t", func(ctx context.Context, _ json.RawMessage, rc *runtime.RunContext) (any, error) {
		_, has := ctx.Deadline()
		assert.False(t, has, "no deadline for a tool without timeout")
		assert.Equal(t, "caller", ctx.Value(r3Key{}))
		rc.DeferContext(runtime.ContextMessage{Role: "system", Text: "d"})
		return 1, nil
	})))
	r3M(s.OnExecute(reg.TimeoutHook()))
	res := r3Exec(t, s, context.WithValue(context.Background(), r3Key{}, "caller"), r3Call("t", nil))
	r3Success(t, res, "1")
	assert.Equal(t, []runtime.ContextMessage{{Role: "system", Text: "d"}}, res.AdditionalContexts())
}

// R80 row 3 (also in TestExecute_R55_ApprovalTable).
func TestCancel_R80_ApprovalCancelledWhileCallerCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reg := r3Reg(t, runtime.WithApprover(func(actx context.Context, _ runtime.ApprovalRequest) (runtime.ApprovalOutcome, error) {
		cancel()
		<-actx.Done()
		return runtime.ApprovalCancelled, nil
	}))
	s := r3Scope(t, reg, "a")
	body := r3Counting(s, "t", 1)
	r3M(s.OnPreExecute(func(context.Context, runtime.Execution, func() (runtime.Decision, error)) (runtime.Decision, error) {
		return runtime.Ask("confirm"), nil
	}))
	post := r3PostSpy(t, s)
	r3ABD(t, r3Exec(t, s, ctx, r3Call("t", nil)))
	assert.Equal(t, int32(1), post.Load(), "post result")
	assert.Equal(t, int32(0), body.Load())
}
