package jsonv

import (
	"cmp"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode"
)

var (
	timeType          = reflect.TypeFor[time.Time]()
	rawMessageType    = reflect.TypeFor[json.RawMessage]()
	numberType        = reflect.TypeFor[json.Number]()
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

// ForType derives a schema in the R100 subset from a Go type, following
// encoding/json's conventions, and returns it as canonical JSON whose key
// order is meaningful (pass it to CompileSchema as json.RawMessage).
//
//   - struct: {"type":"object","properties":{…},"required":[…],
//     "additionalProperties":false}. Properties follow encoding/json's field
//     order and naming: json tag names, "-" skipped, unexported fields
//     skipped, embedded structs flattened with Go's dominance rules.
//     required lists the fields without omitempty/omitzero in that order and
//     is omitted when empty. A `jsonschema:"…"` tag, else a `description:"…"`
//     tag, becomes the property's description. The ",string" option makes a
//     bool/number/string field a string.
//   - string → string; bool → boolean; integer kinds → integer; float kinds
//     → number; json.Number → number; time.Time and encoding.TextMarshaler
//     implementations → string.
//   - slices and arrays → {"type":"array","items":…}; []byte → string
//     (base64, as encoding/json writes it).
//   - maps with string, integer or TextMarshaler keys → {"type":"object"}
//     (open: the subset cannot describe the values).
//   - interfaces, json.RawMessage and other json.Marshaler implementations →
//     {} (annotation-only: any JSON).
//   - *T → the schema of T. Note that null is then rejected (unless T is an
//     interface), so a nil pointer field should carry omitempty.
//   - chan, func, complex and unsafe.Pointer types, and recursive types (a
//     type reaching itself through fields, elements or pointers), are
//     errors. So is a type whose schema expands past MaxSharedExpansion
//     repeated values (a type used by several fields is derived once but
//     written out at each use). Map value types are checked for unsupported kinds only, so a
//     type that recurses only through map values is accepted.
//
// root=true produces the R103 parameter root: a struct as above but
// without additionalProperties (the root stays open) and an empty struct
// yields {"type":"object","properties":{}}; a map or interface root yields
// {"type":"object","properties":{}} as well. Other root types are errors.
func ForType(t reflect.Type, root bool) ([]byte, error) {
	if t == nil {
		return nil, fmt.Errorf("jsonv: ForType: nil type")
	}
	g := typeGen{visiting: map[reflect.Type]bool{}}
	var (
		node *Object
		err  error
	)
	if root {
		node, err = g.root(t)
	} else {
		node, err = g.schema(t)
	}
	if err != nil {
		return nil, err
	}
	b, err := EncodeTree(node)
	if errors.Is(err, ErrTooLarge) {
		return nil, fmt.Errorf("jsonv: ForType: the schema of %v expands to more than %d repeated values: "+
			"a type used in several fields is written out in full at each one", t, MaxSharedExpansion)
	}
	return b, err
}

type typeGen struct {
	visiting map[reflect.Type]bool // types on the current derivation path
	checked  map[reflect.Type]bool // map value types already checked
	// done holds the schema derived for each composite type; nothing
	// changes a node once derived (withDescription copies).
	done map[reflect.Type]*Object
}

func obj(kv ...any) *Object {
	o := &Object{}
	for i := 0; i < len(kv); i += 2 {
		o.Keys = append(o.Keys, kv[i].(string))
		o.Values = append(o.Values, kv[i+1])
	}
	return o
}

func typeNode(name string) *Object { return obj("type", name) }

func implementsMarshaler(t reflect.Type) bool {
	return t.Implements(marshalerType) || t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(marshalerType)
}

func implementsTextMarshaler(t reflect.Type) bool {
	return t.Implements(textMarshalerType) || t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(textMarshalerType)
}

func (g *typeGen) root(t reflect.Type) (*Object, error) {
	for t.Kind() == reflect.Pointer && !implementsMarshaler(t) && !implementsTextMarshaler(t) {
		t = t.Elem()
	}
	switch {
	case t == rawMessageType || t.Kind() == reflect.Interface:
		return obj("type", "object", "properties", obj()), nil
	case t == timeType || implementsMarshaler(t) || implementsTextMarshaler(t):
	case t.Kind() == reflect.Struct:
		return g.structSchema(t, true)
	case t.Kind() == reflect.Map:
		if _, err := g.schema(t); err != nil {
			return nil, err
		}
		return obj("type", "object", "properties", obj()), nil
	}
	return nil, fmt.Errorf("jsonv: ForType: parameters must derive from a struct, a map or an interface, not %v", t)
}

func (g *typeGen) schema(t reflect.Type) (*Object, error) {
	switch {
	case t == timeType:
		return typeNode("string"), nil
	case t == rawMessageType:
		return obj(), nil
	case t == numberType:
		return typeNode("number"), nil
	}
	if t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface {
		if implementsMarshaler(t) {
			return obj(), nil
		}
		if implementsTextMarshaler(t) {
			return typeNode("string"), nil
		}
	}
	switch t.Kind() {
	case reflect.Bool:
		return typeNode("boolean"), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return typeNode("integer"), nil
	case reflect.Float32, reflect.Float64:
		return typeNode("number"), nil
	case reflect.String:
		return typeNode("string"), nil
	case reflect.Interface:
		return obj(), nil
	}
	if o, ok := g.done[t]; ok {
		// Derived once per type: a type used in several fields shares
		// one node, so a DAG of types stays linear here (EncodeTree then
		// bounds its expansion, see MaxSharedExpansion).
		return o, nil
	}
	if g.visiting[t] {
		return nil, fmt.Errorf("jsonv: ForType: recursive type %v cannot be expressed in the schema subset", t)
	}
	g.visiting[t] = true
	defer delete(g.visiting, t)
	o, err := g.composite(t)
	if err == nil {
		if g.done == nil {
			g.done = map[reflect.Type]*Object{}
		}
		g.done[t] = o
	}
	return o, err
}

// composite derives the schema of a pointer, slice, array, map or struct
// type (or fails for any other kind).
func (g *typeGen) composite(t reflect.Type) (*Object, error) {
	switch t.Kind() {
	case reflect.Pointer:
		// Marshaler methods are found on the element, value or pointer
		// receiver alike (implementsMarshaler checks both).
		return g.schema(t.Elem())
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			p := reflect.PointerTo(t.Elem())
			if !p.Implements(marshalerType) && !p.Implements(textMarshalerType) {
				return typeNode("string"), nil
			}
		}
		fallthrough
	case reflect.Array:
		items, err := g.schema(t.Elem())
		if err != nil {
			return nil, err
		}
		return obj("type", "array", "items", items), nil
	case reflect.Map:
		k := t.Key()
		switch k.Kind() {
		case reflect.String, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		default:
			if !implementsTextMarshaler(k) {
				return nil, fmt.Errorf("jsonv: ForType: unsupported map key type %v", k)
			}
		}
		if err := g.check(t.Elem()); err != nil {
			return nil, err
		}
		return typeNode("object"), nil
	case reflect.Struct:
		return g.structSchema(t, false)
	}
	return nil, fmt.Errorf("jsonv: ForType: unsupported type %v", t)
}

