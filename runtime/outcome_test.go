package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/toolscope/toolscope/runtime"
)

// Issue 25 item 4: each registry code has one outcome, and each outcome one
// word (docs/contract.md#outcomes). The per-path agreement of Result, event,
// hooks, metrics and protobuf is otelscope's TestOutcome_Item4_ResultEventMetricAgree.
func TestOutcome_Item4_CodesAndWords(t *testing.T) {
	for _, c := range []struct {
		code runtime.Code
		want runtime.Outcome
	}{
		{"", runtime.OutcomeFailed},
		{runtime.CodeUnknownTool, runtime.OutcomeFailed},
		{runtime.CodeInvalidArgs, runtime.OutcomeFailed},
		{runtime.CodeInvalidToolOutput, runtime.OutcomeFailed},
		{runtime.CodeUnsupportedSchema, runtime.OutcomeFailed},
		{"MY_OWN_CODE", runtime.OutcomeFailed},
		{runtime.CodeToolTimeout, runtime.OutcomeTimedOut},
		{runtime.CodeAborted, runtime.OutcomeCancelled},
		{runtime.CodeAbortedBeforeDispatch, runtime.OutcomeCancelled},
		{runtime.CodeOverloaded, runtime.OutcomeRefused},
		{runtime.CodeClosed, runtime.OutcomeRefused},
		{runtime.CodeWouldDeadlock, runtime.OutcomeRefused},
	} {
		assert.Equal(t, c.want, c.code.Outcome(), "code %q", c.code)
		// A failure carrying the code has the code's outcome.
		res := runtime.Failure(runtime.NewError("E", c.code, "x"))
		if c.code == "" {
			res = runtime.Failure(errors.New("x"))
		}
		assert.Equal(t, c.want, res.Outcome(), "Failure with code %q", c.code)
	}
	words := map[runtime.Outcome]string{
		runtime.OutcomeOK: "ok", runtime.OutcomeDenied: "denied", runtime.OutcomeFailed: "failed",
		runtime.OutcomeTimedOut: "timed_out", runtime.OutcomeCancelled: "cancelled", runtime.OutcomeRefused: "refused",
	}
	for o, w := range words {
		assert.Equal(t, w, o.String())
		assert.Equal(t, w, o.Proto().Word(), "the protobuf value has the same word")
	}
	assert.Equal(t, "Outcome(42)", runtime.Outcome(42).String())
	assert.Equal(t, runtime.OutcomeOK, runtime.Success(1).Outcome())
	// Failure never makes a denial.
	assert.Equal(t, runtime.OutcomeFailed, runtime.Failure(errors.New("denied")).Outcome())
}

// ExampleResult_Outcome tells a guard's denial from a tool's own error
// without reading messages: both are uncoded failures.
func ExampleResult_Outcome() {
	reg, err := runtime.New()
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close(context.Background())
	g := reg.Global()
	remove, err := runtime.NewTool("remove", "Remove a file", func(context.Context, struct{}, *runtime.RunContext) (string, error) {
		return "", errors.New("disk is read-only")
	})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := g.Register(remove); err != nil {
		log.Fatal(err)
	}
	var locked bool
	if _, err := g.Guard(func(context.Context, runtime.Execution) (string, bool) {
		return "the workspace is locked", locked
	}); err != nil {
		log.Fatal(err)
	}

	for _, l := range []bool{false, true} {
		locked = l
		res := g.Execute(context.Background(), runtime.Call{ID: "c", Name: "remove"})
		fmt.Printf("%s code=%q: %s\n", res.Outcome(), res.Code(), res.ErrorMessage())
	}
	locked = false
	res := g.Execute(context.Background(), runtime.Call{ID: "c", Name: "rm"})
	fmt.Printf("%s code=%q\n", res.Outcome(), res.Code())
	// Output:
	// failed code="": disk is read-only
	// denied code="": the workspace is locked
	// failed code="UNKNOWN_TOOL"
}
