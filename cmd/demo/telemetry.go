package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/toolscope/toolscope/otelscope"
	"github.com/toolscope/toolscope/runtime"
)

// telemetry is what -metrics and -trace set up around a run: a Prometheus
// endpoint fed by the OpenTelemetry metric SDK, and a tracer provider whose
// spans go to an OTLP JSON file.
type telemetry struct {
	mp         *sdkmetric.MeterProvider
	srv        *http.Server
	served     chan error // Serve's return
	MetricsURL string     // http://ADDR/metrics; "" without -metrics

	tp        *sdktrace.TracerProvider
	traces    *otlpFileExporter
	TraceFile string
}

// startTelemetry starts what cfg asks for and returns the registry options
// that feed it.
func startTelemetry(cfg config) (*telemetry, []runtime.Option, error) {
	t := &telemetry{}
	var opts []runtime.Option
	res := resource.NewSchemaless(attribute.String("service.name", "toolscope-demo"))
	if cfg.MetricsAddr != "" {
		promReg := prometheus.NewRegistry()
		exp, err := otelprom.New(otelprom.WithRegisterer(promReg))
		if err != nil {
			return nil, nil, err
		}
		l, err := net.Listen("tcp", cfg.MetricsAddr)
		if err != nil {
			return nil, nil, fmt.Errorf("-metrics: %w", err)
		}
		t.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp), sdkmetric.WithResource(res))
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(promReg, promhttp.HandlerOpts{}))
		t.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		t.served = make(chan error, 1)
		go func() { t.served <- t.srv.Serve(l) }()
		t.MetricsURL = "http://" + l.Addr().String() + "/metrics"
		opts = append(opts, runtime.WithHooks(otelscope.Hooks(otelscope.WithMeterProvider(t.mp))))
	}
	if cfg.TraceFile != "" {
		f, err := os.Create(cfg.TraceFile)
		if err != nil {
			t.shutdown(context.Background())
			return nil, nil, fmt.Errorf("-trace: %w", err)
		}
		t.traces = &otlpFileExporter{f: f}
		t.TraceFile = cfg.TraceFile
		t.tp = sdktrace.NewTracerProvider(sdktrace.WithBatcher(t.traces), sdktrace.WithResource(res))
		opts = append(opts, runtime.WithHooks(otelscope.Hooks(otelscope.WithTracerProvider(t.tp))))
	}
	return t, opts, nil
}

// flushTraces ends the tracer provider, which writes the trace file.
func (t *telemetry) flushTraces(ctx context.Context) error {
	if t.tp == nil {
		return nil
	}
	err := t.tp.Shutdown(ctx)
	t.tp = nil
	return err
}

// spans reports how many spans the trace file holds (after flushTraces).
func (t *telemetry) spans() int {
	if t.traces == nil {
		return 0
	}
	return t.traces.written
}

// shutdown stops the metrics endpoint and flushes the traces.
func (t *telemetry) shutdown(ctx context.Context) error {
	errs := []error{t.flushTraces(ctx)}
	if t.srv != nil {
		errs = append(errs, t.srv.Shutdown(ctx))
		if err := <-t.served; !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, err)
		}
		errs = append(errs, t.mp.Shutdown(ctx))
		t.srv = nil
	}
	return errors.Join(errs...)
}

// otlpFileExporter is a span exporter that writes the spans it was given,
// when it is shut down, as one OTLP JSON object on one line (the
// OpenTelemetry file exporter format: an ExportTraceServiceRequest in the
// OTLP/JSON encoding). The file loads in Jaeger UI's "JSON File" upload and
// can be posted as it is to any OTLP/HTTP endpoint's /v1/traces.
type otlpFileExporter struct {
	mu      sync.Mutex
	f       *os.File
	spans   []sdktrace.ReadOnlySpan
	written int
}

// ExportSpans implements sdktrace.SpanExporter: it keeps the spans.
func (e *otlpFileExporter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.f == nil {
		return errors.New("trace file exporter is shut down")
	}
	e.spans = append(e.spans, spans...)
	return nil
}

