package otelscope_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/toolscope/toolscope/otelscope"
	"github.com/toolscope/toolscope/runtime"
)

// Issue 25 item 4: for every path of the pipeline, the outcome the Result
// carries (Result.Outcome) is the one its ExecutionFinished event, the
// CallDone of the hooks, the metrics' toolscope.outcome attribute and the
// protobuf Result carry — one vocabulary (docs/contract.md#outcomes).
func TestOutcome_Item4_ResultEventMetricAgree(t *testing.T) {
	block := func(_ context.Context, _ runtime.Execution, _ *runtime.Result, _ func() (runtime.PostDecision, error)) (runtime.PostDecision, error) {
		return runtime.Blocked(runtime.Text("blocked by policy")), nil
	}
	cases := []struct {
		name  string
		opts  []runtime.Option
		setup func(t *testing.T, reg *runtime.Registry, s *runtime.Scope)
		ctx   func(t *testing.T) (context.Context, context.CancelFunc)
		call  string
		want  runtime.Outcome
		code  runtime.Code
	}{
		{name: "success", call: "ok", want: runtime.OutcomeOK},
		{name: "plain tool error", call: "boom", want: runtime.OutcomeFailed},
		{name: "tool's own code", call: "coded", want: runtime.OutcomeFailed, code: "MY_CODE"},
		{name: "unknown tool", call: "ghost", want: runtime.OutcomeFailed, code: runtime.CodeUnknownTool},
		{name: "invalid arguments", call: "typed", want: runtime.OutcomeFailed, code: runtime.CodeInvalidArgs},
		{name: "pre-execute deny", call: "ok", want: runtime.OutcomeDenied, setup: func(t *testing.T, _ *runtime.Registry, s *runtime.Scope) {
			r3M(s.OnPreExecute(func(context.Context, runtime.Execution, func() (runtime.Decision, error)) (runtime.Decision, error) {
				return runtime.Deny("not today"), nil
			}))
		}},
		{name: "guard", call: "ok", want: runtime.OutcomeDenied, setup: func(t *testing.T, _ *runtime.Registry, s *runtime.Scope) {
			r3M(s.Guard(func(context.Context, runtime.Execution) (string, bool) { return "guarded", true }))
		}},
		{name: "ask without an approver", call: "ok", want: runtime.OutcomeDenied, setup: askAll},
		{name: "approver rejects", call: "ok", want: runtime.OutcomeDenied, setup: askAll,
			opts: []runtime.Option{runtime.WithApprover(func(context.Context, runtime.ApprovalRequest) (runtime.ApprovalOutcome, error) {
				return runtime.ApprovalRejected, nil
			})}},
		{name: "denial blocked by post-execute stays a denial", call: "ok", want: runtime.OutcomeDenied, setup: func(t *testing.T, _ *runtime.Registry, s *runtime.Scope) {
			r3M(s.Guard(func(context.Context, runtime.Execution) (string, bool) { return "guarded", true }))
			r3M(s.OnPostExecute(block))
		}},
		{name: "success blocked by post-execute", call: "ok", want: runtime.OutcomeFailed, setup: func(t *testing.T, _ *runtime.Registry, s *runtime.Scope) {
			r3M(s.OnPostExecute(block))
		}},
		{name: "declared timeout", call: "slow", want: runtime.OutcomeTimedOut, code: runtime.CodeToolTimeout, setup: func(t *testing.T, reg *runtime.Registry, s *runtime.Scope) {
			r3M(s.OnExecute(reg.TimeoutHook()))
		}},
		{name: "cancelled before dispatch", call: "ok", want: runtime.OutcomeCancelled, code: runtime.CodeAbortedBeforeDispatch,
			ctx: func(*testing.T) (context.Context, context.CancelFunc) {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				return ctx, cancel
			}},
		{name: "cancelled while running", call: "cancels", want: runtime.OutcomeCancelled, code: runtime.CodeAborted},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reader := sdkmetric.NewManualReader()
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
			var mu sync.Mutex
			var events []runtime.Event
			var dones []runtime.CallDone
			opts := append([]runtime.Option{
				runtime.WithHooks(otelscope.Hooks(otelscope.WithMeterProvider(mp))),
				runtime.WithHooks(runtime.Hooks{
					Event: func(e runtime.Event) {
						if e.Kind == runtime.ExecutionFinished {
							mu.Lock()
							events = append(events, e)
							mu.Unlock()
						}
					},
					CallFinished: func(_ runtime.Execution, d runtime.CallDone) {
						mu.Lock()
						dones = append(dones, d)
						mu.Unlock()
					},
				}),
			}, c.opts...)
			reg := r3Reg(t, opts...)
			s := r3Scope(t, reg, "agent")
			registerOutcomeTools(t, s)
			if c.setup != nil {
				c.setup(t, reg, s)
			}
			ctx, cancel := context.Background(), context.CancelFunc(func() {})
			if c.ctx != nil {
				ctx, cancel = c.ctx(t)
			}
			defer cancel()
			ctx, stop := context.WithCancel(ctx)
			defer stop()
			ctx = context.WithValue(ctx, stopKey{}, stop)
			res := s.Execute(ctx, runtime.Call{ID: "c1", Name: c.call, Arguments: map[string]any{"n": "not a number"}})

			assert.Equal(t, c.want, res.Outcome(), "Result.Outcome: %s", res.ErrorMessage())
			assert.Equal(t, c.code, res.Code())
			assert.Equal(t, c.want != runtime.OutcomeOK, res.IsError())
			mu.Lock()
			require.Len(t, events, 1)
			require.Len(t, dones, 1)
			assert.Equal(t, c.want, events[0].Outcome, "Event.Outcome")
			assert.Equal(t, c.code, events[0].Code)
			assert.Equal(t, c.want, dones[0].Outcome, "CallDone.Outcome")
			assert.Equal(t, c.want == runtime.OutcomeDenied, dones[0].Denied)
			mu.Unlock()
			assert.Equal(t, []string{c.want.String()}, outcomeAttrs(t, reader), "the duration histogram's toolscope.outcome")
			back := runtime.ResultFromProto(res.Proto())
			assert.Equal(t, c.want, back.Outcome(), "the protobuf Result carries the outcome")
			assert.Equal(t, int32(c.want)+1, int32(res.Proto().GetOutcome()))
		})
	}

	// A call refused before the pipeline has no event (CallRefused only):
	// its Result and the failure counter agree.
	t.Run("refused after Close", func(t *testing.T) {
		reader := sdkmetric.NewManualReader()
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
		reg := r3Reg(t, runtime.WithHooks(otelscope.Hooks(otelscope.WithMeterProvider(mp))))
		require.NoError(t, reg.Close(context.Background()))
		res := reg.Global().Execute(context.Background(), runtime.Call{ID: "late", Name: "ok"})
		assert.Equal(t, runtime.OutcomeRefused, res.Outcome())
		assert.Equal(t, runtime.CodeClosed, res.Code())
		failed := collect(t, reader)["toolscope.calls.failed"].Data.(metricdata.Sum[int64])
		require.Len(t, failed.DataPoints, 1)
		o, _ := failed.DataPoints[0].Attributes.Value("toolscope.outcome")
		et, _ := failed.DataPoints[0].Attributes.Value("error.type")
		assert.Equal(t, "refused", o.AsString())
		assert.Equal(t, "CLOSED", et.AsString())
	})
}

