package jsonv

import (
	"encoding"
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// Unmarshaler decodes JSON into values of one Go type, reproducing
// encoding/json's Unmarshal exactly for a subset of types and inputs and
// reporting "not handled" for everything else, so that the caller can fall
// back to encoding/json. It exists for the typed-tool hot path, where
// json.Unmarshal's reflection and validation pre-pass dominate the cost of a
// small call: decoding writes scalars and struct fields through precomputed
// offsets and only allocates what the result itself holds (strings, maps,
// slice backing arrays, pointees, boxed interface values).
//
// The reference is the classic decoder (encoding/json's decode.go, built
// without GOEXPERIMENT=jsonv2). The supported types are those
// UnmarshalerFor accepts; see there. An Unmarshaler is immutable once built
// and safe for concurrent use.
type Unmarshaler struct {
	typ  reflect.Type
	root *udec
}

// unmarshalMaxDepth bounds container nesting (objects and arrays, skipped
// values included). encoding/json accepts up to 10,000 levels; deeper input
// here merely returns false, which keeps the recursion of the decoder short.
const unmarshalMaxDepth = 1000

// uop is what a udec does with a JSON value.
type uop uint8

const (
	uopBool uop = iota
	uopString
	uopInt     // signed integer kinds; size says which
	uopUint    // unsigned integer kinds, uintptr included; size says which
	uopFloat32 // float32 kind
	uopFloat64 // float64 kind
	uopStruct
	uopPointer
	uopSlice
	uopMap // string-kind keys only
	uopAny // interface without methods
)

// udec is the compiled decoder of one Go type. Decoders of recursive types
// point at each other; they are built once per UnmarshalerFor call.
type udec struct {
	op    uop
	size  uintptr // size of the type (integers: 1, 2, 4 or 8)
	typ   reflect.Type
	elem  *udec   // uopPointer, uopSlice, uopMap: the element decoder
	esize uintptr // uopSlice: element size
	// uopSlice: how to grow the slice by one element (see ugrowFor).
	grow ugrowKind
	// uopMap: the map is a map[string]any or map[string]string, decoded
	// without reflection.
	mapAny, mapString bool
	// uopStruct: the JSON-visible fields in field order, and for large
	// structs an index by exact name.
	fields []ufield
	byName map[string]int
}

// ufield is one JSON-visible struct field.
type ufield struct {
	name   string // JSON name (ASCII)
	folded string // name with a-z mapped to A-Z: encoding/json's foldName
	offset uintptr
	dec    *udec
}

// uslice is the memory layout of a slice header.
type uslice struct {
	data     unsafe.Pointer
	len, cap int
}

// uemptyBase is the backing store of the empty non-nil slices that an empty
// JSON array produces (encoding/json uses reflect.MakeSlice(t, 0, 0)).
var uemptyBase [1]uintptr

// ulinearFields is the struct size up to which exact key lookup scans the
// fields instead of using a map.
const ulinearFields = 12

var (
	ujsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	utextUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// UnmarshalerFor returns a decoder for t, or nil when t (or any type
// reachable from it) is outside the supported subset:
//
//   - bool, string, the integer kinds (uintptr included), float32 and
//     float64, named or not;
//   - pointers, slices and maps with string-kind keys of supported types;
//   - interfaces without methods (any), decoded as encoding/json does into a
//     nil interface: map[string]any, []any, float64, string, bool, nil;
//   - structs whose fields are all non-embedded, carry no ",string" option
//     and have distinct ASCII JSON names (tag names limited to
//     [A-Za-z0-9_.-]). Unexported fields and fields tagged "-" are ignored
//     as encoding/json ignores them; the tag "-," names a field "-".
//
// Rejected outright: types implementing json.Unmarshaler or
// encoding.TextUnmarshaler on T or *T (time.Time, json.RawMessage, …),
// json.Number, interfaces with methods, arrays, slices of a Uint8 kind
// (base64), complex, chan, func and unsafe.Pointer kinds, maps whose key is
// not of string kind, is json.Number or implements either unmarshaler
// interface, and structs with an embedded field, a ",string" option, a
// non-ASCII or duplicate JSON name or a tag name outside the set above.
// Only the fields encoding/json would decode are checked: an unexported or
// "-" field of any type is fine. Recursive types (type T struct{ Next *T })
// are supported.
//
// Building a decoder walks t with reflection and there is no cache (the
// package keeps no global state): callers on a hot path build it once per
// type and keep it.
func UnmarshalerFor(t reflect.Type) *Unmarshaler {
	if t == nil {
		return nil
	}
	c := ucompiler{seen: map[reflect.Type]*udec{}}
	d := c.compile(t)
	if d == nil || c.failed {
		return nil
	}
	return &Unmarshaler{typ: t, root: d}
}

// Type returns the Go type the decoder writes (nil for a nil Unmarshaler).
func (u *Unmarshaler) Type() reflect.Type {
	if u == nil {
		return nil
	}
	return u.typ
}

// ucompiler builds the udec graph of one type.
type ucompiler struct {
	seen   map[reflect.Type]*udec // built or being built (recursive types)
	failed bool
}

// uhasUnmarshalMethod reports whether t or *t implements json.Unmarshaler or
// encoding.TextUnmarshaler, the methods encoding/json would call.
func uhasUnmarshalMethod(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return t.Implements(ujsonUnmarshalerType) || t.Implements(utextUnmarshalerType) ||
		p.Implements(ujsonUnmarshalerType) || p.Implements(utextUnmarshalerType)
}

func (c *ucompiler) compile(t reflect.Type) *udec {
	if d, ok := c.seen[t]; ok {
		return d // possibly still being built: the placeholder of a recursive type
	}
	if t == numberType || uhasUnmarshalMethod(t) {
		c.failed = true
		return nil
	}
	d := &udec{typ: t, size: t.Size()}
	c.seen[t] = d
	switch t.Kind() {
	case reflect.Bool:
		d.op = uopBool
	case reflect.String:
		d.op = uopString
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		d.op = uopInt
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		d.op = uopUint
	case reflect.Float32:
		d.op = uopFloat32
	case reflect.Float64:
		d.op = uopFloat64
	case reflect.Interface:
		if t.NumMethod() != 0 {
			c.failed = true
			return nil
		}
		d.op = uopAny
	case reflect.Pointer:
		d.op = uopPointer
		if d.elem = c.compile(t.Elem()); d.elem == nil {
			return nil
		}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			c.failed = true
			return nil
		}
		d.op = uopSlice
		d.esize = t.Elem().Size()
		d.grow = ugrowFor(t.Elem())
		if d.elem = c.compile(t.Elem()); d.elem == nil {
			return nil
		}
	case reflect.Map:
		k := t.Key()
		if k.Kind() != reflect.String || k == numberType || uhasUnmarshalMethod(k) {
			c.failed = true
			return nil
		}
		d.op = uopMap
		d.mapAny = t == reflect.TypeFor[map[string]any]()
		d.mapString = t == reflect.TypeFor[map[string]string]()
		if d.elem = c.compile(t.Elem()); d.elem == nil {
			return nil
		}
	case reflect.Struct:
		d.op = uopStruct
		if !c.structFields(d, t) {
			c.failed = true
			return nil
		}
	default: // Array, Complex64/128, Chan, Func, UnsafePointer, Invalid
		c.failed = true
		return nil
	}
	return d
}

// ugrowKind says how the decoder grows a slice by one element: with
// reflect.Value.Grow(1), or, for the common element layouts, by appending
// to the slice viewed as a []E whose E has the element's size, alignment
// and pointer layout. The runtime's growslice then picks the same capacity
// as for reflection (it depends on the element size and whether it holds
// pointers), and the new backing array carries correct pointer information
// for the garbage collector.
type ugrowKind uint8

const (
	ugrowReflect ugrowKind = iota
	ugrowString
	ugrowAny
	ugrowPointer // pointers and maps
	ugrowSlice
	ugrow8 // 8-byte scalars
	ugrow4
	ugrow2
	ugrow1
)

// ugrowFor returns the ugrowKind for slices with element type e.
func ugrowFor(e reflect.Type) ugrowKind {
	switch e.Kind() {
	case reflect.String:
		return ugrowString
	case reflect.Interface: // without methods, as compile ensures
		return ugrowAny
	case reflect.Pointer, reflect.Map:
		return ugrowPointer
	case reflect.Slice:
		return ugrowSlice
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		switch {
		case e.Size() == 8 && uintptr(e.Align()) == unsafe.Alignof(uint64(0)):
			return ugrow8
		case e.Size() == 4 && e.Align() == 4:
			return ugrow4
		case e.Size() == 2 && e.Align() == 2:
			return ugrow2
		case e.Size() == 1:
			return ugrow1
		}
	}
	return ugrowReflect
}

// growSlice grows the slice at p by one element, as
// reflect.Value.Grow(1) does when len == cap (the only case the decoder
// grows in); the new elements are zero.
func (d *udec) growSlice(p unsafe.Pointer) {
	switch d.grow {
	case ugrowString:
		ugrow[string](p)
	case ugrowAny:
		ugrow[any](p)
	case ugrowPointer:
		ugrow[unsafe.Pointer](p)
	case ugrowSlice:
		ugrow[uslice](p)
	case ugrow8:
		ugrow[uint64](p)
	case ugrow4:
		ugrow[uint32](p)
	case ugrow2:
		ugrow[uint16](p)
	case ugrow1:
		ugrow[uint8](p)
	default:
		reflect.NewAt(d.typ, p).Elem().Grow(1)
	}
}

// ugrow grows the slice at p, viewed as a []E, by one element.
func ugrow[E any](p unsafe.Pointer) {
	s := (*[]E)(p)
	*s = slices.Grow(*s, 1)
}

// structFields fills d.fields with the fields encoding/json decodes for the
// struct type t, in field order, or reports false when t is outside the
// subset.
func (c *ucompiler) structFields(d *udec, t reflect.Type) bool {
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if sf.Anonymous {
			return false // embedding brings in Go's dominance rules
		}
		if !sf.IsExported() {
			continue
		}
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if hasOpt(opts, "string") {
			return false
		}
		if name == "" {
			name = sf.Name
		} else if !uconservativeTag(name) {
			return false // encoding/json might fall back to the Go name
		}
		for k := 0; k < len(name); k++ {
			if name[k] >= utf8.RuneSelf {
				return false // non-ASCII names need Unicode case folding
			}
		}
		for _, f := range d.fields {
			if f.name == name {
				return false // encoding/json's dominance rules would decide
			}
		}
		fd := c.compile(sf.Type)
		if fd == nil {
			return false
		}
		d.fields = append(d.fields, ufield{
			name:   name,
			folded: ufoldASCII(name),
			offset: sf.Offset,
			dec:    fd,
		})
	}
	if len(d.fields) > ulinearFields {
		d.byName = make(map[string]int, len(d.fields))
		for i, f := range d.fields {
			d.byName[f.name] = i
		}
	}
	return true
}

