package core

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"
)

// The table must behave exactly like a plain map under any
// sequence of adds and removes, across versions.
func TestToolTable_MatchesMapModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var tab toolTable
	model := map[string]*Entry{}
	history := []toolTable{}
	for step := 0; step < 20000; step++ {
		name := fmt.Sprintf("t%d", rng.IntN(600))
		if rng.IntN(3) == 0 {
			tab = tab.without(name)
			delete(model, name)
		} else if _, ok := model[name]; !ok {
			e := &Entry{ID: uint64(step), Name: name}
			tab = tab.with(name, e)
			model[name] = e
		}
		if tab.n != len(model) {
			t.Fatalf("step %d: n = %d, model %d", step, tab.n, len(model))
		}
		if step%500 == 0 {
			history = append(history, tab)
		}
	}
	for name, e := range model {
		if got, ok := tab.get(name); !ok || got != e {
			t.Fatalf("get(%q) = %v, %v; want %v", name, got, ok, e)
		}
	}
	count := 0
	tab.each(func(e *Entry) {
		count++
		if model[e.Name] != e {
			t.Fatalf("each yielded stale %q", e.Name)
		}
	})
	if count != len(model) {
		t.Fatalf("each yielded %d, want %d", count, len(model))
	}
	// Older snapshots are immutable: their counts still match their contents.
	for _, h := range history {
		n := 0
		h.each(func(*Entry) { n++ })
		if n != h.n {
			t.Fatalf("snapshot changed: each %d, n %d", n, h.n)
		}
	}
}

// The trie must match a plain map whatever the hashes: every name of a few
// full 64-bit collisions (buckets past the last level), hashes that share
// all but their top bits (the longest paths), and ordinary ones; removals
// fold nodes back up (canonical shape), and old versions never change.
func TestToolTable_CollisionsAndDeepPathsMatchMapModel(t *testing.T) {
	hashes := map[string]func(i int) uint64{
		"full collisions": func(i int) uint64 { return uint64(i % 3) },
		"top bits only":   func(i int) uint64 { return uint64(i%7) << 59 },
		"ordinary":        func(i int) uint64 { return hashName(fmt.Sprint(i)) },
	}
	for kind, hash := range hashes {
		t.Run(kind, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, 4))
			var tab toolTable
			model := map[string]*Entry{}
			type snap struct {
				tab  toolTable
				want map[string]*Entry
			}
			var history []snap
			for step := 0; step < 6000; step++ {
				i := rng.IntN(200)
				name := fmt.Sprintf("t%d", i)
				if rng.IntN(3) == 0 {
					tab = tab.withoutHashed(hash(i), name)
					delete(model, name)
				} else if _, ok := model[name]; !ok {
					e := &Entry{ID: uint64(step), Name: name}
					tab = tab.withHashed(hash(i), e)
					model[name] = e
				}
				if tab.n != len(model) {
					t.Fatalf("step %d: n = %d, model %d", step, tab.n, len(model))
				}
				if step%300 == 0 {
					history = append(history, snap{tab, maps.Clone(model)})
				}
			}
			for _, h := range history {
				for i := range 200 {
					name := fmt.Sprintf("t%d", i)
					got, ok := h.tab.getHashed(hash(i), name)
					if want := h.want[name]; got != want || ok != (want != nil) {
						t.Fatalf("get(%q) = %v, %v; want %v", name, got, ok, want)
					}
				}
				n := 0
				h.tab.each(func(*Entry) { n++ })
				if n != len(h.want) {
					t.Fatalf("snapshot has %d entries, want %d", n, len(h.want))
				}
			}
			// Removing everything leaves the empty table, and removing
			// a name that is not there changes nothing.
			for name := range model {
				var i int
				fmt.Sscanf(name, "t%d", &i)
				tab = tab.withoutHashed(hash(i), name)
			}
			if tab.n != 0 || tab.root != nil {
				t.Fatalf("emptied table: n = %d, root %v", tab.n, tab.root)
			}
			if got := tab.withoutHashed(hash(1), "t1"); got != tab {
				t.Fatal("removing from an empty table changed it")
			}
		})
	}
}

