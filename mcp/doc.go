// Package mcp connects toolscope to the Model Context Protocol through the
// official Go SDK (github.com/modelcontextprotocol/go-sdk), both ways: a
// toolscope scope served to MCP clients (Export, NewServer), and an MCP
// server's tools registered into a scope (Import).
//
// # Import
//
// Import(ctx, scope, session, opts...) registers the tools of the MCP
// server behind a go-sdk ClientSession (every tools/list page) into a
// scope, through an owner group, each with its own disposer;
// Imported.Close disposes them all. WithPrefix renames, WithAllow picks
// server tools, WithCallTimeout bounds each tools/call (TOOL_TIMEOUT),
// WithReadOnlyParallel or WithClassifier makes tools parallel (by default
// they are exclusive: annotations are only hints, so importing fails
// closed). A name toolscope cannot register (empty, "run_code", listed
// twice, taken) is skipped and reported by Imported.Skipped, and so is a
// name a parent scope already gives a tool: an imported tool does not
// shadow a trusted one unless WithAllowShadowing says it may. A tool the
// server refuses to run without task augmentation (taskSupport
// "required", answered with -32601) is skipped after its first refusal.
// A remote server is untrusted input: every listing is bounded
// (WithListLimits: pages and tools; a repeated nextCursor ends it with an
// error; WithSyncTimeout: its time, Import's own included).
//
// Parameters are the server's inputSchema as it is (R33). With an
// outputSchema the value is structuredContent and the content is the
// server's content blocks (never structuredContent rendered as text); the
// value is validated by the pipeline when the schema fits toolscope's
// subset and in the body otherwise, with bounded work: a schema whose
// validation could loop (a $ref or in-place cycle that never descends into
// the value) or blow up (a DAG of allOf pairs), or is too large or deep,
// is skipped at import, and a value too costly to validate is
// INVALID_TOOL_OUTPUT (see Import for the bounds). Without an outputSchema
// the value and the content are the result's content blocks (text as
// text, every other kind as a Block of its MCP type holding the MCP
// object: see ContentBlocks). Calls send the arguments unchanged and
// cancel through notifications/cancelled; isError results are failures
// with their text (and a toolscope/code _meta, as NewServer writes it, as
// their code); a server that is gone is MCP_UNAVAILABLE, a protocol error
// MCP_ERROR — never a hang.
//
// Codes from a remote peer are kept apart from the registry's own. A
// registry's codes make promises (ABORTED_BEFORE_DISPATCH: the call never
// started; TOOL_TIMEOUT: this registry's deadline passed) that only the
// registry can keep, so a remote server that sends one of them — whether
// it lies or is a toolscope registry reporting its own failure across an
// export → import hop — gets it namespaced: REMOTE_<code> (RemotePrefix),
// error name MCPToolError. A tool's own code (QUOTA, "acme.rate_limited")
// passes unchanged, so a user's coded error keeps its code across the hop;
// a code that is not one (over 64 bytes, or another byte than a letter,
// digit, '_', '.', ':' or '-') is dropped and the failure is plain. The
// export side sends codes the same way it always did (_meta
// "toolscope/code"): the namespacing happens where the code is received.
//
// With ClientOptions.ToolListChangedHandler set to ToolListChangedHandler,
// notifications/tools/list_changed re-syncs through Register and
// disposers, so OnChange subscribers hear each change; re-syncs run one at
// a time, are bounded, and stop at Close. Prompts, resources, sampling and
// the other MCP features are not imported.
//
// A server that goes away ends its import: when the session ends (the
// server closed it, its process died, its transport broke, or the program
// closed it), a call finds it closed for good, or WithUnreachableAfter's
// count of requests in a row cannot reach the server (what a streamable
// HTTP session whose server is gone gives: it stays open on the client's
// side), the calls in flight are
// answered MCP_UNAVAILABLE, the imported tools are disposed (so the model
// is no longer offered them; OnChange subscribers hear each removal), and
// the import says so: Imported.Done is closed, Imported.Err wraps
// ErrServerGone, and WithEndHandler's function is called once. With
// WithReconnect the import asks for a new session instead, with a bounded
// backoff (Backoff); meanwhile the tools stay and answer MCP_UNAVAILABLE at
// once, and once connected the tools are listed anew and the differences
// applied as a re-sync does. It ends as above when every attempt fails.
// The handlers (WithEndHandler, WithSyncErrorHandler) run outside the
// import's own goroutines, so they may call Close.
//
// # Export: a scope as an MCP server
//
// NewServer(scope, opts...) returns a Server that runs over any go-sdk
// transport: Run or Connect for stdio (sdk.StdioTransport), in-memory
// (sdk.NewInMemoryTransports) or command transports, and
// StreamableHTTPHandler for streamable HTTP. The binary
// mcp/cmd/toolscope-mcp serves the demo's tools this way.
//
// Network exposure. StreamableHTTPHandler has no authentication of its
// own and the go-sdk's Host check (DNS rebinding) covers loopback only:
// off loopback, give it WithBearerToken ("Authorization: Bearer", 401
// otherwise) or WithHTTPMiddleware (authentication of your own), and
// WithAllowedHosts (a Host allow-list checked on every interface). The
// binary serves HTTP on loopback unless told otherwise, warns when its
// address is reachable from other machines, and takes -token (or
// $TOOLSCOPE_MCP_TOKEN) and -allowed-hosts.
//
// Sessions. By default every client session gets its own agent scope under
// the given scope, created when the session opens (before its first
// message is read) and disposed when it ends, so restrictions, guards and
// tools set up for one session (WithSessionScope) are that session's
// alone, and a tool a session registers (from a tool body, say) is seen by
// no other. WithSharedScope serves the given scope to every session
// instead. Each session is served by its own go-sdk server whose tool list
// follows the session scope's visible tools: the go-sdk keeps one tool list
// per server and announces changes to all of that server's sessions, so a
// per-session list needs a server per session. The go-sdk's
// streamable HTTP handler asks for a server on every request; Server keeps
// sessions by their Mcp-Session-Id and binds a new session's scope when the
// session really opens: its initialize request (or, without one, its first
// tools request). A POST without a session id that opens no session
// (malformed JSON, a notification, another method) leaves no scope behind.
// Session end is ServerSession.Wait
// returning: a client that disconnects, a closed stdio stream, an HTTP
// DELETE or the handler's SessionTimeout; Close ends the rest.
//
// What is mapped:
//
//   - tools/list is the scope's Schemas(): name, description, the
//     parameters as inputSchema (a tool whose parameters are not an object
//     schema — "type" is "object", keys matched exactly — cannot be called
//     over MCP, and one the go-sdk refuses, such as invalid x-mcp-header
//     annotations, cannot be listed: either is left out, with a warning,
//     and its registration is unaffected), and
//     the output schema as outputSchema when it is an object schema (MCP
//     requires object output schemas; a string-valued tool declares none).
//     Pagination is the go-sdk's (ServerOptions.PageSize through
//     WithSDKOptions). A tool that is parallel whatever its arguments
//     (runtime.Definition.AlwaysParallel: NewTool's WithParallel) is
//     annotated readOnlyHint (and idempotentHint), so importing it with
//     WithReadOnlyParallel keeps it parallel; every other tool carries no
//     annotations, and MCP's defaults (not read-only) keep it exclusive.
//   - tools/call is Execute on the session's scope with the whole pipeline:
//     pre-execute, approval, guards, around hooks, body, output validation,
//     post-execute, finalizer, observers. Every failure (a guard's denial,
//     invalid arguments, a body's error or panic) is a result with isError
//     true and its text as content, and its code, when it has one, under
//     _meta["toolscope/code"]. A success of a tool with an object output
//     schema carries its value as structuredContent next to the rendered
//     text.
//   - notifications/cancelled cancels the call's ctx (the go-sdk cancels the
//     handler's ctx; the body sees it). Ending a session from the server
//     side — Close, the end of Run's ctx, an HTTP DELETE of the session —
//     cancels the ctx of every call of the session first; Close and Run
//     then wait at most a few seconds for the session to end (a body that
//     ignores its ctx finishes in the background).
//   - Every registry change (OnChange) re-syncs each session's tool list,
//     off the changing call's path: in the background, coalesced (at most
//     one re-sync pending per session, so a burst of registrations costs a
//     couple of re-syncs), each rebuilding only the tools that changed;
//     a change that alters what a session sees makes the go-sdk send it
//     notifications/tools/list_changed (debounced by 10 ms), on the legacy
//     session channel or, for protocol 2026-07-28 clients, on their
//     subscriptions/listen stream.
//   - Approval: NewServer registers one pre-execute hook on the scope,
//     prepended, that sees every Ask. When the calling client declared the
//     elicitation capability, the user is asked through MCP elicitation
//     (a form with one boolean, "approve"): accept with approve=true
//     allows, decline or approve=false is the denial `the user rejected
//     tool "<name>"`, cancel is `approval for tool "<name>" was cancelled`,
//     a failed elicitation denies. On protocol 2026-07-28, where a server
//     may not send requests while serving one, the question is returned as
//     an input_required result (SEP-2322 multi round-trip) and the client
//     answers by calling again. The call does not end at the question: it
//     executes in the background and waits, so a body that makes a nested
//     call needing approval too is not run again — the client answers each
//     question once, and every body runs once. The retry resumes the call
//     only with the request state that seals the question (an HMAC of the
//     pending call, the question's number, tool and arguments under the
//     server's key) and the same tool, arguments and authenticated user,
//     so an answer cannot be forged or reused for other arguments. A
//     question unanswered for 5 minutes denies the call, at most 256 calls
//     wait at once, a client that cancels the call it waits for cancels
//     it, and Close cancels them all.
//     Without the capability the Ask goes on to the registry's approver
//     (runtime.WithApprover), and without one it is denied (R55): approval
//     fails closed.
//
// Not mapped: prompts, resources, sampling, roots, completion, logging
// (the go-sdk's own handling applies: none are offered); tool titles and
// the annotations other than the read-only ones above; progress
// notifications. The go-sdk client speaks 2026-07-28
// by default; the TypeScript SDK and most clients today speak 2025-11-25.
// Over 2026-07-28 streamable HTTP
// there are no sessions: every request is its own session, with a scope of
// its own for that request (a call waiting for an approval round trip
// keeps the scope of the request that started it until the call ends).
package mcp
