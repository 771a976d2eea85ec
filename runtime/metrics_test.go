package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/toolscope/toolscope/runtime"
)

func collect(t *testing.T, r *sdkmetric.ManualReader) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, r.Collect(context.Background(), &rm))
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

// Metrics count and time every call by tool and outcome, with bounded
// attributes (issue 14, item 3).
func TestMetrics_CountsAndDurationsByToolAndOutcome(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	reg := r3Reg(t, runtime.WithMeterProvider(mp))
	g := reg.Global()
	r3M(g.Register(r3Const("ok", "x")))
	r3M(g.Register(r3Tool("bad", func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) {
		return nil, errors.New("boom")
	})))
	for range 3 {
		g.Execute(context.Background(), runtime.Call{ID: "a", Name: "ok"})
	}
	g.Execute(context.Background(), runtime.Call{ID: "b", Name: "bad"})
	g.Execute(context.Background(), runtime.Call{ID: "c", Name: "ghost"})

	ms := collect(t, reader)
	dur, ok := ms["gen_ai.execute_tool.duration"].Data.(metricdata.Histogram[float64])
	require.True(t, ok, "the duration histogram: %v", ms)
	counts := map[string]uint64{}
	for _, dp := range dur.DataPoints {
		tool, _ := dp.Attributes.Value("gen_ai.tool.name")
		outcome, _ := dp.Attributes.Value("toolscope.outcome")
		counts[tool.AsString()+"/"+outcome.AsString()] += dp.Count
		assert.Equal(t, 2, dp.Attributes.Len(), "only tool and outcome: bounded cardinality")
	}
	assert.Equal(t, map[string]uint64{"ok/ok": 3, "bad/tool_error": 1, "ghost/UNKNOWN_TOOL": 1}, counts)

	wait, ok := ms["toolscope.admission.wait"].Data.(metricdata.Histogram[float64])
	require.True(t, ok)
	var waits uint64
	for _, dp := range wait.DataPoints {
		waits += dp.Count
	}
	assert.Equal(t, uint64(5), waits, "every dispatched call (an unknown tool dispatches too)")

	failed, ok := ms["toolscope.calls.failed"].Data.(metricdata.Sum[int64])
	require.True(t, ok)
	byOutcome := map[string]int64{}
	for _, dp := range failed.DataPoints {
		o, _ := dp.Attributes.Value("toolscope.outcome")
		byOutcome[o.AsString()] += dp.Value
	}
	assert.Equal(t, map[string]int64{"tool_error": 1, "UNKNOWN_TOOL": 1}, byOutcome)

	inFlight, ok := ms["toolscope.calls.in_flight"].Data.(metricdata.Gauge[int64])
	require.True(t, ok)
	require.Len(t, inFlight.DataPoints, 1)
	assert.Equal(t, int64(0), inFlight.DataPoints[0].Value)
	_, ok = ms["toolscope.calls.queued"].Data.(metricdata.Gauge[int64])
	assert.True(t, ok)

	// After Close, calls are refused with CLOSED, and that is counted.
	require.NoError(t, reg.Close(context.Background()))
	g.Execute(context.Background(), runtime.Call{ID: "d", Name: "ok"})
	failed = collect(t, reader)["toolscope.calls.failed"].Data.(metricdata.Sum[int64])
	byOutcome = map[string]int64{}
	for _, dp := range failed.DataPoints {
		o, _ := dp.Attributes.Value("toolscope.outcome")
		byOutcome[o.AsString()] += dp.Value
	}
	assert.Equal(t, int64(1), byOutcome["CLOSED"])
}
