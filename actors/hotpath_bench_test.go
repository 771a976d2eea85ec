package actors_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/toolscope/toolscope/actors"
	"github.com/toolscope/toolscope/messages"
	"github.com/toolscope/toolscope/runtime"
)

func trivialDef(name string) runtime.Definition {
	return runtime.Definition{
		Name:       name,
		Parameters: json.RawMessage(`{"type":"object"}`),
		Output: &runtime.Output{
			Schema: json.RawMessage(`{"type":"string"}`),
			Render: func(_ context.Context, _, v json.RawMessage) ([]runtime.Block, error) {
				return []runtime.Block{runtime.Text(string(v))}, nil
			},
		},
		Execute: func(ctx context.Context, args json.RawMessage, rc *runtime.RunContext) (any, error) {
			return "ok", nil
		},
		IsConcurrencySafe: func(context.Context, json.RawMessage) (bool, error) { return true, nil },
	}
}

// BenchmarkHotPath_MessagePath: a protobuf ExecuteRequest to a scope's PID
// and its reply, from the actor system's root context.
func BenchmarkHotPath_MessagePath(b *testing.B) {
	h, err := actors.New()
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close(context.Background())
	reg := h.Registry()
	reg.Global().Register(trivialDef("t"))
	s, _ := reg.NewScope("a")
	root, pid := h.System().Root, h.PID(s)
	req := &messages.ExecuteRequest{Call: &messages.Call{CallId: "1", Name: "t", ArgumentsJson: []byte(`{}`)}}
	b.ReportAllocs()
	for b.Loop() {
		res, err := root.RequestFuture(pid, req, 5*time.Second).Result()
		if err != nil {
			b.Fatal(err)
		}
		if rep, ok := res.(*messages.ExecuteReply); !ok || rep.GetResult().GetIsError() {
			b.Fatalf("unexpected reply %v", res)
		}
	}
}
