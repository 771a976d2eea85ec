package jsonv

import (
	"errors"
	"strconv"
	"strings"
)

// Schema is a JSON schema accepted by CompileSchema (the R100 subset),
// compiled for validation. It is immutable and safe for concurrent use.
type Schema struct {
	root *snode
	json []byte // canonical JSON of the schema as given
}

// JSON returns a copy of the schema's canonical JSON (key order as given
// for json.RawMessage and *Object input, sorted for map[string]any).
func (s *Schema) JSON() []byte {
	if s == nil {
		return nil
	}
	return append([]byte(nil), s.json...)
}

type skind uint8

const (
	sAny skind = iota // annotation-only node: any lossless JSON
	sOneOf
	sObject
	sArray
	sString
	sNumber
	sInteger
	sBoolean
	sNull
)

// snode is one compiled schema node.
type snode struct {
	kind     skind
	closed   bool // additionalProperties: false
	hasEnum  bool
	hasConst bool
	props    []sprop
	index    map[string]int // props by name, only when there are many
	required []string
	items    *snode
	oneOf    []*snode
	enum     []scalar
	konst    scalar
	// Compact JSON of the enum array and of the const, for messages.
	enumJSON, constJSON string
}

type sprop struct {
	name string
	node *snode
}

// scalar is an enum/const value: kind is vNull, vFalse, vTrue, vString or
// vNumber; s is the string or the number literal.
type scalar struct {
	kind uint8
	s    string
}

func (sn *snode) hasProp(name string) bool {
	if sn.index != nil {
		_, ok := sn.index[name]
		return ok
	}
	for i := range sn.props {
		if sn.props[i].name == name {
			return true
		}
	}
	return false
}

// hasPropBytes is hasProp for a key span, without allocating.
func (sn *snode) hasPropBytes(name []byte) bool {
	if sn.index != nil {
		_, ok := sn.index[string(name)]
		return ok
	}
	for i := range sn.props {
		if sn.props[i].name == string(name) {
			return true
		}
	}
	return false
}

// schemaTypes lists the R100 type names in the contract's order.
var schemaTypes = [...]string{"object", "array", "string", "number", "integer", "boolean", "null"}

var typeKinds = map[string]skind{
	"object": sObject, "array": sArray, "string": sString, "number": sNumber,
	"integer": sInteger, "boolean": sBoolean, "null": sNull,
}

// constraintKeys are the keywords besides type and oneOf, in the fixed order
// R100 uses for "requires type or oneOf", "beside oneOf" and placement.
var constraintKeys = [...]string{"properties", "required", "additionalProperties", "items", "enum", "const"}

func isConstraintKey(k string) bool {
	switch k {
	case "type", "oneOf", "properties", "required", "additionalProperties", "items", "enum", "const":
		return true
	}
	return false
}

func isAnnotationKey(k string) bool {
	switch k {
	case "description", "title", "default", "examples":
		return true
	}
	return false
}

const unsupportedKeyword = " is not a supported keyword (subset: type/oneOf/properties/required/additionalProperties/items/enum/const + annotations)"

// CompileSchema checks a schema against the R100 subset and compiles
// it. The schema is any value Encode accepts, or a tree from Decode;
// json.RawMessage keeps its key order, map[string]any is read in sorted key
// order (as R100 allows). It returns the compiled schema, or nil and every
// violation in the contract's order and wording, with paths rooted at "schema"
// ("schema.properties.a", "schema.oneOf[1]").
//
// Beyond the contract's messages: a schema nested deeper than MaxDepth yields
// the single violation "schema is nested deeper than 50000 levels". A
// sub-schema shared by several positions (a DAG of Go maps) is checked, and
// compiled, once per position, as its JSON text repeats it; a schema whose
// sharing expands past MaxSharedExpansion repeated values yields the
// single violation "schema expands to more than 65536 repeated values: …"
// instead, after work linear in the distinct input. Numbers in enum/const are compared exactly
// as decimals (1, 1.0 and 1e0 are equal).
func CompileSchema(schema any) (*Schema, []string) {
	t := getTape()
	defer putTape(t)
	if err := t.build(schema); err != nil {
		if errors.Is(err, ErrTooLarge) {
			return nil, []string{tooLargeViolation}
		}
		return nil, []string{"schema is nested deeper than " + strconv.Itoa(MaxDepth) + " levels"}
	}
	c := compiler{t: t, seen: map[int32]bool{}}
	root := new(snode)
	c.enter(0, root)
	if len(c.viol) > 0 {
		return nil, c.viol
	}
	js, err := EncodeTree(schema)
	if errors.Is(err, ErrTooLarge) {
		return nil, []string{tooLargeViolation}
	}
	if err != nil { // unreachable for an accepted schema; kept for totality
		return nil, []string{"schema must be lossless JSON"}
	}
	return &Schema{root: root, json: js}, nil
}

