package core

import (
	"hash/maphash"
	"math/bits"
)

// toolTable is an immutable name → entry map with cheap functional updates:
// a persistent hash trie (CHAMP: a hash array mapped trie whose nodes keep
// their entries and their children in two compact arrays). An update copies
// only the nodes on one path from the root — at most ⌈64/5⌉+1 of them, about
// log₃₂ n in practice (4 at 100,000 tools) — and shares everything else with
// the table it came from, so registering n tools costs O(n log n) and a
// lookup walks the same few levels.
//
// A node is two small arrays of pointers and two bitmaps: no per-entry node,
// no interface boxing, and the entry's name is its key, so the trie adds
// about one pointer per tool for the collector to scan (a Go map adds two:
// the key string and the value). Each entry carries its own 64-bit hash
// (Entry.hash), so a split never rehashes and a lookup that lands on
// another name is told apart by one integer compare.
//
// Deletion keeps the trie canonical (a child left with one entry and no
// children is folded back into its parent), so a table's shape depends only
// on its contents.
type toolTable struct {
	root *tnode
	n    int
}

// tnode is one trie node. Slot i (5 bits of the hash at this level) holds an
// entry if dmap has bit i, a child if nmap has it, nothing otherwise; ents
// and kids hold them in slot order. Past the last level (shift ≥ 64) a node
// is a collision bucket: entries whose 64-bit hashes are all equal, in ents,
// with both bitmaps zero.
type tnode struct {
	dmap, nmap uint32
	ents       []*Entry
	kids       []*tnode
}

const (
	trieBits = 5
	trieMask = 1<<trieBits - 1
)

var hashSeed = maphash.MakeSeed()

func hashName(name string) uint64 { return maphash.String(hashSeed, name) }

func slotBit(h uint64, shift uint) uint32 { return 1 << ((h >> shift) & trieMask) }

// index is the position of bit among the set bits of m.
func index(m, bit uint32) int { return bits.OnesCount32(m & (bit - 1)) }

func (t toolTable) get(name string) (*Entry, bool) {
	if t.root == nil {
		return nil, false // most agent layers own no tools: no hashing
	}
	return t.getHashed(hashName(name), name)
}

func (t toolTable) with(name string, e *Entry) toolTable {
	return t.withHashed(hashName(name), e)
}

func (t toolTable) without(name string) toolTable {
	if t.root == nil {
		return t
	}
	return t.withoutHashed(hashName(name), name)
}

// The *Hashed forms take the name's hash from the caller (tests force
// collisions and long shared paths through them).

func (t toolTable) getHashed(h uint64, name string) (*Entry, bool) {
	if t.root == nil {
		return nil, false
	}
	e := t.root.get(h, name)
	return e, e != nil
}

func (t toolTable) withHashed(h uint64, e *Entry) toolTable {
	e.hash = h
	if t.root == nil {
		return toolTable{root: &tnode{dmap: slotBit(h, 0), ents: []*Entry{e}}, n: 1}
	}
	root, added := t.root.with(e, 0)
	out := toolTable{root: root, n: t.n}
	if added {
		out.n++
	}
	return out
}

func (t toolTable) withoutHashed(h uint64, name string) toolTable {
	if t.root == nil {
		return t
	}
	root, ok := t.root.without(h, name, 0)
	if !ok {
		return t
	}
	if t.n == 1 {
		root = nil
	}
	return toolTable{root: root, n: t.n - 1}
}

func (t toolTable) each(f func(*Entry)) {
	if t.root != nil {
		t.root.each(f)
	}
}

func (n *tnode) get(h uint64, name string) *Entry {
	for shift := uint(0); shift < 64; shift += trieBits {
		bit := slotBit(h, shift)
		if n.dmap&bit != 0 {
			if e := n.ents[index(n.dmap, bit)]; e.hash == h && e.Name == name {
				return e
			}
			return nil
		}
		if n.nmap&bit == 0 {
			return nil
		}
		n = n.kids[index(n.nmap, bit)]
	}
	for _, e := range n.ents { // collision bucket
		if e.Name == name {
			return e
		}
	}
	return nil
}

