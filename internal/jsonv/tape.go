package jsonv

import (
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"unsafe"
)

// A tape is a JSON value flattened into pre-order nodes. Validation and
// schema compilation walk tapes instead of Go trees: building one from bytes
// costs one pooled slice, string and number nodes point into the source
// bytes instead of copying them, and every node knows in O(1) whether its
// subtree is lossless (fBad), which R102's container checks need.
type tape struct {
	src   []byte // source bytes for span-backed nodes; nil for Go-built tapes
	nodes []tnode
	stack []int32
	anc   map[ptrKey]int32 // Go-built tapes: containers on the current path
	// Go-built tapes, sharing (see MaxSharedExpansion): from
	// sharedTrackAfter nodes on, visited holds every container added; one
	// met again is a repeat. dup counts the nodes of finished repeats,
	// dupMark is the first node of the outermost open repeat.
	visited      map[ptrKey]struct{}
	dup, dupMark int
	dupDepth     int
}

// Node kinds.
const (
	vNull uint8 = iota
	vFalse
	vTrue
	vString
	vNumber
	vArray
	vObject
	vInvalid // a Go value outside the JSON model (func, struct, float32…)
	vCycle   // a container repeating an ancestor; off is the ancestor's index
)

// Node flags.
const (
	fBad       uint8 = 1 << iota // this node or a descendant is not lossless JSON
	fStr                         // s holds the decoded string / number literal
	fKey                         // k holds the decoded member key
	fNonFinite                   // number: NaN or ±Inf
	fNegZero                     // number: negative zero, or a literal that is ±Inf or −0 as a float64
)

type tnode struct {
	kind, flags uint8
	n           int32 // containers: number of elements or members
	next        int32 // index just past this node's subtree
	off, end    int32 // string body / number literal span in src; vCycle: off = target
	koff, kend  int32 // member key body span in src
	s, k        string
}

var tapePool = sync.Pool{New: func() any { return new(tape) }}

func getTape() *tape { return tapePool.Get().(*tape) }

func putTape(t *tape) {
	if cap(t.nodes) > 1<<14 {
		return
	}
	clear(t.nodes) // drop string references
	t.nodes = t.nodes[:0]
	t.stack = t.stack[:0]
	t.src = nil
	t.anc = nil
	t.visited = nil
	tapePool.Put(t)
}

// res resolves a cycle alias to the container it repeats.
func (t *tape) res(i int32) int32 {
	if t.nodes[i].kind == vCycle {
		return t.nodes[i].off
	}
	return i
}

func (t *tape) bad(i int32) bool { return t.nodes[i].flags&fBad != 0 }

// str returns a string node's value (allocating for span-backed nodes).
func (t *tape) str(i int32) string {
	n := &t.nodes[i]
	if n.flags&fStr != 0 {
		return n.s
	}
	return string(t.src[n.off:n.end])
}

// key returns a member's key (allocating for span-backed nodes).
func (t *tape) key(i int32) string {
	n := &t.nodes[i]
	if n.flags&fKey != 0 {
		return n.k
	}
	return string(t.src[n.koff:n.kend])
}

// keyIs reports whether member i has key k, without allocating.
func (t *tape) keyIs(i int32, k string) bool {
	n := &t.nodes[i]
	if n.flags&fKey != 0 {
		return n.k == k
	}
	return string(t.src[n.koff:n.kend]) == k
}

// strIs reports whether string node i equals s, without allocating.
func (t *tape) strIs(i int32, s string) bool {
	n := &t.nodes[i]
	if n.flags&fStr != 0 {
		return n.s == s
	}
	return string(t.src[n.off:n.end]) == s
}

// member returns the index of the member of object o with key k (the last
// one if the text repeats the key, as JSON.parse keeps), or -1.
func (t *tape) member(o int32, k string) int32 {
	found := int32(-1)
	j := o + 1
	for c := t.nodes[o].n; c > 0; c-- {
		if t.keyIs(j, k) {
			found = j
		}
		j = t.nodes[j].next
	}
	return found
}