// tooLargeViolation is CompileSchema's violation for a schema whose shared
// sub-schemas expand past MaxSharedExpansion.
var tooLargeViolation = "schema expands to more than " + strconv.Itoa(MaxSharedExpansion) +
	" repeated values: a sub-schema shared by several positions is written out in full at each one"

// compiler walks a schema tape depth-first. The order of its checks
// mirrors the contract (and the reference's explicit-stack walk): a node's own
// checks, then its children in declaration order, then its tail checks.
type compiler struct {
	t    *tape
	path []cseg
	seen map[int32]bool // schema nodes on the current path
	viol []string
}

// cseg is one path segment: ".properties.<key>", ".oneOf[i]" or ".items".
type cseg struct {
	kind byte // 'p', 'o', 'i'
	key  string
	idx  int
}

func (c *compiler) pathString() string {
	var b strings.Builder
	b.WriteString("schema")
	for _, s := range c.path {
		switch s.kind {
		case 'p':
			b.WriteString(".properties.")
			b.WriteString(s.key)
		case 'o':
			b.WriteString(".oneOf[")
			b.WriteString(strconv.Itoa(s.idx))
			b.WriteByte(']')
		default:
			b.WriteString(".items")
		}
	}
	return b.String()
}

func (c *compiler) add(msg string) { c.viol = append(c.viol, c.pathString()+msg) }

// get returns the member of schema object o named k, or -1.
func (c *compiler) get(o int32, k string) int32 { return c.t.member(o, k) }

// scalarMatches reports whether node i is a value of scalar schema type k.
func (c *compiler) scalarMatches(k skind, i int32) bool {
	t := c.t
	n := &t.nodes[i]
	switch k {
	case sString:
		return n.kind == vString
	case sNumber:
		return n.kind == vNumber && t.numFinite(i)
	case sInteger:
		return n.kind == vNumber && t.numFinite(i) && t.numIntegral(i)
	case sBoolean:
		return n.kind == vTrue || n.kind == vFalse
	case sNull:
		return n.kind == vNull
	}
	return false
}

func (c *compiler) scalar(i int32) scalar {
	n := &c.t.nodes[i]
	switch n.kind {
	case vString, vNumber:
		return scalar{kind: n.kind, s: c.t.str(i)}
	}
	return scalar{kind: n.kind}
}

func scalarEqual(a, b scalar) bool {
	if a.kind != b.kind {
		return false
	}
	switch a.kind {
	case vString:
		return a.s == b.s
	case vNumber:
		return numEqual(a.s, b.s)
	}
	return true
}

func appendScalar(dst []byte, s scalar) []byte {
	switch s.kind {
	case vString:
		return appendQuoted(dst, s.s)
	case vNumber:
		return append(dst, s.s...)
	case vTrue:
		return append(dst, "true"...)
	case vFalse:
		return append(dst, "false"...)
	}
	return append(dst, "null"...)
}

