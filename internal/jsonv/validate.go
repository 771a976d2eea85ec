package jsonv

import (
	"strconv"
	"sync"
)

// Validate checks the JSON text v against s as R102 describes and
// returns every violation in walk order, or nil when v is valid. It is total:
// it never panics and never fails.
//
// v is expected to be Encode's output. Other JSON text is accepted too:
// negative-zero literals are validated as R102 says for −0, and a repeated
// key is read as JSON.parse reads it (the last value wins). Text that is not
// one JSON value, or nests deeper than MaxDepth, yields the single violation
// `"<root>" must be a lossless JSON value`.
//
// rootLabel names the root in paths: "value" for tool outputs; "" for tool
// arguments, where the root itself is shown as `arguments` and properties
// carry no prefix (`"path"`, `"config.host"`, `"servers[1].host"`). A nil
// schema accepts every lossless value.
func (s *Schema) Validate(v []byte, rootLabel string) []string {
	root := anyNode
	if s != nil && s.root != nil {
		root = s.root
	}
	if quickValid(root, v) {
		return nil
	}
	return s.validateTape(v, rootLabel)
}

// validateTape is Validate without the quick check.
func (s *Schema) validateTape(v []byte, rootLabel string) []string {
	t := getTape()
	defer putTape(t)
	if err := t.parse(v, 0); err != nil {
		return []string{`"` + diagnosticPath(rootLabel) + `" must be a lossless JSON value`}
	}
	return s.run(t, rootLabel)
}

// ValidateValue is Validate for a Go value instead of JSON text: v may be
// anything. Values outside the lossless set (NaN, ±Inf, −0, cycles, other Go
// types) are reported where they occur as R102 describes, e.g. `"value" must
// be a finite JSON number` or `"value" must be a lossless JSON object`.
// json.RawMessage inside v is read as its decoded value. A v nested deeper
// than MaxDepth, or whose shared maps and slices expand past
// MaxSharedExpansion, yields the single violation `"<root>" must be a
// lossless JSON value`.
func (s *Schema) ValidateValue(v any, rootLabel string) []string {
	t := getTape()
	defer putTape(t)
	if err := t.build(v); err != nil {
		return []string{`"` + diagnosticPath(rootLabel) + `" must be a lossless JSON value`}
	}
	return s.run(t, rootLabel)
}

// anyNode is the root of a nil schema: any lossless value.
var anyNode = &snode{kind: sAny}

var validatorPool = sync.Pool{New: func() any { return new(validator) }}

func (s *Schema) run(t *tape, rootLabel string) []string {
	root := &snode{kind: sAny}
	if s != nil && s.root != nil {
		root = s.root
	}
	v := validatorPool.Get().(*validator)
	v.t, v.root = t, rootLabel
	v.check(root, 0)
	out := v.out
	v.t, v.out, v.path, v.quiet, v.qfail = nil, nil, v.path[:0], 0, 0
	validatorPool.Put(v)
	return out
}

func diagnosticPath(p string) string {
	if p == "" {
		return "arguments"
	}
	return p
}

// validator walks a compiled schema and a value tape together. Inside a
// oneOf branch only the number of failures matters (R102 reports the match
// count, not the branch's violations), so messages are not built there
// (quiet > 0) and a failing branch stops at its first violation.
type validator struct {
	t     *tape
	root  string
	path  []vseg
	out   []string
	quiet int
	qfail int
}

// vseg is one value path segment: a member (tape index, for its key) or an
// array index.
type vseg struct {
	member int32 // -1 for an index
	idx    int
}

// count is the number of violations recorded in the current mode.
func (v *validator) count() int {
	if v.quiet > 0 {
		return v.qfail
	}
	return len(v.out)
}

// stop reports whether a quiet walk may abandon the current branch.
func (v *validator) stop(mark int) bool { return v.quiet > 0 && v.qfail > mark }

// appendPath renders the current path, plus member extra when >= 0.
func (v *validator) appendPath(b []byte, extra int32) []byte {
	start := len(b)
	b = append(b, v.root...)
	key := func(m int32) {
		if len(b) > start {
			b = append(b, '.')
		}
		n := &v.t.nodes[m]
		if n.flags&fKey != 0 {
			b = append(b, n.k...)
		} else {
			b = append(b, v.t.src[n.koff:n.kend]...)
		}
	}
	for _, s := range v.path {
		if s.member < 0 {
			b = append(b, '[')
			b = strconv.AppendInt(b, int64(s.idx), 10)
			b = append(b, ']')
		} else {
			key(s.member)
		}
	}
	if extra >= 0 {
		key(extra)
	}
	if len(b) == start {
		b = append(b, "arguments"...)
	}
	return b
}

// report records `"<path>" <msg>`.
func (v *validator) report(msg string) { v.reportAt(-1, msg, "") }

// reportAt records a violation whose path is the current path plus member
// (when >= 0), wrapped in prefix … msg.
func (v *validator) reportAt(member int32, msg, prefix string) {
	if v.quiet > 0 {
		v.qfail++
		return
	}
	b := make([]byte, 0, 64)
	b = append(b, prefix...)
	b = append(b, '"')
	b = v.appendPath(b, member)
	b = append(b, '"')
	b = append(b, msg...)
	v.out = append(v.out, string(b))
}

