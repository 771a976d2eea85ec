package cluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/toolscope/toolscope/lossless"
	"github.com/toolscope/toolscope/runtime"
)

// StateFormat is the version of the tree state encoding this package
// writes and reads.
const StateFormat = 1

// MaxStateBytes bounds an encoded tree state (what Store.Save gets).
const MaxStateBytes = 4 << 20

// MaxScopes bounds the scopes of one tree (the root and its sub-agents).
const MaxScopes = 1024

// MaxMutations bounds the live mutations of one scope.
const MaxMutations = 1024

// ErrState wraps every refusal of a tree state: it cannot be decoded, or
// it is not a tree this package can rebuild.
var ErrState = errors.New("cluster: tree state")

// Mutation kinds: what one MutationState adds to its scope.
const (
	KindMount    = "mount"    // a catalog tool, registered in the scope
	KindGuard    = "guard"    // a catalog guard, added to the scope
	KindRestrict = "restrict" // a restriction of what the scope inherits
)

// TreeState is an agent tree as data: everything needed to rebuild it on
// any member that runs the same code (the same catalog). It is what the
// Store saves; nothing in it is a function.
type TreeState struct {
	// Format is StateFormat.
	Format int `json:"format"`
	// Tree is the tree's id: its root agent scope's key.
	Tree string `json:"tree"`
	// Seq numbers the tree's mutations: the last id given out. Ids are
	// never reused within a tree, so a disposer names exactly one mutation.
	Seq uint64 `json:"seq"`
	// Scopes are the tree's scopes, parents before children; Scopes[0] is
	// the root (key Tree, no parent).
	Scopes []ScopeState `json:"scopes"`
}

// ScopeState is one agent scope of a tree.
type ScopeState struct {
	Key    string `json:"key"`
	Parent string `json:"parent,omitempty"` // "" for the root
	// ID is the id of the NewScope mutation that created it ("" for the
	// root); CallID the request that did (retries are answered by it).
	ID     string `json:"id,omitempty"`
	CallID string `json:"call_id,omitempty"`
	// Mutations are the scope's live mutations in the order they were
	// applied (a removed one is gone from the list).
	Mutations []MutationState `json:"mutations,omitempty"`
}

// MutationState is one live mutation of a scope.
type MutationState struct {
	// ID names it; the exact disposer (Unmount, RemoveGuard, Unrestrict)
	// names this id.
	ID   string `json:"id"`
	Kind string `json:"kind"`
	// CallID is the client's id of the request that made it: a retried
	// request finds it and gets the same id back.
	CallID string `json:"call_id,omitempty"`
	// Entry and Config: the catalog entry and its config (mount, guard).
	Entry  string          `json:"entry,omitempty"`
	Config json.RawMessage `json:"config,omitempty"`
	// Tool is the mounted tool's name (mount), kept to refuse a duplicate
	// before anything is written.
	Tool string `json:"tool,omitempty"`
	// Allow and Deny: the restriction (restrict). A nil list is absent
	// (JSON null); an empty one is present.
	Allow []string `json:"allow"`
	Deny  []string `json:"deny"`
}

// NewTreeState returns the state of a fresh tree: its root scope only.
func NewTreeState(tree string) *TreeState {
	return &TreeState{Format: StateFormat, Tree: tree, Scopes: []ScopeState{{Key: tree}}}
}

// Encode returns the state's encoding (JSON). It fails on a state Decode
// would refuse.
func (t *TreeState) Encode() ([]byte, error) {
	if err := t.validate(); err != nil {
		return nil, err
	}
	b, err := json.Marshal(t)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrState, err)
	}
	if len(b) > MaxStateBytes {
		return nil, fmt.Errorf("%w: tree %q encodes to %d bytes, over the bound of %d", ErrState, t.Tree, len(b), MaxStateBytes)
	}
	return b, nil
}