// enter checks the schema node at tape index i and fills dst.
func (c *compiler) enter(i int32, dst *snode) {
	t := c.t
	ri := t.res(i)
	if t.nodes[ri].kind != vObject {
		c.add(" must be a schema object")
		return
	}
	if c.seen[ri] {
		c.add(" is circular")
		return
	}
	c.seen[ri] = true
	defer delete(c.seen, ri)

	// Unsupported keys and annotation payloads, in the node's key order.
	var p string // the path, rendered at most once per node
	path := func() string {
		if p == "" {
			p = c.pathString()
		}
		return p
	}
	j := ri + 1
	for cnt := t.nodes[ri].n; cnt > 0; cnt-- {
		k := t.key(j)
		switch {
		case isConstraintKey(k):
		case isAnnotationKey(k):
			if t.bad(j) {
				c.viol = append(c.viol, path()+"."+k+" annotation must be lossless JSON data")
			}
		default:
			c.viol = append(c.viol, path()+"."+k+unsupportedKeyword)
		}
		j = t.nodes[j].next
	}
	for _, k := range [...]string{"description", "title"} {
		if m := c.get(ri, k); m >= 0 && t.nodes[t.res(m)].kind != vString {
			c.viol = append(c.viol, path()+"."+k+" must be a string")
		}
	}

	typ, oneOf := c.get(ri, "type"), c.get(ri, "oneOf")
	switch {
	case typ >= 0 && oneOf >= 0:
		c.viol = append(c.viol, path()+" cannot declare both type and oneOf")
		return
	case typ < 0 && oneOf < 0:
		for _, k := range constraintKeys {
			if c.get(ri, k) >= 0 {
				c.viol = append(c.viol, path()+"."+k+" requires type or oneOf")
			}
		}
		dst.kind = sAny
		return
	case oneOf >= 0:
		dst.kind = sOneOf
		ro := t.res(oneOf)
		if t.nodes[ro].kind != vArray || t.nodes[ro].n < 2 {
			c.viol = append(c.viol, path()+".oneOf must be an array of at least two schemas")
		} else {
			dst.oneOf = make([]*snode, t.nodes[ro].n)
			b := ro + 1
			for x := range dst.oneOf {
				dst.oneOf[x] = new(snode)
				c.path = append(c.path, cseg{kind: 'o', idx: x})
				c.enter(b, dst.oneOf[x])
				c.path = c.path[:len(c.path)-1]
				b = t.nodes[b].next
			}
		}
		for _, k := range constraintKeys {
			if c.get(ri, k) >= 0 {
				c.viol = append(c.viol, path()+"."+k+" is not supported beside oneOf")
			}
		}
		return
	}

	// A single type.
	rt := t.res(typ)
	kind, ok := skind(0), false
	if t.nodes[rt].kind == vString {
		kind, ok = typeKinds[t.str(rt)]
	}
	if !ok {
		if t.nodes[rt].kind == vArray {
			c.viol = append(c.viol, path()+".type must be a single type string (type arrays are not supported)")
		} else {
			c.viol = append(c.viol, path()+".type must be one of "+strings.Join(schemaTypes[:], "/"))
		}
		return
	}
	dst.kind = kind
	typeName := t.str(rt)
	scalarType := kind != sObject && kind != sArray
	for _, k := range constraintKeys {
		allowed := false
		switch k {
		case "properties", "required", "additionalProperties":
			allowed = kind == sObject
		case "items":
			allowed = kind == sArray
		default:
			allowed = scalarType
		}
		if !allowed && c.get(ri, k) >= 0 {
			c.viol = append(c.viol, path()+"."+k+` is not supported on type "`+typeName+`"`)
		}
	}

	switch {
	case kind == sObject:
		c.object(ri, dst, path)
	case kind == sArray:
		if it := c.get(ri, "items"); it >= 0 {
			dst.items = new(snode)
			c.path = append(c.path, cseg{kind: 'i'})
			c.enter(it, dst.items)
			c.path = c.path[:len(c.path)-1]
		}
	default:
		c.scalars(ri, dst, kind, typeName, path)
	}
}

