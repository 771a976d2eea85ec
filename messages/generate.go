// Package messages is the protobuf protocol of toolscope: every message a
// scope's actor (package actors) receives or sends, generated from
// messages.proto.
//
// Package actors gives each scope whose PID is asked for a protoactor actor
// that answers these messages by calling the scope's own methods
// (Execute, ExecuteTurn, Get, Schemas, ExecutionMode), so a request by
// message goes through the same admission, go-ahead, hooks and overload
// as a call from Go:
//
//   - Any actor in the same system (or, through protoactor's remote, on
//     another node) sends an [ExecuteRequest] carrying a [Call] and receives an
//     [ExecuteReply] carrying the final [Result].
//   - [ExecutionModeRequest], [GetRequest] and [SchemasRequest] are reads,
//     answered by [ExecutionModeReply], [GetReply] and [SchemasReply].
//   - A [TurnRequest] hands a scope the raw tool calls of one assistant
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
//   - Events are facts in the past tense: a host started with
//     actors.WithEvents publishes [ExecutionStarted] and
//     [ExecutionFinished] on the actor system's event stream around every
//     execution. [RegistryChanged] is defined for a host that announces
//     changes; the typed events of package runtime are the Go form of all
//     three.
//   - A request by message is always a top-level call: a message cannot
//     prove it was sent from inside an execution, so its parent token is
//     not honoured for admission.
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
