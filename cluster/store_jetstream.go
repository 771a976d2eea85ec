package cluster

// The JetStream store. The fencing argument, in short (docs/cluster.md, "The store", has it in
// full):
//
// All of a bucket's keys are subjects of ONE stream, so every write gets a place in one total
// order, its sequence number, and the key's revision is the sequence of its last write.
// JetStream checks a publish's "expected last sequence of subject S" header atomically with the
// append, and S may be another key than the one written. The lease key l.<tree> changes only
// when a lease is acquired, renewed or released, each a compare-and-set on its revision.
//
//  1. A fenced write (Save, Record, Forget, the claim fence) carries "l.<tree> is still at
//     revision R", R the revision this lease last wrote. It lands only if no Acquire (nor
//     anything else) has written l.<tree> since: a lease that was taken over can write nothing.
//  2. Claim first creates c.<tree>.<id> (expected revision 0: create-only, so of any number of
//     creators exactly one wins, whoever they are) and then makes one fenced write (f.<tree>)
//     for the whole batch. Only if that fence lands are the created ids answered ClaimNew.
//     The fence is after the creates in the stream's order, so the lease was held at every
//     create; a later Acquire comes after the fence, and its holder's create of the same id
//     fails: the id is never ClaimNew again.
//  3. If the fence fails (a zombie: its lease was taken while it was paused), its creates stay
//     as claims with no result, which every later Claim reads as ClaimUnknown: the body runs
//     at most once, never twice, even though the zombie wrote a key.
//  4. Clocks decide only when a lease counts as expired (when Acquire may take it from another
//     holder). A wrong clock can take a live lease early; the old holder is then fenced by 1,
//     so clocks cost availability, never safety.
//  5. A refused fenced write is re-read before it counts as fenced: a lease key still at R was a
//     replicated stream's conflict in flight (retry); one at a later revision holding this very
//     acquisition (holder and epoch) was this lease's own Renew whose answer was lost (adopt it,
//     retry) — only that lease's CAS chain writes it. Anything else: ErrFenced, for good.
//
// Reads go to the stream's leader (direct get is off), so a new holder's Load and claim reads
// see every write ordered before its Acquire.

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrStoreUnavailable: the store could not be reached (NATS disconnected, no JetStream, no
// answer within the operation's timeout). The operation may or may not have happened; a claim
// that did happen without its fence reads as ClaimUnknown later, never as ClaimNew.
var ErrStoreUnavailable = errors.New("cluster: store unavailable")

// ErrTooLarge: a state or result is larger than the store's value bound (WithMaxValueBytes).
var ErrTooLarge = errors.New("cluster: value too large for the store")

// LeaseHeldError is Acquire's refusal when another holder's lease is unexpired: who holds the
// tree and until when (by that holder's clock as written; unless renewed, the tree may be taken
// at Until). It matches ErrLeaseHeld with errors.Is.
type LeaseHeldError struct {
	Tree, Holder string
	Epoch        uint64
	Until        time.Time
}

// Error says who holds the tree and until when.
func (e *LeaseHeldError) Error() string {
	return fmt.Sprintf("%v: tree %q is held by %q (epoch %d) until %s",
		ErrLeaseHeld, e.Tree, e.Holder, e.Epoch, e.Until.UTC().Format(time.RFC3339Nano))
}

// Unwrap makes errors.Is(err, ErrLeaseHeld) hold.
func (e *LeaseHeldError) Unwrap() error { return ErrLeaseHeld }

// MaxClaimBatch bounds the ids of one Claim call.
const MaxClaimBatch = 1000

// Defaults of the JetStream store's options.
const (
	DefaultBucket         = "toolscope"
	DefaultMaxValueBytes  = 256 << 10
	DefaultClaimRetention = 24 * time.Hour
	DefaultOpTimeout      = 5 * time.Second
)

// StoreOption configures NewJetStreamStore.
type StoreOption func(*storeConfig)

type storeConfig struct {
	bucket    string
	replicas  int
	maxValue  int
	maxBytes  int64
	retention time.Duration
	opTimeout time.Duration
	memory    bool
	now       func() time.Time
}

// WithBucket names the bucket (default "toolscope"; stream KV_<bucket>). Letters, digits, '-'
// and '_' only. Members of one cluster must use the same bucket.
func WithBucket(name string) StoreOption { return func(c *storeConfig) { c.bucket = name } }

// WithReplicas sets the bucket's replica count (default 1; 3 in production on a NATS cluster).
func WithReplicas(n int) StoreOption { return func(c *storeConfig) { c.replicas = n } }

// WithMaxValueBytes bounds a tree's state and a call's result, in bytes (default 256 KiB).
// Larger values are refused with ErrTooLarge before anything is sent.
func WithMaxValueBytes(n int) StoreOption { return func(c *storeConfig) { c.maxValue = n } }

// WithMaxBytes bounds the whole bucket, in bytes (default: unbounded). When it is full, writes
// fail (nothing old is dropped), so calls end with ErrStoreUnavailable rather than losing claims.
func WithMaxBytes(n int64) StoreOption { return func(c *storeConfig) { c.maxBytes = n } }

// WithClaimRetention sets how long a call's claim and result are kept (default 24h; 0 keeps
// them until the tree is forgotten). A request retried after its claim expired is a new call:
// clients must not retry a call id later than this.
func WithClaimRetention(d time.Duration) StoreOption {
	return func(c *storeConfig) { c.retention = d }
}

// WithOpTimeout bounds each store operation when the caller's ctx allows longer (default 5s).
func WithOpTimeout(d time.Duration) StoreOption { return func(c *storeConfig) { c.opTimeout = d } }

// WithMemoryStorage keeps the bucket in memory instead of files (tests, caches of nothing
// durable): a restarted NATS server has lost every lease, state and claim.
func WithMemoryStorage() StoreOption { return func(c *storeConfig) { c.memory = true } }

// WithClock replaces time.Now for judging lease expiry (tests). Safety never depends on it.
func WithClock(now func() time.Time) StoreOption { return func(c *storeConfig) { c.now = now } }

var bucketName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// JetStreamStore is the Store on one JetStream stream laid out as a key-value bucket (stream
// KV_<bucket>, subjects $KV.<bucket>.<key>, one message kept per key), readable with the nats
// CLI's kv commands. Keys (ids base64url-encoded, see docs/cluster.md):
//
//	l.<tree>        the lease: {holder, epoch, expires, ttl_ms}
//	s.<tree>        the tree's state as given to Save
//	f.<tree>        the claim fence (the epoch of the last fenced claim batch)
//	c.<tree>.<id>   a claim: epoch, and the result once recorded
//
// Its methods are safe for concurrent use, and so are its leases.
type JetStreamStore struct {
	js     jetstream.JetStream
	nc     *nats.Conn
	stream jetstream.Stream
	cfg    storeConfig
	pre    string // "$KV.<bucket>."
}

var _ Store = (*JetStreamStore)(nil)

// leaseFence is a Lease's view of the store: the revision of the lease key it last wrote.
// Fenced writes hold mu for reading (they run in parallel); Renew, Release and Forget hold it
// for writing, so a write never names a revision that is being replaced.
type leaseFence struct {
	store Store  // the store that granted it
	subj  string // the lease key's subject
	tok   string // the tree's key token
	mu    sync.RWMutex
	rev   atomic.Uint64 // changed only by this lease's own lease-key writes (see checkLost)
	// holder and epoch identify this acquisition in the lease key's value.
	holder string
	epoch  uint64
	lost   atomic.Bool // the lease key moved on without us (or was released): permanent
}

// NewJetStreamStore opens (creating or updating) the bucket on js and returns the store.
// Members of one cluster use the same options. ctx bounds the setup.
func NewJetStreamStore(ctx context.Context, js jetstream.JetStream, opts ...StoreOption) (*JetStreamStore, error) {
	cfg := storeConfig{
		bucket:    DefaultBucket,
		replicas:  1,
		maxValue:  DefaultMaxValueBytes,
		maxBytes:  -1,
		retention: DefaultClaimRetention,
		opTimeout: DefaultOpTimeout,
		now:       time.Now,
	}
	for _, o := range opts {
		o(&cfg)
	}
	switch {
	case js == nil:
		return nil, errors.New("cluster: NewJetStreamStore: nil JetStream")
	case !bucketName.MatchString(cfg.bucket):
		return nil, fmt.Errorf("cluster: NewJetStreamStore: bucket %q: want 1-64 of [A-Za-z0-9_-]", cfg.bucket)
	case cfg.replicas < 1 || cfg.replicas > 5:
		return nil, fmt.Errorf("cluster: NewJetStreamStore: replicas %d: want 1 to 5", cfg.replicas)
	case cfg.maxValue < 1 || cfg.maxValue > 8<<20:
		return nil, fmt.Errorf("cluster: NewJetStreamStore: max value %d bytes: want 1 to 8 MiB", cfg.maxValue)
	case cfg.retention < 0 || (cfg.retention > 0 && cfg.retention < time.Second):
		return nil, fmt.Errorf("cluster: NewJetStreamStore: claim retention %s: want 0 (forever) or at least 1s", cfg.retention)
	case cfg.opTimeout <= 0:
		return nil, fmt.Errorf("cluster: NewJetStreamStore: op timeout %s: want > 0", cfg.opTimeout)
	case cfg.now == nil:
		return nil, errors.New("cluster: NewJetStreamStore: nil clock")
	}
	if cfg.maxBytes == 0 {
		cfg.maxBytes = -1
	}
	storage := jetstream.FileStorage
	if cfg.memory {
		storage = jetstream.MemoryStorage
	}
	s := &JetStreamStore{js: js, nc: js.Conn(), cfg: cfg, pre: "$KV." + cfg.bucket + "."}
	if !s.nc.IsConnected() {
		return nil, fmt.Errorf("cluster: NewJetStreamStore: %w: NATS connection is %s", ErrStoreUnavailable, s.nc.Status())
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.opTimeout)
	defer cancel()
	st, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:              "KV_" + cfg.bucket,
		Description:       "toolscope cluster store: leases, tree state, call claims",
		Subjects:          []string{s.pre + ">"},
		MaxMsgsPerSubject: 1,
		MaxMsgs:           -1,
		MaxBytes:          cfg.maxBytes,
		MaxMsgSize:        int32(cfg.maxValue + valueOverhead),
		MaxConsumers:      -1,
		Storage:           storage,
		Replicas:          cfg.replicas,
		Discard:           jetstream.DiscardNew,
		AllowRollup:       true,
		DenyDelete:        true,
		// Reads must see every write ordered before them: the leader answers them.
		AllowDirect: false,
		AllowMsgTTL: true,
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: NewJetStreamStore: bucket %q: %w", cfg.bucket, s.classify(ctx, err))
	}
	s.stream = st
	return s, nil
}

