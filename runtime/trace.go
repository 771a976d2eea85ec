package runtime

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// OpenTelemetry tracing (issue 14, item 2): one span per execution,
// following the GenAI semantic conventions for tool execution. Nothing is
// recorded, and nothing is built, without WithTracerProvider.

const tracerName = "github.com/toolscope/toolscope/runtime"

// WithTracerProvider records one span per execution with tp's tracer,
// following the OpenTelemetry GenAI conventions for tool execution: name
// "execute_tool <tool>", kind INTERNAL, gen_ai.operation.name=execute_tool,
// gen_ai.tool.name, gen_ai.tool.call.id, gen_ai.tool.description, and
// error.type (the result's code; "denied" or "tool_error" for an uncoded
// failure) with an Error status on failure. The caller's ctx span is the
// parent; a nested call's span is a child of its parent execution's span
// (the body's ctx carries it); a turn is an "execute_turn" span with one
// child per call (a turn's never-started calls included). Admission is a
// span event ("admitted"). A nil tp records nothing. Calls refused before
// the pipeline (CLOSED, OVERLOADED) have no span.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return optionFunc(func(c *config) error {
		if tp == nil {
			c.tracer = nil
			return nil
		}
		c.tracer = tp.Tracer(tracerName)
		return nil
	})
}

// WithTraceContent adds the call's arguments and result to its span
// (gen_ai.tool.call.arguments, gen_ai.tool.call.result). Off by default:
// they may hold user data.
func WithTraceContent(on bool) Option {
	return optionFunc(func(c *config) error { c.traceContent = on; return nil })
}

// startSpan starts s's span under ctx and returns the ctx carrying it.
func (r *Registry) startSpan(ctx context.Context, s *execState, callID, name string) context.Context {
	ctx, span := r.cfg.tracer.Start(ctx, "execute_tool "+name,
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(
			attribute.String("gen_ai.operation.name", "execute_tool"),
			attribute.String("gen_ai.tool.name", name),
			attribute.String("gen_ai.tool.call.id", callID),
		))
	s.span = span
	return ctx
}

// spanResolved adds what entry resolved (the tool's description).
func (s *execState) spanResolved() {
	if s.span == nil {
		return
	}
	if s.chainTool != nil && s.chainTool.def.Description != "" {
		s.span.SetAttributes(attribute.String("gen_ai.tool.description", s.chainTool.def.Description))
	}
}

// spanAdmitted marks the admission of s's dispatch.
func (s *execState) spanAdmitted() {
	if s.span != nil {
		s.span.AddEvent("admitted")
	}
}

// endSpan ends s's span with res.
func (s *execState) endSpan(res *Result) {
	span := s.span
	if span == nil {
		return
	}
	if s.classified {
		span.SetAttributes(attribute.String("toolscope.mode", s.mode.String()))
	}
	if s.reg.cfg.traceContent && s.args != nil {
		span.SetAttributes(attribute.String("gen_ai.tool.call.arguments", string(s.args)))
	}
	if res.isError {
		span.SetAttributes(attribute.String("error.type", errorType(s, res)))
		span.SetStatus(codes.Error, res.errMsg)
	} else if s.reg.cfg.traceContent {
		if res.value != nil {
			span.SetAttributes(attribute.String("gen_ai.tool.call.result", string(res.value)))
		} else {
			span.SetAttributes(attribute.String("gen_ai.tool.call.result", res.Text()))
		}
	}
	span.End()
}

func errorType(s *execState, res *Result) string {
	switch {
	case res.errCode != "":
		return string(res.errCode)
	case s.denied:
		return "denied"
	default:
		return "tool_error"
	}
}

// startTurnSpan starts a turn's span, or returns ctx and nil when tracing
// is off.
func (r *Registry) startTurnSpan(ctx context.Context, agent, turnID string, calls int) (context.Context, trace.Span) {
	if r.cfg.tracer == nil {
		return ctx, nil
	}
	return r.cfg.tracer.Start(ctx, "execute_turn",
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(
			attribute.String("toolscope.scope", agent),
			attribute.String("toolscope.turn.id", turnID),
			attribute.Int("toolscope.turn.calls", calls),
		))
}

// syntheticSpan records a turn call that never started (R97).
func (r *Registry) syntheticSpan(ctx context.Context, callID, name string) {
	if r.cfg.tracer == nil {
		return
	}
	_, span := r.cfg.tracer.Start(ctx, "execute_tool "+name,
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(
			attribute.String("gen_ai.operation.name", "execute_tool"),
			attribute.String("gen_ai.tool.name", name),
			attribute.String("gen_ai.tool.call.id", callID),
			attribute.String("error.type", string(CodeAbortedBeforeDispatch)),
		))
	span.SetStatus(codes.Error, "tool call aborted before dispatch")
	span.End()
}
