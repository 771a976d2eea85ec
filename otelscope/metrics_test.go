package otelscope_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/toolscope/toolscope/otelscope"
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
	reg := r3Reg(t, runtime.WithHooks(otelscope.Hooks(otelscope.WithMeterProvider(mp))))
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
		et, failed := dp.Attributes.Value("error.type")
		counts[tool.AsString()+"/"+outcome.AsString()+"/"+et.AsString()] += dp.Count
		n := 2
		if failed {
			n = 3
		}
		assert.Equal(t, n, dp.Attributes.Len(), "only tool, outcome and error.type: bounded cardinality")
	}
	assert.Equal(t, map[string]uint64{"ok/ok/": 3, "bad/failed/failed": 1, otelscope.UnknownToolMetricName + "/failed/UNKNOWN_TOOL": 1}, counts)

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
		et, _ := dp.Attributes.Value("error.type")
		byOutcome[o.AsString()+"/"+et.AsString()] += dp.Value
	}
	assert.Equal(t, map[string]int64{"failed/failed": 1, "failed/UNKNOWN_TOOL": 1}, byOutcome)

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
		et, _ := dp.Attributes.Value("error.type")
		byOutcome[o.AsString()+"/"+et.AsString()] += dp.Value
	}
	assert.Equal(t, int64(1), byOutcome["refused/CLOSED"])
}

// A scrape of the Prometheus exporter's handler, after real calls, has the
// series: durations by tool and outcome, admission waits, the in-flight and
// queued gauges, and the failures by outcome (issue 14, item 3).
func TestMetrics_PrometheusScrape(t *testing.T) {
	promReg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(promReg))
	require.NoError(t, err)
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	defer mp.Shutdown(context.Background())
	reg := r3Reg(t, runtime.WithHooks(otelscope.Hooks(otelscope.WithMeterProvider(mp))))
	g := reg.Global()
	r3M(g.Register(r3Const("ok", "x")))
	r3M(g.Register(r3Tool("bad", func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) {
		return nil, errors.New("boom")
	})))
	for range 2 {
		require.False(t, g.Execute(context.Background(), runtime.Call{ID: "a", Name: "ok"}).IsError())
	}
	g.Execute(context.Background(), runtime.Call{ID: "b", Name: "bad"})
	g.Execute(context.Background(), runtime.Call{ID: "c", Name: "ghost"})

	srv := httptest.NewServer(promhttp.HandlerFor(promReg, promhttp.HandlerOpts{}))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	text := string(body)
	for _, want := range []string{
		`gen_ai_execute_tool_duration_seconds_count{gen_ai_tool_name="ok",otel_scope_name="github.com/toolscope/toolscope/runtime",otel_scope_schema_url="",otel_scope_version="",toolscope_outcome="ok"} 2`,
		`gen_ai_execute_tool_duration_seconds_count{error_type="failed",gen_ai_tool_name="bad",otel_scope_name="github.com/toolscope/toolscope/runtime",otel_scope_schema_url="",otel_scope_version="",toolscope_outcome="failed"} 1`,
		`gen_ai_execute_tool_duration_seconds_bucket{error_type="UNKNOWN_TOOL",gen_ai_tool_name="_unknown"`,
		`toolscope_admission_wait_seconds_count{gen_ai_tool_name="ok"`,
		`toolscope_calls_in_flight{`,
		`toolscope_calls_queued{`,
		`toolscope_calls_failed_total{error_type="failed",otel_scope_name="github.com/toolscope/toolscope/runtime",otel_scope_schema_url="",otel_scope_version="",toolscope_outcome="failed"} 1`,
		`toolscope_calls_failed_total{error_type="UNKNOWN_TOOL",otel_scope_name="github.com/toolscope/toolscope/runtime",otel_scope_schema_url="",otel_scope_version="",toolscope_outcome="failed"} 1`,
	} {
		assert.Contains(t, text, want)
	}
	assert.NotContains(t, text, "call_id", "no per-call labels")
}

// The histograms' buckets are in seconds, not the SDK's millisecond-sized
// default.
func TestMetrics_SecondsBuckets(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	reg := r3Reg(t, runtime.WithHooks(otelscope.Hooks(otelscope.WithMeterProvider(mp))))
	r3M(reg.Global().Register(r3Const("ok", "x")))
	reg.Global().Execute(context.Background(), runtime.Call{ID: "a", Name: "ok"})
	ms := collect(t, reader)
	for _, name := range []string{"gen_ai.execute_tool.duration", "toolscope.admission.wait"} {
		h := ms[name].Data.(metricdata.Histogram[float64])
		require.NotEmpty(t, h.DataPoints, name)
		b := h.DataPoints[0].Bounds
		assert.Less(t, b[0], 0.01, "%s: sub-10ms calls get a bucket", name)
		assert.GreaterOrEqual(t, b[len(b)-1], 30.0, "%s", name)
	}
}

