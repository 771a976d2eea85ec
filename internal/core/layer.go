package core

import (
	"sort"
	"sync"
)

// Kind names a list of callbacks a layer holds besides its tools.
type Kind uint8

// The callback lists of a layer. Guards are evaluated with live iteration
// (R40); the hook kinds are merged across the chain by Seq (R85).
const (
	KindGuard Kind = iota
	KindPre
	KindAround
	KindPost
	KindResult
	KindChange
	KindApprover // a scope's approvers (the newest of the nearest layer answers)
	numKinds
)

// Entry is one registration held by a layer: a tool or a callback.
// Payload is opaque to the core (a tool definition or a function).
type Entry struct {
	// ID identifies the registration for its disposer; never reused.
	ID uint64
	// Seq orders entries. Tools: layer-local insertion order. Hooks:
	// registry-wide registration order, negative for prepended hooks.
	Seq int64
	// Name of a tool; empty for callbacks.
	Name    string
	Payload any

	// hash is the hash of Name, set when a tool enters a table.
	hash uint64
}

// Restriction is one allow/deny filter. A nil set means "absent"; an empty
// non-nil set is present (R21).
type Restriction struct {
	ID    uint64
	Allow *NameSet
	Deny  *NameSet
}

// Admits reports whether the filter lets an inherited name through (R22).
func (r *Restriction) Admits(name string) bool {
	if r.Allow != nil && !r.Allow.Has(name) {
		return false
	}
	if r.Deny != nil && r.Deny.Has(name) {
		return false
	}
	return true
}

// smallSet is the size up to which a NameSet is a plain slice: a few names
// scanned linearly cost less memory and time than a Go map (a restriction's
// memory grows with its own names only, never with the number of tools).
const smallSet = 8

// NameSet is an immutable set of names.
type NameSet struct {
	list []string
	m    map[string]struct{}
}

// NewNameSet copies names into a set.
func NewNameSet(names []string) *NameSet {
	if len(names) <= smallSet {
		return &NameSet{list: append(make([]string, 0, len(names)), names...)}
	}
	m := make(map[string]struct{}, len(names))
	for _, n := range names {
		m[n] = struct{}{}
	}
	return &NameSet{m: m}
}

// Has reports whether name is in the set.
func (s *NameSet) Has(name string) bool {
	if s.m != nil {
		_, ok := s.m[name]
		return ok
	}
	for _, n := range s.list {
		if n == name {
			return true
		}
	}
	return false
}

// Layer is the immutable state one scope owns. A new Layer is produced for
// every mutation; published Layers are never changed, so readers need no lock.
type Layer struct {
	// Version increases with every mutation of this layer.
	Version uint64

	tools toolTable
	// nextSeq is the next layer-local tool sequence number.
	nextSeq int64

	// Restrictions in the order they were added.
	Restrictions []*Restriction

	// cb holds guards and hooks; nil until the layer gets its first one
	// (most agent layers have none, and a layer is copied on every
	// mutation: heap per idle scope is a budget).
	cb *callbacks

	// presentation is the mode the scope declares (0: none; the runtime
	// gives the other values their meaning, R107).
	presentation uint8

	orderOnce sync.Once
	ordered   []*Entry
}

// Empty is the layer of a scope that owns nothing.
var Empty = &Layer{}

// Lookup returns the layer's own tool registered under name.
func (l *Layer) Lookup(name string) (*Entry, bool) {
	return l.tools.get(name)
}

// Len is the number of tools in the layer.
func (l *Layer) Len() int { return l.tools.n }

// Tools returns the layer's tools in insertion order. The slice is shared
// and must not be modified.
func (l *Layer) Tools() []*Entry {
	l.orderOnce.Do(func() {
		out := make([]*Entry, 0, l.tools.n)
		l.tools.each(func(e *Entry) { out = append(out, e) })
		sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
		l.ordered = out
	})
	return l.ordered
}

// List returns the callbacks of one kind, ordered by Seq. Shared; read only.
func (l *Layer) List(k Kind) []Entry {
	if l.cb == nil {
		return nil
	}
	return l.cb.lists[k]
}

