// Package runtime is toolscope's public API: a tool registry and execution
// pipeline for LLM agents, built on protoactor-go.
//
// # Scopes
//
// A Registry has one global scope (Registry.Global) and any number of agent
// scopes (Registry.NewScope, Scope.NewScope for sub-agents, nested to any
// depth). Every scope is a layer: the tools, restrictions, guards and hooks
// registered through its handle. A call or read for scope K sees the global
// layer plus every layer on K's chain (K, its parent, ..., the top-level
// agent scope):
//
//   - tools: the nearest layer wins a name, so a scoped tool shadows an
//     inherited one of the same name and takes its position;
//   - restrictions: an allow/deny filter on what a scope inherits; all
//     filters on the chain intersect, and a scope's own tools are exempt;
//   - guards: deny-only checks, global first, then farthest ancestor to the
//     agent; the first denial wins and no hook can override it;
//   - hooks (pre-execute, around, post-execute, result observers): those of
//     the global scope and of every scope on the chain, in registration
//     order (WithPrepend puts one first).
//
// Every registration returns its exact disposer: calling it removes that
// registration and nothing else, once. Disposing a scope runs the disposers
// of everything registered through it, newest first. Owner groups
// (Scope.Group) file into the same layer but are disposed on their own.
// Change subscribers (OnChange) hear every tool and restriction change in
// every scope, synchronously; a failing subscriber rolls an addition back.
//
// # Reads
//
// Get, Schemas and ExecutionMode answer for one view without waiting on any
// actor: each scope's actor publishes an immutable snapshot of its layer
// after every change, and a read loads each layer on the chain once, so it
// sees one consistent state. Get and ExecutionMode resolve one name without
// building the view, so they cost the same with 1 or 10,000 tools.
// Schemas returns only name, description and parameters. ExecutionMode is
// Parallel only when the tool's classifier returns exactly (true, nil);
// everything else fails closed to Exclusive.
//
// # Execute
//
// Scope.Execute runs one call through argument snapshot, pre-execute
// (Allow/Deny/Ask), approval, guards, around hooks, the tool body (with
// context cancellation), output validation and rendering, post-execute,
// the content finalizer and result observers (SPEC §7). Every failure is a
// coded or plain failure Result; no panic escapes; the returned Result is an
// immutable snapshot. Dispatch is admitted by the scope's supervisor actor:
// parallel-classified calls overlap, an exclusive call runs alone, first
// come first served.
//
// # Turns
//
// Scope.ExecuteTurn runs the calls of one model turn (SPEC §9): parallel
// calls overlap in a rolling pool bounded by WithMaxParallel, an exclusive call
// is a barrier, and post-execute, results and contexts stay in model order.
//
// # Actors and messages
//
// Each scope is a protoactor actor (package actors) that is the single
// writer of its layer; user code never runs inside an actor's Receive, so
// every callback may call back into the registry. Scope.PID exposes the
// actor: other actors in the same system may send it the protobuf requests
// of package messages (execute, execution mode, get, schemas, turn) and get
// the replies. WithActorSystem embeds toolscope in an existing system.
package runtime
