// Package cluster runs toolscope agent trees across the members of a protoactor cluster, with
// their state in NATS JetStream, so that a call never runs twice and never hangs when a member
// dies. docs/cluster.md tells the whole story and its failure semantics.
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
