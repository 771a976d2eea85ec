package otelscope_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolscope/toolscope/otelscope"
	"github.com/toolscope/toolscope/runtime"
)

func spanAttrs(s sdktrace.ReadOnlySpan) map[string]string {
	out := map[string]string{}
	for _, kv := range s.Attributes() {
		out[string(kv.Key)] = kv.Value.String()
	}
	return out
}

// A turn of parallel, exclusive, denied, failed and nested calls under a
// caller's span produces exactly the expected span tree, names and
// attributes (issue 14, item 2; OpenTelemetry GenAI tool execution).
func TestTrace_SpanTreeOfATurn(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	reg := r3Reg(t, runtime.WithHooks(otelscope.Hooks(otelscope.WithTracerProvider(tp), otelscope.WithTraceContent(true))))
	s := r3Scope(t, reg, "agent")
	registerEveryKind(s)

	ctx, root := tp.Tracer("test").Start(context.Background(), "agent step")
	_, err := s.ExecuteTurn(ctx, []runtime.TurnCall{
		{ID: "1", Name: "par", ArgumentsText: `{"q":1}`}, {ID: "2", Name: "excl"}, {ID: "3", Name: "fail"},
		{ID: "4", Name: "denied"}, {ID: "5", Name: "outer"},
	}, runtime.WithTurnID("t1"))
	require.NoError(t, err)
	root.End()

	spans := rec.Ended()
	byCall := map[string]sdktrace.ReadOnlySpan{}
	var turn sdktrace.ReadOnlySpan
	for _, sp := range spans {
		a := spanAttrs(sp)
		switch {
		case sp.Name() == "execute_turn":
			turn = sp
		case a["gen_ai.tool.call.id"] != "":
			byCall[a["gen_ai.tool.call.id"]] = sp
		}
	}
	require.NotNil(t, turn, "a turn span")
	require.Len(t, byCall, 6, "one span per call, the nested one included")
	assert.Equal(t, root.SpanContext().SpanID(), turn.Parent().SpanID(), "the caller's span is the turn's parent")
	assert.Equal(t, "t1", spanAttrs(turn)["toolscope.turn.id"])
	for _, id := range []string{"1", "2", "3", "4", "5"} {
		sp := byCall[id]
		assert.Equal(t, turn.SpanContext().SpanID(), sp.Parent().SpanID(), "call %s is a child of the turn", id)
		assert.Equal(t, trace.SpanKindInternal, sp.SpanKind())
		assert.Equal(t, "execute_tool", spanAttrs(sp)["gen_ai.operation.name"])
		assert.Equal(t, "agent", spanAttrs(sp)["toolscope.scope"], "call %s names its scope", id)
		assert.Equal(t, root.SpanContext().TraceID(), sp.SpanContext().TraceID())
	}
	assert.Equal(t, byCall["5"].SpanContext().SpanID(), byCall["inner"].Parent().SpanID(), "the nested call is a child of its parent execution")

	assert.Equal(t, "execute_tool par", byCall["1"].Name())
	a1 := spanAttrs(byCall["1"])
	assert.Equal(t, "par", a1["gen_ai.tool.name"])
	assert.Equal(t, "tool par", a1["gen_ai.tool.description"])
	assert.Equal(t, `{"q":1}`, a1["gen_ai.tool.call.arguments"])
	assert.Equal(t, `"p"`, a1["gen_ai.tool.call.result"])
	assert.Equal(t, "parallel", a1["toolscope.mode"])
	assert.NotContains(t, a1, "error.type")
	assert.Equal(t, codes.Unset, byCall["1"].Status().Code)
	var admitted bool
	for _, e := range byCall["1"].Events() {
		admitted = admitted || e.Name == "admitted"
	}
	assert.True(t, admitted, "admission is a span event")

	assert.Equal(t, "failed", spanAttrs(byCall["3"])["error.type"])
	assert.Equal(t, "failed", spanAttrs(byCall["3"])["toolscope.outcome"])
	assert.Equal(t, "denied", spanAttrs(byCall["4"])["toolscope.outcome"])
	assert.Equal(t, codes.Error, byCall["3"].Status().Code)
	assert.Equal(t, "boom", byCall["3"].Status().Description)
	assert.Equal(t, "denied", spanAttrs(byCall["4"])["error.type"])
	assert.Equal(t, "exclusive", spanAttrs(byCall["2"])["toolscope.mode"])
}

// Without a provider nothing is recorded; an unknown tool's span carries
// its code; a call without content capture has no arguments attribute.
func TestTrace_CodesAndNoCapture(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	reg := r3Reg(t, runtime.WithHooks(otelscope.Hooks(otelscope.WithTracerProvider(tp))))
	res := reg.Global().Execute(context.Background(), runtime.Call{ID: "g", Name: "ghost", Arguments: json.RawMessage(`{"secret":1}`)})
	require.Equal(t, runtime.CodeUnknownTool, res.Code())
	spans := rec.Ended()
	require.Len(t, spans, 1)
	a := spanAttrs(spans[0])
	assert.Equal(t, string(runtime.CodeUnknownTool), a["error.type"])
	assert.NotContains(t, a, "gen_ai.tool.call.arguments")
	assert.False(t, spans[0].Parent().IsValid(), "a root span without a caller span")
}