// valueOverhead is the room a stored message takes beyond the caller's bytes: the claim
// header and the fencing headers, which name the lease key (up to ~400 bytes with the longest id).
const valueOverhead = 4096

// leaseValue is the lease key's value.
type leaseValue struct {
	Holder  string `json:"holder,omitempty"` // "" when released
	Epoch   uint64 `json:"epoch"`
	Expires int64  `json:"expires"` // unix nanoseconds, by the writer's clock
	TTLms   int64  `json:"ttl_ms,omitempty"`
}

// claim values: one kind byte, the epoch (uvarint), then the result (done only).
const (
	claimRunning byte = 'c'
	claimDone    byte = 'd'
)

func claimValue(kind byte, epoch uint64, result []byte) []byte {
	b := make([]byte, 0, 1+binary.MaxVarintLen64+len(result))
	b = append(b, kind)
	b = binary.AppendUvarint(b, epoch)
	return append(b, result...)
}

// kvOpHeader marks a deleted key the way the nats KV API does, so tools agree.
const kvOpHeader = "KV-Operation"

func isMarker(m *jetstream.RawStreamMsg) bool {
	if m == nil || m.Header == nil {
		return false
	}
	op := m.Header.Get(kvOpHeader)
	return op == "DEL" || op == "PURGE"
}

