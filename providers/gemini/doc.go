// Package gemini connects toolscope to Gemini models through the official
// Go SDK (google.golang.org/genai), on GenerateContent (Gemini API or
// Vertex AI backend).
//
// Three functions do the translation, and a Model puts them behind
// agent.Model so agent.Run can drive a conversation:
//
//   - Tools turns a scope's Schemas into one genai.Tool of function
//     declarations, each schema passed as ParametersJsonSchema.
//   - Calls turns the FunctionCall parts of a model content into
//     runtime.TurnCalls, generating ids where the model sent none.
//   - ToolResults turns a runtime.TurnResult into one user content of
//     FunctionResponse parts, one per call in model order, with "output"
//     or "error" in the response, then a user content of the contexts.
//
// A Model wraps a client, a model name and an optional config; the
// transcript is []*genai.Content, exactly what the SDK sends:
//
//	client, err := genai.NewClient(ctx, &genai.ClientConfig{HTTPClient: gemini.BoundedHTTPClient(nil)}) // GEMINI_API_KEY
//	model, err := gemini.New(client, "gemini-2.5-flash", nil)
//	out, err := agent.Run(ctx, scope, model, []*genai.Content{genai.NewContentFromText(prompt, genai.RoleUser)})
//
// Every call gets exactly one FunctionResponse, whatever happened to it: a
// success, a denial, a tool error, or ABORTED_BEFORE_DISPATCH for the calls
// of a turn whose ctx ended (Gemini rejects a turn whose response count
// differs from its call count); ToolResults fails (ErrInvalid) rather than
// build such a turn.
//
// # What Gemini cannot carry, and what the adapter does
//
//   - Call ids: optional on the wire, and older models send none. A call
//     without one gets CallID(step, i) = "call_<step>_<i>" (step: one more
//     than the model contents already in the transcript; i: the call's
//     position among the content's calls), deterministic for a given
//     conversation. The id is written into a copy of the model's content
//     before it joins the transcript, so the call and its FunctionResponse
//     carry the same id and name; every other part and field (thought
//     signatures included) is kept. Ids the model sent are kept, except
//     one an earlier call of the same content already has, which is
//     replaced like a missing one; a generated id skips every id the
//     content holds (the next free index), so no two calls of a content
//     share an id and each result answers exactly one call.
//   - The parallel flag: Gemini has none, so Generate ignores it; the model
//     may always ask for several calls, and the scheduler still runs an
//     exclusive tool alone (R36, R92): nothing unsafe overlaps.
//   - Argument text: the SDK decodes arguments into a map, so the argument
//     text is that map re-encoded: keys sorted, numbers through float64 (an
//     integer beyond 2^53 loses precision). Invalid JSON text cannot arrive:
//     a call the model cannot write comes back as finish reason
//     MALFORMED_FUNCTION_CALL with no call, which ends the loop as answered
//     with that stop reason.
//   - Content: "output" is a string, the result's text blocks joined with
//     newlines; other non-image blocks are rendered into it as "[<type>]
//     <text> <data JSON>".
//   - Images: sent as the FunctionResponse's own parts (multimodal function
//     responses, which Gemini 3 models accept and 2.x models reject: do not
//     return images to those). Data is {"media_type","data"} (standard
//     base64, sent inline; "mimeType", MCP's spelling, works too) or
//     {"url","media_type"} (a file URI); see ImageData. An image Gemini
//     cannot take (malformed Data, no media type) becomes text in the
//     output saying it was omitted and why: one bad block never costs the
//     turn its results.
//   - Errors: "error" is {"message": <message>, "code": <CODE>} (code only
//     for coded failures), plus "details" with the content's text when it
//     says more than "Error: <message>"; the error name is not sent.
//   - Contexts: the function-response content must hold only the
//     responses, so contexts go in a second user content, one text part
//     each; a context whose role is not "user" is prefixed "[<role>] ".
//   - Result values and presentation metadata: not sent; the model sees
//     the rendered content, as with every adapter.
//   - Schemas: passed as they are; the SDK turns them into maps on the way
//     out, so keyword order is not kept. A tool whose schema is not an
//     object schema (function parameters are an object) is left out of the
//     request with a warning (Tools reports it; see WithLogger), and the
//     run proceeds with the others.
//   - Function names: Gemini takes a letter or "_", then letters, digits,
//     "_", ".", ":" and "-", at most 128 in all. A tool's name that breaks
//     the rule is declared as ToolName maps it (the characters refused
//     replaced by "_", cut, plus ten hex digits of its SHA-256:
//     deterministic, and never another tool's name; a tool whose mapped
//     name is another tool's own is left out), Generate maps the calls the
//     model makes by it back to the tool's name, and ToolResults answers
//     each call under the name the model called.
//   - Finish reasons: passed through as sent; a response without
//     candidates (a blocked prompt) is an error naming the block reason.
//   - Usage: each reply carries usageMetadata as agent.Usage (tool-use
//     prompt tokens added to input, thoughts to output and reasoning).
//   - Reply size: the SDK reads a reply's body itself and takes no
//     per-request middleware, so the bound sits in the client it is given:
//     made with HTTPClient: BoundedHTTPClient(c), every response body is
//     bounded by the bound of the Model that sent the request
//     (WithMaxReplyBytes, agent.DefaultMaxReplyBytes by default), and a
//     reply past it (a success or an API error) fails with
//     agent.ErrReplyTooLarge, as with the other adapters. A client made
//     without it reads replies unbounded.
//   - No streaming: Model is not an agent.StreamingModel, so a Text hook
//     gets no deltas. (The SDK's stream reader also buffers lines of up to
//     256 MiB before the adapter would see them.)
package gemini