// stageNames lists a span's event names, in order.
func stageNames(sp sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, e := range sp.Events() {
		out = append(out, e.Name)
	}
	return out
}

// stageEvent returns the span's event called name and its attributes.
func stageEvent(t *testing.T, sp sdktrace.ReadOnlySpan, name string) (sdktrace.Event, map[string]attribute.Value) {
	t.Helper()
	for _, e := range sp.Events() {
		if e.Name == name {
			attrs := map[string]attribute.Value{}
			for _, kv := range e.Attributes {
				attrs[string(kv.Key)] = kv.Value
			}
			return e, attrs
		}
	}
	t.Fatalf("span %s has no %q event; it has %v", sp.Name(), name, stageNames(sp))
	return sdktrace.Event{}, nil
}

// The stages a call went through are span events, in order, each with its
// duration; a turn's calls have them too, a denied call has no admission
// nor dispatch (issue 14: admission wait and the hook stages).
func TestTrace_StageEventsOfATurn(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	reg := r3Reg(t, runtime.WithHooks(otelscope.Hooks(otelscope.WithTracerProvider(tp))))
	s := r3Scope(t, reg, "agent")
	registerEveryKind(s)
	_, err := s.ExecuteTurn(context.Background(), []runtime.TurnCall{
		{ID: "1", Name: "par"}, {ID: "4", Name: "denied"}, {ID: "5", Name: "outer"},
	})
	require.NoError(t, err)
	byCall := map[string]sdktrace.ReadOnlySpan{}
	for _, sp := range rec.Ended() {
		if id := spanAttrs(sp)["gen_ai.tool.call.id"]; id != "" {
			byCall[id] = sp
		}
	}
	full := []string{"pre_execute", "guards", "admitted", "dispatch", "post_execute", "observers"}
	assert.Equal(t, full, stageNames(byCall["1"]), "a turn's call")
	assert.Equal(t, full, stageNames(byCall["5"]), "a turn's call that nests")
	assert.Equal(t, full, stageNames(byCall["inner"]), "a nested single Execute")
	assert.Equal(t, []string{"pre_execute", "guards", "post_execute", "observers"}, stageNames(byCall["4"]), "a denied call never waits nor dispatches")
	_, g := stageEvent(t, byCall["4"], "guards")
	assert.True(t, g["toolscope.denied"].AsBool())
	_, g = stageEvent(t, byCall["1"], "guards")
	assert.False(t, g["toolscope.denied"].AsBool())
	for _, sp := range byCall {
		last := sp.StartTime()
		for _, e := range sp.Events() {
			assert.False(t, e.Time.Before(last), "%s: %s is stamped in order", sp.Name(), e.Name)
			last = e.Time
			var key attribute.Key = "toolscope.stage.duration"
			if e.Name == "admitted" {
				key = "toolscope.admission.wait"
			}
			var found bool
			for _, kv := range e.Attributes {
				if kv.Key == key {
					found = true
					assert.GreaterOrEqual(t, kv.Value.AsFloat64(), 0.0)
				}
			}
			assert.True(t, found, "%s: %s carries %s", sp.Name(), e.Name, key)
		}
		assert.False(t, sp.EndTime().Before(last), "%s ends after its last stage", sp.Name())
	}
}