// uconservativeTag reports whether a tag name uses only [A-Za-z0-9_.-],
// characters encoding/json's isValidTag certainly accepts.
func uconservativeTag(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9',
			c == '_', c == '-', c == '.':
		default:
			return false
		}
	}
	return s != ""
}

// ufoldASCII maps a-z to A-Z, which is encoding/json's foldName for ASCII.
func ufoldASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - ('a' - 'A')
		}
	}
	return string(b)
}

// Unmarshal decodes data into the value of the decoder's type that p points
// to; p must point to a ZERO value of that type (not a partially filled
// one). It returns false when it cannot reproduce encoding/json exactly for
// this input: invalid JSON anywhere (skipped values included), trailing
// bytes other than whitespace, empty input, a type mismatch, a number that
// does not fit (or is not an integer for an integer kind), a float that
// overflows, nesting deeper than 1000 containers, and so on. *p may then be
// partially written: the caller must reset it to the zero value and use
// encoding/json. When Unmarshal returns true, *p equals what
// json.Unmarshal(data, p) produces from a zero value, and json.Unmarshal
// would have returned a nil error.
//
// As in encoding/json, invalid UTF-8 and lone UTF-16 surrogates in strings
// become U+FFFD, struct keys match field names exactly first and then
// case-insensitively (the first field in field order wins), unknown keys are
// ignored, and duplicate keys decode again into the same field (merging
// into structs, maps and slice elements already there).
//
// Unmarshal retains neither data nor p, and the result never aliases data
// (strings are copied); p does not escape, so it may point to a local
// variable. A nil u or p returns false. Unmarshal never panics.
func (u *Unmarshaler) Unmarshal(data []byte, p unsafe.Pointer) bool {
	if u == nil || p == nil {
		return false
	}
	s := ustate{data: data}
	i := s.value(u.root, p, 0)
	return i >= 0 && skipSpace(data, i) == len(data)
}