// A deletion folds single entries back up: after removing all but one of
// many colliding names, the survivor sits in the root node.
func TestToolTable_CanonicalAfterRemoval(t *testing.T) {
	var tab toolTable
	for i := range 5 {
		tab = tab.withHashed(7, &Entry{Name: fmt.Sprint(i)})
	}
	for i := range 4 {
		tab = tab.withoutHashed(7, fmt.Sprint(i))
	}
	if tab.root.nmap != 0 || len(tab.root.ents) != 1 || tab.root.ents[0].Name != "4" {
		t.Fatalf("root after removals: nmap %b, %d entries", tab.root.nmap, len(tab.root.ents))
	}
}

// R29/R35: a shadow replaces in place unless the inherited entry was
// restricted away, in which case it is appended.
func TestChain_R29_ViewOrder(t *testing.T) {
	global := NewNode("", nil)
	parent := NewNode("p", nil)
	child := NewNode("c", parent)
	add := func(n *Node, names ...string) {
		l := n.Layer()
		for i, name := range names {
			l, _, _ = l.AddTool(Entry{ID: uint64(i + 1), Name: name})
		}
		n.Publish(l)
	}
	add(global, "a", "b", "c")
	add(parent, "b", "d")
	add(child, "a", "c")
	child.Publish(child.Layer().AddRestriction(&Restriction{ID: 9, Deny: NewNameSet([]string{"c"})}))
	chain := Load(global, child)
	var got []string
	for _, e := range chain.View() {
		got = append(got, e.Name)
	}
	want := []string{"a", "b", "d", "c"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("view = %v, want %v", got, want)
	}
	// "b" resolves to the parent's entry (nearest layer wins).
	if e, ok := chain.Lookup("b"); !ok || e != mustLookup(t, parent.Layer(), "b") {
		t.Fatalf("Lookup(b) = %v, %v", e, ok)
	}
	// "c" is denied for inherited entries but the child's own is exempt.
	if e, ok := chain.Lookup("c"); !ok || e != mustLookup(t, child.Layer(), "c") {
		t.Fatalf("Lookup(c) = %v, %v", e, ok)
	}
}

func mustLookup(t *testing.T, l *Layer, name string) *Entry {
	t.Helper()
	e, ok := l.Lookup(name)
	if !ok {
		t.Fatalf("%q missing", name)
	}
	return e
}

// Same tells two reads of one chain apart exactly when some layer on it
// (or the chain's shape) changed, at any depth, inline or spilled.
func TestChain_Same(t *testing.T) {
	global := NewNode("", nil)
	nodes := []*Node{NewNode("n0", nil)}
	for i := 1; i < 6; i++ { // deeper than chainInline
		nodes = append(nodes, NewNode(fmt.Sprint("n", i), nodes[i-1]))
	}
	leaf := nodes[len(nodes)-1]
	a, b := Load(global, leaf), Load(global, leaf)
	if !a.Same(&b) {
		t.Fatal("two reads of an unchanged chain differ")
	}
	for i, n := range append([]*Node{global}, nodes...) {
		l, _, _ := n.Layer().AddTool(Entry{ID: uint64(i + 1), Name: "x"})
		n.Publish(l)
		c := Load(global, leaf)
		if c.Same(&a) {
			t.Fatalf("a change on node %d went unnoticed", i)
		}
		a = c
	}
	other := NewNode("o", nodes[2])
	o := Load(global, other)
	if o.Same(&a) || a.Same(&o) {
		t.Fatal("chains of different nodes compare the same")
	}
	root := NewNode("r", nil)
	before := Load(global, root)
	if !root.SetParent(nodes[0]) {
		t.Fatal("SetParent")
	}
	if c := Load(global, root); c.Same(&before) {
		t.Fatal("a chain bound under a parent compares the same")
	}
}
