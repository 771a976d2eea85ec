// Package actors is the actor face of toolscope: it gives the scopes of a
// runtime.Registry protoactor PIDs, so that actors — in the same actor
// system, without the Go facade — drive them with the protobuf messages of
// package messages, and it publishes the execution events on the actor
// system's event stream. Package runtime knows nothing of actors: a Go
// caller who never asks for a PID pays nothing for them (no protoactor
// lock, reflection or allocation per call).
//
// # Embedding
//
// Start puts toolscope inside the caller's actor system (which keeps its
// logger and outlives the host); New makes a system of its own (whose
// protoactor log goes to WithLogger's handler, from Warn up). Either
// creates the registry (WithRegistry passes its options), reachable
// through Host.Registry: everything a Go caller does goes through it,
// unchanged. Host.PID(scope) returns the PID of a scope; Host.Close closes
// the registry, then stops the actors.
//
// # One actor per scope, spawned on demand
//
// Each scope that was asked for its PID has an actor: the global scope's
// is spawned by the host's first PID request, and an agent scope's by the
// first PID request of that scope, as a child of the global scope's actor
// (its parent link: the global actor spawns, watches and respawns its
// children). An idle scope costs no actor. The actors are stateless — the
// scope's tools, hooks, restrictions and admission live in the registry —
// and run no user code in Receive: a request is answered off the actor's
// goroutine, by one of the host's warm workers, and the reply is sent to
// the sender (a Request or RequestFuture;
// a request sent without a sender runs nothing, as nobody could hear the
// answer). So a tool body, hook or classifier may send to any PID, its
// own scope's included, and wait for the answer.
//
// # One entry path
//
// A request is answered by the scope's own public method, the one a Go
// caller calls: an ExecuteRequest by Scope.Execute, a TurnRequest by
// Scope.ExecuteTurn, an ExecutionModeRequest by Scope.ExecutionMode, a
// GetRequest by Scope.Get, a SchemasRequest by Scope.Schemas. A call by
// message therefore flows through the registry's admission exactly as a
// call by Go — parallel-classified calls overlap, exclusive ones run alone,
// first come first served; a turn waits for its go-ahead behind the calls
// that queued before it — and is traced, counted, refused when overloaded
// (WithMaxQueued) or closed, and reported in the events, the same way. A
// message carries no ctx: a request is run with context.Background(), so
// it is a top-level call, never nested in an execution (Call.parent_token
// is not honoured: a number in a message cannot prove that it comes from
// inside that execution, and honouring it would let a forged message run
// inside another call's admission). A body that wants a nested call calls
// the Go API with its ctx.
//
// # The protocol carries data only
//
// Every message a PID answers is a protobuf message of package messages:
// names, ids and JSON — no function, channel or pointer into the registry.
// A message forged by any actor in the system can therefore do nothing
// that a Go caller of the scope's public methods could not: it runs a call
// in that scope's view, through the same guards, hooks and admission. A
// scope's PID answers in its own view only: a Call whose agent names
// another scope is refused (a failure result for an ExecuteRequest, an
// ErrorReply for an ExecutionModeRequest) and runs nothing. A message the
// PID does not know gets an ErrorReply listing what it answers, never
// silence. The messages between the host and its own actors are unexported
// types, which no other package can send.
//
// # Disposed scopes and faults
//
// When a scope is disposed its actor is stopped; a request that reaches it
// in between gets an ErrorReply, and one sent afterwards is a dead letter,
// which a RequestFuture reports at once (actor.ErrDeadLetter): nothing
// waits for a scope that is gone. A handle disposed before anyone asked
// gets a PID no process serves.
//
// If protoactor stops a scope's actor behind the host's back (someone
// calls Stop on its PID), the global actor hears it terminate and spawns a
// new incarnation, and the PID stays the same: the new incarnation is
// spawned under a fresh name and, once fully set up, added to the process
// registry under the PID handed out (an alias), so a send racing the
// respawn finds either no process (a dead letter) or a ready one. If the
// global actor is stopped, its children stop with it; the host respawns
// it the same way, and the new one respawns every child. The scope itself
// never notices: its calls never went through the actor. Requests waiting
// in a stopped actor's mailbox are dropped by protoactor; a RequestFuture
// then ends with its timeout. A dead letter is published on the sending
// goroutine, so the host contains a panicking event-stream subscriber
// around each of its own sends (reported through WithErrorHandler and
// WithLogger).
//
// # Events
//
// With WithEvents the host publishes one messages.ExecutionStarted and one
// messages.ExecutionFinished per call (a turn's synthetic aborted calls
// included) on the event stream, built from the registry's typed events
// (runtime.Hooks.Event: delivered in place, never dropped, never
// reordered), published synchronously on the goroutine where the call
// reached that point. Without it nothing is published, and the registry
// builds no events for the host.
package actors
