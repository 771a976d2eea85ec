package runtime

import (
	"context"
	"time"

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
// child per call (a turn's never-started calls included). The stages a call
// went through are span events on its span, each stamped with the time the
// stage ended (given to the tracer, not left to it) and carrying its
// duration in seconds (toolscope.stage.duration), which therefore never
// exceeds the time since the previous event or the span's start:
//
//   - "pre_execute": the pre-execute hooks ran (toolscope.hooks: how many;
//     toolscope.decision: allow, deny or ask);
//   - "approval": an Ask was resolved by the approver;
//   - "guards": the guards ran (toolscope.denied);
//   - "admitted": the dispatch was admitted, after
//     toolscope.admission.wait seconds of waiting for it;
//   - "dispatch": the around hooks and the body returned (toolscope.hooks:
//     the around hooks; toolscope.body.invoked);
//   - "post_execute": the post-execute hooks ran (toolscope.hooks);
//   - "observers": the result observers ran (toolscope.hooks); the span
//     ends right after.
//
// A stage the call never reached has no event (a denied call has no
// "admitted"). A nil tp records nothing, and a call then pays nil checks
// only. Calls refused before the pipeline (CLOSED, OVERLOADED) have no
// span.
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
	s.span = &execSpan{Span: span, recording: span.IsRecording()}
	if s.span.recording {
		s.span.mark = time.Now().UnixNano()
	}
	return ctx
}

// execSpan is an execution's span and the tracing state of its stages.
type execSpan struct {
	trace.Span
	mark     int64 // unix nanos: when the current stage began
	admitted bool  // the "admitted" event was added
	// dispatching is set while around hooks and body run.
	dispatching bool
	observers   int // the result observers finish runs
	// recording is false for a span that records nothing (e.g. not
	// sampled): it is kept in the ctx for propagation and ended, and the
	// stages add nothing to it.
	recording bool
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

// stage adds the event of the stage that began at sp.mark and ends now,
// and starts the next one. The event is stamped with the very time its
// duration was measured to, not whenever the tracer gets to it: a
// stage's duration never exceeds the time since the previous event.
func (sp *execSpan) stage(name string, extra ...attribute.KeyValue) {
	ns := time.Now().UnixNano()
	attrs := append(make([]attribute.KeyValue, 0, 1+len(extra)), attrStageDuration.Float64(float64(ns-sp.mark)/1e9))
	sp.AddEvent(name, trace.WithAttributes(append(attrs, extra...)...), trace.WithTimestamp(time.Unix(0, ns)))
	sp.mark = ns
}

// spanGate marks the start of the gate stages (a turn's call reaches them
// when it is prepared, maybe well after entry).
func (s *execState) spanGate() {
	if s.span.recording {
		s.span.mark = time.Now().UnixNano()
	}
}

// spanPre records the pre-execute stage: n hooks, their decision.
func (s *execState) spanPre(n int, dec Decision, err error) {
	if !s.span.recording {
		return
	}
	d := "error"
	if err == nil {
		switch dec.Kind {
		case DecisionAllow:
			d = "allow"
		case DecisionDeny:
			d = "deny"
		case DecisionAsk:
			d = "ask"
		default:
			d = "unknown"
		}
	}
	s.span.stage("pre_execute", attrHooks.Int(n), attrDecision.String(d))
}

// spanApproval records the approver's resolution of an Ask.
func (s *execState) spanApproval() {
	if s.span.recording {
		s.span.stage("approval")
	}
}

// spanGuards records the guards stage.
func (s *execState) spanGuards(denied bool) {
	if s.span.recording {
		s.span.stage("guards", attrDenied.Bool(denied))
	}
}

// spanDispatching starts the dispatch stage: it adds "admitted" unless the
// admission was already recorded (a turn admits at prepare, turnGate).
func (s *execState) spanDispatching() {
	if !s.span.recording {
		return
	}
	if !s.span.admitted {
		s.spanAdmitted()
	}
	s.span.mark = time.Now().UnixNano()
	s.span.dispatching = true
}

// spanDispatched records the dispatch stage: around hooks and body.
// It is called after dispatch returns, whether or not it dispatched (a
// refused admission did not).
func (s *execState) spanDispatched(around int) {
	if !s.span.recording || !s.span.dispatching {
		return
	}
	s.span.dispatching = false
	s.span.stage("dispatch", attrHooks.Int(around), attrBodyInvoked.Bool(s.bodyInvoked.Load()))
}

// spanPostStart and spanPost bracket the post-execute stage (a turn's
// call runs it at commit, in model order).
func (s *execState) spanPostStart() {
	if s.span.recording {
		s.span.mark = time.Now().UnixNano()
	}
}

func (s *execState) spanPost(n int) {
	if s.span.recording {
		s.span.stage("post_execute", attrHooks.Int(n))
	}
}

// spanObserversStart marks the start of the observers; endSpan records
// them.
func (s *execState) spanObserversStart(n int) {
	if !s.span.recording {
		return
	}
	s.span.mark = time.Now().UnixNano()
	s.span.observers = n
}

// spanResolved adds what entry resolved (the tool's description).
func (s *execState) spanResolved() {
	if !s.span.recording {
		return
	}
	if s.chainTool != nil && s.chainTool.def.Description != "" {
		s.span.SetAttributes(attribute.String("gen_ai.tool.description", s.chainTool.def.Description))
	}
}

// spanAdmitted records the admission of s's dispatch and how long it
// waited for it (since the gate stages ended).
func (s *execState) spanAdmitted() {
	sp := s.span
	if !sp.recording {
		return
	}
	ns := time.Now().UnixNano()
	sp.AddEvent("admitted", trace.WithAttributes(attrAdmissionWait.Float64(float64(ns-sp.mark)/1e9)), trace.WithTimestamp(time.Unix(0, ns)))
	sp.mark = ns
	sp.admitted = true
}

// endSpan records the observers and ends s's span with res.
func (s *execState) endSpan(res *Result) {
	span := s.span
	if !span.recording {
		span.End()
		return
	}
	span.stage("observers", attrHooks.Int(span.observers))
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
