package mcp

import (
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"strconv"
	"strings"
)

// An imported tool's outputSchema that lies outside toolscope's subset is
// checked in the body by jsonschema-go, whose validator recurses through
// $ref and the in-place applicators (allOf, anyOf, oneOf, not, if, then,
// else, dependentSchemas) without bound: {"$ref":"#"} recurses until the
// process dies of a stack overflow, and $defs that form a DAG of allOf
// pairs cost 2^n. A remote server is untrusted, so such a schema is
// checked first, at import, and every value is checked again before
// jsonschema-go sees it. The bounds:
const (
	// maxSchemaNodes is the number of subschemas an outputSchema may have.
	maxSchemaNodes = 10000
	// maxSchemaDepth is how deep subschemas may nest in the schema's text.
	maxSchemaDepth = 64
	// maxInPlace is how many subschemas validating one location of a value
	// may apply in place (following $ref, allOf, anyOf, oneOf, not, if,
	// then, else, dependentSchemas): the expansion of the in-place graph
	// from any subschema.
	maxInPlace = 1000
	// maxValidationSteps is how many (subschema, value location) pairs
	// validating one value may visit.
	maxValidationSteps = 100000
	// maxValidationDepth is how deep the validator may recurse (in-place
	// and into the value) for one value.
	maxValidationDepth = 256
	// maxErrorBytes bounds the error text jsonschema-go may build while
	// validating one value, counted as if every subschema visited failed:
	// its messages quote the value and the schema (type, enum, const,
	// pattern…), each level wraps its children's, and anyOf joins every
	// branch's.
	maxErrorBytes = 32 << 20
)

// edge kinds of the schema graph.
const (
	inPlace       = iota // the same value location
	anyOfBranch          // the same value location; its error is joined
	property             // the value's property key
	everyProperty        // every property value
	propertyName         // every property name, as a string
	item                 // the value's item at index
	everyItem            // every item
)

type schemaEdge struct {
	kind  int
	key   string // property
	index int    // item
	to    int    // node id; -1 until a $ref is resolved
	ref   string // the $ref to resolve, if any
}

type schemaNode struct {
	edges       []schemaEdge
	uniqueItems bool
	// The sizes jsonschema-go's messages about this node can reach:
	prefix   int  // "validating <path or $id>: "
	name     int  // the node as a branch is printed: its $id, anchor or "<anonymous schema>"
	own      int  // a failure of its own keywords, less the value it quotes
	branches int  // the names of its in-place branches, printed by anyOf, oneOf, not
	quotes   bool // its failure can quote the value (type, enum, const, contains, string keywords)
}

// checkedSchema is an outputSchema that passed checkOutputSchema: its graph
// of subschemas, for bounding each validation (validationCost).
type checkedSchema struct {
	nodes []schemaNode
}

