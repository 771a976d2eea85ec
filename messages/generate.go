// Package messages is the protobuf protocol of toolscope: every message a
// scope actor or a scope supervisor receives or sends, generated from
// messages.proto.
//
// The registry is built from actors (see DESIGN.md): one actor per scope owns
// that scope's layer, and one supervisor per scope admits executions and runs
// the calls of a model turn. They talk only through the messages defined
// here:
//
//   - A caller (the runtime facade, or any other actor in the same system)
//     sends an [ExecuteRequest] carrying a [Call] and receives an
//     [ExecuteReply] carrying the final [Result].
//   - [ExecutionModeRequest], [GetRequest] and [SchemasRequest] are reads,
//     answered by [ExecutionModeReply], [GetReply] and [SchemasReply].
//   - A [TurnRequest] hands a supervisor the raw tool calls of one assistant
//     message; its [TurnReply] returns the results in model order together
//     with the scheduling events, the collected context messages and
//     whether the turn was concluded.
//   - A message the receiver does not know, or a request it refuses as a
//     whole (an [ExecutionModeRequest] whose [Call.Agent] names a scope
//     other than the receiving one), is answered with an [ErrorReply]:
//     a sender that used Request or RequestFuture always gets a reply. A
//     scope's PID runs calls in that scope's view only; an
//     [ExecuteRequest] whose call names another scope gets an
//     [ExecuteReply] with a failure result, and nothing runs.
//   - Events are facts in the past tense: [RegistryChanged] after a
//     mutation that notifies subscribers, [ExecutionStarted] and
//     [ExecutionFinished] around every execution. Tracing, the demo's
//     timeline and the benchmarks read them.
//
// JSON values (arguments, success values, metadata, parameter schemas)
// travel as bytes holding exactly one encoded JSON value. Where an absent
// value and JSON null mean different things, the field is a proto3
// optional, so in Go a nil slice means absent and []byte("null") means
// null; see [Result.ValueJson].
//
// Only data travels. Go-only things — tool bodies, hooks, guards,
// classifiers, renderers, finalizers, contexts — never go into a message;
// they live in the owning scope's published snapshot. That is what lets an
// actor elsewhere in the same actor system, or later on another node through
// protoactor's remote and cluster packages, send a request to a scope's PID
// without the Go facade.
//
// In-process, protoactor hands the receiver the same pointer the sender
// sent, so a message is frozen once sent: use [google.golang.org/protobuf/proto.Clone]
// before changing a received message.
//
// messages.pb.go is generated and committed. After editing messages.proto,
// run `go generate ./messages`; it needs protoc 3.21.12 (Debian's
// protobuf-compiler package) on PATH and builds protoc-gen-go at the version
// go.mod pins. .ci/check-generated fails when the committed file is stale.
package messages

//go:generate bash gen.sh