// reportMissing records a missing required property.
func (v *validator) reportMissing(name string) {
	if v.quiet > 0 {
		v.qfail++
		return
	}
	b := make([]byte, 0, 64)
	b = append(b, `missing required property "`...)
	b = v.appendPath(b, -1)
	if len(v.path) == 0 && v.root == "" {
		b = b[:len(b)-len("arguments")] // propertyPath("", k) is k itself
	} else {
		b = append(b, '.')
	}
	b = append(b, name...)
	b = append(b, '"')
	v.out = append(v.out, string(b))
}

// check validates the value at tape index vi against sn.
func (v *validator) check(sn *snode, vi int32) {
	t := v.t
	vi = t.res(vi)
	n := &t.nodes[vi]
	switch sn.kind {
	case sAny:
		if n.flags&fBad != 0 {
			v.report(" must be a lossless JSON value")
		}
	case sOneOf:
		v.quiet++
		matches := 0
		for _, br := range sn.oneOf {
			saved := v.qfail
			v.check(br, vi)
			if v.qfail == saved {
				matches++
			}
			v.qfail = saved
		}
		v.quiet--
		if matches != 1 {
			v.report(" must match exactly one oneOf branch (matched " + strconv.Itoa(matches) + ")")
		}
	case sObject:
		if n.kind != vObject {
			v.report(" must be an object")
			return
		}
		mark := v.count()
		var index map[string]int32 // members by key, for large objects
		member := func(name string) int32 {
			if n.n <= 16 {
				return t.member(vi, name)
			}
			if index == nil {
				index = make(map[string]int32, n.n)
				j := vi + 1
				for c := n.n; c > 0; c-- {
					index[t.key(j)] = j
					j = t.nodes[j].next
				}
			}
			if m, ok := index[name]; ok {
				return m
			}
			return -1
		}
		for _, r := range sn.required {
			if member(r) < 0 {
				v.reportMissing(r)
				if v.stop(mark) {
					return
				}
			}
		}
		for i := range sn.props {
			p := &sn.props[i]
			if m := member(p.name); m >= 0 {
				v.path = append(v.path, vseg{member: m})
				v.check(p.node, m)
				v.path = v.path[:len(v.path)-1]
				if v.stop(mark) {
					return
				}
			}
		}
		if sn.closed {
			j := vi + 1
			for c := n.n; c > 0; c-- {
				m := &t.nodes[j]
				var declared bool
				if m.flags&fKey != 0 {
					declared = sn.hasProp(m.k)
				} else {
					declared = sn.hasPropBytes(t.src[m.koff:m.kend])
				}
				if !declared && !v.repeated(vi, j) {
					v.reportAt(j, " is not a declared property (additionalProperties: false)", "")
					if v.stop(mark) {
						return
					}
				}
				j = m.next
			}
		}
		if v.count() == mark && n.flags&fBad != 0 {
			v.report(" must be a lossless JSON object")
		}
	case sArray:
		if n.kind != vArray {
			v.report(" must be an array")
			return
		}
		mark := v.count()
		if sn.items != nil {
			j := vi + 1
			for k := 0; k < int(n.n); k++ {
				v.path = append(v.path, vseg{member: -1, idx: k})
				v.check(sn.items, j)
				v.path = v.path[:len(v.path)-1]
				if v.stop(mark) {
					return
				}
				j = t.nodes[j].next
			}
		}
		if v.count() == mark && n.flags&fBad != 0 {
			v.report(" must be a dense lossless JSON array")
		}
	case sString:
		if n.kind != vString {
			v.report(" must be a string")
			return
		}
		v.literal(sn, vi)
	case sNumber:
		switch {
		case n.kind != vNumber:
			v.report(" must be a number")
		case !t.numFinite(vi):
			v.report(" must be a finite JSON number")
		default:
			v.literal(sn, vi)
		}
	case sInteger:
		if n.kind != vNumber || !t.numFinite(vi) || !t.numIntegral(vi) {
			v.report(" must be an integer")
			return
		}
		v.literal(sn, vi)
	case sBoolean:
		if n.kind != vTrue && n.kind != vFalse {
			v.report(" must be a boolean")
			return
		}
		v.literal(sn, vi)
	case sNull:
		if n.kind != vNull {
			v.report(" must be null")
			return
		}
		v.literal(sn, vi)
	}
}

// repeated reports whether member j of object o repeats the key of an
// earlier member (only possible in non-canonical text); JSON.parse keeps one
// member, at the first position, so only that one is reported.
func (v *validator) repeated(o, j int32) bool {
	t := v.t
	m := &t.nodes[j]
	for i := o + 1; i < j; i = t.nodes[i].next {
		if m.flags&fKey != 0 && t.keyIs(i, m.k) ||
			m.flags&fKey == 0 && t.keyIs(i, string(t.src[m.koff:m.kend])) {
			return true
		}
	}
	return false
}

// literal applies enum, then const, to a scalar of the right type.
func (v *validator) literal(sn *snode, vi int32) {
	if sn.hasEnum {
		for _, e := range sn.enum {
			if v.is(e, vi) {
				goto constCheck
			}
		}
		v.report(" must be one of " + sn.enumJSON)
		return
	}
constCheck:
	if sn.hasConst && !v.is(sn.konst, vi) {
		v.report(" must be " + sn.constJSON)
	}
}

// is reports whether value node vi equals scalar e (numbers numerically).
func (v *validator) is(e scalar, vi int32) bool {
	n := &v.t.nodes[vi]
	if n.kind != e.kind {
		return false
	}
	switch e.kind {
	case vString:
		return v.t.strIs(vi, e.s)
	case vNumber:
		return v.t.numIs(vi, e.s)
	}
	return true
}