// ustate is one decoding run. Its methods take the index of the next byte
// to read and return the index after what they consumed, or -1 when the
// input is not handled.
type ustate struct {
	data  []byte
	depth int
}

// uhasLit reports whether data[i:] starts with lit.
func uhasLit(data []byte, i int, lit string) bool {
	return len(data)-i >= len(lit) && string(data[i:i+len(lit)]) == lit
}

// value decodes the value at data[i:] (after optional whitespace) into the
// value of type d.typ at p.
func (s *ustate) value(d *udec, p unsafe.Pointer, i int) int {
	data := s.data
	i = skipSpace(data, i)
	if i >= len(data) {
		return -1
	}
	c := data[i]
	if c == 'n' {
		if !uhasLit(data, i, "null") {
			return -1
		}
		// null sets pointers, slices, maps and interfaces to nil and
		// leaves everything else alone.
		switch d.op {
		case uopPointer, uopMap:
			*(*unsafe.Pointer)(p) = nil
		case uopSlice:
			*(*uslice)(p) = uslice{}
		case uopAny:
			if !uanyReplaceable(p) {
				return -1
			}
			*(*any)(p) = nil
		}
		return i + 4
	}
	switch d.op {
	case uopString:
		if c != '"' {
			return -1
		}
		end, decode, ok := scanString(data, i)
		if !ok {
			return -1
		}
		*(*string)(p) = ustring(data[i+1:end-1], decode)
		return end
	case uopBool:
		switch {
		case c == 't' && uhasLit(data, i, "true"):
			*(*bool)(p) = true
			return i + 4
		case c == 'f' && uhasLit(data, i, "false"):
			*(*bool)(p) = false
			return i + 5
		}
		return -1
	case uopInt:
		end, _, ok := scanNumber(data, i)
		if !ok {
			return -1
		}
		n, ok := uparseInt(data[i:end], d.size*8)
		if !ok {
			return -1
		}
		switch d.size {
		case 1:
			*(*int8)(p) = int8(n)
		case 2:
			*(*int16)(p) = int16(n)
		case 4:
			*(*int32)(p) = int32(n)
		default:
			*(*int64)(p) = n
		}
		return end
	case uopUint:
		end, _, ok := scanNumber(data, i)
		if !ok {
			return -1
		}
		n, ok := uparseUint(data[i:end], d.size*8)
		if !ok {
			return -1
		}
		switch d.size {
		case 1:
			*(*uint8)(p) = uint8(n)
		case 2:
			*(*uint16)(p) = uint16(n)
		case 4:
			*(*uint32)(p) = uint32(n)
		default:
			*(*uint64)(p) = n
		}
		return end
	case uopFloat32, uopFloat64:
		bits := 64
		if d.op == uopFloat32 {
			bits = 32
		}
		f, end := uparseFloat(data, i, bits)
		if end < 0 {
			return -1
		}
		if bits == 32 {
			*(*float32)(p) = float32(f)
		} else {
			*(*float64)(p) = f
		}
		return end
	case uopStruct:
		if c != '{' {
			return -1
		}
		return s.object(d, p, i)
	case uopPointer:
		pp := (*unsafe.Pointer)(p)
		if *pp == nil {
			// encoding/json allocates before looking at the value (a
			// mismatch leaves the new pointee behind; we return false then).
			*pp = reflect.New(d.elem.typ).UnsafePointer()
		}
		return s.value(d.elem, *pp, i)
	case uopSlice:
		if c != '[' {
			return -1
		}
		return s.array(d, p, i)
	case uopMap:
		if c != '{' {
			return -1
		}
		return s.mapObject(d, p, i)
	case uopAny:
		if !uanyReplaceable(p) {
			return -1
		}
		v, end := s.anyValue(i)
		if end < 0 {
			return -1
		}
		*(*any)(p) = v
		return end
	}
	return -1
}

