package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// memStore is an in-memory Store with the seam's semantics, for the
// grain's unit tests: leases with epochs, fencing on every write and
// claim, claims never ClaimNew twice. Tests can expire a lease, make an
// operation fail, and watch every write.
type memStore struct {
	mu     sync.Mutex
	trees  map[string]*fakeTree
	fail   map[string]error // op name → error for its next call
	writes []string         // "save <tree> <len>", "record <tree> <id>", ...
	onSave func(tree string, state []byte)
	// block, if set for an op, is waited on before that op runs (outside mu).
	block map[string]chan struct{}
}

type fakeTree struct {
	holder  string
	epoch   uint64
	expires time.Time
	state   []byte
	claims  map[string]*fakeClaim
}

type fakeClaim struct {
	done   bool
	result []byte
}

// leaseKey is what a Lease's unexported fields would hold; the fake keys
// fencing on Tree and Epoch, which the seam exports.
func newMemStore() *memStore {
	return &memStore{trees: map[string]*fakeTree{}, fail: map[string]error{}, block: map[string]chan struct{}{}}
}

func (m *memStore) enter(op string) error {
	m.mu.Lock()
	ch := m.block[op]
	m.mu.Unlock()
	if ch != nil {
		<-ch
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.fail[op]; err != nil {
		delete(m.fail, op)
		return err
	}
	return nil
}

func (m *memStore) failNext(op string, err error) {
	m.mu.Lock()
	m.fail[op] = err
	m.mu.Unlock()
}

func (m *memStore) tree(id string) *fakeTree {
	t := m.trees[id]
	if t == nil {
		t = &fakeTree{claims: map[string]*fakeClaim{}}
		m.trees[id] = t
	}
	return t
}

// fenced: l is not the current lease of its tree.
func (m *memStore) fenced(l *Lease) (*fakeTree, error) {
	t := m.trees[l.Tree]
	if t == nil || t.epoch != l.Epoch || t.holder != l.Holder {
		return nil, ErrFenced
	}
	return t, nil
}

func (m *memStore) Acquire(ctx context.Context, tree, holder string, ttl time.Duration) (*Lease, error) {
	if err := m.enter("acquire"); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.tree(tree)
	now := time.Now()
	if t.holder != "" && t.holder != holder && now.Before(t.expires) {
		return nil, fmt.Errorf("%w: by %s until %s", ErrLeaseHeld, t.holder, t.expires.Format(time.RFC3339Nano))
	}
	t.holder, t.epoch, t.expires = holder, t.epoch+1, now.Add(ttl)
	return &Lease{Tree: tree, Holder: holder, Epoch: t.epoch, TTL: ttl}, nil
}

func (m *memStore) Renew(ctx context.Context, l *Lease) error {
	if err := m.enter("renew"); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	t, err := m.fenced(l)
	if err != nil {
		return err
	}
	t.expires = time.Now().Add(l.TTL)
	return nil
}

func (m *memStore) Release(ctx context.Context, l *Lease) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t, err := m.fenced(l); err == nil {
		t.holder, t.expires = "", time.Time{}
		m.writes = append(m.writes, "release "+l.Tree)
	}
	return nil
}

func (m *memStore) Load(ctx context.Context, l *Lease) ([]byte, error) {
	if err := m.enter("load"); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	t, err := m.fenced(l)
	if err != nil {
		return nil, err
	}
	return append([]byte(nil), t.state...), nil
}

func (m *memStore) Save(ctx context.Context, l *Lease, state []byte) error {
	if err := m.enter("save"); err != nil {
		return err
	}
	m.mu.Lock()
	t, err := m.fenced(l)
	if err != nil {
		m.mu.Unlock()
		return err
	}
	t.state = append([]byte(nil), state...)
	m.writes = append(m.writes, fmt.Sprintf("save %s", l.Tree))
	f := m.onSave
	m.mu.Unlock()
	if f != nil {
		f(l.Tree, state)
	}
	return nil
}

func (m *memStore) Claim(ctx context.Context, l *Lease, ids []string) ([]Claim, error) {
	if err := m.enter("claim"); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	t, err := m.fenced(l)
	if err != nil {
		return nil, err
	}
	out := make([]Claim, len(ids))
	for i, id := range ids {
		c := t.claims[id]
		switch {
		case c == nil:
			t.claims[id] = &fakeClaim{}
			out[i] = Claim{ID: id, State: ClaimNew}
			m.writes = append(m.writes, "claim "+l.Tree+" "+id)
		case c.done:
			out[i] = Claim{ID: id, State: ClaimDone, Result: append([]byte(nil), c.result...)}
		default:
			out[i] = Claim{ID: id, State: ClaimUnknown}
		}
	}
	return out, nil
}

func (m *memStore) Record(ctx context.Context, l *Lease, id string, result []byte) error {
	if err := m.enter("record"); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	t, err := m.fenced(l)
	if err != nil {
		return err
	}
	c := t.claims[id]
	if c == nil || c.done {
		return errors.New("memStore: record of a call not claimed, or recorded already")
	}
	c.done, c.result = true, append([]byte(nil), result...)
	m.writes = append(m.writes, "record "+l.Tree+" "+id)
	return nil
}

func (m *memStore) Forget(ctx context.Context, l *Lease) error {
	if err := m.enter("forget"); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.fenced(l); err != nil {
		return err
	}
	delete(m.trees, l.Tree)
	m.writes = append(m.writes, "forget "+l.Tree)
	return nil
}

// steal makes another holder take tree, as a second activation elsewhere
// would after the lease passed: the current lease is fenced from now on.
func (m *memStore) steal(tree string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.tree(tree)
	t.holder, t.epoch, t.expires = "thief", t.epoch+1, time.Now().Add(time.Hour)
}

// state returns tree's saved state.
func (m *memStore) state(tree string) []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t := m.trees[tree]; t != nil {
		return append([]byte(nil), t.state...)
	}
	return nil
}

// holderOf returns the address part of tree's lease holder in the store.
func (m *memStore) holderOf(tree string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t := m.trees[tree]; t != nil {
		h, _, _ := strings.Cut(t.holder, "/")
		return h
	}
	return ""
}

var _ Store = (*memStore)(nil)
