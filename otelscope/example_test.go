package otelscope_test

import (
	"context"
	"fmt"
	"log"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toolscope/toolscope/otelscope"
	"github.com/toolscope/toolscope/runtime"
)

// ExampleHooks records a registry's spans and metrics: the hooks go to
// runtime.New, and the registry calls them at each point of a call.
func ExampleHooks() {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	reg, err := runtime.New(runtime.WithHooks(otelscope.Hooks(
		otelscope.WithTracerProvider(tp),
		otelscope.WithMeterProvider(mp),
	)))
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close(context.Background())
	if _, err := reg.Global().Register(exampleTool("search")); err != nil {
		log.Fatal(err)
	}
	res := reg.Global().Execute(context.Background(), runtime.Call{ID: "c1", Name: "search", Arguments: map[string]any{}})
	fmt.Println(res.Text())

	for _, sp := range exp.GetSpans() {
		var stages []string
		for _, e := range sp.Events {
			stages = append(stages, e.Name)
		}
		fmt.Println(sp.Name, stages)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		log.Fatal(err)
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if h, ok := m.Data.(metricdata.Histogram[float64]); ok {
			fmt.Printf("%s (%s): %d call(s)\n", m.Name, m.Unit, h.DataPoints[0].Count)
		}
	}
	// Output:
	// search ran
	// execute_tool search [pre_execute guards admitted dispatch post_execute observers]
	// gen_ai.execute_tool.duration (s): 1 call(s)
	// toolscope.admission.wait (s): 1 call(s)
}