// checkOutputSchema walks an outputSchema (its JSON text) with $ref
// resolution and refuses what jsonschema-go cannot validate within the
// bounds above: too many or too deeply nested subschemas, a $ref the walk
// cannot follow (only refs within the schema are: "#", a JSON pointer
// "#/…", a plain-name anchor "#name", each optionally after the root's
// $id), $dynamicRef, a nested $id, a cycle of in-place applicators (one
// that does not descend into the value: validation would never end), and
// an in-place expansion past maxInPlace. It never recurses: every walk
// keeps its own stack.
func checkOutputSchema(text []byte) (*checkedSchema, error) {
	var root any
	if err := json.Unmarshal(text, &root); err != nil {
		return nil, fmt.Errorf("the outputSchema is not JSON: %v", err)
	}
	cs := &checkedSchema{}
	ids := make(map[uintptr]int) // a schema object's map → its node id
	anchors := make(map[string]int)
	rootID := ""
	if m, ok := root.(map[string]any); ok {
		rootID, _ = m["$id"].(string)
		rootID = strings.TrimSuffix(rootID, "#")
	}

	type pending struct {
		v     any
		depth int
		id    int
		path  int // the length of its JSON pointer in the schema
	}
	newNode := func(v any, depth, path int, stack *[]pending) (int, error) {
		if len(cs.nodes) >= maxSchemaNodes {
			return 0, fmt.Errorf("the outputSchema has more than %d subschemas", maxSchemaNodes)
		}
		if depth > maxSchemaDepth {
			return 0, fmt.Errorf("the outputSchema nests subschemas deeper than %d levels", maxSchemaDepth)
		}
		id := len(cs.nodes)
		cs.nodes = append(cs.nodes, schemaNode{prefix: 16 + path, name: 18, own: 64})
		if m, ok := v.(map[string]any); ok {
			ids[reflect.ValueOf(m).Pointer()] = id
			*stack = append(*stack, pending{v: m, depth: depth, id: id, path: path})
		}
		return id, nil
	}
	var stack []pending
	if _, err := newNode(root, 0, 1, &stack); err != nil {
		return nil, err
	}
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		m := p.v.(map[string]any)
		var edges []schemaEdge
		kw := ""
		add := func(kind int, key string, index int, v any) error {
			switch v.(type) {
			case map[string]any, bool:
			default:
				return fmt.Errorf("the outputSchema has a subschema that is not an object or a boolean")
			}
			id, err := newNode(v, p.depth+1, p.path+len(kw)+len(key)+22, &stack)
			if err != nil {
				return err
			}
			if kind >= 0 {
				edges = append(edges, schemaEdge{kind: kind, key: key, index: index, to: id})
			}
			return nil
		}
		one := func(k string, kind int) error {
			kw = k
			if v, ok := m[kw]; ok {
				return add(kind, "", 0, v)
			}
			return nil
		}
		list := func(k string, kind func(i int) int) error {
			kw = k
			v, ok := m[kw]
			if !ok {
				return nil
			}
			a, ok := v.([]any)
			if !ok {
				return fmt.Errorf("the outputSchema's %s is not an array", kw)
			}
			for i, x := range a {
				if err := add(kind(i), "", i, x); err != nil {
					return err
				}
			}
			return nil
		}
		dict := func(k string, kind int, schemasOnly bool) error {
			kw = k
			v, ok := m[kw]
			if !ok {
				return nil
			}
			d, ok := v.(map[string]any)
			if !ok {
				return fmt.Errorf("the outputSchema's %s is not an object", kw)
			}
			for k, x := range d {
				if _, isList := x.([]any); isList && !schemasOnly {
					continue // draft-07 dependencies: property names
				}
				if err := add(kind, k, 0, x); err != nil {
					return err
				}
			}
			return nil
		}
		const container = -1 // a node reached only by $ref
		sameKind := func(k int) func(int) int { return func(int) int { return k } }
		if _, ok := m["$dynamicRef"]; ok {
			return nil, fmt.Errorf("the outputSchema uses $dynamicRef, which an imported output schema may not")
		}
		if id, ok := m["$id"]; ok && p.id != 0 {
			return nil, fmt.Errorf("the outputSchema has a nested $id (%v): only the root may have one", trimText(fmt.Sprint(id)))
		}
		for _, kw := range []string{"$anchor", "$dynamicAnchor"} {
			if a, ok := m[kw].(string); ok {
				anchors[a] = p.id
			}
		}
		if r, ok := m["$ref"]; ok {
			s, ok := r.(string)
			if !ok {
				return nil, fmt.Errorf("the outputSchema has a $ref that is not a string")
			}
			edges = append(edges, schemaEdge{kind: inPlace, to: -1, ref: s})
		}
		var err error
		for _, f := range []func() error{
			func() error { return list("allOf", sameKind(inPlace)) },
			func() error { return list("anyOf", sameKind(anyOfBranch)) },
			func() error { return list("oneOf", sameKind(inPlace)) },
			func() error { return one("not", inPlace) },
			func() error { return one("if", inPlace) },
			func() error { return one("then", inPlace) },
			func() error { return one("else", inPlace) },
			func() error { return dict("dependentSchemas", inPlace, true) },
			func() error { return dict("dependencies", inPlace, false) },
			func() error { return dict("properties", property, true) },
			func() error { return dict("patternProperties", everyProperty, true) },
			func() error { return one("additionalProperties", everyProperty) },
			func() error { return one("unevaluatedProperties", everyProperty) },
			func() error { return one("propertyNames", propertyName) },
			func() error { return list("prefixItems", sameKind(item)) },
			func() error {
				if a, ok := m["items"].([]any); ok { // draft-07's array form
					kw = "items"
					for i, x := range a {
						if err := add(item, "", i, x); err != nil {
							return err
						}
					}
					return nil
				}
				return one("items", everyItem)
			},
			func() error { return one("additionalItems", everyItem) },
			func() error { return one("unevaluatedItems", everyItem) },
			func() error { return one("contains", everyItem) },
			func() error { return one("contentSchema", container) },
			func() error { return dict("$defs", container, true) },
			func() error { return dict("definitions", container, true) },
		} {
			if err = f(); err != nil {
				return nil, err
			}
		}
		n := &cs.nodes[p.id]
		n.edges = edges
		n.uniqueItems, _ = m["uniqueItems"].(bool)
		for _, k := range []string{"$id", "$anchor", "$dynamicAnchor"} {
			if a, ok := m[k].(string); ok {
				n.name = max(n.name, len(a))
				if k == "$id" {
					n.prefix = max(n.prefix, 16+len(a))
				}
			}
		}
		// What its own failures print besides the value: the enum, the
		// const, the pattern, the names of required properties (quoted).
		for _, k := range []string{"enum", "const", "pattern", "required", "dependentRequired", "dependencies"} {
			if x, ok := m[k]; ok {
				b, _ := json.Marshal(x)
				n.own += 6 * len(b)
			}
		}
		for _, k := range []string{"type", "enum", "const", "contains", "minLength", "maxLength", "pattern"} {
			if _, ok := m[k]; ok {
				n.quotes = true
			}
		}
	}

	// Resolve every $ref to a node.
	for i := range cs.nodes {
		for j := range cs.nodes[i].edges {
			e := &cs.nodes[i].edges[j]
			if e.to >= 0 {
				continue
			}
			to, err := resolveRef(e.ref, rootID, root, ids, anchors)
			if err != nil {
				return nil, err
			}
			e.to = to
		}
	}
	for i := range cs.nodes {
		n := &cs.nodes[i]
		for _, e := range n.edges {
			if isInPlace(e.kind) && e.to >= 0 {
				n.branches += cs.nodes[e.to].name + 2
			}
		}
	}
	if err := cs.checkInPlace(); err != nil {
		return nil, err
	}
	return cs, nil
}