func (c *compiler) object(ri int32, dst *snode, path func() string) {
	t := c.t
	props := int32(-1) // the properties object, if it is one
	if pm := c.get(ri, "properties"); pm >= 0 {
		if rp := t.res(pm); t.nodes[rp].kind == vObject {
			props = rp
			dst.props = make([]sprop, t.nodes[rp].n)
			b := rp + 1
			for x := range dst.props {
				name := t.key(b)
				dst.props[x] = sprop{name: name, node: new(snode)}
				c.path = append(c.path, cseg{kind: 'p', key: name})
				c.enter(b, dst.props[x].node)
				c.path = c.path[:len(c.path)-1]
				b = t.nodes[b].next
			}
			if len(dst.props) > 8 {
				dst.index = make(map[string]int, len(dst.props))
				for x, p := range dst.props {
					dst.index[p.name] = x
				}
			}
		} else {
			c.viol = append(c.viol, path()+".properties must be an object of schemas")
		}
	}
	// Tail: required and additionalProperties, after the children.
	if rm := c.get(ri, "required"); rm >= 0 {
		rr := t.res(rm)
		okList := t.nodes[rr].kind == vArray
		if okList {
			b := rr + 1
			for cnt := t.nodes[rr].n; cnt > 0; cnt-- {
				if t.nodes[b].kind != vString {
					okList = false
					break
				}
				b = t.nodes[b].next
			}
		}
		if !okList {
			c.viol = append(c.viol, path()+".required must be an array of strings")
		} else {
			b := rr + 1
			for cnt := t.nodes[rr].n; cnt > 0; cnt-- {
				name := t.str(b)
				declared := props >= 0 && (dst.index != nil && dst.hasProp(name) || dst.index == nil && t.member(props, name) >= 0)
				if !declared {
					c.viol = append(c.viol, path()+`.required names "`+name+`" which is not in properties`)
				}
				dst.required = append(dst.required, name)
				b = t.nodes[b].next
			}
		}
	}
	if am := c.get(ri, "additionalProperties"); am >= 0 {
		switch t.nodes[am].kind {
		case vFalse:
			dst.closed = true
		case vTrue:
		default:
			c.viol = append(c.viol, path()+".additionalProperties must be a boolean")
		}
	}
}

func (c *compiler) scalars(ri int32, dst *snode, kind skind, typeName string, path func() string) {
	t := c.t
	enumValid := false
	if em := c.get(ri, "enum"); em >= 0 {
		re := t.res(em)
		enumValid = t.nodes[re].kind == vArray && t.nodes[re].n > 0
		if enumValid {
			b := re + 1
			for cnt := t.nodes[re].n; cnt > 0; cnt-- {
				if !c.scalarMatches(kind, b) {
					enumValid = false
					break
				}
				b = t.nodes[b].next
			}
		}
		if !enumValid {
			c.viol = append(c.viol, path()+".enum must be a non-empty array of "+typeName+" values")
		} else {
			dst.hasEnum = true
			buf := []byte{'['}
			b := re + 1
			for cnt := t.nodes[re].n; cnt > 0; cnt-- {
				s := c.scalar(b)
				dst.enum = append(dst.enum, s)
				if len(buf) > 1 {
					buf = append(buf, ',')
				}
				buf = appendScalar(buf, s)
				b = t.nodes[b].next
			}
			dst.enumJSON = string(append(buf, ']'))
		}
	}
	if cm := c.get(ri, "const"); cm >= 0 {
		if !c.scalarMatches(kind, cm) {
			c.viol = append(c.viol, path()+".const must be a "+typeName+" value")
			return
		}
		dst.hasConst = true
		dst.konst = c.scalar(cm)
		dst.constJSON = string(appendScalar(nil, dst.konst))
		if enumValid {
			in := false
			for _, e := range dst.enum {
				if scalarEqual(e, dst.konst) {
					in = true
					break
				}
			}
			if !in {
				c.viol = append(c.viol, path()+".const must be one of "+path()+".enum when both are declared")
			}
		}
	}
}
