package runtime_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

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
	reg := r3Reg(t, runtime.WithTracerProvider(tp), runtime.WithTraceContent(true))
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

	assert.Equal(t, "tool_error", spanAttrs(byCall["3"])["error.type"])
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
	reg := r3Reg(t, runtime.WithTracerProvider(tp))
	res := reg.Global().Execute(context.Background(), runtime.Call{ID: "g", Name: "ghost", Arguments: json.RawMessage(`{"secret":1}`)})
	require.Equal(t, runtime.CodeUnknownTool, res.Code())
	spans := rec.Ended()
	require.Len(t, spans, 1)
	a := spanAttrs(spans[0])
	assert.Equal(t, string(runtime.CodeUnknownTool), a["error.type"])
	assert.NotContains(t, a, "gen_ai.tool.call.arguments")
	assert.False(t, spans[0].Parent().IsValid(), "a root span without a caller span")
}
