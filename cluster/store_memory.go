package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// MemoryStore is a Store in this process's memory, with the JetStream store's rules: the same
// leases, epochs, fencing, claim states, id and size checks, and claim retention. It is for
// unit tests and a single process; nothing survives the process and no other process sees it.
// Its methods and leases are safe for concurrent use.
//
// One difference of degree, not of kind: its operations never fail for want of a store. Like
// the JetStream store, a Claim refused with ErrFenced leaves its ids claimed without a result
// (ClaimUnknown to later claims), so code tested on it meets the zombie's case as it will in
// production.
type MemoryStore struct {
	cfg   storeConfig
	mu    sync.Mutex
	seq   uint64 // lease revisions, one sequence for the store
	trees map[string]*memTree
}

type memTree struct {
	lease    leaseValue
	leaseRev uint64
	state    []byte
	claims   map[string]*memClaim
}

type memClaim struct {
	done    bool
	result  []byte
	expires time.Time // zero: kept until Forget
}

var _ Store = (*MemoryStore)(nil)

// NewMemoryStore returns an empty MemoryStore. Of the StoreOptions it honours WithClock,
// WithMaxValueBytes and WithClaimRetention; the others concern NATS and are ignored.
func NewMemoryStore(opts ...StoreOption) *MemoryStore {
	cfg := storeConfig{maxValue: DefaultMaxValueBytes, retention: DefaultClaimRetention, now: time.Now}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.now == nil {
		cfg.now = time.Now
	}
	if cfg.maxValue < 1 {
		cfg.maxValue = DefaultMaxValueBytes
	}
	return &MemoryStore{cfg: cfg, trees: map[string]*memTree{}}
}

func (s *MemoryStore) tree(id string) *memTree {
	t := s.trees[id]
	if t == nil {
		t = &memTree{claims: map[string]*memClaim{}}
		s.trees[id] = t
	}
	return t
}

// held reports whether l still holds its tree; s.mu is held.
func (s *MemoryStore) held(l *Lease) (*memTree, *leaseFence, error) {
	if l == nil || l.fence == nil || l.fence.store != s {
		return nil, nil, errors.New("lease not acquired from this store")
	}
	f := l.fence
	t := s.trees[l.Tree]
	if f.lost.Load() || t == nil || t.leaseRev != f.rev.Load() {
		f.lost.Store(true)
		return nil, f, ErrFenced
	}
	return t, f, nil
}

func memErr(op string, l *Lease, err error) error {
	return fmt.Errorf("cluster: store %s %q (epoch %d): %w", op, l.Tree, l.Epoch, err)
}

func ctxErr(ctx context.Context, op string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("cluster: store %s: %w", op, err)
	}
	return nil
}

