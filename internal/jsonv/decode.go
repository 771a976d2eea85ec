package jsonv

import "encoding/json"

// Object is a JSON object that keeps its key order, as decoded by Decode.
// Keys has no duplicates and Values[i] belongs to Keys[i]. Values hold the
// same kinds Decode produces: nil, bool, string, json.Number, []any and
// *Object.
type Object struct {
	Keys   []string
	Values []any
}

// Get returns the value stored under key and whether the key is present.
func (o *Object) Get(key string) (any, bool) {
	if o == nil {
		return nil, false
	}
	for i, k := range o.Keys {
		if k == key {
			if i < len(o.Values) {
				return o.Values[i], true
			}
			return nil, false
		}
	}
	return nil, false
}

// Len returns the number of members.
func (o *Object) Len() int {
	if o == nil {
		return 0
	}
	return len(o.Keys)
}

// Decode parses b, which must be acceptable to Valid, into an ordered tree:
// nil, bool, string, json.Number, []any and *Object. Duplicate keys are
// resolved as JSON.parse does (first position, last value). Errors wrap
// ErrNotLossless.
func Decode(b []byte) (any, error) {
	return decodeTree(b, 0, true, false)
}

// DecodeStd parses b like Decode but produces the tree encoding/json
// produces with UseNumber: map[string]any, []any, json.Number, string, bool
// and nil. This is the form handed to user code.
func DecodeStd(b []byte) (any, error) {
	return decodeTree(b, 0, false, false)
}

// decodeTree parses b nested at depth into a tree (ordered: *Object, else
// map[string]any). lenient admits number literals outside the lossless set
// (−0, ±Inf or −0 as a float64) as json.Number.
func decodeTree(b []byte, depth int, ordered, lenient bool) (any, error) {
	t := getTape()
	defer putTape(t)
	if err := t.parse(b, depth); err != nil {
		return nil, err
	}
	if !lenient && t.bad(0) {
		return nil, errLossyNumber
	}
	v, _ := t.tree(0, ordered)
	return v, nil
}

// tree converts the subtree at i; it returns the value and the next index.
func (t *tape) tree(i int32, ordered bool) (any, int32) {
	n := &t.nodes[i]
	switch n.kind {
	case vNull:
		return nil, n.next
	case vFalse:
		return false, n.next
	case vTrue:
		return true, n.next
	case vString:
		return t.str(i), n.next
	case vNumber:
		return json.Number(t.str(i)), n.next
	case vArray:
		arr := make([]any, 0, n.n)
		j := i + 1
		for c := n.n; c > 0; c-- {
			var v any
			v, j = t.tree(j, ordered)
			arr = append(arr, v)
		}
		return arr, n.next
	case vObject:
		if !ordered {
			m := make(map[string]any, n.n)
			j := i + 1
			for c := n.n; c > 0; c-- {
				k := t.key(j)
				m[k], j = t.tree(j, ordered)
			}
			return m, n.next
		}
		o := &Object{Keys: make([]string, 0, n.n), Values: make([]any, 0, n.n)}
		var index map[string]int // built only for large objects
		j := i + 1
		for c := n.n; c > 0; c-- {
			k := t.key(j)
			var v any
			v, j = t.tree(j, ordered)
			pos := -1
			if index != nil {
				if p, ok := index[k]; ok {
					pos = p
				}
			} else {
				for p, have := range o.Keys {
					if have == k {
						pos = p
						break
					}
				}
			}
			if pos >= 0 {
				o.Values[pos] = v // JSON.parse: first position, last value
				continue
			}
			o.Keys = append(o.Keys, k)
			o.Values = append(o.Values, v)
			if index == nil && len(o.Keys) > 16 {
				index = make(map[string]int, n.n)
				for p, have := range o.Keys {
					index[have] = p
				}
			} else if index != nil {
				index[k] = len(o.Keys) - 1
			}
		}
		return o, n.next
	}
	return nil, n.next // not produced by parse
}
