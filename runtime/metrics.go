package runtime

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// OpenTelemetry metrics (issue 14, item 3). Attribute cardinality is
// bounded: the tool name (a registered tool's, or UnknownToolMetricName)
// and the outcome (a code, "ok", "denied" or "tool_error"), never call ids
// or scope keys.

const meterName = "github.com/toolscope/toolscope/runtime"

// UnknownToolMetricName is the gen_ai.tool.name under which the metrics
// record every call whose name resolves to no tool in the caller's view
// (an UNKNOWN_TOOL result): the names a model or a peer makes up are
// unbounded, so they share this one value and the tool name attribute
// takes at most one value per registered tool, plus this one. (A tool
// registered under this very name shares its series with the unknown
// names; its outcomes still tell them apart, UNKNOWN_TOOL being theirs.)
const UnknownToolMetricName = "_unknown"

// WithMeterProvider records the registry's metrics with mp's meter:
//
//   - gen_ai.execute_tool.duration (histogram, s, buckets from 1ms to
//     5min): each call from entry to its final result, by gen_ai.tool.name
//     and toolscope.outcome;
//   - toolscope.admission.wait (histogram, s, buckets from 10µs to 30s):
//     how long each dispatched call waited between entry and admission, by
//     gen_ai.tool.name;
//   - toolscope.calls.in_flight and toolscope.calls.queued (gauges): the
//     Execute calls and turns in flight, and the calls waiting for
//     admission across the registry's scopes;
//   - toolscope.calls.failed (counter): failures by toolscope.outcome
//     (denials, uncoded failures, and each code, OVERLOADED and CLOSED
//     included).
//
// gen_ai.tool.name is the called tool's name, or UnknownToolMetricName
// ("_unknown") for every call whose name resolves to no tool: one value
// per registered tool, whatever names the model makes up.
//
// A nil mp records nothing.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return optionFunc(func(c *config) error { c.meterProvider = mp; return nil })
}

// The histograms' default bucket boundaries, in seconds (the SDK's own
// default, 0 to 10000, suits milliseconds); a View may replace them.
var (
	durationBuckets = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}
	waitBuckets     = []float64{0.00001, 0.0001, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}
)

type registryMetrics struct {
	duration metric.Float64Histogram
	wait     metric.Float64Histogram
	failed   metric.Int64Counter
	reg      metric.Registration

	// The measurement options of each attribute set, built once: building
	// a set (sorting, deduplicating) and its option on every call cost more
	// allocations than the call itself. Bounded by maxCachedAttrs entries
	// per map; past that a set is built per measurement, as before.
	mu        sync.RWMutex
	byTool    map[string]*toolAttrs // gen_ai.tool.name → its options
	byOutcome map[string][]metric.AddOption
}

// toolAttrs holds one tool's cached options.
type toolAttrs struct {
	wait      []metric.RecordOption            // {tool}
	byOutcome map[string][]metric.RecordOption // outcome → {tool, outcome}; under registryMetrics.mu
}

// maxCachedAttrs bounds each cache map: a registry with more distinct
// tools (or outcomes, a tool's own codes included) than this builds the
// further sets per measurement.
const maxCachedAttrs = 4096

// durationOpts returns the options of (tool, outcome) for the duration
// histogram and of tool for the wait histogram.
func (m *registryMetrics) durationOpts(tool, outcome string) (dur, wait []metric.RecordOption) {
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
	dur = []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(toolAttr, attribute.String("toolscope.outcome", outcome)))}
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
			ta.byOutcome = make(map[string][]metric.RecordOption, 2)
		}
		ta.byOutcome[outcome] = dur
	}
	return dur, ta.wait
}