// opCtx bounds an operation by the store's op timeout and fails fast when NATS is not connected
// (a request made while the client reconnects would wait in its buffer).
func (s *JetStreamStore) opCtx(ctx context.Context, op string) (context.Context, context.CancelFunc, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, fmt.Errorf("cluster: store %s: %w", op, err)
	}
	if !s.nc.IsConnected() {
		return nil, nil, fmt.Errorf("cluster: store %s: %w: NATS connection is %s", op, ErrStoreUnavailable, s.nc.Status())
	}
	c, cancel := context.WithTimeout(ctx, s.cfg.opTimeout)
	return c, cancel, nil
}

// classify wraps a NATS error: a JetStream API refusal stays as it is, anything else (timeout,
// connection gone, no responders) is ErrStoreUnavailable, with ctx's error when it ended.
func (s *JetStreamStore) classify(ctx context.Context, err error) error {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return err
	}
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w: %w (%w)", ErrStoreUnavailable, err, cerr)
	}
	return fmt.Errorf("%w: %w", ErrStoreUnavailable, err)
}

func isWrongSeq(err error) bool {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	return apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant
}

// last reads key's last message from the leader; nil, nil when the key has none.
func (s *JetStreamStore) last(ctx context.Context, subj string) (*jetstream.RawStreamMsg, error) {
	m, err := s.stream.GetLastMsgForSubject(ctx, subj)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, s.classify(ctx, err)
	}
	return m, nil
}