// uanyReplaceable reports whether decoding into the interface at p replaces
// its content, as encoding/json does for a nil interface or one holding a
// non-pointer. (One holding a non-nil pointer is decoded through; the
// decoder never stores pointers in interfaces, so that cannot happen for a
// zero starting value.)
func uanyReplaceable(p unsafe.Pointer) bool {
	v := *(*any)(p)
	return v == nil || reflect.TypeOf(v).Kind() != reflect.Pointer
}

// ustring returns the content of a string body scanned by scanString; decode
// is scanString's flag (escapes or invalid UTF-8 present). Decoding follows
// encoding/json (invalid UTF-8 and lone surrogates become U+FFFD), and the
// result is the only allocation.
func ustring(body []byte, decode bool) string {
	if !decode {
		return string(body)
	}
	// The decoded form is never longer than the body unless invalid UTF-8
	// bytes expand to U+FFFD, in which case append grows the buffer.
	b := appendUnescaped(make([]byte, 0, len(body)), body)
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// uparseInt parses a JSON number literal as strconv.ParseInt(lit, 10,
// bits) does: only an optional '-' and digits, within range.
func uparseInt(lit []byte, bits uintptr) (int64, bool) {
	neg := lit[0] == '-'
	digits := lit
	if neg {
		digits = lit[1:]
	}
	u, ok := uparseDigits(digits)
	if !ok {
		return 0, false
	}
	limit := uint64(1) << (bits - 1) // magnitude of the minimum
	if neg {
		if u > limit {
			return 0, false
		}
		return -int64(u), true // u == limit wraps to the minimum
	}
	if u >= limit {
		return 0, false
	}
	return int64(u), true
}

// uparseUint parses a JSON number literal as strconv.ParseUint(lit, 10,
// bits) does: digits only (no sign), within range.
func uparseUint(lit []byte, bits uintptr) (uint64, bool) {
	u, ok := uparseDigits(lit)
	if !ok || bits < 64 && u >= uint64(1)<<bits {
		return 0, false
	}
	return u, true
}

// uparseDigits parses a non-empty run of decimal digits into a uint64,
// failing on any other byte or on overflow.
func uparseDigits(b []byte) (uint64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var u uint64
	for _, c := range b {
		d := c - '0'
		if d > 9 {
			return 0, false
		}
		if u > (1<<64-1)/10 {
			return 0, false
		}
		u *= 10
		if u+uint64(d) < u {
			return 0, false
		}
		u += uint64(d)
	}
	return u, true
}

// uparseFloat scans the number literal at data[i] and parses it as
// strconv.ParseFloat(lit, bits). It returns the index after the literal, or
// -1 for a malformed literal or a ParseFloat error (overflow).
func uparseFloat(data []byte, i, bits int) (float64, int) {
	end, _, ok := scanNumber(data, i)
	if !ok {
		return 0, -1
	}
	if bits == 64 {
		if f, ok := ufastFloat(data[i:end]); ok {
			return f, end
		}
	}
	// ParseFloat copies the string into any error it returns, so viewing
	// the input bytes as a string for the call is safe.
	f, err := strconv.ParseFloat(unsafe.String(&data[i], end-i), bits)
	if err != nil {
		return 0, -1
	}
	return f, end
}

// upow10 holds the powers of ten that are exact in a float64.
var upow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// ufastFloat converts a valid JSON number literal to the float64
// strconv.ParseFloat(lit, 64) returns, for the common literals whose
// digits form an integer m <= 2^53 and whose decimal exponent e has
// |e| <= 22: m and 10^|e| are then exact, so one multiplication or division
// yields the correctly rounded result, as ParseFloat's own exact path does.
// ok is false for every other literal.
func ufastFloat(lit []byte) (f float64, ok bool) {
	i := 0
	neg := lit[0] == '-'
	if neg {
		i++
	}
	var m uint64
	nd, exp := 0, 0
	for ; i < len(lit) && '0' <= lit[i] && lit[i] <= '9'; i++ {
		if m != 0 || lit[i] != '0' {
			nd++
		}
		m = m*10 + uint64(lit[i]-'0')
		if nd > 16 {
			return 0, false
		}
	}
	if i < len(lit) && lit[i] == '.' {
		for i++; i < len(lit) && '0' <= lit[i] && lit[i] <= '9'; i++ {
			if m != 0 || lit[i] != '0' {
				nd++
			}
			m = m*10 + uint64(lit[i]-'0')
			exp--
			if nd > 16 || exp < -22 {
				return 0, false
			}
		}
	}
	if i < len(lit) { // exponent
		i++
		eneg := false
		if lit[i] == '+' || lit[i] == '-' {
			eneg = lit[i] == '-'
			i++
		}
		e := 0
		for ; i < len(lit); i++ {
			e = e*10 + int(lit[i]-'0')
			if e > 100 {
				return 0, false
			}
		}
		if eneg {
			e = -e
		}
		exp += e
	}
	if m > 1<<53 {
		return 0, false
	}
	f = float64(m)
	switch {
	case m == 0:
	case exp == 0:
	case 0 < exp && exp <= 22:
		f *= upow10[exp]
	case -22 <= exp && exp < 0:
		f /= upow10[-exp]
	default:
		return 0, false
	}
	if neg {
		f = -f
	}
	return f, true
}

// object decodes the JSON object at data[i] == '{' into the struct at p.
func (s *ustate) object(d *udec, p unsafe.Pointer, i int) int {
	if s.depth++; s.depth > unmarshalMaxDepth {
		return -1
	}
	data := s.data
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		s.depth--
		return i + 1
	}
	for {
		if i >= len(data) || data[i] != '"' {
			return -1
		}
		end, decode, ok := scanString(data, i)
		if !ok {
			return -1
		}
		f := d.lookup(data[i+1:end-1], decode)
		i = skipSpace(data, end)
		if i >= len(data) || data[i] != ':' {
			return -1
		}
		if f == nil {
			i = s.skip(i + 1)
		} else {
			i = s.value(f.dec, unsafe.Add(p, f.offset), i+1)
		}
		if i < 0 {
			return -1
		}
		i = skipSpace(data, i)
		if i >= len(data) {
			return -1
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case '}':
			s.depth--
			return i + 1
		default:
			return -1
		}
	}
}

