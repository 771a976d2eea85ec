// Package anthropic connects toolscope to Anthropic models through the
// official Go SDK (github.com/anthropics/anthropic-sdk-go/v2, imported here
// as sdk), on the Messages API.
//
// Three functions do the translation, and a Model puts them behind
// agent.Model so agent.Run can drive a conversation:
//
//   - Tools turns a scope's Schemas into custom tools with input_schema.
//   - Calls turns the tool_use blocks of an assistant message into
//     runtime.TurnCalls: ids and names as sent, the input's raw JSON as the
//     argument text.
//   - ToolResults turns a runtime.TurnResult into the one user message the
//     API expects next: a tool_result block per call, in model order, then
//     the turn's contexts as text blocks.
//
// A Model wraps a client and the request parameters (model, max_tokens,
// system, …). Each step it sends the transcript with the step's tools and
// sets tool_choice's disable_parallel_tool_use from the loop's parallel
// flag; the transcript is []sdk.MessageParam, exactly what the SDK sends:
//
//	client := sdk.NewClient() // ANTHROPIC_API_KEY
//	model, err := anthropic.New(client, sdk.MessageNewParams{Model: sdk.ModelClaudeSonnet4_5, MaxTokens: 4096})
//	out, err := agent.Run(ctx, scope, model, []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock(prompt))})
//
// Every call gets exactly one tool_result, whatever happened to it: a
// success, a denial, a tool error, or ABORTED_BEFORE_DISPATCH for the calls
// of a turn whose ctx ended; ToolResults fails (ErrInvalid) rather than
// send a message that leaves a call unanswered.
//
// # What Anthropic cannot carry, and what the adapter does
//
//   - Error codes and names: tool_result has only is_error. A coded
//     failure's code follows its content as a text block "[code: <CODE>]"
//     (the OpenAI adapter's notation), so the model can tell
//     ABORTED_BEFORE_DISPATCH from INVALID_ARGS; the error name is not
//     sent.
//   - Block types other than text and image: rendered to a text block
//     "[<type>] <text> <data JSON>".
//   - Images: a runtime.Block of Type "image" with Data
//     {"media_type","data"} (standard base64; "mimeType", MCP's spelling,
//     works too) or {"url"} (see ImageData) is sent as a base64 or URL
//     image source. An image the API cannot take (a media type other than
//     jpeg, png, gif, webp; malformed Data) becomes a text block saying it
//     was omitted and why: one bad block never costs the turn its results.
//   - Empty text blocks: the API rejects them, so they are dropped; a
//     failure left without content is sent as "Error: <message>".
//   - Roles of contexts: contexts become text blocks of the same user
//     message, after every tool_result (the API wants the results first);
//     a context whose role is not "user" is prefixed "[<role>] ".
//   - Result values and presentation metadata: not sent; the model sees
//     the rendered content, as with every adapter.
//   - Schemas: input_schema must describe an object, and the API refuses
//     the whole tool list for one that does not. A tool whose schema's
//     "type" is not "object" (or that is not a JSON object) is left out of
//     the request with a warning (Tools reports it; see WithLogger) and the
//     run proceeds with the others; one without "type" is sent as an
//     object schema; no parameters give an empty object schema.
//     "properties" keeps its bytes and key order; other top-level keywords
//     are re-ordered.
//   - Tool names: Anthropic takes ^[a-zA-Z0-9_-]{1,64}$, a tool's name may
//     have dots and run to 128 characters (MCP names). Such a name is sent
//     as ToolName maps it (the characters refused replaced by "_", cut,
//     plus ten hex digits of its SHA-256: deterministic, and never another
//     tool's name; a tool whose mapped name is another tool's own is left
//     out), and Generate maps the calls the model makes by it back to the
//     tool's name; the transcript keeps the name the model wrote.
//   - Invalid argument text: a non-streamed response carries each input as
//     a JSON value, so R91's "invalid JSON is passed as the raw string"
//     cannot arise; an input that is not an object (say a JSON string) is
//     passed as that value, and a typed tool answers INVALID_ARGS.
//   - The parallel flag: sent only with tools (tool_choice needs them); a
//     tool_choice of "none" has no such flag and is sent as it is.
//   - Stop reasons: passed through as sent. "max_tokens" with tool_use
//     blocks still runs the calls, since each needs its tool_result; an
//     empty assistant message (no content) is not kept in the transcript.
//   - Usage and streaming: each reply carries its token usage, the cache
//     writes and reads added to input_tokens (agent.Usage counts all the
//     input) and thinking tokens as reasoning. Model is an
//     agent.StreamingModel: with a Text hook agent.Run streams, the events
//     are accumulated as the SDK does, the text deltas reach the hook, and
//     the reply is the one Generate gives for the same message. Every reply
//     body is bounded (WithMaxReplyBytes: agent.ErrReplyTooLarge); a stream
//     without message_stop is agent.ErrStreamIncomplete, an event out of
//     order or undecodable agent.ErrStreamMalformed.
package anthropic
