package otelscope

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolscope/toolscope/runtime"
)

// tracer records spans (WithTracerProvider).
type tracer struct {
	t       trace.Tracer
	content bool // WithTraceContent
}

// Attribute keys of the stage events.
const (
	attrStageDuration = attribute.Key("toolscope.stage.duration")
	attrHooks         = attribute.Key("toolscope.hooks")
	attrDecision      = attribute.Key("toolscope.decision")
	attrDenied        = attribute.Key("toolscope.denied")
	attrAdmissionWait = attribute.Key("toolscope.admission.wait")
	attrBodyInvoked   = attribute.Key("toolscope.body.invoked")
)

// callKey finds a call's *callSpan in its ctx.
type callKey struct{}

// callSpan is a call's span and the tracing state of its stages. It is the
// ctx the call runs under: the ctx the tracer returned (which carries the
// span, so nested calls' spans are its children), answering callKey with
// itself. One allocation per call.
type callSpan struct {
	context.Context
	span trace.Span
	mark int64 // unix nanos: when the current stage began
	// recording is false for a span that records nothing (e.g. not
	// sampled): it is kept in the ctx for propagation and ended, and the
	// stages add nothing to it.
	recording bool
}

func (c *callSpan) Value(key any) any {
	if key == (callKey{}) {
		return c
	}
	return c.Context.Value(key)
}

// spanOf returns the call's span, or nil when it has none.
func spanOf(ex runtime.Execution) *callSpan {
	c, _ := ex.Context().Value(callKey{}).(*callSpan)
	return c
}

func (t *tracer) callStart(ctx context.Context, c runtime.CallInfo) context.Context {
	attrs := [4]attribute.KeyValue{
		attribute.String("gen_ai.operation.name", "execute_tool"),
		attribute.String("gen_ai.tool.name", c.Tool),
		attribute.String("gen_ai.tool.call.id", c.CallID),
	}
	ctx, span := t.t.Start(ctx, "execute_tool "+c.Tool,
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(withScope(attrs[:3], c.Scope)...))
	cs := &callSpan{Context: ctx, span: span, recording: span.IsRecording()}
	if cs.recording {
		// The first stage begins when the span did. (Read here rather
		// than passed to Start: a start-time option costs an allocation
		// per call.)
		cs.mark = c.Now().UnixNano()
	}
	return cs
}

// event adds the event of the stage that began at c.mark and ends at at,
// stamped with at, and starts the next stage.
func (c *callSpan) event(name string, at time.Time, extra ...attribute.KeyValue) {
	ns := at.UnixNano()
	attrs := append(make([]attribute.KeyValue, 0, 1+len(extra)), attrStageDuration.Float64(float64(ns-c.mark)/1e9))
	// Stamped with the wall time the duration was computed from (no
	// monotonic reading), so durations and stamps agree to the nanosecond.
	c.span.AddEvent(name, trace.WithAttributes(append(attrs, extra...)...), trace.WithTimestamp(time.Unix(0, ns)))
	c.mark = ns
}

func (t *tracer) callStage(ex runtime.Execution, st runtime.CallStage) {
	c := spanOf(ex)
	if c == nil || !c.recording {
		return // not sampled: no clock read either
	}
	switch st.Stage {
	case runtime.StageResolved:
		if st.Description != "" {
			c.span.SetAttributes(attribute.String("gen_ai.tool.description", st.Description))
		}
	case runtime.StageGate, runtime.StageDispatching, runtime.StagePostStart:
		c.mark = st.Now().UnixNano()
	case runtime.StagePreExecute:
		c.event("pre_execute", st.Now(), attrHooks.Int(st.Hooks), attrDecision.String(decision(st)))
	case runtime.StageApproval:
		c.event("approval", st.Now())
	case runtime.StageGuards:
		c.event("guards", st.Now(), attrDenied.Bool(st.Denied))
	case runtime.StageAdmitted:
		ns := st.Now().UnixNano()
		c.span.AddEvent("admitted", trace.WithAttributes(attrAdmissionWait.Float64(float64(ns-c.mark)/1e9)), trace.WithTimestamp(time.Unix(0, ns)))
		c.mark = ns
	case runtime.StageDispatched:
		c.event("dispatch", st.Now(), attrHooks.Int(st.Hooks), attrBodyInvoked.Bool(st.BodyInvoked))
	case runtime.StagePostExecute:
		c.event("post_execute", st.Now(), attrHooks.Int(st.Hooks))
	}
}