// lookup returns the field a key selects, as encoding/json's object does:
// the field with exactly that name, else the first field (in field order)
// whose name equals the key under foldName; nil for an unknown key. body is
// the key's scanned string body and decode scanString's flag for it.
func (d *udec) lookup(body []byte, decode bool) *ufield {
	if decode {
		return d.lookupEscaped(body)
	}
	if f := d.lookupExact(body); f != nil {
		return f
	}
	return d.lookupFolded(body)
}

// lookupEscaped is lookup for a key body holding escapes or invalid UTF-8.
func (d *udec) lookupEscaped(body []byte) *ufield {
	var buf [64]byte
	key := appendUnescaped(buf[:0], body)
	if f := d.lookupExact(key); f != nil {
		return f
	}
	return d.lookupFolded(key)
}

// lookupExact returns the field named key, or nil.
func (d *udec) lookupExact(key []byte) *ufield {
	if d.byName != nil {
		if j, ok := d.byName[string(key)]; ok {
			return &d.fields[j]
		}
		return nil
	}
	for j := range d.fields {
		if d.fields[j].name == string(key) {
			return &d.fields[j]
		}
	}
	return nil
}

// lookupFolded returns the first field whose name equals key under
// encoding/json's foldName, or nil. foldName maps each rune to the smallest
// rune of its case-folding orbit. The names are ASCII, so a key can only
// match if every rune of it folds to ASCII: ASCII itself, and the only two
// non-ASCII runes whose orbit holds an ASCII letter, U+212A KELVIN SIGN
// (→ 'K') and U+017F LATIN SMALL LETTER LONG S (→ 'S'). Invalid UTF-8 and
// lone surrogates were replaced by U+FFFD, which matches nothing.
func (d *udec) lookupFolded(key []byte) *ufield {
	var fbuf [64]byte
	folded := fbuf[:0]
	for j := 0; j < len(key); {
		c := key[j]
		if c < utf8.RuneSelf {
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			folded = append(folded, c)
			j++
			continue
		}
		r, n := utf8.DecodeRune(key[j:])
		switch r {
		case '\u212A':
			folded = append(folded, 'K')
		case '\u017F':
			folded = append(folded, 'S')
		default:
			return nil
		}
		j += n
	}
	for j := range d.fields {
		if d.fields[j].folded == string(folded) {
			return &d.fields[j]
		}
	}
	return nil
}