// ExampleWithMeterProvider reads the registry's metrics with the SDK's
// manual reader.
func ExampleWithMeterProvider() {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	reg, err := runtime.New(runtime.WithHooks(otelscope.Hooks(otelscope.WithMeterProvider(mp))))
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close(context.Background())
	if _, err := reg.Global().Register(exampleTool("search")); err != nil {
		log.Fatal(err)
	}
	for _, name := range []string{"search", "search", "fetch"} {
		reg.Global().Execute(context.Background(), runtime.Call{ID: "c", Name: name, Arguments: json.RawMessage(`{}`)})
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		log.Fatal(err)
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		switch d := m.Data.(type) {
		case metricdata.Histogram[float64]:
			if m.Name != "gen_ai.execute_tool.duration" {
				continue
			}
			var lines []string
			for _, dp := range d.DataPoints {
				tool, _ := dp.Attributes.Value("gen_ai.tool.name")
				outcome, _ := dp.Attributes.Value("toolscope.outcome")
				et, _ := dp.Attributes.Value("error.type")
				lines = append(lines, fmt.Sprintf("%s %s/%s%s: %d calls", m.Name, tool.AsString(), outcome.AsString(), suffix(et.AsString()), dp.Count))
			}
			sort.Strings(lines)
			fmt.Println(strings.Join(lines, "\n"))
		case metricdata.Sum[int64]:
			for _, dp := range d.DataPoints {
				outcome, _ := dp.Attributes.Value("toolscope.outcome")
				et, _ := dp.Attributes.Value("error.type")
				fmt.Printf("%s %s%s: %d\n", m.Name, outcome.AsString(), suffix(et.AsString()), dp.Value)
			}
		}
	}
	// Output:
	// gen_ai.execute_tool.duration _unknown/failed (UNKNOWN_TOOL): 1 calls
	// gen_ai.execute_tool.duration search/ok: 2 calls
	// toolscope.calls.failed failed (UNKNOWN_TOOL): 1
}

// suffix is an error.type, in parentheses, for the example's lines.
func suffix(errType string) string {
	if errType == "" {
		return ""
	}
	return " (" + errType + ")"
}

// The tool name attribute is bounded by the registered tools: a call to a
// name that resolves to no tool (UNKNOWN_TOOL) is recorded under the one
// value otelscope.UnknownToolMetricName, so thousands of made-up names
// (a model's invention, or a hostile peer's) add one series, not
// thousands, and a real tool keeps its own series past the SDK's
// cardinality limit (issue 20, item 11).
func TestMetrics_ToolNameBoundedByRegisteredTools(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	reg := r3Reg(t, runtime.WithHooks(otelscope.Hooks(otelscope.WithMeterProvider(mp))))
	g := reg.Global()
	r3M(g.Register(r3Const("real", "x")))
	const madeUp = 2500 // past the SDK's default limit of 2,000 series per instrument
	for i := range madeUp {
		res := g.Execute(context.Background(), runtime.Call{ID: fmt.Sprint("u", i), Name: fmt.Sprintf("no_such_tool_%d", i)})
		require.Equal(t, runtime.CodeUnknownTool, res.Code())
	}
	for range 3 {
		require.False(t, g.Execute(context.Background(), runtime.Call{ID: "r", Name: "real"}).IsError())
	}

	ms := collect(t, reader)
	for _, name := range []string{"gen_ai.execute_tool.duration", "toolscope.admission.wait"} {
		h, ok := ms[name].Data.(metricdata.Histogram[float64])
		require.True(t, ok, name)
		counts := map[string]uint64{}
		for _, dp := range h.DataPoints {
			tool, _ := dp.Attributes.Value("gen_ai.tool.name")
			counts[tool.AsString()] += dp.Count
		}
		assert.LessOrEqual(t, len(h.DataPoints), 2, "%s: one series for the real tool, one for every unknown name", name)
		assert.Equal(t, map[string]uint64{"real": 3, otelscope.UnknownToolMetricName: madeUp}, counts, name)
	}
}

// The gauges read the registry (Registry.InFlight, Registry.Queued): a
// call holding an exclusive admission and one waiting for it are two in
// flight, one queued; a closed registry's gauges are unregistered.
func TestMetrics_GaugesReadTheRegistry(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	reg := r3Reg(t, runtime.WithHooks(otelscope.Hooks(otelscope.WithMeterProvider(mp))))
	s := r3Scope(t, reg, "agent")
	entered, release := make(chan struct{}), make(chan struct{})
	r3M(s.Register(nestTool("slow", false, func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) {
		entered <- struct{}{}
		<-release
		return "slow", nil
	})))
	first := nestGo(s, context.Background(), runtime.Call{ID: "1", Name: "slow"})
	nestAwait(t, entered)
	second := nestGo(s, context.Background(), runtime.Call{ID: "2", Name: "slow"})
	eventually(t, func() bool { return reg.Queued() == 1 })
	gauge := func(name string) []metricdata.DataPoint[int64] {
		g, ok := collect(t, reader)[name].Data.(metricdata.Gauge[int64])
		require.True(t, ok, name)
		return g.DataPoints
	}
	require.Len(t, gauge("toolscope.calls.queued"), 1)
	assert.EqualValues(t, 1, gauge("toolscope.calls.queued")[0].Value)
	assert.EqualValues(t, 2, gauge("toolscope.calls.in_flight")[0].Value)
	close(release)
	nestAwait(t, first)
	go func() { <-entered }()
	nestAwait(t, second)
	require.NoError(t, reg.Close(context.Background()))
	_, ok := collect(t, reader)["toolscope.calls.queued"]
	assert.False(t, ok, "a closed registry's gauges are unregistered")
}