func (s *JetStreamStore) fence(l *Lease, op string) (*leaseFence, error) {
	if l == nil || l.fence == nil || l.fence.store != s {
		return nil, fmt.Errorf("cluster: store %s: lease not acquired from this store", op)
	}
	return l.fence, nil
}

// Acquire implements Store. Round trips: a read of the lease key, then a compare-and-set (a
// lost race re-reads).
func (s *JetStreamStore) Acquire(ctx context.Context, tree, holder string, ttl time.Duration) (*Lease, error) {
	tok, err := keyToken("tree", tree)
	if err != nil {
		return nil, fmt.Errorf("cluster: store acquire: %w", err)
	}
	if holder == "" {
		return nil, errors.New("cluster: store acquire: empty holder")
	}
	if ttl <= 0 {
		return nil, fmt.Errorf("cluster: store acquire %q: ttl %s: want > 0", tree, ttl)
	}
	ctx, cancel, err := s.opCtx(ctx, "acquire")
	if err != nil {
		return nil, err
	}
	defer cancel()
	subj := s.pre + "l." + tok
	for {
		m, err := s.last(ctx, subj)
		if err != nil {
			return nil, fmt.Errorf("cluster: store acquire %q: %w", tree, err)
		}
		var prev leaseValue
		var expect uint64
		if m != nil {
			expect = m.Sequence
			if !isMarker(m) {
				if err := json.Unmarshal(m.Data, &prev); err != nil {
					return nil, fmt.Errorf("cluster: store acquire %q: corrupt lease value: %v", tree, err)
				}
			}
		}
		now := s.cfg.now()
		if prev.Holder != "" && prev.Holder != holder && now.UnixNano() < prev.Expires {
			return nil, &LeaseHeldError{Tree: tree, Holder: prev.Holder, Epoch: prev.Epoch, Until: time.Unix(0, prev.Expires)}
		}
		v := leaseValue{Holder: holder, Epoch: prev.Epoch + 1, Expires: now.Add(ttl).UnixNano(), TTLms: ttl.Milliseconds()}
		data, _ := json.Marshal(v)
		pa, err := s.js.PublishMsg(ctx, &nats.Msg{Subject: subj, Data: data}, jetstream.WithExpectLastSequencePerSubject(expect))
		if isWrongSeq(err) {
			continue // another acquirer (or renewal) got there first: look again
		}
		if err != nil {
			return nil, fmt.Errorf("cluster: store acquire %q: %w", tree, s.classify(ctx, err))
		}
		f := &leaseFence{store: s, subj: subj, tok: tok, holder: holder, epoch: v.Epoch}
		f.rev.Store(pa.Sequence)
		return &Lease{Tree: tree, Holder: holder, Epoch: v.Epoch, TTL: ttl, fence: f}, nil
	}
}

