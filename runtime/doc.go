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
// # Presentation modes
//
// A scope presents its tools natively (the default), as code or both
// (Scope.SetPresentation; the nearest declaring scope on the chain wins,
// else WithDefaultPresentation). In code and both the view ends with the
// reserved tool run_code, installed by WithCodeMode (package codemode
// provides it: a Starlark program calling the view's tools as nested
// calls); in code a direct call of any other tool is UNKNOWN_TOOL telling
// the model to call it from a run_code program. Register and Restrict
// refuse the name run_code from users.
//
// # Reads
//
// A Scope handle reads its own key's view; Registry.View(key) reads any
// key's without a handle. Get, Schemas and ExecutionMode answer for one view without waiting on any
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
// the content finalizer and result observers (docs/contract.md §7). Every failure is a
// coded or plain failure Result; no panic escapes; the returned Result is an
// immutable snapshot. Dispatch is admitted by the scope's supervisor actor:
// parallel-classified calls overlap, an exclusive call runs alone, first
// come first served.
//
// # Turns
//
// Scope.ExecuteTurn runs the calls of one model turn (docs/contract.md §9): parallel
// calls overlap in a rolling pool bounded by WithMaxParallel, an exclusive call
// is a barrier, and post-execute, results and contexts stay in model order.
//
// # Nested calls
//
// Every callback's ctx carries its execution (ExecutionFromContext). A
// body, hook or guard that calls Execute or ExecuteTurn with that ctx (or
// with Call.Parent) makes a nested call: it runs inside its ancestor's
// admission instead of waiting for it. An exclusive call never overlaps a
// call of its scope that is not one of its ancestors; a nesting pattern
// that could only deadlock (two parallel siblings both asking for an
// exclusive call of their scope) fails at once with CodeWouldDeadlock. A
// call waiting for admission leaves when its ctx ends
// (CodeAbortedBeforeDispatch). Close called from inside a call returns
// ErrCloseInsideCall instead of waiting for itself.
//
// # Observability
//
// Registry.Subscribe delivers typed events (calls, turns, registry changes)
// asynchronously through a bounded buffer. WithHooks is the one seam every
// observer hangs off: optional functions called in place at each point of a
// call (its start, which may give the call a ctx, each stage, its finish and
// end), of a turn and of the registry, in the shape of
// net/http/httptrace.ClientTrace. Package otelscope records OpenTelemetry
// spans and metrics through it; this package imports no OpenTelemetry code.
// WithLogger receives the registry's warnings and, for a registry that owns
// its actor system, protoactor's. Nothing is built for any of them while it
// is not configured.
//
// # Actors and messages
//
// Each scope is a protoactor actor (internal/actorsys) that is the single
// writer of its layer; user code never runs inside an actor's Receive, so
// every callback may call back into the registry. Scope.PID exposes the
// actor: other actors in the same system may send it the protobuf requests
// of package messages (execute, execution mode, get, schemas, turn) and get
// the replies. A PID answers in its scope's view, as the scope's Execute
// does: a Call whose agent names another scope is refused (a failure
// result, or an ErrorReply to an execution-mode request), and a message
// the PID does not know gets an ErrorReply, never silence. The actor is spawned by the first PID request; until then
// the scope's mutations are applied one at a time by their callers, with
// the actor's own code, so an idle scope costs no actor. WithActorSystem embeds toolscope in an existing system.
// Nothing else in the API needs protoactor: a plain Go program uses
// Registry, Scope, View and the callbacks only.
//
// # API conventions
//
// Decided for the 0.x API (issue 12), so a Go reviewer can rely on them:
//
//   - Views: a scope key and a tool name never meet in one argument list;
//     reads by key are reg.View(key).Get(name), never Get(name, key).
//   - ctx first: every callback (Guard, PreExecuteHook, AroundHook,
//     PostExecuteHook, ResultObserver, FinalizeContent, Approver) takes a
//     context.Context first: the execution's ctx (the caller's, carrying
//     the execution). So do the renderer, the presentation-metadata
//     projector and the classifier (Output.Render, Output.PresentationMeta,
//     IsConcurrencySafe), so a call they make with it is nested. A
//     ChangeSubscriber, and the classifier when ExecutionMode runs it, run
//     for no execution the registry can name: their ctx carries none, and
//     a call made with it never waits for admission (WOULD_DEADLOCK when it
//     cannot be admitted at once).
//   - Options are WithXxx everywhere: registry options, tool options (NewTool),
//     turn options (WithMaxParallel serves New and ExecuteTurn alike,
//     WithTurnID) and hook options (WithPrepend).
//   - Arguments: Call.Arguments is a JSON value (json.RawMessage for text);
//     TurnCall.ArgumentsText is the model's text, parsed once (R91).
//   - Input bounds: schema text (WithMaxSchemaBytes, 1 MiB by default) and
//     argument text (WithMaxArgumentBytes, 16 MiB by default) are refused
//     unread past their bound: UNSUPPORTED_SCHEMA at registration,
//     INVALID_ARGS for a call.
//   - Timeouts are declared on tools and enforced by WithTimeouts.
//   - Failure codes are typed (Code); a user's coded error implements
//     Coded with a plain string Code, and Result.Code returns it as a Code.
//   - Goroutine identity is read from the stack in one slow path only,
//     where nothing else can tell that a caller would wait for itself: a
//     Close made from a callback with a ctx that carries no execution
//     (context.Background()). With the callback's ctx, Close knows its
//     caller from the ctx. No call takes that path. (Dispose needs none:
//     a teardown announces its removals only once it is complete.)
package runtime
