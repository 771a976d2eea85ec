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
// Load tests: package loadtarget runs a load scenario (package load) on a
// cluster — its trees, its catalog, its store — through the client
// (go run ./cluster/cmd/toolscope-load-cluster -members 3).
//
// The wire protocol is package clustermsg. Failure semantics — what a
// caller sees when a member dies mid-call, mid-turn or mid-mutation — are
// in docs/cluster.md.
//
// # The store
//
// Store is the replicated state of agent trees: each tree's lease, its state (opaque bytes the
// grain encodes), and a claim per call id with the call's result once recorded.
// NewJetStreamStore implements it on one JetStream stream laid out as a key-value bucket;
// StartEmbedded runs a NATS server with JetStream inside the process for tests and a single
// machine, and production members point at a NATS cluster's URL. NewMemoryStore keeps the same
// rules in process memory, for unit tests.
//
// An activation of a tree first acquires its lease (Acquire), renews it well within its TTL
// (Renew), and gives it up on passivation (Release). Every write made with a lease — Save,
// Claim, Record, Forget — is fenced: JetStream appends it only if the lease key is still at the
// revision this lease last wrote, checked atomically with the append. Once another activation
// has acquired the tree, the old lease writes nothing and claims nothing (ErrFenced). Clocks
// only decide when an unrenewed lease may be taken; a wrong clock costs availability, never
// safety.
//
// A call is claimed before its body runs and its result recorded after. Claim answers each id
// ClaimNew (run it, once), ClaimDone (its recorded result) or ClaimUnknown (claimed before, no
// result: the member died mid-call, or a fenced activation claimed it; never run it). An id is
// ClaimNew at most once, whoever asks, however activations race. A turn's calls are claimed in
// one batch: the creates are pipelined and one fenced write covers them all.
//
// Tree ids and call ids are user data: they are encoded (base64url) into key tokens, so dots,
// wildcards and spaces cannot reach another tree's keys; empty, non-UTF-8 and over-long
// (MaxIDBytes) ids are refused with ErrInvalidID. States and results are bounded
// (WithMaxValueBytes, ErrTooLarge). When NATS is unreachable every operation fails promptly
// with ErrStoreUnavailable, bounded by the caller's ctx and the store's op timeout.
package cluster
