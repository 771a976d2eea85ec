package otelscope_test

import (
	"context"
	"encoding/json"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/toolscope/toolscope/otelscope"
	"github.com/toolscope/toolscope/runtime"
)

type discardExporter struct{}

func (discardExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardExporter) Shutdown(context.Context) error                             { return nil }

// BenchmarkExecute times one Execute recorded by the adapter: spans
// sampled and discarded, spans not sampled, metrics (bench/'s
// BenchmarkObsRatios compares them interleaved with no hooks).
func BenchmarkExecute(b *testing.B) {
	for _, v := range []struct {
		name string
		opt  func() otelscope.Option
	}{
		{"spans", func() otelscope.Option {
			return otelscope.WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()),
				sdktrace.WithSpanProcessor(sdktrace.NewSimpleSpanProcessor(discardExporter{}))))
		}},
		{"nosample", func() otelscope.Option {
			return otelscope.WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample())))
		}},
		{"metrics", func() otelscope.Option {
			return otelscope.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader())))
		}},
	} {
		b.Run(v.name, func(b *testing.B) {
			reg := r3Reg(b, runtime.WithHooks(otelscope.Hooks(v.opt())))
			r3M(reg.Global().Register(r3Const("t", "ok")))
			call := runtime.Call{ID: "1", Name: "t", Arguments: json.RawMessage(`{}`)}
			ctx := context.Background()
			reg.Global().Execute(ctx, call)
			b.ReportAllocs()
			for b.Loop() {
				reg.Global().Execute(ctx, call)
			}
		})
	}
}
