// Package cluster hosts toolscope agent trees on a protoactor cluster: each
// tree (a root agent scope and its sub-agents) is a virtual actor — a grain
// — placed by protoactor on one member, its state kept as data in a
// replicated Store, its calls claimed in the store so that a body never runs
// twice, even when members die, pause or race.
//
// Code is everywhere, state is data. Every member runs the same code: a
// registry factory (global tools, guards, hooks) and a Catalog of named
// tool and guard factories. A tree's state (TreeState) is data only: its
// scopes, parents before children, and each scope's live mutations —
// mounted catalog tools and guards with their config, restrictions — each
// with the id its exact disposer names. Rebuild turns a state into runtime
// scopes on any member.
//
// The grain kind. Kind returns a protoactor cluster kind to add beside your
// own. A grain activates by taking the tree's lease (Store.Acquire), loading
// the state and rebuilding it in a registry of its own; it renews the lease
// at a third of its TTL and passivates (idle timeout, member shutdown) or,
// on losing the lease, disposes the tree. Every call is claimed before its
// body runs (a turn claims its calls in one batch) and its result recorded
// after; a repeated call id gets the recorded result, or a coded
// OUTCOME_UNKNOWN result when the claim has none. Every mutation is applied,
// saved under the lease, and only then acknowledged with its id. Bodies,
// hooks and store I/O never run in the actor's Receive.
//
// The client. NewClient, from any member or a client-only member, gives
// Scope handles (Client.Tree, Scope.Scope) with the methods of a local
// scope that make sense as data: Execute, ExecuteTurn, Get, Schemas,
// ExecutionMode, Restrict/Unrestrict, Mount/Unmount, AddGuard/RemoveGuard,
// NewScope, Dispose. The caller's deadline travels with each request, its
// cancellation reaches the remote body (a Cancel message), and its W3C
// trace context travels so the remote execute_tool span is the caller's
// child.
//
// The wire protocol is package clustermsg. Failure semantics — what a
// caller sees when a member dies mid-call, mid-turn or mid-mutation — are
// in docs/cluster.md.
package cluster