// Renew implements Store: a compare-and-set of the lease key (one round trip).
func (s *JetStreamStore) Renew(ctx context.Context, l *Lease) error {
	f, err := s.fence(l, "renew")
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lost.Load() {
		return fmt.Errorf("cluster: store renew %q (epoch %d): %w", l.Tree, l.Epoch, ErrFenced)
	}
	v := leaseValue{Holder: l.Holder, Epoch: l.Epoch, Expires: s.cfg.now().Add(l.TTL).UnixNano(), TTLms: l.TTL.Milliseconds()}
	data, _ := json.Marshal(v)
	if err := s.casLease(ctx, f, data, "renew", l); err != nil {
		return err
	}
	return nil
}

// Release implements Store: the lease key is marked released (holder empty, epoch kept, so the
// next Acquire still counts up), conditional on l. A lost lease is not an error.
func (s *JetStreamStore) Release(ctx context.Context, l *Lease) error {
	f, err := s.fence(l, "release")
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lost.Load() {
		return nil
	}
	data, _ := json.Marshal(leaseValue{Epoch: l.Epoch})
	err = s.casLease(ctx, f, data, "release", l)
	if errors.Is(err, ErrFenced) {
		return nil
	}
	if err == nil {
		f.lost.Store(true) // released: no more writes with it
	}
	return err
}

// casLease writes the lease key conditional on f.rev; f.mu is held for writing.
func (s *JetStreamStore) casLease(ctx context.Context, f *leaseFence, data []byte, op string, l *Lease) error {
	ctx, cancel, err := s.opCtx(ctx, op)
	if err != nil {
		return err
	}
	defer cancel()
	for {
		pa, err := s.js.PublishMsg(ctx, &nats.Msg{Subject: f.subj, Data: data}, jetstream.WithExpectLastSequencePerSubject(f.rev.Load()))
		if err == nil {
			f.rev.Store(pa.Sequence)
			return nil
		}
		if !isWrongSeq(err) {
			return fmt.Errorf("cluster: store %s %q: %w", op, l.Tree, s.classify(ctx, err))
		}
		if err := s.checkLost(ctx, f); err != nil {
			return fmt.Errorf("cluster: store %s %q (epoch %d): %w", op, l.Tree, l.Epoch, err)
		}
	}
}

// checkLost is called after a write conditional on f.rev was refused (f.mu held either way).
// It reads the lease key:
//   - at f.rev: the refusal was a replicated stream's conflict with a write in flight; the
//     caller tries again (after a short pause, bounded by ctx);
//   - moved on but still holding this acquisition (same holder and epoch, not released): only
//     this lease's own Renew writes that, so it is a renewal whose answer was lost (a timeout);
//     f adopts the revision and the caller tries again;
//   - anything else: another Acquire (or this lease's Release) moved it: the lease is lost
//     for good (revisions only grow), ErrFenced.
func (s *JetStreamStore) checkLost(ctx context.Context, f *leaseFence) error {
	m, err := s.last(ctx, f.subj)
	if err != nil {
		return err
	}
	rev := f.rev.Load()
	switch {
	case m == nil || isMarker(m):
		f.lost.Store(true)
		return ErrFenced
	case m.Sequence != rev:
		var v leaseValue
		if json.Unmarshal(m.Data, &v) != nil || v.Holder != f.holder || v.Epoch != f.epoch || m.Sequence < rev {
			f.lost.Store(true)
			return ErrFenced
		}
		f.rev.CompareAndSwap(rev, m.Sequence)
		return nil
	}
	select {
	case <-time.After(time.Millisecond):
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w: %w", ErrStoreUnavailable, ctx.Err())
	}
}

