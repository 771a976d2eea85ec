package otelscope

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/toolscope/toolscope/runtime"
)

// UnknownToolMetricName is the gen_ai.tool.name under which the metrics
// record every call whose name resolves to no tool in the caller's view
// (an UNKNOWN_TOOL result): the names a model or a peer makes up are
// unbounded, so they share this one value and the tool name attribute
// takes at most one value per registered tool, plus this one. (A tool
// registered under this very name shares its series with the unknown
// names; its outcomes still tell them apart, UNKNOWN_TOOL being theirs.)
const UnknownToolMetricName = "_unknown"

// The histograms' default bucket boundaries, in seconds (the SDK's own
// default, 0 to 10000, suits milliseconds); a View may replace them.
var (
	durationBuckets = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}
	waitBuckets     = []float64{0.00001, 0.0001, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}
)

// meter records the metrics (WithMeterProvider).
type meter struct {
	err      error // creating the instruments failed: Opened returns it
	m        metric.Meter
	duration metric.Float64Histogram
	wait     metric.Float64Histogram
	failed   metric.Int64Counter
	inFlight metric.Int64ObservableGauge
	queued   metric.Int64ObservableGauge

	regsMu sync.Mutex
	regs   map[*runtime.Registry]metric.Registration // each registry's gauge callback

	// The measurement options of each attribute set, built once: building
	// a set (sorting, deduplicating) and its option on every call cost more
	// allocations than the call itself. Bounded by maxCachedAttrs entries
	// per map; past that a set is built per measurement.
	mu        sync.RWMutex
	byTool    map[string]*toolAttrs // gen_ai.tool.name → its options
	byOutcome map[outcomeKey][]metric.AddOption
}

// toolAttrs holds one tool's cached options.
type toolAttrs struct {
	wait      []metric.RecordOption                // {tool}
	byOutcome map[outcomeKey][]metric.RecordOption // outcome → {tool, outcome[, error.type]}; under meter.mu
}

// outcomeKey is a call's outcome attributes: toolscope.outcome (the
// runtime.Outcome word) and, on a failure, error.type (errorType).
type outcomeKey struct {
	outcome runtime.Outcome
	errType string
}

// keyOf is the outcome attributes of a finished call.
func keyOf(d runtime.CallDone) outcomeKey {
	if !d.Result.IsError() {
		return outcomeKey{outcome: runtime.OutcomeOK}
	}
	return outcomeKey{outcome: d.Outcome, errType: errorType(d)}
}

func (k outcomeKey) attrs() []attribute.KeyValue {
	kv := []attribute.KeyValue{attribute.String("toolscope.outcome", k.outcome.String())}
	if k.errType != "" {
		kv = append(kv, attribute.String("error.type", k.errType))
	}
	return kv
}

// maxCachedAttrs bounds each cache map: a registry with more distinct
// tools (or outcomes, a tool's own codes included) than this builds the
// further sets per measurement.
const maxCachedAttrs = 4096

func newMeter(mp metric.MeterProvider) *meter {
	m := &meter{m: mp.Meter(instrumentationName), regs: map[*runtime.Registry]metric.Registration{}}
	m.err = m.instruments()
	return m
}

func (m *meter) instruments() (err error) {
	if m.duration, err = m.m.Float64Histogram("gen_ai.execute_tool.duration",
		metric.WithUnit("s"), metric.WithDescription("Duration of one tool call, from entry to its final result"),
		metric.WithExplicitBucketBoundaries(durationBuckets...)); err != nil {
		return err
	}
	if m.wait, err = m.m.Float64Histogram("toolscope.admission.wait",
		metric.WithUnit("s"), metric.WithDescription("Wait of a dispatched tool call between entry and admission"),
		metric.WithExplicitBucketBoundaries(waitBuckets...)); err != nil {
		return err
	}
	if m.failed, err = m.m.Int64Counter("toolscope.calls.failed",
		metric.WithUnit("{call}"), metric.WithDescription("Failed tool calls, by outcome")); err != nil {
		return err
	}
	if m.inFlight, err = m.m.Int64ObservableGauge("toolscope.calls.in_flight",
		metric.WithUnit("{call}"), metric.WithDescription("Execute calls and turns in flight")); err != nil {
		return err
	}
	m.queued, err = m.m.Int64ObservableGauge("toolscope.calls.queued",
		metric.WithUnit("{call}"), metric.WithDescription("Calls waiting for admission"))
	return err
}

