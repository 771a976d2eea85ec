package messages

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// samples holds one fully populated value of every message in
// messages.proto; TestSamplesCoverEveryMessage keeps it complete.
func samples() []proto.Message {
	call := &Call{
		CallId:        "c-2",
		RootCallId:    "c-1",
		Name:          "search",
		ArgumentsJson: []byte(`{"q":"toolscope","n":3}`),
		Agent:         "agent-a",
		ParentToken:   42,
	}
	success := &Result{
		ValueJson: []byte(`{"hits":["a","b"]}`),
		Content: []*ContentBlock{
			{Type: "text", Text: "2 hits"},
			{Type: "image", DataJson: []byte(`{"url":"https://example.invalid/x.png"}`)},
		},
		MetaJson:           []byte(`{"title":"Search"}`),
		AdditionalContexts: []*ContextMessage{{Role: "user", Text: "remember the hits"}},
		ConcludesTurn:      true,
	}
	failure := &Result{
		IsError: true,
		Content: []*ContentBlock{{Type: "text", Text: `Error: unknown tool "nope"`}},
		Error: &ToolError{
			Message: `unknown tool "nope"`,
			Info:    &ErrorInfo{Name: "ToolNotFoundError", Code: "UNKNOWN_TOOL"},
		},
	}
	schema := &ToolSchema{
		Name:           "search",
		Description:    "Searches the index.",
		ParametersJson: []byte(`{"type":"object","properties":{"q":{"type":"string"}}}`),
	}
	return []proto.Message{
		call,
		&ContentBlock{Type: "text", Text: "hello"},
		&ContextMessage{Role: "system", Text: "be brief"},
		&ErrorInfo{Name: "AbortError", Code: "ABORTED"},
		&ToolError{Message: "denied by policy"},
		success,
		failure,
		&ExecuteRequest{Call: call},
		&ExecuteReply{Result: failure, CallId: "c-2"},
		&ExecutionModeRequest{Call: call},
		&ExecutionModeReply{Mode: ModeParallel},
		schema,
		&GetRequest{Name: "search"},
		&GetReply{Found: true, Tool: schema},
		&SchemasRequest{},
		&SchemasReply{Tools: []*ToolSchema{schema, {Name: "noop", ParametersJson: []byte(`{}`)}}},
		&SchemasReply{Error: `tool "x" parameters must be lossless JSON before schema projection`},
		&TurnCall{CallId: "t1-0", Name: "search", ArgumentsText: `{"q":`},
		&TurnRequest{
			TurnId:      "t1",
			Calls:       []*TurnCall{{CallId: "t1-0", Name: "search"}, {CallId: "t1-1", Name: "read", ArgumentsText: `{"path":"a"}`}},
			MaxParallel: 4,
		},
		&TurnEvent{Kind: TurnEventCallStarted, CallId: "t1-0"},
		&ErrorReply{Error: `toolscope: scope "a" does not answer *wrapperspb.StringValue`},
		&TurnReply{
			Results: []*Result{success, failure},
			Events: []*TurnEvent{
				{Kind: TurnEventCallStarted, CallId: "t1-0"},
				{Kind: TurnEventCallStarted, CallId: "t1-1"},
				{Kind: TurnEventResult, CallId: "t1-0"},
				{Kind: TurnEventResult, CallId: "t1-1"},
			},
			Contexts:  []*ContextMessage{{Role: "user", Text: "remember the hits"}},
			Concluded: true,
		},
		&TurnReply{Error: "max parallel must be at least 1"},
		&RegistryChanged{Scope: "agent-a", Version: 7},
		&ExecutionStarted{
			CallId: "t1-0", Scope: "agent-a", Tool: "search", Mode: ModeExclusive,
			UnixNanos: 1_700_000_000_000_000_000, TurnId: "t1", Group: 1,
		},
		&ExecutionFinished{
			CallId: "t1-1", Scope: "agent-a", Tool: "read", Mode: ModeParallel,
			StartedUnixNanos: 1_700_000_000_000_000_000, FinishedUnixNanos: 1_700_000_000_000_004_000,
			Outcome: OutcomeDenied, IsError: true, TurnId: "t1", Group: 2,
		},
	}
}

