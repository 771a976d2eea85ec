package core

import (
	"sort"
	"sync/atomic"
)

// Node is one scope key: its parent link and its published layer.
// Only the scope's owning actor calls Publish; anyone may call Layer and
// Parent.
type Node struct {
	// Key is the scope key ("" for the global scope).
	Key string
	// parent is nil for a root scope (whose parent is the global layer) and
	// for the global node itself. A key that has a parent keeps it (R3); a
	// root key may be bound under a parent once (SetParent), so the link is
	// atomic: reads walk chains without locks.
	parent atomic.Pointer[Node]
	layer  atomic.Pointer[Layer]
}

// NewNode returns a node with an empty layer.
func NewNode(key string, parent *Node) *Node {
	n := &Node{Key: key}
	if parent != nil {
		n.parent.Store(parent)
	}
	n.layer.Store(Empty)
	return n
}

// Parent returns the node's parent, nil for a root scope or the global node.
func (n *Node) Parent() *Node { return n.parent.Load() }

// SetParent binds a root node under p (R3). It reports false, and changes
// nothing, if n already has a parent or the link would form a cycle (p is
// n or a descendant of n). The caller serializes binds (the registry lock);
// concurrent readers see either the old or the new chain.
func (n *Node) SetParent(p *Node) bool {
	if p == nil || n.parent.Load() != nil || n.IsAncestorOf(p) {
		return false
	}
	return n.parent.CompareAndSwap(nil, p)
}

// Layer returns the node's current published layer.
func (n *Node) Layer() *Layer { return n.layer.Load() }

// Publish makes l the node's layer. Single writer: the owning actor.
func (n *Node) Publish(l *Layer) { n.layer.Store(l) }

// IsAncestorOf reports whether n is on the chain of m (m itself included).
func (n *Node) IsAncestorOf(m *Node) bool {
	for c := m; c != nil; c = c.Parent() {
		if c == n {
			return true
		}
	}
	return false
}

// chainInline is the chain depth served without a heap allocation.
const chainInline = 3

// Chain is one consistent read of every layer a key sees: each layer on the
// chain is loaded exactly once (R109), nearest first, plus the global layer.
type Chain struct {
	Global *Layer
	inline [chainInline]*Layer
	nodes  [chainInline]*Node
	more   []*Layer
	moreN  []*Node
	n      int
}

// Load reads the chain of node (nil: the global view only) once.
func Load(global *Node, node *Node) Chain {
	var c Chain
	c.Global = global.Layer()
	for x := node; x != nil; x = x.Parent() {
		if c.n < chainInline {
			c.inline[c.n] = x.Layer()
			c.nodes[c.n] = x
		} else {
			c.more = append(c.more, x.Layer())
			c.moreN = append(c.moreN, x)
		}
		c.n++
	}
	return c
}

// Len is the number of agent layers on the chain (0 for the global view).
func (c *Chain) Len() int { return c.n }

// At returns layer i of the chain, 0 being the viewer's own layer.
func (c *Chain) At(i int) *Layer {
	if i < chainInline {
		return c.inline[i]
	}
	return c.more[i-chainInline]
}

// NodeAt returns the node of layer i.
func (c *Chain) NodeAt(i int) *Node {
	if i < chainInline {
		return c.nodes[i]
	}
	return c.moreN[i-chainInline]
}

// Admitted reports whether every restriction on the chain admits the
// inherited name (R22).
func (c *Chain) Admitted(name string) bool {
	for i := 0; i < c.n; i++ {
		for _, r := range c.At(i).Restrictions {
			if !r.Admits(name) {
				return false
			}
		}
	}
	return true
}

// Same reports whether c and o are the same read: the same global layer
// and the same nodes and layers at every position. Layers are immutable, so
// two equal reads answer every question alike; comparing them costs a few
// pointer compares, whatever the number of tools.
func (c *Chain) Same(o *Chain) bool {
	if c.Global != o.Global || c.n != o.n {
		return false
	}
	for i := 0; i < c.n; i++ {
		if c.At(i) != o.At(i) || c.NodeAt(i) != o.NodeAt(i) {
			return false
		}
	}
	return true
}