type stopKey struct{}

func askAll(t *testing.T, _ *runtime.Registry, s *runtime.Scope) {
	r3M(s.OnPreExecute(func(context.Context, runtime.Execution, func() (runtime.Decision, error)) (runtime.Decision, error) {
		return runtime.Ask(), nil
	}))
}

func registerOutcomeTools(t *testing.T, s *runtime.Scope) {
	r3M(s.Register(r3Const("ok", "fine")))
	r3M(s.Register(r3Tool("boom", func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) {
		return nil, errors.New("boom")
	})))
	r3M(s.Register(r3Tool("coded", func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) {
		return nil, runtime.NewError("MyError", "MY_CODE", "mine")
	})))
	typed, err := runtime.NewTool("typed", "takes a number", func(_ context.Context, in struct {
		N int `json:"n"`
	}, _ *runtime.RunContext) (int, error) {
		return in.N, nil
	})
	require.NoError(t, err)
	r3M(s.Register(typed))
	slow := r3Tool("slow", func(ctx context.Context, _ json.RawMessage, _ *runtime.RunContext) (any, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	d := time.Millisecond
	slow.Timeout = &d
	r3M(s.Register(slow))
	r3M(s.Register(r3Tool("cancels", func(ctx context.Context, _ json.RawMessage, _ *runtime.RunContext) (any, error) {
		ctx.Value(stopKey{}).(context.CancelFunc)()
		return "done anyway", nil
	})))
}

// outcomeAttrs returns the toolscope.outcome values of the duration
// histogram's points.
func outcomeAttrs(t *testing.T, reader *sdkmetric.ManualReader) []string {
	t.Helper()
	dur, ok := collect(t, reader)["gen_ai.execute_tool.duration"].Data.(metricdata.Histogram[float64])
	require.True(t, ok)
	var out []string
	for _, dp := range dur.DataPoints {
		o, _ := dp.Attributes.Value("toolscope.outcome")
		out = append(out, o.AsString())
	}
	return out
}