// fencedPublish writes subj conditional on the lease key still being at f.rev. f.mu is held
// (for reading, or for writing by Forget).
func (s *JetStreamStore) fencedPublish(ctx context.Context, f *leaseFence, subj string, hdr nats.Header, data []byte, ttl time.Duration) error {
	for {
		if f.lost.Load() {
			return ErrFenced
		}
		opts := []jetstream.PublishOpt{jetstream.WithExpectLastSequenceForSubject(f.rev.Load(), f.subj)}
		if ttl > 0 {
			opts = append(opts, jetstream.WithMsgTTL(ttl))
		}
		_, err := s.js.PublishMsg(ctx, &nats.Msg{Subject: subj, Header: hdr, Data: data}, opts...)
		if err == nil {
			return nil
		}
		if !isWrongSeq(err) {
			return s.classify(ctx, err)
		}
		if err := s.checkLost(ctx, f); err != nil {
			return err
		}
	}
}

// Load implements Store: one read of the state key.
func (s *JetStreamStore) Load(ctx context.Context, l *Lease) ([]byte, error) {
	f, err := s.fence(l, "load")
	if err != nil {
		return nil, err
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.lost.Load() {
		return nil, fmt.Errorf("cluster: store load %q (epoch %d): %w", l.Tree, l.Epoch, ErrFenced)
	}
	ctx, cancel, err := s.opCtx(ctx, "load")
	if err != nil {
		return nil, err
	}
	defer cancel()
	m, err := s.last(ctx, s.pre+"s."+f.tok)
	if err != nil {
		return nil, fmt.Errorf("cluster: store load %q: %w", l.Tree, err)
	}
	// A read writes nothing to fence it: the lease key is read after the
	// state, so a state read while another activation held the tree is not
	// handed over as this lease's.
	if err := s.stillHeld(ctx, f); err != nil {
		return nil, fmt.Errorf("cluster: store load %q (epoch %d): %w", l.Tree, l.Epoch, err)
	}
	if m == nil || isMarker(m) {
		return nil, nil
	}
	return m.Data, nil
}

// stillHeld reads the lease key and reports ErrFenced unless it is where this
// lease left it (or moved by this lease's own renewal whose answer was lost:
// see checkLost). One round trip; f.mu is held.
func (s *JetStreamStore) stillHeld(ctx context.Context, f *leaseFence) error {
	m, err := s.last(ctx, f.subj)
	if err != nil {
		return err
	}
	if m != nil && !isMarker(m) && m.Sequence == f.rev.Load() {
		return nil
	}
	return s.checkLost(ctx, f)
}

// Save implements Store: one fenced write of the state key.
func (s *JetStreamStore) Save(ctx context.Context, l *Lease, state []byte) error {
	f, err := s.fence(l, "save")
	if err != nil {
		return err
	}
	if len(state) > s.cfg.maxValue {
		return fmt.Errorf("cluster: store save %q: %w: state is %d bytes, the bound is %d", l.Tree, ErrTooLarge, len(state), s.cfg.maxValue)
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	ctx, cancel, err := s.opCtx(ctx, "save")
	if err != nil {
		return err
	}
	defer cancel()
	if err := s.fencedPublish(ctx, f, s.pre+"s."+f.tok, nil, state, 0); err != nil {
		return fmt.Errorf("cluster: store save %q (epoch %d): %w", l.Tree, l.Epoch, err)
	}
	return nil
}

// Claim implements Store. Round trips: the batch's creates run in parallel (one round trip of
// latency per 16 ids), then one fenced write covers the batch; an id found claimed before costs
// one more read.
func (s *JetStreamStore) Claim(ctx context.Context, l *Lease, ids []string) ([]Claim, error) {
	f, err := s.fence(l, "claim")
	if err != nil {
		return nil, err
	}
	if len(ids) > MaxClaimBatch {
		return nil, fmt.Errorf("cluster: store claim %q: %d ids in one batch, more than %d", l.Tree, len(ids), MaxClaimBatch)
	}
	subjs := make([]string, len(ids))
	seen := make(map[string]struct{}, len(ids))
	for i, id := range ids {
		tok, err := keyToken("call", id)
		if err != nil {
			return nil, fmt.Errorf("cluster: store claim %q: %w", l.Tree, err)
		}
		if _, dup := seen[id]; dup {
			return nil, fmt.Errorf("cluster: store claim %q: %w: call id %q twice in one batch", l.Tree, ErrInvalidID, id)
		}
		seen[id] = struct{}{}
		subjs[i] = s.pre + "c." + f.tok + "." + tok
	}
	out := make([]Claim, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.lost.Load() {
		return nil, fmt.Errorf("cluster: store claim %q (epoch %d): %w", l.Tree, l.Epoch, ErrFenced)
	}
	ctx, cancel, err := s.opCtx(ctx, "claim")
	if err != nil {
		return nil, err
	}
	defer cancel()
	fail := func(err error) ([]Claim, error) {
		return nil, fmt.Errorf("cluster: store claim %q (epoch %d): %w", l.Tree, l.Epoch, err)
	}

	// 1. Create every claim key, in parallel. A create fails if the key has any message.
	val := claimValue(claimRunning, l.Epoch, nil)
	created, err := s.createAll(ctx, subjs, val)
	if err != nil {
		return fail(err)
	}
	for i := range ids {
		out[i].ID = ids[i]
	}
	// Ids that existed: read what they hold (a deleted marker left by Forget is no claim).
	for i := range ids {
		if created[i] {
			continue
		}
		ok, err := s.readClaim(ctx, subjs[i], val, &out[i])
		if err != nil {
			return fail(err)
		}
		created[i] = ok
	}
	// 2. One fenced write for the batch: the lease was held at every create above.
	fv := binary.AppendUvarint(nil, l.Epoch)
	if err := s.fencedPublish(ctx, f, s.pre+"f."+f.tok, nil, fv, 0); err != nil {
		return fail(err)
	}
	for i := range ids {
		if created[i] {
			out[i].State = ClaimNew
		}
	}
	return out, nil
}

// claimParallelism bounds the creates of one Claim in flight at once.
const claimParallelism = 16

// createAll creates the claim keys subjs (expected revision 0), up to claimParallelism at a
// time: a batch costs about one round trip of latency per 16 ids. created[i] is false where
// the key already had a message. Each publish ends by ctx, so this returns within it: no
// publish is left pending in the client after an error.
func (s *JetStreamStore) createAll(ctx context.Context, subjs []string, val []byte) ([]bool, error) {
	created := make([]bool, len(subjs))
	errs := make([]error, len(subjs))
	create := func(i int) {
		_, err := s.js.PublishMsg(ctx, &nats.Msg{Subject: subjs[i], Data: val}, s.createOpts(0)...)
		switch {
		case err == nil:
			created[i] = true
		case !isWrongSeq(err):
			errs[i] = err
		}
	}
	if len(subjs) == 1 {
		create(0)
	} else {
		var next atomic.Int64
		var wg sync.WaitGroup
		for range min(len(subjs), claimParallelism) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := int(next.Add(1) - 1)
					if i >= len(subjs) || ctx.Err() != nil {
						return
					}
					create(i)
				}
			}()
		}
		wg.Wait()
	}
	if err := ctx.Err(); err != nil {
		return nil, s.classify(ctx, err)
	}
	for _, err := range errs {
		if err != nil {
			return nil, s.classify(ctx, err)
		}
	}
	return created, nil
}