func isInPlace(kind int) bool { return kind == inPlace || kind == anyOfBranch }

// resolveRef is the node a $ref within the schema points to.
func resolveRef(ref, rootID string, root any, ids map[uintptr]int, anchors map[string]int) (int, error) {
	fail := func(why string) (int, error) {
		return 0, fmt.Errorf("the outputSchema's $ref %q %s", trimText(ref), why)
	}
	base, frag, hasFrag := strings.Cut(ref, "#")
	if base != "" && (rootID == "" || base != rootID) {
		return fail("is not within the schema (only refs within it are followed)")
	}
	if !hasFrag || frag == "" {
		return 0, nil
	}
	if !strings.HasPrefix(frag, "/") {
		if id, ok := anchors[frag]; ok {
			return id, nil
		}
		return fail("names no anchor of the schema")
	}
	v := root
	for _, tok := range strings.Split(frag[1:], "/") {
		tok, err := url.PathUnescape(tok)
		if err != nil {
			return fail("is not a valid JSON pointer")
		}
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[tok]; !ok {
				return fail("points to nothing")
			}
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return fail("points to nothing")
			}
			v = x[i]
		default:
			return fail("points to nothing")
		}
	}
	switch x := v.(type) {
	case map[string]any:
		if id, ok := ids[reflect.ValueOf(x).Pointer()]; ok {
			return id, nil
		}
	case bool:
		return -2, nil // a boolean schema: a leaf
	}
	return fail("does not point to a subschema")
}

// checkInPlace refuses a cycle of in-place edges and an in-place
// expansion past maxInPlace, computing each node's expansion once (an
// iterative depth-first walk).
func (cs *checkedSchema) checkInPlace() error {
	const (
		unseen = iota
		open
		done
	)
	state := make([]uint8, len(cs.nodes))
	cost := make([]int, len(cs.nodes))
	type frame struct{ id, next int }
	for start := range cs.nodes {
		if state[start] != unseen {
			continue
		}
		stack := []frame{{id: start}}
		state[start] = open
		for len(stack) > 0 {
			f := &stack[len(stack)-1]
			edges := cs.nodes[f.id].edges
			pushed := false
			for f.next < len(edges) {
				e := edges[f.next]
				f.next++
				if !isInPlace(e.kind) || e.to < 0 {
					continue
				}
				switch state[e.to] {
				case open:
					return fmt.Errorf("the outputSchema has a cycle of $ref or in-place applicators that never descends into the value (validation would never end)")
				case unseen:
					state[e.to] = open
					stack = append(stack, frame{id: e.to})
					pushed = true
				}
				if pushed {
					break
				}
			}
			if pushed {
				continue
			}
			c := 1
			for _, e := range edges {
				if isInPlace(e.kind) && e.to >= 0 {
					c += cost[e.to]
					if c > maxInPlace {
						return fmt.Errorf("validating one location of a value against the outputSchema would apply more than %d subschemas in place (through $ref, allOf, anyOf, oneOf, not, if/then/else)", maxInPlace)
					}
				}
			}
			cost[f.id] = c
			state[f.id] = done
			stack = stack[:len(stack)-1]
		}
	}
	return nil
}