// Lookup resolves name in the view (R29, R30): the viewer's own entry if
// any (own layer is exempt from restrictions, R24); else the nearest
// inherited entry if every restriction on the chain admits the name.
func (c *Chain) Lookup(name string) (*Entry, bool) {
	if c.n > 0 {
		if e, ok := c.At(0).Lookup(name); ok {
			return e, true
		}
	}
	if !c.Admitted(name) {
		return nil, false
	}
	return c.inherited(name)
}

func (c *Chain) inherited(name string) (*Entry, bool) {
	for i := 1; i < c.n; i++ {
		if e, ok := c.At(i).Lookup(name); ok {
			return e, true
		}
	}
	return c.Global.Lookup(name)
}

// Restrictable reports whether the viewer inherits name before any
// restriction (R23): it is registered globally or by an ancestor.
func (c *Chain) Restrictable(name string) bool {
	_, ok := c.inherited(name)
	return ok
}

// RestrictableNames lists every inherited name, sorted (for R21's message).
func (c *Chain) RestrictableNames() []string {
	seen := map[string]struct{}{}
	for _, e := range c.Global.Tools() {
		seen[e.Name] = struct{}{}
	}
	for i := 1; i < c.n; i++ {
		for _, e := range c.At(i).Tools() {
			seen[e.Name] = struct{}{}
		}
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// View returns the visible entries in view order (R29).
func (c *Chain) View() []*Entry {
	var pos map[string]int
	view := make([]*Entry, 0, c.Global.Len())
	add := func(e *Entry) {
		if i, ok := pos[e.Name]; ok {
			view[i] = e
			return
		}
		pos[e.Name] = len(view)
		view = append(view, e)
	}
	pos = make(map[string]int, c.Global.Len())
	// 1–2: global, then ancestors farthest to nearest, replacing in place.
	for _, e := range c.Global.Tools() {
		add(e)
	}
	for i := c.n - 1; i >= 1; i-- {
		for _, e := range c.At(i).Tools() {
			add(e)
		}
	}
	// 3: drop inherited names a restriction on the chain does not admit.
	if c.hasRestrictions() {
		kept := view[:0]
		for _, e := range view {
			if c.Admitted(e.Name) {
				kept = append(kept, e)
			}
		}
		view = kept
		clear(pos)
		for i, e := range view {
			pos[e.Name] = i
		}
	}
	// 4: the viewer's own entries replace in place or append.
	if c.n > 0 {
		for _, e := range c.At(0).Tools() {
			add(e)
		}
	}
	return view
}

// Presentation is the mode declared by the nearest layer on the chain that
// declares one, the viewer's own first and the global layer last; 0 when
// none does (R107).
func (c *Chain) Presentation() uint8 {
	for i := 0; i < c.n; i++ {
		if p := c.At(i).presentation; p != 0 {
			return p
		}
	}
	return c.Global.presentation
}

func (c *Chain) hasRestrictions() bool {
	for i := 0; i < c.n; i++ {
		if len(c.At(i).Restrictions) > 0 {
			return true
		}
	}
	return false
}

// Callbacks merges list k of the global layer and every chain layer in Seq
// order: the hooks whose audience includes the viewer (R85). For guards use
// the per-layer lists instead (R37 orders guards by layer, not by Seq).
func (c *Chain) Callbacks(k Kind, buf []Entry) []Entry {
	out := append(buf[:0], c.Global.List(k)...)
	merged := len(c.Global.List(k)) > 0
	for i := 0; i < c.n; i++ {
		l := c.At(i).List(k)
		if len(l) == 0 {
			continue
		}
		if !merged {
			out = append(out, l...)
			merged = true
			continue
		}
		out = append(out, l...)
		sort.SliceStable(out, func(a, b int) bool { return out[a].Seq < out[b].Seq })
	}
	return out
}
