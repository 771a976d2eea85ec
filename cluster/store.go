package cluster

import (
	"context"
	"errors"
	"time"
)

// ErrFenced: the lease this operation names is no longer held (another activation took the
// tree, or the lease expired and was taken). Nothing was written and nothing may run.
var ErrFenced = errors.New("cluster: lease lost: another activation holds this tree")

// ErrLeaseHeld: Acquire found the tree's lease held by another live holder.
var ErrLeaseHeld = errors.New("cluster: tree is held by another member")

// Lease is one activation's hold on a tree. Every state write and claim made with it is
// conditional on it: once another activation has acquired the tree, each fails with ErrFenced.
// A Lease is used by one grain at a time (not safe for concurrent use unless the impl says so).
type Lease struct {
	Tree   string        // the tree id (its root agent scope's key)
	Holder string        // who holds it (member address + activation id)
	Epoch  uint64        // increases with each acquisition of the tree
	TTL    time.Duration // how long it lasts without Renew
	// unexported fields: the store's fencing revision(s)
}

// ClaimState is what Claim found for one call id.
type ClaimState int

const (
	ClaimNew     ClaimState = iota + 1 // claimed now by this lease: the body may run once
	ClaimDone                          // claimed before and its result recorded: Result holds it
	ClaimUnknown                       // claimed before (this or an earlier activation), no result: outcome unknown, never run it
)

// Claim is Claim's answer for one call id.
type Claim struct {
	ID     string
	State  ClaimState
	Result []byte // the recorded result (ClaimDone only), as given to Record
}

// Store is the replicated state of agent trees. Implementations: JetStream KV (NewJetStreamStore).
type Store interface {
	// Acquire takes tree's lease for holder with the given ttl. ErrLeaseHeld (wrapped, saying
	// until when) if another holder's lease is unexpired. A holder's own unexpired lease may be
	// re-acquired (new epoch).
	Acquire(ctx context.Context, tree, holder string, ttl time.Duration) (*Lease, error)
	// Renew extends l by its TTL; ErrFenced if l was lost.
	Renew(ctx context.Context, l *Lease) error
	// Release gives l up (passivation); a lost lease is not an error.
	Release(ctx context.Context, l *Lease) error
	// Load returns the tree's state as last saved (nil, nil when none).
	Load(ctx context.Context, l *Lease) ([]byte, error)
	// Save replaces the tree's state, only while l holds the tree (ErrFenced otherwise).
	Save(ctx context.Context, l *Lease, state []byte) error
	// Claim claims call ids before their bodies run — all ids in one batch (a turn's calls are
	// claimed together). Answers in the order of ids. If l no longer holds the tree: ErrFenced,
	// and no id is ClaimNew. An id claimed earlier is never ClaimNew again, by any lease.
	Claim(ctx context.Context, l *Lease, ids []string) ([]Claim, error)
	// Record stores a ClaimNew call's result (the caller's encoding, bounded size), conditional
	// on l (ErrFenced otherwise).
	Record(ctx context.Context, l *Lease, id string, result []byte) error
	// Forget drops a tree's state, claims and records (the root's Dispose), conditional on l.
	Forget(ctx context.Context, l *Lease) error
}