// A single Execute's stage events count the hooks of each stage and give
// the decision; a call that waits behind an exclusive one is admitted only
// after the other's body returned, and its wait is recorded.
func TestTrace_StageEventsHooksAndAdmissionWait(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	reg := r3Reg(t, runtime.WithHooks(otelscope.Hooks(otelscope.WithTracerProvider(tp))))
	s := r3Scope(t, reg, "agent")
	entered, release := make(chan struct{}), make(chan struct{})
	var slowReturned time.Time
	r3M(s.Register(nestTool("slow", false, func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) {
		entered <- struct{}{}
		<-release
		slowReturned = time.Now()
		return "slow", nil
	})))
	r3M(s.Register(nestTool("quick", false, func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) { return "q", nil })))
	for range 2 {
		r3M(s.OnPreExecute(func(_ context.Context, _ runtime.Execution, next func() (runtime.Decision, error)) (runtime.Decision, error) {
			return next()
		}))
	}
	r3M(s.OnExecute(func(ctx context.Context, _ runtime.Execution, next func(context.Context) *runtime.Result) (*runtime.Result, error) {
		return next(ctx), nil
	}))
	r3M(s.OnPostExecute(func(_ context.Context, _ runtime.Execution, _ *runtime.Result, next func() (runtime.PostDecision, error)) (runtime.PostDecision, error) {
		return next()
	}))
	for range 3 {
		r3M(s.OnResult(func(context.Context, runtime.Execution, *runtime.Result) error { return nil }))
	}

	slow := nestGo(s, context.Background(), runtime.Call{ID: "slow", Name: "slow"})
	nestAwait(t, entered)
	quick := nestGo(s, context.Background(), runtime.Call{ID: "quick", Name: "quick"})
	// quick waits for slow's exclusive admission; let slow go once quick
	// is queued.
	eventually(t, func() bool { return reg.Queued() == 1 })
	close(release)
	require.False(t, nestAwait(t, slow).IsError())
	require.False(t, nestAwait(t, quick).IsError())

	byCall := map[string]sdktrace.ReadOnlySpan{}
	for _, sp := range rec.Ended() {
		byCall[spanAttrs(sp)["gen_ai.tool.call.id"]] = sp
	}
	q := byCall["quick"]
	_, pre := stageEvent(t, q, "pre_execute")
	assert.Equal(t, int64(2), pre["toolscope.hooks"].AsInt64())
	assert.Equal(t, "allow", pre["toolscope.decision"].AsString())
	_, disp := stageEvent(t, q, "dispatch")
	assert.Equal(t, int64(1), disp["toolscope.hooks"].AsInt64())
	assert.True(t, disp["toolscope.body.invoked"].AsBool())
	_, post := stageEvent(t, q, "post_execute")
	assert.Equal(t, int64(1), post["toolscope.hooks"].AsInt64())
	_, obs := stageEvent(t, q, "observers")
	assert.Equal(t, int64(3), obs["toolscope.hooks"].AsInt64())

	// slow's "dispatch" event is stamped once its admission is given back,
	// so quick's admission may come a moment before it; never before
	// slow's body returned (slowReturned is read after both calls ended).
	admitted, adm := stageEvent(t, q, "admitted")
	stageEvent(t, byCall["slow"], "dispatch")
	assert.False(t, admitted.Time.Before(slowReturned), "quick is admitted after slow's body returned")
	assert.Greater(t, adm["toolscope.admission.wait"].AsFloat64(), 0.0, "quick waited for admission")
}

// ExampleWithTracerProvider records a turn's spans with the SDK's in-memory
// exporter: the turn's span is the parent of one span per call, and each
// call's stages are span events.
func ExampleWithTracerProvider() {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	reg, err := runtime.New(runtime.WithHooks(otelscope.Hooks(otelscope.WithTracerProvider(tp))))
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close(context.Background())
	if _, err := reg.Global().Register(exampleTool("search")); err != nil {
		log.Fatal(err)
	}
	s, err := reg.NewScope("agent")
	if err != nil {
		log.Fatal(err)
	}
	if _, err := s.ExecuteTurn(context.Background(), []runtime.TurnCall{{ID: "c1", Name: "search"}, {ID: "c2", Name: "fetch"}}); err != nil {
		log.Fatal(err)
	}
	spans := exp.GetSpans()
	names := map[trace.SpanID]string{}
	for _, sp := range spans {
		names[sp.SpanContext.SpanID()] = sp.Name
	}
	for _, sp := range spans {
		var stages, errType []string
		for _, e := range sp.Events {
			stages = append(stages, e.Name)
		}
		for _, kv := range sp.Attributes {
			if kv.Key == "error.type" {
				errType = append(errType, kv.Value.AsString())
			}
		}
		fmt.Printf("%s (parent %q) %v %v\n", sp.Name, names[sp.Parent.SpanID()], errType, stages)
	}
	// Output:
	// execute_tool search (parent "execute_turn") [] [pre_execute guards admitted dispatch post_execute observers]
	// execute_tool fetch (parent "execute_turn") [UNKNOWN_TOOL] [pre_execute guards admitted dispatch post_execute observers]
	// execute_turn (parent "") [] []
}

// A lone Execute's span names the scope it ran for (toolscope.scope, as a
// turn's span does), so it can be traced to its agent without a turn around
// it; a call in the global view carries no scope (issue 25, item 10).
func TestTrace_CallSpanNamesItsScope(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	reg := r3Reg(t, runtime.WithHooks(otelscope.Hooks(otelscope.WithTracerProvider(tp))))
	s := r3Scope(t, reg, "agent-7")
	registerEveryKind(s)
	registerEveryKind(reg.Global())
	require.False(t, s.Execute(context.Background(), runtime.Call{ID: "a", Name: "par"}).IsError())
	require.False(t, reg.Global().Execute(context.Background(), runtime.Call{ID: "g", Name: "par"}).IsError())
	got := map[string]map[string]string{}
	for _, sp := range rec.Ended() {
		a := spanAttrs(sp)
		got[a["gen_ai.tool.call.id"]] = a
	}
	require.Contains(t, got, "a")
	require.Contains(t, got, "g")
	assert.Equal(t, "agent-7", got["a"]["toolscope.scope"])
	assert.NotContains(t, got["g"], "toolscope.scope")
}
