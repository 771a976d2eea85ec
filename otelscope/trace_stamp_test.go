package otelscope_test

import (
	"context"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolscope/toolscope/otelscope"
	"github.com/toolscope/toolscope/runtime"
)

// lateTracerProvider hands out the SDK's spans wrapped so that every other
// AddEvent reaches the SDK a few milliseconds late: what a preempted
// goroutine, a busy span processor or a loaded machine does to the moment
// the SDK would stamp an event it was not given a time for.
type lateTracerProvider struct {
	trace.TracerProvider
	delay time.Duration
}

func (p lateTracerProvider) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	return lateTracer{Tracer: p.TracerProvider.Tracer(name, opts...), delay: p.delay}
}

type lateTracer struct {
	trace.Tracer
	delay time.Duration
}

func (t lateTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	ctx, sp := t.Tracer.Start(ctx, name, opts...)
	w := &lateSpan{Span: sp, delay: t.delay}
	return trace.ContextWithSpan(ctx, w), w
}

type lateSpan struct {
	trace.Span
	delay  time.Duration
	events atomic.Int32
}

func (s *lateSpan) AddEvent(name string, opts ...trace.EventOption) {
	if s.events.Add(1)%2 == 1 {
		time.Sleep(s.delay) // not a timing assertion: the delay the SDK's own stamp would see
	}
	s.Span.AddEvent(name, opts...)
}

// Each stage event is stamped with the time its stage ended, the time its
// toolscope.stage.duration (or the admission wait) was measured to: so a
// stage's duration never exceeds the time since the previous event (or the
// span's start), however late the event reaches the tracer (issue 20,
// item 12: 24 µs reported with 5 µs between the events).
func TestTrace_StageDurationWithinTimeSincePreviousEvent(t *testing.T) {
	rec := tracetest.NewInMemoryExporter()
	sdk := sdktrace.NewTracerProvider(sdktrace.WithSyncer(rec))
	defer sdk.Shutdown(context.Background())
	reg := r3Reg(t, runtime.WithHooks(otelscope.Hooks(otelscope.WithTracerProvider(lateTracerProvider{TracerProvider: sdk, delay: 3 * time.Millisecond}))))
	s := r3Scope(t, reg, "agent")
	registerEveryKind(s)
	for _, name := range []string{"par", "excl", "denied", "outer"} {
		s.Execute(context.Background(), runtime.Call{ID: "x-" + name, Name: name})
	}
	_, err := s.ExecuteTurn(context.Background(), []runtime.TurnCall{
		{ID: "1", Name: "par"}, {ID: "2", Name: "excl"}, {ID: "4", Name: "denied"}, {ID: "5", Name: "outer"},
	})
	require.NoError(t, err)

	spans := rec.GetSpans()
	var checked int
	for _, sp := range spans {
		if len(sp.Events) == 0 {
			continue
		}
		prev, prevName := sp.StartTime, "the span's start"
		for _, e := range sp.Events {
			key := "toolscope.stage.duration"
			if e.Name == "admitted" {
				key = "toolscope.admission.wait"
			}
			var d float64
			var found bool
			for _, kv := range e.Attributes {
				if string(kv.Key) == key {
					d, found = kv.Value.AsFloat64(), true
				}
			}
			require.True(t, found, "%s: %s carries %s", sp.Name, e.Name, key)
			// Compared in whole nanoseconds: the duration is an integer
			// count of them divided by 1e9.
			lasted, since := time.Duration(math.Round(d*1e9)), e.Time.Sub(prev)
			assert.LessOrEqual(t, lasted, since, "%s: %s lasted %v, but came %v after %s",
				sp.Name, e.Name, lasted, since, prevName)
			prev, prevName = e.Time, e.Name
			checked++
		}
		assert.False(t, sp.EndTime.Before(prev), "%s ends after its last stage", sp.Name)
	}
	assert.Greater(t, checked, 30, "every call's stages were checked")
}
