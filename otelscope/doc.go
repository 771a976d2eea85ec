// Package otelscope records a toolscope registry's calls and turns with
// OpenTelemetry: one span per call following the GenAI semantic
// conventions for tool execution, the stages a call went through as span
// events, and the registry's metrics (call durations, admission waits,
// failures by outcome, calls in flight and queued).
//
// It is an adapter over runtime.Hooks, the registry's one observability
// seam: package runtime imports no OpenTelemetry package, and a program that
// never imports otelscope links none of its code.
//
//	reg, err := runtime.New(runtime.WithHooks(otelscope.Hooks(
//		otelscope.WithTracerProvider(tp),
//		otelscope.WithMeterProvider(mp),
//	)))
//
// Traces: a call is a span named "execute_tool <tool>", kind INTERNAL, with
// gen_ai.operation.name=execute_tool, gen_ai.tool.name, gen_ai.tool.call.id,
// gen_ai.tool.description, toolscope.scope (the scope key the call runs
// for; none in the global view), toolscope.mode (parallel or exclusive,
// once classified), toolscope.outcome (runtime.Outcome's word: "ok",
// "denied", "failed", "timed_out", "cancelled" or "refused") and, on a
// failure, error.type (the result's code; "denied" or "failed" for an
// uncoded failure) with an Error status. The caller's ctx
// span is the parent; a nested call's span is a child of its parent
// execution's span (the body's ctx carries it); a turn is an "execute_turn"
// span (toolscope.scope, toolscope.turn.id, toolscope.turn.calls) with one
// child per call, its never-started calls included. The stages are span
// events, each stamped with the time the stage ended by the registry's
// clock (not whenever the tracer gets to it) and carrying its duration in
// seconds (toolscope.stage.duration), which therefore never exceeds the time
// since the previous event or the span's start:
//
//   - "pre_execute": the pre-execute hooks ran (toolscope.hooks: how many;
//     toolscope.decision: allow, deny, ask or error);
//   - "approval": an Ask was resolved by the approver;
//   - "guards": the guards ran (toolscope.denied);
//   - "admitted": the dispatch was admitted, after toolscope.admission.wait
//     seconds of waiting for it;
//   - "dispatch": the around hooks and the body returned (toolscope.hooks:
//     the around hooks; toolscope.body.invoked);
//   - "post_execute": the post-execute hooks ran (toolscope.hooks);
//   - "observers": the result observers ran (toolscope.hooks); the span ends
//     right after.
//
// A stage the call never reached has no event (a denied call has no
// "admitted"). Calls refused before the pipeline (CLOSED, OVERLOADED) have
// no span. WithTraceContent adds the arguments and the result.
//
// Metrics (attribute cardinality bounded: the tool name and the outcome,
// never call ids or scope keys):
//
//   - gen_ai.execute_tool.duration (histogram, s, buckets from 1ms to
//     5min): each call from entry to its final result, by gen_ai.tool.name
//     and toolscope.outcome (runtime.Outcome's word), plus error.type on a
//     failure (the code, or "denied" / "failed" when uncoded);
//   - toolscope.admission.wait (histogram, s, buckets from 10µs to 30s): how
//     long each dispatched call waited between entry and admission, by
//     gen_ai.tool.name;
//   - toolscope.calls.in_flight and toolscope.calls.queued (gauges):
//     Registry.InFlight and Registry.Queued;
//   - toolscope.calls.failed (counter): failures by toolscope.outcome and
//     error.type (denials, uncoded failures, and each code, OVERLOADED,
//     CLOSED and a turn's ABORTED_BEFORE_DISPATCH included).
//
// gen_ai.tool.name is the called tool's name, or UnknownToolMetricName
// ("_unknown") for every call whose name resolves to no tool.
//
// The tracer and the meter are named "github.com/toolscope/toolscope/runtime",
// as they were when this code lived in package runtime, so existing series
// and trace queries keep their instrumentation scope.
package otelscope