// with returns n with e added, or replacing the entry of the same name, and
// reports whether it was added. n is not changed.
func (n *tnode) with(e *Entry, shift uint) (*tnode, bool) {
	if shift >= 64 {
		c := &tnode{ents: make([]*Entry, len(n.ents), len(n.ents)+1)}
		copy(c.ents, n.ents)
		for i, x := range c.ents {
			if x.Name == e.Name {
				c.ents[i] = e
				return c, false
			}
		}
		c.ents = append(c.ents, e)
		return c, true
	}
	bit := slotBit(e.hash, shift)
	switch {
	case n.dmap&bit != 0:
		i := index(n.dmap, bit)
		old := n.ents[i]
		if old.hash == e.hash && old.Name == e.Name {
			c := &tnode{dmap: n.dmap, nmap: n.nmap, ents: clone(n.ents), kids: n.kids}
			c.ents[i] = e
			return c, false
		}
		// Two entries in one slot: push both down into a new child.
		c := &tnode{dmap: n.dmap &^ bit, nmap: n.nmap | bit}
		c.ents = removeAt(n.ents, i)
		c.kids = insertAt(n.kids, index(c.nmap, bit), pair(old, e, shift+trieBits))
		return c, true
	case n.nmap&bit != 0:
		i := index(n.nmap, bit)
		kid, added := n.kids[i].with(e, shift+trieBits)
		c := &tnode{dmap: n.dmap, nmap: n.nmap, ents: n.ents, kids: clone(n.kids)}
		c.kids[i] = kid
		return c, added
	default:
		c := &tnode{dmap: n.dmap | bit, nmap: n.nmap, kids: n.kids}
		c.ents = insertAt(n.ents, index(c.dmap, bit), e)
		return c, true
	}
}

// pair is the subtree holding two entries of distinct names that share
// every hash slot above shift.
func pair(a, b *Entry, shift uint) *tnode {
	if shift >= 64 {
		return &tnode{ents: []*Entry{a, b}}
	}
	ba, bb := slotBit(a.hash, shift), slotBit(b.hash, shift)
	if ba == bb {
		return &tnode{nmap: ba, kids: []*tnode{pair(a, b, shift+trieBits)}}
	}
	if ba > bb {
		a, b = b, a
	}
	return &tnode{dmap: ba | bb, ents: []*Entry{a, b}}
}

// without returns n without the entry named name (hash h) and reports
// whether there was one. n is not changed.
func (n *tnode) without(h uint64, name string, shift uint) (*tnode, bool) {
	if shift >= 64 {
		for i, e := range n.ents {
			if e.Name == name {
				return &tnode{ents: removeAt(n.ents, i)}, true
			}
		}
		return n, false
	}
	bit := slotBit(h, shift)
	switch {
	case n.dmap&bit != 0:
		i := index(n.dmap, bit)
		if e := n.ents[i]; e.hash != h || e.Name != name {
			return n, false
		}
		return &tnode{dmap: n.dmap &^ bit, nmap: n.nmap, ents: removeAt(n.ents, i), kids: n.kids}, true
	case n.nmap&bit != 0:
		i := index(n.nmap, bit)
		kid, ok := n.kids[i].without(h, name, shift+trieBits)
		if !ok {
			return n, false
		}
		if kid.nmap == 0 && len(kid.ents) == 1 {
			// One entry left below: it moves up into this slot.
			c := &tnode{dmap: n.dmap | bit, nmap: n.nmap &^ bit, kids: removeAt(n.kids, i)}
			c.ents = insertAt(n.ents, index(c.dmap, bit), kid.ents[0])
			return c, true
		}
		c := &tnode{dmap: n.dmap, nmap: n.nmap, ents: n.ents, kids: clone(n.kids)}
		c.kids[i] = kid
		return c, true
	}
	return n, false
}

func (n *tnode) each(f func(*Entry)) {
	for _, e := range n.ents {
		f(e)
	}
	for _, k := range n.kids {
		k.each(f)
	}
}

func clone[T any](s []T) []T { return append(make([]T, 0, len(s)), s...) }

func insertAt[T any](s []T, i int, v T) []T {
	out := make([]T, len(s)+1)
	copy(out, s[:i])
	out[i] = v
	copy(out[i+1:], s[i:])
	return out
}

func removeAt[T any](s []T, i int) []T {
	if len(s) == 1 {
		return nil
	}
	out := make([]T, len(s)-1)
	copy(out, s[:i])
	copy(out[i:], s[i+1:])
	return out
}