// array decodes the JSON array at data[i] == '[' into the slice at p,
// mirroring encoding/json's array: elements are decoded in place (into
// existing elements when the slice already has them), the slice grows one
// reflect.Value.Grow(1) at a time, is truncated to the number of elements
// read, and an empty array yields an empty non-nil slice.
func (s *ustate) array(d *udec, p unsafe.Pointer, i int) int {
	if s.depth++; s.depth > unmarshalMaxDepth {
		return -1
	}
	data := s.data
	h := (*uslice)(p)
	n := 0
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == ']' {
		i++
	} else {
		for {
			if n >= h.cap {
				d.growSlice(p)
			}
			if n >= h.len {
				h.len = n + 1
			}
			i = s.value(d.elem, unsafe.Add(h.data, uintptr(n)*d.esize), i)
			if i < 0 {
				return -1
			}
			n++
			i = skipSpace(data, i)
			if i >= len(data) {
				return -1
			}
			if data[i] == ']' {
				i++
				break
			}
			if data[i] != ',' {
				return -1
			}
			i++
		}
	}
	if n < h.len {
		h.len = n
	}
	if n == 0 {
		*h = uslice{data: unsafe.Pointer(&uemptyBase)}
	}
	s.depth--
	return i
}

// mapObject decodes the JSON object at data[i] == '{' into the map at p,
// mirroring encoding/json: a nil map is made, each value is decoded into a
// fresh zero element and stored under its key (the last duplicate wins).
func (s *ustate) mapObject(d *udec, p unsafe.Pointer, i int) int {
	if s.depth++; s.depth > unmarshalMaxDepth {
		return -1
	}
	data := s.data
	if d.mapAny || d.mapString {
		return s.mapFast(d, p, i)
	}
	// A map value is one pointer; writing it directly (rather than with
	// reflect.Value.Set) keeps p from escaping.
	if mp := (*unsafe.Pointer)(p); *mp == nil {
		*mp = reflect.MakeMap(d.typ).UnsafePointer()
	}
	mv := reflect.NewAt(d.typ, p).Elem()
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		s.depth--
		return i + 1
	}
	ev := reflect.New(d.elem.typ).Elem()
	ep := ev.Addr().UnsafePointer()
	kv := reflect.New(d.typ.Key()).Elem()
	for {
		if i >= len(data) || data[i] != '"' {
			return -1
		}
		end, decode, ok := scanString(data, i)
		if !ok {
			return -1
		}
		key := ustring(data[i+1:end-1], decode)
		i = skipSpace(data, end)
		if i >= len(data) || data[i] != ':' {
			return -1
		}
		ev.SetZero()
		if i = s.value(d.elem, ep, i+1); i < 0 {
			return -1
		}
		kv.SetString(key)
		mv.SetMapIndex(kv, ev)
		i = skipSpace(data, i)
		if i >= len(data) {
			return -1
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case '}':
			s.depth--
			return i + 1
		default:
			return -1
		}
	}
}