// failedOpts returns the options of outcome for the failure counter.
func (m *registryMetrics) failedOpts(outcome string) []metric.AddOption {
	m.mu.RLock()
	opts := m.byOutcome[outcome]
	m.mu.RUnlock()
	if opts != nil {
		return opts
	}
	opts = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(attribute.String("toolscope.outcome", outcome)))}
	m.mu.Lock()
	if len(m.byOutcome) < maxCachedAttrs {
		if m.byOutcome == nil {
			m.byOutcome = make(map[string][]metric.AddOption)
		}
		m.byOutcome[outcome] = opts
	}
	m.mu.Unlock()
	return opts
}

func (r *Registry) initMetrics(mp metric.MeterProvider) error {
	m := mp.Meter(meterName)
	rm := &registryMetrics{}
	var err error
	if rm.duration, err = m.Float64Histogram("gen_ai.execute_tool.duration",
		metric.WithUnit("s"), metric.WithDescription("Duration of one tool call, from entry to its final result"),
		metric.WithExplicitBucketBoundaries(durationBuckets...)); err != nil {
		return err
	}
	if rm.wait, err = m.Float64Histogram("toolscope.admission.wait",
		metric.WithUnit("s"), metric.WithDescription("Wait of a dispatched tool call between entry and admission"),
		metric.WithExplicitBucketBoundaries(waitBuckets...)); err != nil {
		return err
	}
	if rm.failed, err = m.Int64Counter("toolscope.calls.failed",
		metric.WithUnit("{call}"), metric.WithDescription("Failed tool calls, by outcome")); err != nil {
		return err
	}
	inFlight, err := m.Int64ObservableGauge("toolscope.calls.in_flight",
		metric.WithUnit("{call}"), metric.WithDescription("Execute calls and turns in flight"))
	if err != nil {
		return err
	}
	queued, err := m.Int64ObservableGauge("toolscope.calls.queued",
		metric.WithUnit("{call}"), metric.WithDescription("Calls waiting for admission"))
	if err != nil {
		return err
	}
	rm.reg, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(inFlight, r.life.inflight.Load())
		o.ObserveInt64(queued, r.queuedCalls())
		return nil
	}, inFlight, queued)
	if err != nil {
		return err
	}
	r.metrics = rm
	return nil
}

// queuedCalls sums the calls waiting for admission in every live scope.
func (r *Registry) queuedCalls() int64 {
	n := r.global.shell.gate.Waiting()
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, rec := range r.scopes {
		if rec.live != nil {
			n += rec.live.shell.gate.Waiting()
		}
	}
	return n
}

// outcomeOf names a result for the metrics' bounded outcome attribute.
func outcomeOf(s *execState, res *Result) string {
	if !res.isError {
		return "ok"
	}
	return errorType(s, res)
}

// recordCall records a finished call (finish).
func (m *registryMetrics) recordCall(ctx context.Context, s *execState, res *Result) {
	now := time.Now().UnixNano()
	outcome := outcomeOf(s, res)
	dur, wait := m.durationOpts(metricToolName(s), outcome)
	m.duration.Record(ctx, float64(now-s.enteredAt)/1e9, dur...)
	if s.dispatchEnd != 0 && s.startedAt >= s.enteredAt {
		m.wait.Record(ctx, float64(s.startedAt-s.enteredAt)/1e9, wait...)
	}
	if res.isError {
		m.failed.Add(ctx, 1, m.failedOpts(outcome)...)
	}
}

// metricToolName is the gen_ai.tool.name of s: its name when the name
// resolved to a tool at entry (or resolves now, when it was registered
// since), UnknownToolMetricName when it never did.
func metricToolName(s *execState) string {
	if s.chainTool != nil {
		return s.name
	}
	if _, ok := s.reg.resolveExec(s); ok {
		return s.name
	}
	return UnknownToolMetricName
}

// recordFailure counts a failure that has no execution: a call refused
// before the pipeline (OVERLOADED, CLOSED) or a turn's never-started call
// (ABORTED_BEFORE_DISPATCH, R97).
func (m *registryMetrics) recordFailure(code Code) {
	m.failed.Add(context.Background(), 1, m.failedOpts(string(code))...)
}