func (s *JetStreamStore) createOpts(expect uint64) []jetstream.PublishOpt {
	opts := []jetstream.PublishOpt{jetstream.WithExpectLastSequencePerSubject(expect)}
	if s.cfg.retention > 0 {
		opts = append(opts, jetstream.WithMsgTTL(s.cfg.retention))
	}
	return opts
}

// readClaim answers an id whose create failed. If the key holds a claim it fills c (done or
// unknown); if it holds only a deleted marker (or vanished), it creates the claim over it
// (true: created).
func (s *JetStreamStore) readClaim(ctx context.Context, subj string, val []byte, c *Claim) (bool, error) {
	for {
		m, err := s.last(ctx, subj)
		if err != nil {
			return false, err
		}
		if m != nil && !isMarker(m) {
			if len(m.Data) > 0 && m.Data[0] == claimDone {
				_, n := binary.Uvarint(m.Data[1:])
				if n <= 0 {
					return false, fmt.Errorf("corrupt claim value for call %q", c.ID)
				}
				c.State, c.Result = ClaimDone, m.Data[1+n:]
			} else {
				c.State = ClaimUnknown
			}
			return false, nil
		}
		var expect uint64
		if m != nil {
			expect = m.Sequence
		}
		_, err = s.js.PublishMsg(ctx, &nats.Msg{Subject: subj, Data: val}, s.createOpts(expect)...)
		if err == nil {
			return true, nil
		}
		if !isWrongSeq(err) {
			return false, s.classify(ctx, err)
		}
	}
}

