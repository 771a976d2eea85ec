// Package openai connects toolscope to OpenAI models through the official
// Go SDK (github.com/openai/openai-go/v3), for both the Chat Completions
// and the Responses API.
//
// # The loop
//
// ChatModel and ResponsesModel satisfy agent.Model, so agent.Run drives a
// conversation on either API: each step sends the transcript and the
// scope's tools (read fresh from Schemas), runs the reply's tool calls as
// one ExecuteTurn, and appends one tool result per call, in model order,
// then the turn's contexts. The transcript holds the SDK's own param types
// (oai.ChatCompletionMessageParamUnion, responses.ResponseInputItemUnionParam),
// exactly what the next request sends:
//
//	client := oai.NewClient() // OPENAI_API_KEY from the environment
//	model := openai.NewChatModel(&client, oai.ChatCompletionNewParams{Model: oai.ChatModelGPT6Astra})
//	out, err := agent.Run(ctx, scope, model, []oai.ChatCompletionMessageParamUnion{oai.UserMessage("...")})
//
// parallel_tool_calls is set from the loop's flag (on when the scope has a
// tool that may run in parallel) and, like tools, omitted when the scope
// lists no tool. On the Responses API every output item (messages,
// reasoning, function calls, hosted tool calls) goes back as an input item,
// so the loop needs no server-side state; function calls are answered by
// call_id.
//
// # The pieces
//
// The mapping functions are exported for loops of one's own:
// ChatTools/ResponseTools (schemas → function tools, names as ToolName
// gives them, and the tools left out), ChatCalls and
// ResponseCalls (model output → runtime.TurnCall, ids and argument text
// exactly as sent; R91 decides what empty or invalid text means),
// ChatToolMessages/ResponseToolOutputs (a TurnResult → tool messages or
// function_call_output items, then contexts) and ResponseInputItems
// (response output → input items). They keep no state and cost what the
// listed schemas and calls cost, however many tools the registry holds.
//
// # Strict tools
//
// A function tool is sent with strict: true only when its schema lies in
// OpenAI's strict subset, closing it where that is safe (an absent
// additionalProperties becomes false); otherwise it is sent unchanged with
// strict: false. StrictParameters states the rule. The schema travels as
// raw JSON so its key order (the order a strict model writes properties
// in) reaches the API.
//
// # What OpenAI cannot carry, and how it is mapped
//
//   - Tool names OpenAI refuses: a function name must match
//     ^[a-zA-Z0-9_-]{1,64}$, and one name that does not fails the whole
//     request, while a tool's name may have dots and run to 128 characters
//     (MCP names). Such a name is sent as ToolName maps it (the
//     characters OpenAI refuses replaced by "_", cut, plus ten hex digits
//     of its SHA-256: deterministic, and never another tool's name), and
//     Generate maps the calls the model makes by it back to the tool's
//     name; the transcript keeps the name the model wrote.
//   - Tools OpenAI cannot take at all: a parameter schema that is not an
//     object schema, or a mapped name that is another tool's own name. The
//     tool is left out of the request (ChatTools and ResponseTools report
//     it; the models log a warning, see WithLogger) and the run proceeds
//     with the others.
//   - Non-text content in Chat Completions tool messages: tool messages
//     are text only. Text blocks are joined by newlines; an image block
//     becomes a placeholder line ("[image: <url>]" or
//     "[image: image/png, N bytes base64]"); any other block is
//     "[<type>] <data JSON>" (ResultText). The Responses API does carry
//     images: a result with an image block becomes a function_call_output
//     whose output is a list of input_text and input_image parts (the
//     image by URL, or base64 data as a data: URL). An image block's Data
//     is {"url": ...} or {"data": <base64>, "mimeType": ...} (MCP's shape;
//     "mime_type" and "media_type" are read too).
//   - The error flag: neither API has an is_error field for tool results.
//     An error result's text starts with "Error" (its content normally
//     reads "Error: <message>"; a replaced content gets the prefix) and
//     ends with "[code: <CODE>]" when it has a code, so
//     ABORTED_BEFORE_DISPATCH, INVALID_ARGS and a tool's own failure stay
//     distinguishable. A denial (R57) has no code and reads "Error: <reason>".
//   - Empty results: sent as "(no output)" rather than an empty string.
//   - The success value and presentation metadata (Result.Value, Meta):
//     not sent; the model sees the rendered content, as the tool's
//     renderer decided. Meta is for presentation (R64).
//   - Contexts (runtime.ContextMessage): sent after all tool results as messages
//     of their role: system, developer, user and assistant map to
//     themselves, "" to user, and any other role to a user message whose
//     text starts with "[<role>] ".
//   - Calls the adapter cannot tell apart from tools: a Chat Completions
//     custom tool call is mapped like a function call (its input is the
//     argument text) so it too is answered; on the Responses API only
//     function_call items are calls (hosted tools run on OpenAI's side).
//   - More than one choice (n > 1): only the first choice is used.
//   - Nothing is ever dropped: ChatToolMessages and ResponseToolOutputs
//     refuse a TurnResult that does not hold exactly one result per call,
//     and a turn aborted by its ctx still answers every call (the ones
//     never started with ABORTED_BEFORE_DISPATCH). A reply with a call
//     that has no id (or an id another of its calls has) cannot be
//     answered: agent.Run refuses it before any call runs
//     (agent.ErrInvalidReply).
//   - Usage and streaming: each reply carries its token usage
//     (agent.Usage: prompt tokens, cached ones among them, completion
//     tokens, reasoning ones among them). Both models are
//     agent.StreamingModel: with a Text hook, agent.Run streams, the
//     content deltas reach the hook and the reply is the one Generate
//     gives for the same completion (Chat Completions asks for the usage
//     chunk with stream_options.include_usage; Responses takes the
//     response of its final event). Every reply body, streamed or not, is
//     bounded (WithMaxReplyBytes, agent.DefaultMaxReplyBytes by default:
//     agent.ErrReplyTooLarge); a stream cut or ended without its final
//     event is agent.ErrStreamIncomplete, one that cannot be decoded
//     agent.ErrStreamMalformed.
//
// # Example
//
// examples/loop is a runnable program (go run ./providers/openai/examples/loop)
// that needs no network and no key: a scripted Chat Completions server on
// loopback, the official client pointed at it, and a loop over a parallel
// group, an exclusive barrier, a denied call and a failing tool.
package openai