// Number predicates on a number node.
func (t *tape) numFinite(i int32) bool {
	n := &t.nodes[i]
	if n.flags&(fNonFinite|fNegZero) != 0 {
		return false
	}
	if n.flags&fStr != 0 {
		return numFinite(n.s)
	}
	return numFinite(t.src[n.off:n.end])
}

func (t *tape) numIntegral(i int32) bool {
	n := &t.nodes[i]
	if n.flags&fStr != 0 {
		return numIntegral(n.s)
	}
	return numIntegral(t.src[n.off:n.end])
}

func (t *tape) numIs(i int32, lit string) bool {
	n := &t.nodes[i]
	if n.flags&fStr != 0 {
		return numEqual(n.s, lit)
	}
	return numEqual(t.src[n.off:n.end], lit)
}

// parse fills the tape from JSON text nested at depth. Number literals
// outside the lossless set (−0, or ±Inf or −0 as a float64) are accepted
// and flagged fBad|fNegZero; everything else that Valid rejects is an
// error. It is iterative.
func (t *tape) parse(src []byte, depth int) error {
	if len(src) > math.MaxInt32 {
		return notLossless("JSON text larger than 2 GiB")
	}
	t.src = src
	t.nodes = t.nodes[:0]
	stack := t.stack[:0]
	defer func() { t.stack = stack[:0] }()

	var koff, kend int32
	kdec, haveKey := false, false
	i := skipSpace(src, 0)
	st := stValue
	for {
		switch st {
		case stValue:
			if i >= len(src) {
				return errSyntax
			}
			idx := int32(len(t.nodes))
			t.nodes = append(t.nodes, tnode{next: idx + 1})
			nd := &t.nodes[idx]
			if haveKey {
				nd.koff, nd.kend = koff, kend
				if kdec {
					nd.k = unescape(src[koff:kend])
					nd.flags |= fKey
				}
				haveKey = false
			}
			if len(stack) > 0 {
				t.nodes[stack[len(stack)-1]].n++
			}
			st = stAfter
			switch c := src[i]; c {
			case '{', '[':
				if depth+len(stack) >= MaxDepth {
					return ErrTooDeep
				}
				closer := byte(']')
				nd.kind = vArray
				if c == '{' {
					nd.kind, closer = vObject, '}'
				}
				stack = append(stack, idx)
				i = skipSpace(src, i+1)
				if i < len(src) && src[i] == closer {
					i++
					stack = t.close(stack)
				} else if c == '{' {
					st = stKey
				} else {
					st = stValue
				}
			case '"':
				end, decode, ok := scanString(src, i)
				if !ok {
					return errSyntax
				}
				nd.kind = vString
				nd.off, nd.end = int32(i+1), int32(end-1)
				if decode {
					nd.s = unescape(src[i+1 : end-1])
					nd.flags |= fStr
				}
				i = end
			case 't', 'f', 'n':
				lit, kind := "null", vNull
				if c == 't' {
					lit, kind = "true", vTrue
				} else if c == 'f' {
					lit, kind = "false", vFalse
				}
				if len(src)-i < len(lit) || string(src[i:i+len(lit)]) != lit {
					return errSyntax
				}
				nd.kind = kind
				i += len(lit)
			default:
				end, lossy, ok := scanNumber(src, i)
				if !ok {
					return errSyntax
				}
				nd.kind = vNumber
				nd.off, nd.end = int32(i), int32(end)
				if lossy {
					nd.flags |= fBad | fNegZero
					if len(stack) > 0 {
						t.nodes[stack[len(stack)-1]].flags |= fBad
					}
				}
				i = end
			}
		case stKey:
			if i >= len(src) || src[i] != '"' {
				return errSyntax
			}
			end, decode, ok := scanString(src, i)
			if !ok {
				return errSyntax
			}
			koff, kend, kdec, haveKey = int32(i+1), int32(end-1), decode, true
			i = skipSpace(src, end)
			if i >= len(src) || src[i] != ':' {
				return errSyntax
			}
			i = skipSpace(src, i+1)
			st = stValue
		default: // stAfter
			i = skipSpace(src, i)
			if len(stack) == 0 {
				if i != len(src) {
					return errSyntax
				}
				return nil
			}
			if i >= len(src) {
				return errSyntax
			}
			top := &t.nodes[stack[len(stack)-1]]
			obj := top.kind == vObject
			switch c := src[i]; {
			case c == ',':
				i = skipSpace(src, i+1)
				if obj {
					st = stKey
				} else {
					st = stValue
				}
			case obj && c == '}', !obj && c == ']':
				i++
				stack = t.close(stack)
			default:
				return errSyntax
			}
		}
	}
}