// callbacks is the immutable set of a layer's guards and hooks.
type callbacks struct {
	// lists holds guards and hooks, each ordered by Seq.
	lists [numKinds][]Entry
	// guardGen changes whenever the guard list becomes empty, so an
	// evaluation that started before can tell a fresh list from the one it
	// was walking (R40 surprise).
	guardGen uint64
}

func (l *Layer) callbacksCopy() *callbacks {
	if l.cb == nil {
		return &callbacks{}
	}
	c := *l.cb
	return &c
}

// GuardGen is the generation of the guard list (see Layer.guardGen).
func (l *Layer) GuardGen() uint64 {
	if l.cb == nil {
		return 0
	}
	return l.cb.guardGen
}

func (l *Layer) clone() *Layer {
	n := &Layer{
		Version:      l.Version + 1,
		tools:        l.tools,
		nextSeq:      l.nextSeq,
		Restrictions: l.Restrictions,
		cb:           l.cb,
		presentation: l.presentation,
	}
	return n
}

// Presentation is the presentation mode the layer declares (0: none).
func (l *Layer) Presentation() uint8 { return l.presentation }

// WithPresentation returns a layer declaring mode p (0: none), or l itself
// when it already declares p.
func (l *Layer) WithPresentation(p uint8) *Layer {
	if l.presentation == p {
		return l
	}
	n := l.clone()
	n.presentation = p
	return n
}

// AddTool returns a layer with e appended, or ok=false if the name is taken
// in this layer (R13). e.Seq is assigned here.
func (l *Layer) AddTool(e Entry) (*Layer, *Entry, bool) {
	if _, dup := l.tools.get(e.Name); dup {
		return l, nil, false
	}
	n := l.clone()
	ne := e
	ne.Seq = n.nextSeq
	n.nextSeq++
	n.tools = l.tools.with(e.Name, &ne)
	return n, &ne, true
}

// RemoveTool returns a layer without the tool registration id (which is
// registered under name), or ok=false if that exact registration is gone.
func (l *Layer) RemoveTool(name string, id uint64) (*Layer, bool) {
	cur, ok := l.tools.get(name)
	if !ok || cur.ID != id {
		return l, false
	}
	n := l.clone()
	n.tools = l.tools.without(name)
	return n, true
}

// AddRestriction returns a layer with r appended.
func (l *Layer) AddRestriction(r *Restriction) *Layer {
	n := l.clone()
	rs := make([]*Restriction, len(l.Restrictions), len(l.Restrictions)+1)
	copy(rs, l.Restrictions)
	n.Restrictions = append(rs, r)
	return n
}

// RemoveRestriction returns a layer without restriction id.
func (l *Layer) RemoveRestriction(id uint64) (*Layer, bool) {
	for i, r := range l.Restrictions {
		if r.ID == id {
			n := l.clone()
			rs := make([]*Restriction, 0, len(l.Restrictions)-1)
			rs = append(rs, l.Restrictions[:i]...)
			n.Restrictions = append(rs, l.Restrictions[i+1:]...)
			return n, true
		}
	}
	return l, false
}

// AddCallback returns a layer with e inserted into list k by Seq.
func (l *Layer) AddCallback(k Kind, e Entry) *Layer {
	n := l.clone()
	cb := l.callbacksCopy()
	old := l.List(k)
	if k == KindGuard && len(old) == 0 {
		cb.guardGen++
	}
	list := make([]Entry, 0, len(old)+1)
	i := sort.Search(len(old), func(i int) bool { return old[i].Seq > e.Seq })
	list = append(list, old[:i]...)
	list = append(list, e)
	list = append(list, old[i:]...)
	cb.lists[k] = list
	n.cb = cb
	return n
}

// RemoveCallback returns a layer without callback id in list k.
func (l *Layer) RemoveCallback(k Kind, id uint64) (*Layer, bool) {
	old := l.List(k)
	for i := range old {
		if old[i].ID == id {
			n := l.clone()
			cb := l.callbacksCopy()
			list := make([]Entry, 0, len(old)-1)
			list = append(list, old[:i]...)
			list = append(list, old[i+1:]...)
			if len(list) == 0 {
				list = nil
				if k == KindGuard {
					cb.guardGen++
				}
			}
			cb.lists[k] = list
			n.cb = cb
			return n, true
		}
	}
	return l, false
}