// check verifies that t holds no unsupported kind, without deriving a
// schema; recursion ends the walk instead of failing it.
func (g *typeGen) check(t reflect.Type) error {
	if g.visiting[t] || g.checked[t] {
		return nil
	}
	if g.checked == nil {
		g.checked = map[reflect.Type]bool{}
	}
	g.checked[t] = true
	if t == timeType || t == rawMessageType || implementsMarshaler(t) || implementsTextMarshaler(t) {
		return nil
	}
	switch t.Kind() {
	case reflect.Complex64, reflect.Complex128, reflect.Chan, reflect.Func, reflect.UnsafePointer, reflect.Invalid:
		return fmt.Errorf("jsonv: ForType: unsupported type %v", t)
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return g.check(t.Elem())
	case reflect.Map:
		k := t.Key()
		switch k.Kind() {
		case reflect.String, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		default:
			if !implementsTextMarshaler(k) {
				return fmt.Errorf("jsonv: ForType: unsupported map key type %v", k)
			}
		}
		return g.check(t.Elem())
	case reflect.Struct:
		for _, f := range typeFields(t) {
			if err := g.check(f.typ); err != nil {
				return err
			}
		}
	}
	return nil
}

func (g *typeGen) structSchema(t reflect.Type, root bool) (*Object, error) {
	if root {
		if g.visiting[t] {
			return nil, fmt.Errorf("jsonv: ForType: recursive type %v cannot be expressed in the schema subset", t)
		}
		g.visiting[t] = true
		defer delete(g.visiting, t)
	}
	props := obj()
	var required []any
	for _, f := range typeFields(t) {
		var s *Object
		if f.quoted {
			s = typeNode("string")
		} else {
			var err error
			if s, err = g.schema(f.typ); err != nil {
				return nil, err
			}
		}
		if f.desc != "" {
			s = withDescription(s, f.desc)
		}
		props.Keys = append(props.Keys, f.name)
		props.Values = append(props.Values, s)
		if !f.optional {
			required = append(required, f.name)
		}
	}
	o := obj("type", "object", "properties", props)
	if len(required) > 0 {
		o.Keys = append(o.Keys, "required")
		o.Values = append(o.Values, required)
	}
	if !root {
		o.Keys = append(o.Keys, "additionalProperties")
		o.Values = append(o.Values, false)
	}
	return o, nil
}

