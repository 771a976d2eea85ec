// Package codemode is Code Mode for toolscope: the reserved tool run_code
// (contract R107), whose argument is a short Starlark program that calls
// the calling scope's tools as functions, loops over and combines their
// results, and returns one answer — one model step instead of one per
// call.
//
// # Installing and presenting
//
// Install run_code when creating the registry, then let a scope present
// it:
//
//	reg, _ := runtime.New(codemode.Option(codemode.Config{}))
//	agent, _ := reg.NewScope("agent")
//	_ = agent.SetPresentation(runtime.PresentationCode) // or PresentationBoth
//
// A scope declares native, code or both; the nearest scope on the chain
// that declares a mode wins, else the registry's default (native unless
// runtime.WithDefaultPresentation says otherwise). In code and both the
// view (Tools, Schemas) ends with run_code, which restrictions cannot
// remove and no registration can shadow. In code mode a call of any other
// visible tool without a parent — the model calling it directly — is a
// final UNKNOWN_TOOL telling the model to call it from a run_code
// program; calls made from inside a program are nested and exempt. An
// agent loop sends a code-mode scope's model only run_code's schema (see
// View.Presentation).
//
// # Programs
//
// A run gets a fresh interpreter: nothing carries over between runs, so a
// run is reproducible from its input. Only code is shared: the compiled
// form of a recent program text (up to 64 texts of at most 4 KiB each per
// registry) is reused by a run of the same text while every tool the
// program names is still visible to the caller, and compiled afresh
// otherwise; a compiled program is immutable and holds no values, and each
// run starts from fresh globals. The program sees each tool of the
// calling scope's view whose name is an identifier (and not a Starlark
// built-in or helper) as a function taking keyword arguments:
//
//	files = list_files(dir="src")["files"]
//	sizes = [stat(path=f)["size"] for f in files]
//	print(len(files), "files")
//	max(sizes)
//
// A call returns the tool's structured value (JSON objects become dicts in
// their key order, integers ints, other numbers floats) or, without one,
// its text. A failed call raises an error carrying the tool's message and
// code; call(name, **args) returns a result object instead (.ok, .value,
// .text, .error, .code) for programs that handle failures themselves, and
// reaches tools whose names are not identifiers. parallel([(name, {args}),
// ...], limit=n) runs its calls as one nested ExecuteTurn: parallel
// calls overlap up to the limit (Limits.Parallel, default 10), exclusive
// ones stay barriers, and the result objects come back in order. json.encode
// and json.decode are available. print output is captured.
//
// The program's value is its last statement when that is an expression,
// else a global named result, else None. run_code's value is
// {"value": <the program's value>, "output": <printed text>, "calls": n};
// its content is the printed text followed by the value as JSON.
//
// # The pipeline
//
// Every call a program makes is a nested Execute (parallel: a nested
// ExecuteTurn) whose parent is the run_code execution: guards, pre-execute
// hooks and approval, around and post-execute hooks, restrictions, result
// observers, events and tracing apply exactly as for a direct call, and
// the inner calls appear as children of the run_code call (Call.Parent,
// event ParentCallID, span parent). A denial or an approval's rejection is
// a failure the program sees like any other. Admission follows the nested
// model: the inner calls run inside run_code's admission.
//
// # Limits
//
// Limits bound execution steps, tool calls per program, wall time (also
// the call's ctx: cancelling it cancels the inner calls' ctx, and the
// thread, which looks at the ctx every 256 steps, stops — Starlark's
// Thread.Cancel; a caller's deadline sooner than the wall time stands in
// for it), print output, the value's size, the program text, and the size
// of a value built by + or * and of a range (Limits.Size). A limit hit ends the run as a CODE_LIMIT failure
// naming the limit and its value. A program that does not parse, or fails
// while running (including an uncaught tool failure), is a CODE_ERROR
// failure whose message gives the line and column and the failing line's
// text. Recursion is refused (a deep one would grow the Go stack within
// the step limit).
//
// Known limit: the interpreter bounds steps, not memory, and Go cannot
// recover from running out of it. Limits.Size closes the ways a short
// program grows a value faster than one element per step that we know of
// — +, *, % and their augmented forms, range, list.extend, str.join,
// str.replace, str.format, and the text str, repr, print, fail and
// json.encode build from values that share one large string — but Starlark
// has no allocation accounting, so it is a list, not a proof: an error
// message quoting a huge value, for one, is not checked. A built-in
// running in Go sees a cancellation only when it returns. Run programs
// from untrusted models with that in mind, or in a process of their own.
//
// # The description
//
// run_code's description is generated for each view from its Schemas():
// one stub per visible tool (its parameters with their types, optional
// ones "= None", and the tool's description), the helpers and the limits.
// It is written on every Get("run_code") and Schemas(), so it follows the
// view as tools come and go; a tool the view hides is never named.
package codemode
