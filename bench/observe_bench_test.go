package main

// Observability overhead (issue 14, "Performance"): bare Execute and the
// 16-call turn with (a) no provider, (b) a tracer provider that samples
// nothing, (c) spans recorded to an exporter that discards them, (d)
// metrics on (a manual reader). Self-contained: it builds its own
// registries, so the harness files may change under it.
//
//	cd bench && go test -run '^$' -bench 'BenchmarkObsOps' -benchmem
//	cd bench && go test -run '^$' -bench 'BenchmarkObsRatios' -benchtime 1x -v
//
// The first gives each variant's ns/op; the second the ratios to (a),
// measured interleaved: blocks of operations of (a) and of the variant
// alternate in one goroutine (ABBA order), several rounds, and each round
// gives one ratio; it reports the median and the range. Timings are
// reported, never asserted.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/toolscope/toolscope/otelscope"
	"github.com/toolscope/toolscope/runtime"
)

// obsVariant is one observability configuration.
type obsVariant struct {
	name string
	opts func() (opts []runtime.Option, shutdown func())
}

var obsVariants = []obsVariant{
	{"none", func() ([]runtime.Option, func()) { return nil, func() {} }},
	{"nosample", func() ([]runtime.Option, func()) {
		tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()))
		return []runtime.Option{runtime.WithHooks(otelscope.Hooks(otelscope.WithTracerProvider(tp)))}, func() { _ = tp.Shutdown(context.Background()) }
	}},
	{"spans", func() ([]runtime.Option, func()) {
		tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()),
			sdktrace.WithSpanProcessor(sdktrace.NewSimpleSpanProcessor(discardExporter{})))
		return []runtime.Option{runtime.WithHooks(otelscope.Hooks(otelscope.WithTracerProvider(tp)))}, func() { _ = tp.Shutdown(context.Background()) }
	}},
	{"metrics", func() ([]runtime.Option, func()) {
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		return []runtime.Option{runtime.WithHooks(otelscope.Hooks(otelscope.WithMeterProvider(mp)))}, func() { _ = mp.Shutdown(context.Background()) }
	}},
}

// discardExporter is a span exporter that drops what it is given.
type discardExporter struct{}

func (discardExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardExporter) Shutdown(context.Context) error                             { return nil }

// obsWorld is one registry of a variant, with a parallel trivial tool on
// one scope.
type obsWorld struct {
	reg      *runtime.Registry
	scope    *runtime.Scope
	shutdown func()
	call     runtime.Call
	turn     []runtime.TurnCall
}

func newObsWorld(v obsVariant) *obsWorld {
	opts, shutdown := v.opts()
	reg := must(runtime.New(opts...))
	must(reg.Global().Register(runtime.Definition{
		Name:        "t",
		Description: "trivial tool",
		Parameters:  json.RawMessage(`{"type":"object"}`),
		Output: &runtime.Output{
			Schema: json.RawMessage(`{"type":"string"}`),
			Render: func(_ context.Context, _, v json.RawMessage) ([]runtime.Block, error) {
				return []runtime.Block{runtime.Text(string(v))}, nil
			},
		},
		Execute:           func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) { return "ok", nil },
		IsConcurrencySafe: func(context.Context, json.RawMessage) (bool, error) { return true, nil },
	}))
	w := &obsWorld{reg: reg, scope: must(reg.NewScope("agent")), shutdown: shutdown,
		call: runtime.Call{ID: "1", Name: "t", Arguments: json.RawMessage(`{}`)}}
	for i := range 16 {
		w.turn = append(w.turn, runtime.TurnCall{ID: fmt.Sprintf("c%d", i), Name: "t", ArgumentsText: `{}`})
	}
	return w
}

func (w *obsWorld) close() {
	_ = w.reg.Close(context.Background())
	w.shutdown()
}

// obsWorkload is one operation: a bare Execute or a 16-call turn.
type obsWorkload struct {
	name  string
	block int // operations per interleaved block (~1–2ms each: many short blocks make the median robust to a busy machine)
	op    func(ctx context.Context, w *obsWorld)
}

var obsWorkloads = []obsWorkload{
	{"Execute", 200, func(ctx context.Context, w *obsWorld) {
		if r := w.scope.Execute(ctx, w.call); r.IsError() {
			panic(r.ErrorMessage())
		}
	}},
	{"Turn16", 8, func(ctx context.Context, w *obsWorld) {
		tr, err := w.scope.ExecuteTurn(ctx, w.turn, runtime.WithMaxParallel(16))
		if err != nil || len(tr.Results) != 16 {
			panic(fmt.Sprint("turn failed: ", err))
		}
	}},
}

// BenchmarkObsOps times each workload under each variant.
func BenchmarkObsOps(b *testing.B) {
	for _, wl := range obsWorkloads {
		for _, v := range obsVariants {
			b.Run(wl.name+"/"+v.name, func(b *testing.B) {
				w := newObsWorld(v)
				defer w.close()
				ctx := context.Background()
				wl.op(ctx, w)
				b.ReportAllocs()
				for b.Loop() {
					wl.op(ctx, w)
				}
			})
		}
	}
}

// obsRounds is how many ABBA rounds the interleaved benchmark runs.
const obsRounds = 101

// BenchmarkObsRatios reports each variant's time as a ratio to no
// provider, measured interleaved: per round, a block of (a) and a block of
// the variant run back to back on this goroutine, in alternating order;
// the metrics are the median ratio and the lowest and highest. Each of
// the b.N iterations is a whole measurement: run it with -benchtime 1x.
func BenchmarkObsRatios(b *testing.B) {
	for _, wl := range obsWorkloads {
		for _, v := range obsVariants[1:] {
			b.Run(wl.name+"/"+v.name, func(b *testing.B) {
				base, other := newObsWorld(obsVariants[0]), newObsWorld(v)
				defer base.close()
				defer other.close()
				ctx := context.Background()
				block := func(w *obsWorld) time.Duration {
					start := time.Now()
					for range wl.block {
						wl.op(ctx, w)
					}
					return time.Since(start)
				}
				block(base) // warm both up
				block(other)
				ratios := make([]float64, 0, obsRounds)
				for range b.N {
					ratios = ratios[:0]
					for r := range obsRounds {
						var a, o time.Duration
						if r%2 == 0 {
							a, o = block(base), block(other)
						} else {
							o, a = block(other), block(base)
						}
						ratios = append(ratios, float64(o)/float64(a))
					}
				}
				slices.Sort(ratios)
				med := (ratios[len(ratios)/2] + ratios[(len(ratios)-1)/2]) / 2
				b.ReportMetric(med, "ratio-median")
				b.ReportMetric(ratios[0], "ratio-min")
				b.ReportMetric(ratios[len(ratios)-1], "ratio-max")
				b.Logf("%s %s/none: median %.3f, range %.3f–%.3f over %d rounds of %d ops", wl.name, v.name, med, ratios[0], ratios[len(ratios)-1], obsRounds, wl.block)
			})
		}
	}
}