// withDescription returns s with a description placed right after "type"
// (or first, for an annotation-only node).
func withDescription(s *Object, desc string) *Object {
	at := 0
	if len(s.Keys) > 0 && s.Keys[0] == "type" {
		at = 1
	}
	o := &Object{
		Keys:   slices.Insert(slices.Clone(s.Keys), at, "description"),
		Values: slices.Insert(slices.Clone(s.Values), at, any(desc)),
	}
	return o
}

// field is one JSON-visible struct field, as encoding/json sees it.
type field struct {
	name     string
	tagged   bool
	index    []int
	typ      reflect.Type
	optional bool // omitempty or omitzero
	quoted   bool // ",string" on a bool/number/string
	desc     string
}

// typeFields returns the fields encoding/json encodes for struct type t,
// in encoding order (the algorithm of encoding/json's typeFields).
func typeFields(t reflect.Type) []field {
	current := []field{}
	next := []field{{typ: t}}
	var count, nextCount map[reflect.Type]int
	visited := map[reflect.Type]bool{}
	var fields []field
	for len(next) > 0 {
		current, next = next, current[:0]
		count, nextCount = nextCount, map[reflect.Type]int{}
		for _, f := range current {
			if visited[f.typ] {
				continue
			}
			visited[f.typ] = true
			for i := 0; i < f.typ.NumField(); i++ {
				sf := f.typ.Field(i)
				if sf.Anonymous {
					ft := sf.Type
					if ft.Kind() == reflect.Pointer {
						ft = ft.Elem()
					}
					if !sf.IsExported() && ft.Kind() != reflect.Struct {
						continue
					}
				} else if !sf.IsExported() {
					continue
				}
				tag := sf.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, opts, _ := strings.Cut(tag, ",")
				if !isValidTag(name) {
					name = ""
				}
				index := make([]int, len(f.index)+1)
				copy(index, f.index)
				index[len(f.index)] = i
				ft := sf.Type
				if ft.Name() == "" && ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				quoted := false
				if hasOpt(opts, "string") {
					switch ft.Kind() {
					case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
						reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
						reflect.Float32, reflect.Float64, reflect.String:
						quoted = true
					}
				}
				if name != "" || !sf.Anonymous || ft.Kind() != reflect.Struct {
					tagged := name != ""
					if name == "" {
						name = sf.Name
					}
					desc := sf.Tag.Get("jsonschema")
					if desc == "" {
						desc = sf.Tag.Get("description")
					}
					fields = append(fields, field{
						name: name, tagged: tagged, index: index, typ: sf.Type,
						optional: hasOpt(opts, "omitempty") || hasOpt(opts, "omitzero"),
						quoted:   quoted, desc: desc,
					})
					if count[f.typ] > 1 {
						// Two copies make the annihilation below drop it.
						fields = append(fields, fields[len(fields)-1])
					}
					continue
				}
				nextCount[ft]++
				if nextCount[ft] == 1 {
					next = append(next, field{name: ft.Name(), index: index, typ: ft})
				}
			}
		}
	}
	slices.SortFunc(fields, func(a, b field) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		if c := cmp.Compare(len(a.index), len(b.index)); c != 0 {
			return c
		}
		if a.tagged != b.tagged {
			if a.tagged {
				return -1
			}
			return 1
		}
		return slices.Compare(a.index, b.index)
	})
	out := fields[:0]
	for advance, i := 0, 0; i < len(fields); i += advance {
		fi := fields[i]
		for advance = 1; i+advance < len(fields); advance++ {
			if fields[i+advance].name != fi.name {
				break
			}
		}
		if advance == 1 {
			out = append(out, fi)
			continue
		}
		// Dominant field: the shallowest; a tie at the same depth with the
		// same tagged-ness hides the name entirely.
		if len(fields[i].index) == len(fields[i+1].index) && fields[i].tagged == fields[i+1].tagged {
			continue
		}
		out = append(out, fi)
	}
	slices.SortFunc(out, func(a, b field) int { return slices.Compare(a.index, b.index) })
	return out
}

func hasOpt(opts, name string) bool {
	for opts != "" {
		var o string
		o, opts, _ = strings.Cut(opts, ",")
		if o == name {
			return true
		}
	}
	return false
}

// isValidTag is encoding/json's rule for usable tag names.
func isValidTag(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}
