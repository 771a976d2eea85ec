// Package demotools is an example, not part of toolscope's API: the
// simulated tools and policies of the demo (cmd/demo), which the MCP server
// binary (mcp/cmd/toolscope-mcp) serves too. It shows how a user builds a
// toolset on package runtime — typed tools with NewTool, a per-call
// classifier, a declared timeout, a guard, pre- and post-execute hooks, an
// approver — and nothing in toolscope imports it.
//
// The tools sleep for a deterministic latency derived from their arguments,
// so the same calls always ask for the same work; on the wall clock, or on
// a virtual one a simulation puts in the ctx (WithSleep). Its API may change with
// the demo at any time.
package demotools