// Record implements Store: one fenced write of the claim key, keeping the claim's retention.
func (s *JetStreamStore) Record(ctx context.Context, l *Lease, id string, result []byte) error {
	f, err := s.fence(l, "record")
	if err != nil {
		return err
	}
	tok, err := keyToken("call", id)
	if err != nil {
		return fmt.Errorf("cluster: store record %q: %w", l.Tree, err)
	}
	if len(result) > s.cfg.maxValue {
		return fmt.Errorf("cluster: store record %q call %q: %w: result is %d bytes, the bound is %d", l.Tree, id, ErrTooLarge, len(result), s.cfg.maxValue)
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	ctx, cancel, err := s.opCtx(ctx, "record")
	if err != nil {
		return err
	}
	defer cancel()
	if err := s.fencedPublish(ctx, f, s.pre+"c."+f.tok+"."+tok, nil, claimValue(claimDone, l.Epoch, result), s.cfg.retention); err != nil {
		return fmt.Errorf("cluster: store record %q call %q (epoch %d): %w", l.Tree, id, l.Epoch, err)
	}
	return nil
}

// Forget implements Store: the state key, every claim key and the fence key are deleted, each
// by a fenced write (so a lease taken over meanwhile stops it at once), then the lease is
// released. Round trips: one per key, plus a listing of the tree's claim keys.
func (s *JetStreamStore) Forget(ctx context.Context, l *Lease) error {
	f, err := s.fence(l, "forget")
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lost.Load() {
		return fmt.Errorf("cluster: store forget %q (epoch %d): %w", l.Tree, l.Epoch, ErrFenced)
	}
	fail := func(err error) error {
		return fmt.Errorf("cluster: store forget %q (epoch %d): %w", l.Tree, l.Epoch, err)
	}
	ctx, cancel, err := s.opCtx(ctx, "forget")
	if err != nil {
		return err
	}
	defer cancel()
	del := nats.Header{kvOpHeader: []string{"DEL"}}
	// The state first: once it is gone the tree is gone, whatever happens to the rest.
	if err := s.fencedPublish(ctx, f, s.pre+"s."+f.tok, del, nil, 0); err != nil {
		return fail(err)
	}
	info, err := s.stream.Info(ctx, jetstream.WithSubjectFilter(s.pre+"c."+f.tok+".>"))
	if err != nil {
		return fail(s.classify(ctx, err))
	}
	for subj := range info.State.Subjects {
		if err := s.fencedPublish(ctx, f, subj, del, nil, s.cfg.retention); err != nil {
			return fail(err)
		}
	}
	if err := s.fencedPublish(ctx, f, s.pre+"f."+f.tok, del, nil, 0); err != nil {
		return fail(err)
	}
	data, _ := json.Marshal(leaseValue{Epoch: l.Epoch})
	pa, err := s.js.PublishMsg(ctx, &nats.Msg{Subject: f.subj, Data: data}, jetstream.WithExpectLastSequencePerSubject(f.rev.Load()))
	if err != nil {
		if isWrongSeq(err) {
			return fail(ErrFenced)
		}
		return fail(s.classify(ctx, err))
	}
	f.rev.Store(pa.Sequence)
	f.lost.Store(true) // released
	return nil
}

// String describes the store for logs.
func (s *JetStreamStore) String() string {
	return "cluster.JetStreamStore(bucket=" + s.cfg.bucket + ", replicas=" + strconv.Itoa(s.cfg.replicas) + ")"
}