// Shutdown implements sdktrace.SpanExporter: it writes the file.
func (e *otlpFileExporter) Shutdown(context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.f == nil {
		return nil
	}
	f := e.f
	e.f = nil
	b, err := json.Marshal(otlpRequest(e.spans))
	if err == nil {
		_, err = f.Write(append(b, '\n'))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	e.written = len(e.spans)
	e.spans = nil
	return err
}

// The OTLP/JSON encoding of the trace data model: lowerCamelCase names,
// ids in hex, 64-bit integers as decimal strings, enums as numbers.
type (
	otlpTraces struct {
		ResourceSpans []otlpResourceSpans `json:"resourceSpans"`
	}
	otlpResourceSpans struct {
		Resource   otlpResource     `json:"resource"`
		ScopeSpans []otlpScopeSpans `json:"scopeSpans"`
	}
	otlpResource struct {
		Attributes []otlpKeyValue `json:"attributes,omitempty"`
	}
	otlpScopeSpans struct {
		Scope otlpScope  `json:"scope"`
		Spans []otlpSpan `json:"spans"`
	}
	otlpScope struct {
		Name    string `json:"name"`
		Version string `json:"version,omitempty"`
	}
	otlpSpan struct {
		TraceID           string         `json:"traceId"`
		SpanID            string         `json:"spanId"`
		ParentSpanID      string         `json:"parentSpanId,omitempty"`
		Name              string         `json:"name"`
		Kind              int            `json:"kind"`
		StartTimeUnixNano string         `json:"startTimeUnixNano"`
		EndTimeUnixNano   string         `json:"endTimeUnixNano"`
		Attributes        []otlpKeyValue `json:"attributes,omitempty"`
		Events            []otlpEvent    `json:"events,omitempty"`
		Status            otlpStatus     `json:"status"`
	}
	otlpEvent struct {
		TimeUnixNano string         `json:"timeUnixNano"`
		Name         string         `json:"name"`
		Attributes   []otlpKeyValue `json:"attributes,omitempty"`
	}
	otlpStatus struct {
		Code    int    `json:"code,omitempty"` // 0 unset, 1 ok, 2 error
		Message string `json:"message,omitempty"`
	}
	otlpKeyValue struct {
		Key   string       `json:"key"`
		Value otlpAnyValue `json:"value"`
	}
	otlpAnyValue struct {
		StringValue *string         `json:"stringValue,omitempty"`
		BoolValue   *bool           `json:"boolValue,omitempty"`
		IntValue    *string         `json:"intValue,omitempty"`
		DoubleValue *float64        `json:"doubleValue,omitempty"`
		ArrayValue  *otlpArrayValue `json:"arrayValue,omitempty"`
	}
	otlpArrayValue struct {
		Values []otlpAnyValue `json:"values"`
	}
)

// otlpRequest groups spans by resource and instrumentation scope.
func otlpRequest(spans []sdktrace.ReadOnlySpan) otlpTraces {
	type scopeKey struct{ res, name, version string }
	var out otlpTraces
	resIndex := map[string]int{}
	scopeIndex := map[scopeKey]int{}
	for _, s := range spans {
		res := s.Resource()
		rk := res.Encoded(attribute.DefaultEncoder())
		ri, ok := resIndex[rk]
		if !ok {
			ri = len(out.ResourceSpans)
			resIndex[rk] = ri
			out.ResourceSpans = append(out.ResourceSpans, otlpResourceSpans{Resource: otlpResource{Attributes: otlpAttrs(res.Attributes())}})
		}
		scope := s.InstrumentationScope()
		sk := scopeKey{rk, scope.Name, scope.Version}
		si, ok := scopeIndex[sk]
		rs := &out.ResourceSpans[ri]
		if !ok {
			si = len(rs.ScopeSpans)
			scopeIndex[sk] = si
			rs.ScopeSpans = append(rs.ScopeSpans, otlpScopeSpans{Scope: otlpScope{Name: scope.Name, Version: scope.Version}})
		}
		rs.ScopeSpans[si].Spans = append(rs.ScopeSpans[si].Spans, otlpSpanOf(s))
	}
	if out.ResourceSpans == nil {
		out.ResourceSpans = []otlpResourceSpans{}
	}
	return out
}

func otlpSpanOf(s sdktrace.ReadOnlySpan) otlpSpan {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	o := otlpSpan{
		TraceID:           hex.EncodeToString(tid[:]),
		SpanID:            hex.EncodeToString(sid[:]),
		Name:              s.Name(),
		Kind:              int(s.SpanKind()), // the API's numbers are OTLP's
		StartTimeUnixNano: unixNanos(s.StartTime()),
		EndTimeUnixNano:   unixNanos(s.EndTime()),
		Attributes:        otlpAttrs(s.Attributes()),
		Status:            otlpStatus{Message: s.Status().Description},
	}
	if p := s.Parent(); p.IsValid() {
		pid := p.SpanID()
		o.ParentSpanID = hex.EncodeToString(pid[:])
	}
	switch s.Status().Code {
	case codes.Ok:
		o.Status.Code = 1
	case codes.Error:
		o.Status.Code = 2
	}
	for _, e := range s.Events() {
		o.Events = append(o.Events, otlpEvent{TimeUnixNano: unixNanos(e.Time), Name: e.Name, Attributes: otlpAttrs(e.Attributes)})
	}
	return o
}

func unixNanos(t time.Time) string { return strconv.FormatInt(t.UnixNano(), 10) }

func otlpAttrs(kvs []attribute.KeyValue) []otlpKeyValue {
	if len(kvs) == 0 {
		return nil
	}
	out := make([]otlpKeyValue, len(kvs))
	for i, kv := range kvs {
		out[i] = otlpKeyValue{Key: string(kv.Key), Value: otlpValue(kv.Value)}
	}
	return out
}

func otlpValue(v attribute.Value) otlpAnyValue {
	switch v.Type() {
	case attribute.BOOL:
		b := v.AsBool()
		return otlpAnyValue{BoolValue: &b}
	case attribute.INT64:
		s := strconv.FormatInt(v.AsInt64(), 10)
		return otlpAnyValue{IntValue: &s}
	case attribute.FLOAT64:
		f := v.AsFloat64()
		return otlpAnyValue{DoubleValue: &f}
	case attribute.BOOLSLICE:
		return otlpArray(v.AsBoolSlice(), attribute.BoolValue)
	case attribute.INT64SLICE:
		return otlpArray(v.AsInt64Slice(), attribute.Int64Value)
	case attribute.FLOAT64SLICE:
		return otlpArray(v.AsFloat64Slice(), attribute.Float64Value)
	case attribute.STRINGSLICE:
		return otlpArray(v.AsStringSlice(), attribute.StringValue)
	default:
		s := v.String()
		return otlpAnyValue{StringValue: &s}
	}
}

func otlpArray[T any](xs []T, wrap func(T) attribute.Value) otlpAnyValue {
	a := &otlpArrayValue{Values: make([]otlpAnyValue, len(xs))}
	for i, x := range xs {
		a.Values[i] = otlpValue(wrap(x))
	}
	return otlpAnyValue{ArrayValue: a}
}