func decision(st runtime.CallStage) string {
	if st.Err != nil {
		return "error"
	}
	switch st.Decision {
	case runtime.DecisionAllow:
		return "allow"
	case runtime.DecisionDeny:
		return "deny"
	case runtime.DecisionAsk:
		return "ask"
	}
	return "unknown"
}

// callFinished marks the start of the observers.
func (t *tracer) callFinished(ex runtime.Execution, d runtime.CallDone) {
	if c := spanOf(ex); c != nil && c.recording {
		c.mark = d.Now().UnixNano()
	}
}

// callEnd records the observers and ends the call's span with its result.
func (t *tracer) callEnd(ex runtime.Execution, d runtime.CallDone) {
	c := spanOf(ex)
	if c == nil {
		return
	}
	span := c.span
	if !c.recording {
		span.End()
		return
	}
	c.event("observers", d.Now(), attrHooks.Int(d.Observers))
	if d.Classified {
		span.SetAttributes(attribute.String("toolscope.mode", d.Mode.String()))
	}
	if t.content {
		if args, ok := ex.Arguments(); ok {
			span.SetAttributes(attribute.String("gen_ai.tool.call.arguments", string(args)))
		}
	}
	res := d.Result
	span.SetAttributes(attribute.String("toolscope.outcome", d.Outcome.String()))
	if res.IsError() {
		span.SetAttributes(attribute.String("error.type", errorType(d)))
		span.SetStatus(codes.Error, res.ErrorMessage())
	} else if t.content {
		if v, ok := res.Value(); ok {
			span.SetAttributes(attribute.String("gen_ai.tool.call.result", string(v)))
		} else {
			span.SetAttributes(attribute.String("gen_ai.tool.call.result", res.Text()))
		}
	}
	span.End()
}

// withScope appends the scope key the call runs for as toolscope.scope (the
// attribute turn spans carry too), so a lone Execute can be traced to its
// agent; a call in the global view ("") gets none. attrs has room for it.
func withScope(attrs []attribute.KeyValue, scope string) []attribute.KeyValue {
	if scope == "" {
		return attrs
	}
	return append(attrs, attribute.String("toolscope.scope", scope))
}

// callAborted records a turn's call that never started (R97).
func (t *tracer) callAborted(ctx context.Context, c runtime.CallInfo) {
	attrs := [5]attribute.KeyValue{
		attribute.String("gen_ai.operation.name", "execute_tool"),
		attribute.String("gen_ai.tool.name", c.Tool),
		attribute.String("gen_ai.tool.call.id", c.CallID),
		attribute.String("error.type", string(runtime.CodeAbortedBeforeDispatch)),
	}
	_, span := t.t.Start(ctx, "execute_tool "+c.Tool,
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(withScope(attrs[:4], c.Scope)...))
	span.SetStatus(codes.Error, "tool call aborted before dispatch")
	span.End()
}

// turnKey finds a turn's *turnSpan in its ctx.
type turnKey struct{}

// turnSpan is a turn's ctx: the tracer's, carrying the turn's span,
// answering turnKey with the span (so TurnEnd ends this tracer's span,
// whatever other hooks added to the ctx).
type turnSpan struct {
	context.Context
	span trace.Span
}

func (c *turnSpan) Value(key any) any {
	if key == (turnKey{}) {
		return c
	}
	return c.Context.Value(key)
}

func (t *tracer) turnStart(ctx context.Context, tu runtime.TurnInfo) context.Context {
	ctx, span := t.t.Start(ctx, "execute_turn",
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(
			attribute.String("toolscope.scope", tu.Scope),
			attribute.String("toolscope.turn.id", tu.TurnID),
			attribute.Int("toolscope.turn.calls", tu.Calls),
		))
	return &turnSpan{Context: ctx, span: span}
}

func (t *tracer) turnEnd(ctx context.Context, _ runtime.TurnInfo, _ error) {
	if c, ok := ctx.Value(turnKey{}).(*turnSpan); ok {
		c.span.End()
	}
}
