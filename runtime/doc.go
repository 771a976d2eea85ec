// Package runtime is toolscope's public API: a tool registry and execution
// pipeline for LLM agents. It is plain Go: no actor system, no goroutine
// identity; its actor face (scopes as protoactor actors, protobuf
// messages) is package actors, built on this API.
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
//     order (WithPrepend puts one first);
//   - approvers (Scope.SetApprover): the nearest one answers an Ask — the
//     agent's own, else its nearest ancestor's, else the global scope's,
//     else the registry's WithApprover.
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
// key's without a handle. Get, Schemas and ExecutionMode answer for one
// view without taking a lock: each scope publishes an immutable snapshot of
// its layer after every change (its mutations are applied one at a time
// under the scope's mutex), and a read loads each layer on the chain once,
// so it sees one consistent state. Get and ExecutionMode resolve one name without
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
// immutable snapshot. Dispatch is admitted by the scope's gate: one CAS
// when the call fits, else a FIFO line kept under a mutex (the scope's
// admission line); parallel-classified calls overlap, an exclusive call runs
// alone, first come first served.
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
// (CodeAbortedBeforeDispatch). Close called from inside a call with the
// callback's ctx returns ErrCloseInsideCall instead of waiting for itself;
// with an unrelated ctx it waits until that ctx ends, as
// http.Server.Shutdown called from a handler does.
//
// # Observability
//
// Registry.Subscribe delivers typed events (calls, turns, registry changes)
// asynchronously through a bounded buffer (WithBuffer). An event that finds
// it full is dropped and counted (Subscription.Dropped); the first drop of a
// subscription is reported once through the error handler
// (ErrEventsDropped) and logged through the registry's logger, or
// slog.Default() when WithLogger is not given. A consumer that must see
// every event (a recorder) subscribes WithBackPressure: a call whose event
// finds the buffer full waits for room (bounded by its ctx, the
// subscription's end and an optional maxWait); a subscriber that calls
// back into the registry uses the ctx SubscribeContext gives it, and its
// own calls never wait for it. Every failure says what happened in one
// vocabulary, Result.Outcome (ok, denied, failed, timed_out, cancelled,
// refused), which events, hooks, metrics and the protocol share. WithHooks is the one seam every
// observer hangs off: optional functions called in place at each point of a
// call (its start, which may give the call a ctx, each stage, its finish and
// end), of a turn and of the registry, in the shape of
// net/http/httptrace.ClientTrace. Package otelscope records OpenTelemetry
// spans and metrics through it; this package imports no OpenTelemetry code.
// WithLogger receives the registry's warnings; WithHooks' Event receives every
// typed event in place (package actors republishes them as protobuf events).
// Nothing is built for any of them while it is not configured.
//
// # Actors and messages
//
// This package is actor-free: a scope is a layer and a gate, its mutations
// are applied by their callers one at a time under the scope's mutex, and
// admission waits in an in-process FIFO line. User code never runs under a
// registry lock, so every callback may call back into the registry. The
// actor face is package actors: it spawns a protoactor actor per scope (in
// the user's actor system or its own) that answers the protobuf requests of
// package messages (execute, execution mode, get, schemas, turn) through
// this package's public API — Scope.Execute, Scope.ExecuteTurn, the reads —
// and republishes the typed events (WithHooks) as protobuf events. The data
// conversions it needs are here (Result.Proto, ResultFromProto,
// CallFromProto, Mode.Proto, ...). A Go program that never asks for an actor
// pays nothing for one.
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
//     ChangeSubscriber, a back-pressure event subscriber, and the classifier
//     when ExecutionMode runs it, run for no execution the registry can
//     name: their ctx carries none, and
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
//   - Timeouts are declared on tools and enforced by default, counted from
//     dispatch (WithoutTimeouts opts out).
//   - Failure codes are typed (Code); a user's coded error implements
//     Coded with a plain string Code, and Result.Code returns it as a Code.
//   - No goroutine identity: the registry never reads a goroutine's id or
//     stack. A callback is known by the ctx it was given: Close with it
//     does not wait for the calling call (ErrCloseInsideCall); Close with
//     an unrelated ctx waits until that ctx ends. (Dispose needs neither:
//     a teardown announces its removals only once it is complete.)
//   - No package-level mutable state: everything a registry keeps lives
//     in its Registry value.
package runtime