// validationCost refuses a value whose validation against the schema
// would visit more than maxValidationSteps (subschema, location) pairs,
// recurse deeper than maxValidationDepth, or build more than
// maxErrorBytes of error text. It over-approximates what jsonschema-go
// does (every branch of anyOf, oneOf, if/then/else and dependentSchemas
// visited, every visit failing), never recursing itself: a depth-first
// walk over an explicit stack, whose frames sum their children's error
// sizes once the children are done.
func (cs *checkedSchema) validationCost(value any) error {
	sizes := valueSizes(value)
	type frame struct {
		id, depth, parent int
		v                 any
		anyOf, expanded   bool
		maxChild, joined  int // the largest child error, the sum of the anyOf branches' errors
	}
	frames := []frame{{id: 0, v: value, depth: 1, parent: -1}}
	stack := []int{0}
	steps, bytes := 0, 0
	tooCostly := func(what string) error {
		return fmt.Errorf("validating it against the outputSchema would %s", what)
	}
	tooManySteps := fmt.Sprintf("take more than %d steps", maxValidationSteps)
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		if !frames[i].expanded {
			frames[i].expanded = true
			f := frames[i]
			n := &cs.nodes[f.id]
			obj, _ := f.v.(map[string]any)
			arr, _ := f.v.([]any)
			if n.uniqueItems {
				steps += len(arr)
			}
			push := func(e schemaEdge, v any) error {
				if e.to < 0 {
					return nil
				}
				if steps++; steps > maxValidationSteps {
					return tooCostly(tooManySteps)
				}
				if f.depth+1 > maxValidationDepth {
					return tooCostly(fmt.Sprintf("recurse deeper than %d levels", maxValidationDepth))
				}
				frames = append(frames, frame{id: e.to, v: v, depth: f.depth + 1, parent: i, anyOf: e.kind == anyOfBranch})
				stack = append(stack, len(frames)-1)
				return nil
			}
			for _, e := range n.edges {
				var err error
				switch e.kind {
				case inPlace, anyOfBranch:
					err = push(e, f.v)
				case property:
					if v, ok := obj[e.key]; ok {
						err = push(e, v)
					}
				case everyProperty:
					for _, v := range obj {
						if err = push(e, v); err != nil {
							break
						}
					}
				case propertyName:
					for k := range obj {
						if err = push(e, k); err != nil {
							break
						}
					}
				case item:
					if e.index < len(arr) {
						err = push(e, arr[e.index])
					}
				case everyItem:
					for _, v := range arr {
						if err = push(e, v); err != nil {
							break
						}
					}
				}
				if err != nil {
					return err
				}
			}
			if steps > maxValidationSteps {
				return tooCostly(tooManySteps)
			}
			continue
		}
		// Its children are done: the largest message it can build.
		stack = stack[:len(stack)-1]
		f := &frames[i]
		n := &cs.nodes[f.id]
		own := n.own + n.branches
		if n.quotes {
			own += sizes.of(f.v)
		}
		size := n.prefix + max(own, f.maxChild, 64+n.branches+f.joined)
		if bytes += size; bytes > maxErrorBytes {
			return tooCostly(fmt.Sprintf("build more than %d MiB of error text", maxErrorBytes>>20))
		}
		if f.parent >= 0 {
			p := &frames[f.parent]
			if f.anyOf {
				p.joined += size
			} else {
				p.maxChild = max(p.maxChild, size)
			}
		}
	}
	return nil
}

// valueSizeTable is the printed size (fmt's %v, strings as %q) of each
// array and object of a value, by identity.
type valueSizeTable map[uintptr]int

func (t valueSizeTable) of(v any) int {
	switch x := v.(type) {
	case map[string]any:
		return t[reflect.ValueOf(x).Pointer()]
	case []any:
		if len(x) == 0 {
			return 2
		}
		return t[reflect.ValueOf(x).Pointer()]
	case string:
		return 6*len(x) + 2 // %q escapes a byte in at most 6
	default:
		return 32 // a number, a boolean, null
	}
}

// valueSizes computes the sizes of every array and object of v, children
// first, over an explicit stack.
func valueSizes(v any) valueSizeTable {
	t := make(valueSizeTable)
	type item struct {
		v    any
		done bool
	}
	stack := []item{{v: v}}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		switch x := it.v.(type) {
		case map[string]any:
			if !it.done {
				stack = append(stack, item{v: x, done: true})
				for _, c := range x {
					stack = append(stack, item{v: c})
				}
				continue
			}
			n := 2
			for k, c := range x {
				n += 6*len(k) + 4 + t.of(c)
			}
			t[reflect.ValueOf(x).Pointer()] = n
		case []any:
			if len(x) == 0 {
				continue
			}
			if !it.done {
				stack = append(stack, item{v: x, done: true})
				for _, c := range x {
					stack = append(stack, item{v: c})
				}
				continue
			}
			n := 2
			for _, c := range x {
				n += 1 + t.of(c)
			}
			t[reflect.ValueOf(x).Pointer()] = n
		}
	}
	return t
}
