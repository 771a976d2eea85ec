package clustermsg_test

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/toolscope/toolscope/cluster/clustermsg"
	"github.com/toolscope/toolscope/messages"
)

// TestClustermsg_Item3_RoundTripsAndRegistersItsOwnPath: every request
// carries its header through the wire form, and the file is registered
// under a path no other file uses.
func TestClustermsg_Item3_RoundTripsAndRegistersItsOwnPath(t *testing.T) {
	h := &clustermsg.Header{Tree: "t", Scope: "s", CallId: "c", DeadlineUnixNanos: 42, Traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", Tracestate: "k=v"}
	in := &clustermsg.ExecuteRequest{Header: h, Call: &messages.Call{CallId: "c", Name: "x", ArgumentsJson: []byte(`{}`)}}
	b, err := proto.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out clustermsg.ExecuteRequest
	if err := proto.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(in, &out) {
		t.Fatalf("round trip: %v != %v", in, &out)
	}
	if p := in.ProtoReflect().Descriptor().ParentFile().Path(); p != "toolscope/cluster/clustermsg/clustermsg.proto" {
		t.Fatalf("registered path %q", p)
	}
}