// opened registers r's gauges.
func (m *meter) opened(r *runtime.Registry) error {
	if m.err != nil {
		return m.err
	}
	reg, err := m.m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(m.inFlight, int64(r.InFlight()))
		o.ObserveInt64(m.queued, int64(r.Queued()))
		return nil
	}, m.inFlight, m.queued)
	if err != nil {
		return err
	}
	m.regsMu.Lock()
	m.regs[r] = reg
	m.regsMu.Unlock()
	return nil
}

// closed unregisters r's gauges.
func (m *meter) closed(r *runtime.Registry) {
	m.regsMu.Lock()
	reg := m.regs[r]
	delete(m.regs, r)
	m.regsMu.Unlock()
	if reg != nil {
		_ = reg.Unregister()
	}
}

// durationOpts returns the options of (tool, outcome) for the duration
// histogram and of tool for the wait histogram.
func (m *meter) durationOpts(tool string, outcome outcomeKey) (dur, wait []metric.RecordOption) {
	m.mu.RLock()
	ta := m.byTool[tool]
	if ta != nil {
		dur = ta.byOutcome[outcome]
		wait = ta.wait
	}
	m.mu.RUnlock()
	if dur != nil {
		return dur, wait
	}
	toolAttr := attribute.String("gen_ai.tool.name", tool)
	dur = []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(append(outcome.attrs(), toolAttr)...))}
	m.mu.Lock()
	defer m.mu.Unlock()
	if ta = m.byTool[tool]; ta == nil {
		ta = &toolAttrs{wait: []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(toolAttr))}}
		if len(m.byTool) < maxCachedAttrs {
			if m.byTool == nil {
				m.byTool = make(map[string]*toolAttrs)
			}
			m.byTool[tool] = ta
		}
	}
	if len(ta.byOutcome) < maxCachedAttrs {
		if ta.byOutcome == nil {
			ta.byOutcome = make(map[outcomeKey][]metric.RecordOption, 2)
		}
		ta.byOutcome[outcome] = dur
	}
	return dur, ta.wait
}

// failedOpts returns the options of outcome for the failure counter.
func (m *meter) failedOpts(outcome outcomeKey) []metric.AddOption {
	m.mu.RLock()
	opts := m.byOutcome[outcome]
	m.mu.RUnlock()
	if opts != nil {
		return opts
	}
	opts = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(outcome.attrs()...))}
	m.mu.Lock()
	if len(m.byOutcome) < maxCachedAttrs {
		if m.byOutcome == nil {
			m.byOutcome = make(map[outcomeKey][]metric.AddOption)
		}
		m.byOutcome[outcome] = opts
	}
	m.mu.Unlock()
	return opts
}

// callFinished records a finished call.
func (m *meter) callFinished(ex runtime.Execution, d runtime.CallDone) {
	ctx := context.Background()
	outcome := keyOf(d)
	tool := UnknownToolMetricName
	if d.ToolKnown {
		tool = ex.Name()
	}
	dur, wait := m.durationOpts(tool, outcome)
	m.duration.Record(ctx, float64(d.Now().UnixNano()-d.EnteredAt.UnixNano())/1e9, dur...)
	if !d.DispatchDoneAt.IsZero() && !d.StartedAt.Before(d.EnteredAt) {
		m.wait.Record(ctx, float64(d.StartedAt.UnixNano()-d.EnteredAt.UnixNano())/1e9, wait...)
	}
	if d.Result.IsError() {
		m.failed.Add(ctx, 1, m.failedOpts(outcome)...)
	}
}

// refused counts a call refused before the pipeline (OVERLOADED, CLOSED).
func (m *meter) refused(code runtime.Code) {
	m.failed.Add(context.Background(), 1, m.failedOpts(outcomeKey{outcome: code.Outcome(), errType: string(code)})...)
}

// callAborted counts a turn's call that never started (R97).
func (m *meter) callAborted(context.Context, runtime.CallInfo) {
	m.refused(runtime.CodeAbortedBeforeDispatch)
}