// close ends the innermost open container and passes its badness up.
func (t *tape) close(stack []int32) []int32 {
	ci := stack[len(stack)-1]
	stack = stack[:len(stack)-1]
	t.nodes[ci].next = int32(len(t.nodes))
	if len(stack) > 0 && t.nodes[ci].flags&fBad != 0 {
		t.nodes[stack[len(stack)-1]].flags |= fBad
	}
	return stack
}

// build fills the tape from a Go value, total for any input: values outside
// the JSON model become vInvalid nodes, cycles become vCycle aliases, both
// flagged fBad. Map keys are visited sorted; json.RawMessage is decoded
// (JSON.parse semantics, negative zero flagged). Only nesting deeper than
// MaxDepth fails.
func (t *tape) build(v any) error {
	t.src = nil
	t.nodes = t.nodes[:0]
	t.visited, t.dup, t.dupMark, t.dupDepth = nil, 0, 0, 0
	return t.add(v, "", false, 0)
}

// shared notes container ck starting at node idx: it reports whether it
// repeats a container already added, and ErrTooLarge once the repeated
// nodes exceed both MaxSharedExpansion and the other nodes.
func (t *tape) shared(ck ptrKey, idx int32) (repeat bool, err error) {
	if int(idx) <= sharedTrackAfter {
		return false, nil
	}
	if _, ok := t.visited[ck]; ok {
		if t.dupDepth == 0 {
			t.dupMark = int(idx)
		}
		t.dupDepth++
		return true, t.checkShared()
	}
	if t.visited == nil {
		t.visited = make(map[ptrKey]struct{})
	}
	t.visited[ck] = struct{}{}
	return false, t.checkShared()
}

func (t *tape) checkShared() error {
	if t.dupDepth == 0 {
		return nil
	}
	rep := t.dup + len(t.nodes) - t.dupMark
	if rep > MaxSharedExpansion && rep > len(t.nodes)-rep {
		return ErrTooLarge
	}
	return nil
}

// unshare ends a repeat that shared started, checking the expansion once
// more (a repeat of scalars starts no container).
func (t *tape) unshare() error {
	err := t.checkShared()
	if t.dupDepth--; t.dupDepth == 0 {
		t.dup += len(t.nodes) - t.dupMark
	}
	return err
}

