package otelscope

import (
	"context"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolscope/toolscope/runtime"
)

// instrumentationName names the tracer and the meter (see the package doc).
const instrumentationName = "github.com/toolscope/toolscope/runtime"

// Option configures Hooks.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	tp      trace.TracerProvider
	mp      metric.MeterProvider
	content bool
}

// WithTracerProvider records one span per call, and one per turn, with
// tp's tracer (see the package doc). A nil tp records no spans.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return optionFunc(func(c *config) { c.tp = tp })
}

// WithMeterProvider records the registry's metrics with mp's meter (see
// the package doc). A nil mp records no metrics.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return optionFunc(func(c *config) { c.mp = mp })
}

// WithTraceContent adds each call's arguments and result to its span
// (gen_ai.tool.call.arguments, gen_ai.tool.call.result). Off by default:
// they may hold user data.
func WithTraceContent(on bool) Option {
	return optionFunc(func(c *config) { c.content = on })
}

// Hooks returns the registry hooks that record what opts ask for; pass them
// to runtime.New with runtime.WithHooks. Without a provider they set no
// field, and the registry pays nothing. One Hooks value may serve several
// registries (their metrics share the instruments; each registry registers
// its own gauges). An error creating the instruments fails runtime.New.
func Hooks(opts ...Option) runtime.Hooks {
	var c config
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	var h runtime.Hooks
	var t *tracer
	var m *meter
	if c.tp != nil {
		t = &tracer{t: c.tp.Tracer(instrumentationName), content: c.content}
		h.CallStart = t.callStart
		h.CallStage = t.callStage
		h.CallFinished = t.callFinished
		h.CallEnd = t.callEnd
		h.CallAborted = t.callAborted
		h.TurnStart = t.turnStart
		h.TurnEnd = t.turnEnd
	}
	if c.mp != nil {
		m = newMeter(c.mp)
		h.Opened = m.opened
		h.Closed = m.closed
		h.CallRefused = m.refused
		h.CallFinished = m.callFinished
		h.CallAborted = m.callAborted
	}
	if t != nil && m != nil {
		h.CallFinished = func(ex runtime.Execution, d runtime.CallDone) {
			m.callFinished(ex, d)
			t.callFinished(ex, d)
		}
		h.CallAborted = func(ctx context.Context, c runtime.CallInfo) {
			m.callAborted(ctx, c)
			t.callAborted(ctx, c)
		}
	}
	return h
}

// errorType is a failed call's error.type: the result's code, else its
// outcome's word ("denied" or "failed").
func errorType(d runtime.CallDone) string {
	if c := d.Result.Code(); c != "" {
		return string(c)
	}
	return d.Outcome.String()
}
