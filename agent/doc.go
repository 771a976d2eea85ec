// Package agent is the model loop on top of a scope: ask the model with the
// scope's tools, run the tool calls of its reply as one turn
// (runtime.Scope.ExecuteTurn), append the results, repeat.
//
// The loop knows no provider. A Model[M] adapts one, with M the provider
// SDK's own message type, so the transcript Run returns is what the SDK
// sends and receives; the adapters live in their own modules so their SDKs
// stay out of this one's requirements:
//
//   - github.com/toolscope/toolscope/providers/openai (Chat Completions and Responses)
//   - github.com/toolscope/toolscope/providers/anthropic (Messages)
//   - github.com/toolscope/toolscope/providers/gemini (GenerateContent)
//
// Each step reads the scope's Schemas afresh, so a tool registered during a
// step is offered on the next one. The provider's parallel-tool-calls flag
// is on exactly when the scope has a tool that may run in parallel, unless
// WithParallelToolCalls fixes it. Run stops when the model answers without
// tool calls, a result concludes its turn (R99), ctx ends, or the step
// limit is reached, and says which in Outcome.Stop.
//
// Each reply carries its token usage (Usage, in the same terms for every
// provider); the Outcome sums it and keeps it per step. WithHooks adds
// functions called around each step (before and after the model request,
// before and after the turn), shaped like net/http/httptrace's: they see the
// step, may steer it (Step.Steer appends messages; steering after a turn
// that concluded makes the loop go on, R99) and may stop the loop (ErrStop
// for a clean stop, any other error for a failure). A Hooks.Text function
// receives the reply's text as it streams from a model that implements
// StreamingModel; the reply is the same as without streaming.
//
// A model's reply is untrusted input: one whose calls cannot all be
// answered (a call without an id, two calls with one id) is refused before
// any of its calls runs (ErrInvalidReply, CheckCalls), so no tool has a side
// effect the transcript cannot answer for.
package agent