func (t *tape) add(v any, key string, hasKey bool, depth int) (err error) {
	idx := int32(len(t.nodes))
	nd := tnode{next: idx + 1}
	if hasKey {
		nd.k, nd.flags = key, fKey
	}
	number := func(lit string, flags uint8) {
		nd.kind, nd.s, nd.flags = vNumber, lit, nd.flags|fStr|flags
	}
	var ck ptrKey // container identity, for cycle detection
	var elems []any
	var obj *Object
	var m map[string]any
	switch x := v.(type) {
	case nil:
		nd.kind = vNull
	case bool:
		nd.kind = vFalse
		if x {
			nd.kind = vTrue
		}
	case string:
		nd.kind, nd.s, nd.flags = vString, x, nd.flags|fStr
	case float64:
		switch {
		case math.IsNaN(x) || math.IsInf(x, 0):
			number("", fBad|fNonFinite)
		case x == 0 && math.Signbit(x):
			number("-0", fBad|fNegZero)
		default:
			number(string(appendFloat(nil, x)), 0)
		}
	case json.Number:
		switch ok, lossy := numberLiteral(x); {
		case !ok:
			nd.kind, nd.flags = vInvalid, nd.flags|fBad
		case lossy:
			number(string(x), fBad|fNegZero)
		default:
			number(string(x), 0)
		}
	case int:
		number(strconv.FormatInt(int64(x), 10), 0)
	case int8:
		number(strconv.FormatInt(int64(x), 10), 0)
	case int16:
		number(strconv.FormatInt(int64(x), 10), 0)
	case int32:
		number(strconv.FormatInt(int64(x), 10), 0)
	case int64:
		number(strconv.FormatInt(x, 10), 0)
	case uint:
		number(strconv.FormatUint(uint64(x), 10), 0)
	case uint8:
		number(strconv.FormatUint(uint64(x), 10), 0)
	case uint16:
		number(strconv.FormatUint(uint64(x), 10), 0)
	case uint32:
		number(strconv.FormatUint(uint64(x), 10), 0)
	case uint64:
		number(strconv.FormatUint(x, 10), 0)
	case uintptr:
		number(strconv.FormatUint(uint64(x), 10), 0)
	case []any:
		if x == nil {
			nd.kind = vNull
			break
		}
		nd.kind, elems = vArray, x
		if len(x) > 0 {
			ck = ptrKey{unsafe.Pointer(unsafe.SliceData(x)), len(x)}
		}
	case map[string]any:
		if x == nil {
			nd.kind = vNull
			break
		}
		nd.kind, m = vObject, x
		ck = ptrKey{reflect.ValueOf(x).UnsafePointer(), -1}
	case *Object:
		if x == nil || len(x.Keys) != len(x.Values) {
			nd.kind, nd.flags = vInvalid, nd.flags|fBad
			break
		}
		nd.kind, obj = vObject, x
		ck = ptrKey{unsafe.Pointer(x), -2}
	case json.RawMessage:
		tree, err := decodeTree(x, depth, true, true)
		if err != nil {
			if err == ErrTooDeep {
				return err
			}
			nd.kind, nd.flags = vInvalid, nd.flags|fBad
			break
		}
		return t.add(tree, key, hasKey, depth)
	default:
		nd.kind, nd.flags = vInvalid, nd.flags|fBad
	}
	if nd.kind != vArray && nd.kind != vObject {
		t.nodes = append(t.nodes, nd)
		return nil
	}
	if depth >= MaxDepth {
		return ErrTooDeep
	}
	if ck.p != nil {
		if target, ok := t.anc[ck]; ok {
			nd.kind, nd.off, nd.flags = vCycle, target, nd.flags|fBad
			t.nodes = append(t.nodes, nd)
			return nil
		}
		if t.anc == nil {
			t.anc = make(map[ptrKey]int32)
		}
		t.anc[ck] = idx
		defer delete(t.anc, ck)
		repeat, serr := t.shared(ck, idx)
		if serr != nil {
			return serr
		}
		if repeat {
			defer func() { // err is add's result
				if uerr := t.unshare(); err == nil {
					err = uerr
				}
			}()
		}
	}
	t.nodes = append(t.nodes, nd)
	switch {
	case m != nil:
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if err = t.add(m[k], k, true, depth+1); err != nil {
				return err
			}
		}
	case obj != nil:
		for i, k := range obj.Keys {
			if err = t.add(obj.Values[i], k, true, depth+1); err != nil {
				return err
			}
		}
	default:
		for _, el := range elems {
			if err = t.add(el, "", false, depth+1); err != nil {
				return err
			}
		}
	}
	// Count children and pass badness up.
	n, bad := int32(0), false
	for j := idx + 1; j < int32(len(t.nodes)); j = t.nodes[j].next {
		n++
		bad = bad || t.nodes[j].flags&fBad != 0
	}
	t.nodes[idx].n = n
	t.nodes[idx].next = int32(len(t.nodes))
	if bad {
		t.nodes[idx].flags |= fBad
	}
	return nil
}