// Acquire implements Store.
func (s *MemoryStore) Acquire(ctx context.Context, tree, holder string, ttl time.Duration) (*Lease, error) {
	if _, err := keyToken("tree", tree); err != nil {
		return nil, fmt.Errorf("cluster: store acquire: %w", err)
	}
	switch {
	case holder == "":
		return nil, errors.New("cluster: store acquire: empty holder")
	case ttl <= 0:
		return nil, fmt.Errorf("cluster: store acquire %q: ttl %s: want > 0", tree, ttl)
	}
	if err := ctxErr(ctx, "acquire"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tree(tree)
	now := s.cfg.now()
	if p := t.lease; p.Holder != "" && p.Holder != holder && now.UnixNano() < p.Expires {
		return nil, &LeaseHeldError{Tree: tree, Holder: p.Holder, Epoch: p.Epoch, Until: time.Unix(0, p.Expires)}
	}
	s.seq++
	t.lease = leaseValue{Holder: holder, Epoch: t.lease.Epoch + 1, Expires: now.Add(ttl).UnixNano(), TTLms: ttl.Milliseconds()}
	t.leaseRev = s.seq
	f := &leaseFence{store: s, holder: holder, epoch: t.lease.Epoch}
	f.rev.Store(s.seq)
	return &Lease{Tree: tree, Holder: holder, Epoch: t.lease.Epoch, TTL: ttl, fence: f}, nil
}

// Renew implements Store.
func (s *MemoryStore) Renew(ctx context.Context, l *Lease) error {
	if err := ctxErr(ctx, "renew"); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t, f, err := s.held(l)
	if err != nil {
		return memErr("renew", l, err)
	}
	s.seq++
	t.lease.Expires = s.cfg.now().Add(l.TTL).UnixNano()
	t.leaseRev = s.seq
	f.rev.Store(s.seq)
	return nil
}

// Release implements Store.
func (s *MemoryStore) Release(ctx context.Context, l *Lease) error {
	if err := ctxErr(ctx, "release"); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t, f, err := s.held(l)
	if errors.Is(err, ErrFenced) {
		return nil
	}
	if err != nil {
		return memErr("release", l, err)
	}
	s.seq++
	t.lease = leaseValue{Epoch: t.lease.Epoch}
	t.leaseRev = s.seq
	f.lost.Store(true)
	return nil
}

// Load implements Store.
func (s *MemoryStore) Load(ctx context.Context, l *Lease) ([]byte, error) {
	if err := ctxErr(ctx, "load"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t, _, err := s.held(l)
	if err != nil {
		return nil, memErr("load", l, err)
	}
	return slices.Clone(t.state), nil
}

// Save implements Store.
func (s *MemoryStore) Save(ctx context.Context, l *Lease, state []byte) error {
	if len(state) > s.cfg.maxValue {
		return fmt.Errorf("cluster: store save %q: %w: state is %d bytes, the bound is %d", l.Tree, ErrTooLarge, len(state), s.cfg.maxValue)
	}
	if err := ctxErr(ctx, "save"); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t, _, err := s.held(l)
	if err != nil {
		return memErr("save", l, err)
	}
	t.state = slices.Clone(state)
	if t.state == nil {
		t.state = []byte{}
	}
	return nil
}

// Claim implements Store.
func (s *MemoryStore) Claim(ctx context.Context, l *Lease, ids []string) ([]Claim, error) {
	if len(ids) > MaxClaimBatch {
		return nil, fmt.Errorf("cluster: store claim %q: %d ids in one batch, more than %d", l.Tree, len(ids), MaxClaimBatch)
	}
	seen := make(map[string]struct{}, len(ids))
	for _, id := range ids {
		if _, err := keyToken("call", id); err != nil {
			return nil, fmt.Errorf("cluster: store claim %q: %w", l.Tree, err)
		}
		if _, dup := seen[id]; dup {
			return nil, fmt.Errorf("cluster: store claim %q: %w: call id %q twice in one batch", l.Tree, ErrInvalidID, id)
		}
		seen[id] = struct{}{}
	}
	if err := ctxErr(ctx, "claim"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t, _, ferr := s.held(l)
	if ferr != nil && !errors.Is(ferr, ErrFenced) {
		return nil, memErr("claim", l, ferr)
	}
	if t == nil {
		t = s.tree(l.Tree)
	}
	now := s.cfg.now()
	out := make([]Claim, len(ids))
	for i, id := range ids {
		out[i].ID = id
		c := t.claims[id]
		if c != nil && !c.expires.IsZero() && !now.Before(c.expires) {
			c = nil // past its retention
		}
		switch {
		case c == nil:
			// Created, as the JetStream store's create lands before its fence is checked.
			nc := &memClaim{}
			if s.cfg.retention > 0 {
				nc.expires = now.Add(s.cfg.retention)
			}
			t.claims[id] = nc
			out[i].State = ClaimNew
		case c.done:
			out[i].State, out[i].Result = ClaimDone, slices.Clone(c.result)
		default:
			out[i].State = ClaimUnknown
		}
	}
	if ferr != nil {
		return nil, memErr("claim", l, ferr)
	}
	return out, nil
}

// Record implements Store.
func (s *MemoryStore) Record(ctx context.Context, l *Lease, id string, result []byte) error {
	if _, err := keyToken("call", id); err != nil {
		return fmt.Errorf("cluster: store record %q: %w", l.Tree, err)
	}
	if len(result) > s.cfg.maxValue {
		return fmt.Errorf("cluster: store record %q call %q: %w: result is %d bytes, the bound is %d", l.Tree, id, ErrTooLarge, len(result), s.cfg.maxValue)
	}
	if err := ctxErr(ctx, "record"); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t, _, err := s.held(l)
	if err != nil {
		return memErr("record", l, err)
	}
	c := &memClaim{done: true, result: slices.Clone(result)}
	if s.cfg.retention > 0 {
		c.expires = s.cfg.now().Add(s.cfg.retention)
	}
	t.claims[id] = c
	return nil
}

// Forget implements Store.
func (s *MemoryStore) Forget(ctx context.Context, l *Lease) error {
	if err := ctxErr(ctx, "forget"); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t, f, err := s.held(l)
	if err != nil {
		return memErr("forget", l, err)
	}
	s.seq++
	t.state, t.claims = nil, map[string]*memClaim{}
	t.lease = leaseValue{Epoch: t.lease.Epoch}
	t.leaseRev = s.seq
	f.lost.Store(true)
	return nil
}
