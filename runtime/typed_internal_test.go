package runtime

import (
	"context"
	"encoding/json"
	"testing"
)

// The typed helper's string-output side channel is only for the registry's
// own call of the body: a caller that invokes a typed Execute directly (a
// wrapper, or another tool's body passing its run context) gets the value.
func TestNewTool_R105_DirectCallReturnsTheValue(t *testing.T) {
	def, err := NewTool("echo", "", func(ctx context.Context, in struct {
		S string `json:"s"`
	}, rc *RunContext) (string, error) {
		return in.S, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s := &execState{}
	rc := &RunContext{s: s}
	v, err := def.Execute(context.Background(), json.RawMessage(`{"s":"hi"}`), rc)
	if err != nil {
		t.Fatal(err)
	}
	if _, marker := v.(typedOutMarker); marker {
		t.Fatal("a direct caller got the registry's side-channel marker")
	}
	if v != "hi" {
		t.Fatalf("got %#v, want \"hi\"", v)
	}
	// Called by the registry (directBody set), the output goes to the
	// execution and the marker comes back.
	s.directBody = true
	v, err = def.Execute(context.Background(), json.RawMessage(`{"s":"hi"}`), rc)
	if err != nil {
		t.Fatal(err)
	}
	if _, marker := v.(typedOutMarker); !marker || string(s.typedOut) != `"hi"` || s.directBody {
		t.Fatalf("registry call: v=%#v typedOut=%q directBody=%v", v, s.typedOut, s.directBody)
	}
}