func TestRoundTrip(t *testing.T) {
	for _, want := range samples() {
		name := string(want.ProtoReflect().Descriptor().Name())
		t.Run(name, func(t *testing.T) {
			wire, err := proto.Marshal(want)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			got := want.ProtoReflect().Type().New().Interface()
			if err := proto.Unmarshal(wire, got); err != nil {
				t.Fatalf("Unmarshal: %v", err)
			}
			if !proto.Equal(got, want) {
				t.Errorf("round trip changed the message\n got: %v\nwant: %v", got, want)
			}
		})
	}
}

func TestSamplesCoverEveryMessage(t *testing.T) {
	covered := map[protoreflect.FullName]bool{}
	for _, m := range samples() {
		covered[m.ProtoReflect().Descriptor().FullName()] = true
	}
	msgs := File_toolscope_messages_messages_proto.Messages()
	for i := range msgs.Len() {
		if name := msgs.Get(i).FullName(); !covered[name] {
			t.Errorf("samples() has no %s; add one so it is round-tripped", name)
		}
	}
}

// TestRegisteredPath guards the path under which the file is registered in
// the global protobuf registry: a generic one such as "messages.proto" would
// panic at init in binaries that link another file of that name.
func TestRegisteredPath(t *testing.T) {
	if got, want := File_toolscope_messages_messages_proto.Path(), "toolscope/messages/messages.proto"; got != want {
		t.Errorf("registered path = %q, want %q", got, want)
	}
}

// TestValuePresence checks that Result.value_json tells an absent value from
// JSON null (and from an empty encoding) after a round trip (R69, R76).
func TestValuePresence(t *testing.T) {
	tests := []struct {
		name        string
		value       []byte
		wantPresent bool
	}{
		{"absent", nil, false},
		{"null", []byte("null"), true},
		{"empty", []byte{}, true},
		{"object", []byte(`{"a":1}`), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wire, err := proto.Marshal(&Result{ValueJson: tt.value, MetaJson: tt.value})
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			var got Result
			if err := proto.Unmarshal(wire, &got); err != nil {
				t.Fatalf("Unmarshal: %v", err)
			}
			if present := got.ValueJson != nil; present != tt.wantPresent {
				t.Errorf("value present = %v, want %v", present, tt.wantPresent)
			}
			if present := got.MetaJson != nil; present != tt.wantPresent {
				t.Errorf("meta present = %v, want %v", present, tt.wantPresent)
			}
			if !bytes.Equal(got.ValueJson, tt.value) {
				t.Errorf("value = %q, want %q", got.ValueJson, tt.value)
			}
			has := got.ProtoReflect().Has(got.ProtoReflect().Descriptor().Fields().ByName("value_json"))
			if has != tt.wantPresent {
				t.Errorf("reflection Has(value_json) = %v, want %v", has, tt.wantPresent)
			}
		})
	}
}

// TestInvalidUTF8Rejected documents why raw model text must be valid UTF-8:
// proto3 strings are checked when marshaled.
func TestInvalidUTF8Rejected(t *testing.T) {
	if _, err := proto.Marshal(&TurnCall{ArgumentsText: "\xff"}); err == nil {
		t.Error("Marshal accepted invalid UTF-8 in a string field")
	}
}

// TestGeneratedIsFresh regenerates messages.pb.go into a temporary directory
// with gen.sh (the go:generate command) and compares it byte for byte with
// the committed file. It skips where the pinned protoc is unavailable;
// .ci/check-generated runs the same check in CI and never skips.
func TestGeneratedIsFresh(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping code generation in -short mode")
	}
	if _, err := exec.LookPath("protoc"); err != nil {
		t.Skip("protoc not on PATH; .ci/check-generated covers this in CI")
	}
	committed, err := os.ReadFile("messages.pb.go")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^// \tprotoc +v(\S+)$`).FindSubmatch(committed)
	if m == nil {
		t.Fatal("messages.pb.go header records no protoc version")
	}
	out, err := exec.Command("protoc", "--version").Output()
	if err != nil {
		t.Fatalf("protoc --version: %v", err)
	}
	if have, want := strings.TrimSpace(string(out)), "libprotoc "+string(m[1]); have != want {
		t.Skipf("protoc is %q, messages.pb.go was generated with %q; .ci/check-generated covers this in CI", have, want)
	}

	dir := t.TempDir()
	cmd := exec.Command("bash", "gen.sh", dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gen.sh: %v\n%s", err, out)
	}
	fresh, err := os.ReadFile(filepath.Join(dir, "messages.pb.go"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fresh, committed) {
		t.Errorf("messages.pb.go is stale: run `go generate ./messages` and commit the result")
	}
}