// DecodeTreeState decodes what Encode returned. Input is hostile: its size
// is bounded, unknown fields are refused, and the result is validated (a
// root first, parents before children, unique keys and ids, known kinds).
func DecodeTreeState(b []byte) (*TreeState, error) {
	if len(b) > MaxStateBytes {
		return nil, fmt.Errorf("%w: %d bytes, over the bound of %d", ErrState, len(b), MaxStateBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var t TreeState
	if err := dec.Decode(&t); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrState, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: trailing data after the state", ErrState)
	}
	if err := t.validate(); err != nil {
		return nil, err
	}
	for i := range t.Scopes { // one form for each value: what Encode writes
		s := &t.Scopes[i]
		if len(s.Mutations) == 0 {
			s.Mutations = nil
		}
		for j := range s.Mutations {
			m := &s.Mutations[j]
			if len(m.Config) == 0 {
				continue
			}
			c, err := lossless.Canonical(m.Config)
			if err != nil {
				return nil, fmt.Errorf("%w: tree %q: mutation %q: config: %w", ErrState, t.Tree, m.ID, err)
			}
			m.Config = c
		}
	}
	return &t, nil
}

func (t *TreeState) validate() error {
	if t.Format != StateFormat {
		return fmt.Errorf("%w: format %d, this code reads %d", ErrState, t.Format, StateFormat)
	}
	if t.Tree == "" {
		return fmt.Errorf("%w: no tree id", ErrState)
	}
	if len(t.Scopes) == 0 || t.Scopes[0].Key != t.Tree || t.Scopes[0].Parent != "" {
		return fmt.Errorf("%w: tree %q: the first scope must be the root (key %q, no parent)", ErrState, t.Tree, t.Tree)
	}
	if len(t.Scopes) > MaxScopes {
		return fmt.Errorf("%w: tree %q has %d scopes, over the bound of %d", ErrState, t.Tree, len(t.Scopes), MaxScopes)
	}
	keys := make(map[string]bool, len(t.Scopes))
	ids := map[string]bool{}
	for i, s := range t.Scopes {
		if s.Key == "" || keys[s.Key] {
			return fmt.Errorf("%w: tree %q: scope %d has an empty or repeated key %q", ErrState, t.Tree, i, s.Key)
		}
		if i > 0 && !keys[s.Parent] {
			return fmt.Errorf("%w: tree %q: scope %q names parent %q, which does not come before it", ErrState, t.Tree, s.Key, s.Parent)
		}
		keys[s.Key] = true
		if len(s.Mutations) > MaxMutations {
			return fmt.Errorf("%w: tree %q: scope %q has %d mutations, over the bound of %d", ErrState, t.Tree, s.Key, len(s.Mutations), MaxMutations)
		}
		if s.ID != "" {
			if ids[s.ID] {
				return fmt.Errorf("%w: tree %q: id %q is repeated", ErrState, t.Tree, s.ID)
			}
			ids[s.ID] = true
		}
		for _, m := range s.Mutations {
			if m.ID == "" || ids[m.ID] {
				return fmt.Errorf("%w: tree %q: scope %q: empty or repeated mutation id %q", ErrState, t.Tree, s.Key, m.ID)
			}
			ids[m.ID] = true
			switch m.Kind {
			case KindMount, KindGuard:
				if m.Entry == "" {
					return fmt.Errorf("%w: tree %q: mutation %q names no catalog entry", ErrState, t.Tree, m.ID)
				}
			case KindRestrict:
				if m.Allow == nil && m.Deny == nil {
					return fmt.Errorf("%w: tree %q: restriction %q has neither allow nor deny", ErrState, t.Tree, m.ID)
				}
			default:
				return fmt.Errorf("%w: tree %q: mutation %q has unknown kind %q", ErrState, t.Tree, m.ID, m.Kind)
			}
		}
	}
	return nil
}

// Clone returns a deep copy: a mutation is applied to a copy, saved, and
// only then does the copy become the state.
func (t *TreeState) Clone() *TreeState {
	c := *t
	c.Scopes = make([]ScopeState, len(t.Scopes))
	for i, s := range t.Scopes {
		s.Mutations = slices.Clone(s.Mutations)
		for j := range s.Mutations {
			m := &s.Mutations[j]
			m.Config = slices.Clone(m.Config)
			m.Allow = cloneList(m.Allow)
			m.Deny = cloneList(m.Deny)
		}
		c.Scopes[i] = s
	}
	return &c
}

// cloneList copies a list keeping nil and empty apart.
func cloneList(l []string) []string {
	if l == nil {
		return nil
	}
	return append([]string{}, l...)
}

// scope returns the index of the scope with key, or -1.
func (t *TreeState) scope(key string) int {
	return slices.IndexFunc(t.Scopes, func(s ScopeState) bool { return s.Key == key })
}

// find returns the scope index and mutation index of mutation id, or -1s.
func (t *TreeState) find(id string) (int, int) {
	for i, s := range t.Scopes {
		if j := slices.IndexFunc(s.Mutations, func(m MutationState) bool { return m.ID == id }); j >= 0 {
			return i, j
		}
	}
	return -1, -1
}

// byCallID returns the id of the live mutation or scope a request with
// callID made, or "".
func (t *TreeState) byCallID(callID string) string {
	if callID == "" {
		return ""
	}
	for _, s := range t.Scopes {
		if s.CallID == callID {
			return s.ID
		}
		for _, m := range s.Mutations {
			if m.CallID == callID {
				return m.ID
			}
		}
	}
	return ""
}

// nextID gives out the next mutation id.
func (t *TreeState) nextID() string {
	t.Seq++
	return fmt.Sprintf("m%d", t.Seq)
}

// descendants returns key and the keys of all scopes below it.
func (t *TreeState) descendants(key string) map[string]bool {
	out := map[string]bool{key: true}
	for _, s := range t.Scopes { // parents come first: one pass is enough
		if out[s.Parent] && s.Parent != "" {
			out[s.Key] = true
		}
	}
	return out
}

// Built is a tree of runtime scopes rebuilt from a TreeState.
type Built struct {
	// Scopes maps each scope key to its runtime scope.
	Scopes map[string]*runtime.Scope
	// undo maps each live mutation id to its exact disposer.
	undo map[string]func()
}

// Undo removes the mutation id from the built tree (its exact disposer);
// false when the built tree has no such mutation.
func (b *Built) Undo(id string) bool {
	f, ok := b.undo[id]
	if ok {
		delete(b.undo, id)
		f()
	}
	return ok
}

// Dispose disposes every scope of the built tree (the root's disposal
// cascades to its sub-agents).
func (b *Built) Dispose(root string) {
	if s := b.Scopes[root]; s != nil {
		s.Dispose()
	}
	for _, s := range b.Scopes {
		s.Dispose()
	}
}

// Rebuild creates t's scopes in reg, parents before children (the root as
// a top-level agent scope), and applies each scope's mutations in order
// with the catalog's factories. On any failure it disposes what it built
// and returns an error naming the scope and the mutation.
func Rebuild(reg *runtime.Registry, cat *Catalog, t *TreeState) (*Built, error) {
	if err := t.validate(); err != nil {
		return nil, err
	}
	b := &Built{Scopes: make(map[string]*runtime.Scope, len(t.Scopes)), undo: map[string]func(){}}
	for i, s := range t.Scopes {
		var sc *runtime.Scope
		var err error
		if i == 0 {
			sc, err = reg.NewScope(s.Key)
		} else {
			sc, err = b.Scopes[s.Parent].NewScope(s.Key)
		}
		if err != nil {
			b.Dispose(t.Tree)
			return nil, fmt.Errorf("%w: tree %q: scope %q: %w", ErrState, t.Tree, s.Key, err)
		}
		b.Scopes[s.Key] = sc
		for _, m := range s.Mutations {
			undo, err := apply(sc, cat, m)
			if err != nil {
				b.Dispose(t.Tree)
				return nil, fmt.Errorf("%w: tree %q: scope %q: mutation %q: %w", ErrState, t.Tree, s.Key, m.ID, err)
			}
			b.undo[m.ID] = undo
		}
	}
	return b, nil
}

// apply applies one mutation to scope s and returns its exact disposer.
func apply(s *runtime.Scope, cat *Catalog, m MutationState) (func(), error) {
	switch m.Kind {
	case KindMount:
		def, err := cat.Tool(m.Entry, m.Config)
		if err != nil {
			return nil, err
		}
		return s.Register(def)
	case KindGuard:
		g, err := cat.Guard(m.Entry, m.Config)
		if err != nil {
			return nil, err
		}
		return s.Guard(g)
	case KindRestrict:
		return s.Restrict(runtime.Restriction{Allow: cloneList(m.Allow), Deny: cloneList(m.Deny)})
	}
	return nil, fmt.Errorf("unknown mutation kind %q", m.Kind)
}