// mapFast is mapObject for map[string]any and map[string]string, with
// native map operations.
func (s *ustate) mapFast(d *udec, p unsafe.Pointer, i int) int {
	data := s.data
	var ma map[string]any
	var ms map[string]string
	if d.mapAny {
		if ma = *(*map[string]any)(p); ma == nil {
			ma = make(map[string]any)
			*(*map[string]any)(p) = ma
		}
	} else {
		if ms = *(*map[string]string)(p); ms == nil {
			ms = make(map[string]string)
			*(*map[string]string)(p) = ms
		}
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		s.depth--
		return i + 1
	}
	for {
		if i >= len(data) || data[i] != '"' {
			return -1
		}
		end, decode, ok := scanString(data, i)
		if !ok {
			return -1
		}
		key := ustring(data[i+1:end-1], decode)
		i = skipSpace(data, end)
		if i >= len(data) || data[i] != ':' {
			return -1
		}
		if d.mapAny {
			var v any
			if v, i = s.anyValue(i + 1); i < 0 {
				return -1
			}
			ma[key] = v
		} else {
			// A fresh zero string, then the value (null leaves it "").
			var v string
			if i = s.value(d.elem, unsafe.Pointer(&v), i+1); i < 0 {
				return -1
			}
			ms[key] = v
		}
		i = skipSpace(data, i)
		if i >= len(data) {
			return -1
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case '}':
			s.depth--
			return i + 1
		default:
			return -1
		}
	}
}

// anyValue decodes the value at data[i:] (after optional whitespace) the way
// encoding/json decodes into a nil empty interface.
func (s *ustate) anyValue(i int) (any, int) {
	data := s.data
	i = skipSpace(data, i)
	if i >= len(data) {
		return nil, -1
	}
	switch c := data[i]; c {
	case '"':
		end, decode, ok := scanString(data, i)
		if !ok {
			return nil, -1
		}
		return ustring(data[i+1:end-1], decode), end
	case 't':
		if uhasLit(data, i, "true") {
			return true, i + 4
		}
	case 'f':
		if uhasLit(data, i, "false") {
			return false, i + 5
		}
	case 'n':
		if uhasLit(data, i, "null") {
			return nil, i + 4
		}
	case '{':
		if s.depth++; s.depth > unmarshalMaxDepth {
			return nil, -1
		}
		m := make(map[string]any)
		i = skipSpace(data, i+1)
		if i < len(data) && data[i] == '}' {
			s.depth--
			return m, i + 1
		}
		for {
			if i >= len(data) || data[i] != '"' {
				return nil, -1
			}
			end, decode, ok := scanString(data, i)
			if !ok {
				return nil, -1
			}
			key := ustring(data[i+1:end-1], decode)
			i = skipSpace(data, end)
			if i >= len(data) || data[i] != ':' {
				return nil, -1
			}
			var v any
			if v, i = s.anyValue(i + 1); i < 0 {
				return nil, -1
			}
			m[key] = v
			i = skipSpace(data, i)
			if i >= len(data) {
				return nil, -1
			}
			switch data[i] {
			case ',':
				i = skipSpace(data, i+1)
			case '}':
				s.depth--
				return m, i + 1
			default:
				return nil, -1
			}
		}
	case '[':
		if s.depth++; s.depth > unmarshalMaxDepth {
			return nil, -1
		}
		a := make([]any, 0)
		i = skipSpace(data, i+1)
		if i < len(data) && data[i] == ']' {
			s.depth--
			return a, i + 1
		}
		for {
			var v any
			if v, i = s.anyValue(i); i < 0 {
				return nil, -1
			}
			a = append(a, v)
			i = skipSpace(data, i)
			if i >= len(data) {
				return nil, -1
			}
			switch data[i] {
			case ',':
				i++
			case ']':
				s.depth--
				return a, i + 1
			default:
				return nil, -1
			}
		}
	default:
		f, end := uparseFloat(data, i, 64)
		if end < 0 {
			return nil, -1
		}
		return f, end
	}
	return nil, -1
}

// skip validates the value at data[i:] (after optional whitespace) as
// strictly as encoding/json's scanner and returns the index after it.
func (s *ustate) skip(i int) int {
	data := s.data
	i = skipSpace(data, i)
	if i >= len(data) {
		return -1
	}
	switch c := data[i]; c {
	case '"':
		end, _, ok := scanString(data, i)
		if !ok {
			return -1
		}
		return end
	case 't':
		if uhasLit(data, i, "true") {
			return i + 4
		}
		return -1
	case 'f':
		if uhasLit(data, i, "false") {
			return i + 5
		}
		return -1
	case 'n':
		if uhasLit(data, i, "null") {
			return i + 4
		}
		return -1
	case '{':
		if s.depth++; s.depth > unmarshalMaxDepth {
			return -1
		}
		i = skipSpace(data, i+1)
		if i < len(data) && data[i] == '}' {
			s.depth--
			return i + 1
		}
		for {
			if i >= len(data) || data[i] != '"' {
				return -1
			}
			end, _, ok := scanString(data, i)
			if !ok {
				return -1
			}
			i = skipSpace(data, end)
			if i >= len(data) || data[i] != ':' {
				return -1
			}
			if i = s.skip(i + 1); i < 0 {
				return -1
			}
			i = skipSpace(data, i)
			if i >= len(data) {
				return -1
			}
			switch data[i] {
			case ',':
				i = skipSpace(data, i+1)
			case '}':
				s.depth--
				return i + 1
			default:
				return -1
			}
		}
	case '[':
		if s.depth++; s.depth > unmarshalMaxDepth {
			return -1
		}
		i = skipSpace(data, i+1)
		if i < len(data) && data[i] == ']' {
			s.depth--
			return i + 1
		}
		for {
			if i = s.skip(i); i < 0 {
				return -1
			}
			i = skipSpace(data, i)
			if i >= len(data) {
				return -1
			}
			switch data[i] {
			case ',':
				i++
			case ']':
				s.depth--
				return i + 1
			default:
				return -1
			}
		}
	}
	end, _, ok := scanNumber(data, i)
	if !ok {
		return -1
	}
	return end
}
