package jsonv

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"unsafe"
)

// Encode converts a value from the lossless JSON set of R47 into
// canonical compact JSON bytes. Accepted:
//
//   - nil, bool, string (invalid UTF-8 becomes U+FFFD);
//   - float64 that is finite and not negative zero;
//   - json.Number holding a valid JSON number literal that does not denote
//     negative zero ("-0", "-0.0e3", …) and whose float64 rounding is
//     neither ±Inf ("1e999", "2e308") nor −0 ("-1e-400"); the literal is
//     kept verbatim;
//   - the predeclared integer types (int, int8…int64, uint, uint8…uint64,
//     uintptr);
//   - []any and map[string]any, nested to at most MaxDepth levels, without
//     cycles; map keys are written sorted as encoding/json does, and a nil
//     slice or map is written as null, as encoding/json does;
//   - json.RawMessage holding exactly one JSON value (surrounding whitespace
//     allowed; nil or empty is rejected). Its key order is kept, it is
//     compacted, its strings are re-escaped canonically, and duplicate keys
//     are resolved as JSON.parse does (first position, last value).
//     Number literals inside it are held to the json.Number rule above.
//
// Everything else is rejected with an error wrapping ErrNotLossless: NaN,
// ±Inf, negative zero, cycles, and every other Go type, including named
// types, float32, pointers, structs, typed maps such as map[string]string
// and typed slices such as []string. Only []any and map[string]any are
// containers.
//
// The canonical form escapes only '"', '\\' and control characters (as
// JavaScript's JSON.stringify does; no HTML escaping) and formats float64 as
// encoding/json does. Encode(out) returns out unchanged for every out that
// Encode produced. The output never aliases the input.
func Encode(v any) ([]byte, error) {
	return encodeTop(v, false)
}

// EncodeTree is Encode extended to the ordered trees Decode produces: it
// also accepts *Object (key order kept; duplicate keys rejected). It is the
// way to build canonical JSON whose key order matters, such as schemas.
func EncodeTree(v any) ([]byte, error) {
	return encodeTop(v, true)
}

// Valid reports whether b is exactly one JSON value (surrounding whitespace
// allowed) that Encode accepts as a json.RawMessage. It does not allocate.
func Valid(b []byte) bool {
	_, _, err := compact(nil, b, 0, false)
	return err == nil
}

// EncodedLen returns the length of Encode(v) (EncodeTree's, for an
// *Object tree), or its error, without keeping the text: the encoding is
// written into a pooled buffer and dropped. A json.RawMessage is
// canonicalised all the same; callers bounding text measure it with len
// first.
func EncodedLen(v any) (int, error) {
	e := encoderPool.Get().(*encoder)
	e.reset(true)
	err := e.encode(v, 0)
	n := len(e.buf)
	e.seen, e.visited = nil, nil
	if cap(e.buf) <= 64<<10 {
		encoderPool.Put(e)
	}
	return n, err
}

// AppendCanonical appends the canonical compact form of the JSON text b to
// dst; it is Encode(json.RawMessage(b)) without the extra copy.
func AppendCanonical(dst, b []byte) ([]byte, error) {
	e := encoder{buf: dst}
	if err := e.raw(b, 0); err != nil {
		return dst, err
	}
	return e.buf, nil
}

func encodeTop(v any, tree bool) ([]byte, error) {
	if raw, ok := v.(json.RawMessage); ok {
		// Fast path: one pass, one allocation for already-compact input.
		out, dup, err := compact(make([]byte, 0, len(raw)), raw, 0, true)
		if err != nil {
			return nil, err
		}
		if !dup {
			return out, nil
		}
	}
	if str, ok := v.(string); ok {
		// A string needs no encoder: quoted into a buffer of its own.
		return appendQuoted(make([]byte, 0, len(str)+2), str), nil
	}
	e := encoderPool.Get().(*encoder)
	e.reset(tree)
	err := e.encode(v, 0)
	var out []byte
	if err == nil {
		out = bytes.Clone(e.buf)
	}
	e.seen, e.visited = nil, nil
	if cap(e.buf) <= 64<<10 {
		encoderPool.Put(e)
	}
	return out, err
}

var encoderPool = sync.Pool{New: func() any { return &encoder{buf: make([]byte, 0, 512)} }}

// cycleCheckDepth is the depth from which the encoder tracks the identity of
// the containers on the current path. A cycle makes nesting unbounded, so
// checking only deep paths (as encoding/json does) keeps shallow values fast
// and still reports every cycle precisely.
const cycleCheckDepth = 1000

type ptrKey struct {
	p unsafe.Pointer
	n int
}

type encoder struct {
	buf  []byte
	tree bool // accept *Object
	seen map[ptrKey]struct{}
	// Sharing (see MaxSharedExpansion): values counts every value written;
	// from sharedTrackAfter on, visited holds every container written, and
	// a container met again is a repeat. dup counts the values written
	// inside finished repeats, dupMark is values when the outermost open
	// repeat started, dupDepth the number of open repeats.
	values, dup, dupMark int
	dupDepth             int
	visited              map[ptrKey]struct{}
}

// reset prepares a pooled encoder for one top-level value.
func (e *encoder) reset(tree bool) {
	e.buf = e.buf[:0]
	e.tree = tree
	e.seen = nil
	e.values, e.dup, e.dupMark, e.dupDepth = 0, 0, 0, 0
	e.visited = nil
}

// open notes the start of a container whose identity is key (zero for an
// empty or untracked one). It reports a cycle, an expansion past
// MaxSharedExpansion, and whether the container repeats one already
// written.
func (e *encoder) open(key ptrKey, depth int) (repeat bool, err error) {
	if key.p == nil {
		return false, nil
	}
	track := e.values > sharedTrackAfter
	if depth >= cycleCheckDepth || track {
		// Once sharing is tracked the path is too, so a repeat on the
		// path is reported as the cycle it is.
		if err := e.enter(key); err != nil {
			return false, err
		}
	}
	if !track {
		return false, nil
	}
	if _, ok := e.visited[key]; ok {
		if e.dupDepth == 0 {
			e.dupMark = e.values - 1 // the container itself is a repeat too
		}
		e.dupDepth++
		return true, e.checkShared()
	}
	if e.visited == nil {
		e.visited = make(map[ptrKey]struct{})
	}
	e.visited[key] = struct{}{}
	return false, e.checkShared()
}

// close ends the container open returned repeat for, checking the
// expansion once more (a repeat of scalars opens no container).
func (e *encoder) close(key ptrKey, repeat bool) error {
	if key.p != nil {
		delete(e.seen, key) // a no-op for a container open did not enter
	}
	if !repeat {
		return nil
	}
	err := e.checkShared()
	if e.dupDepth--; e.dupDepth == 0 {
		e.dup += e.values - e.dupMark
	}
	return err
}

// checkShared fails once the repeated values exceed both the bound and
// the values written otherwise.
func (e *encoder) checkShared() error {
	if e.dupDepth == 0 {
		return nil
	}
	rep := e.dup + e.values - e.dupMark
	if rep > MaxSharedExpansion && rep > e.values-rep {
		return ErrTooLarge
	}
	return nil
}

// sharedKey is whether containers need an identity: for cycle checks deep
// down, or for sharing once enough values were written.
func (e *encoder) sharedKey(depth int) bool {
	return depth >= cycleCheckDepth || e.values > sharedTrackAfter
}

// encode appends v; depth is the number of enclosing containers.
func (e *encoder) encode(v any, depth int) error {
	e.values++
	switch x := v.(type) {
	case nil:
		e.buf = append(e.buf, "null"...)
	case bool:
		if x {
			e.buf = append(e.buf, "true"...)
		} else {
			e.buf = append(e.buf, "false"...)
		}
	case string:
		e.buf = appendQuoted(e.buf, x)
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return notLossless("non-finite float64 %v", x)
		}
		if x == 0 && math.Signbit(x) {
			return errNegZero
		}
		e.buf = appendFloat(e.buf, x)
	case json.Number:
		ok, lossy := numberLiteral(x)
		if !ok {
			return notLossless("invalid json.Number %q", string(x))
		}
		if lossy {
			return errLossyNumber
		}
		e.buf = append(e.buf, x...)
	case int:
		e.buf = strconv.AppendInt(e.buf, int64(x), 10)
	case int8:
		e.buf = strconv.AppendInt(e.buf, int64(x), 10)
	case int16:
		e.buf = strconv.AppendInt(e.buf, int64(x), 10)
	case int32:
		e.buf = strconv.AppendInt(e.buf, int64(x), 10)
	case int64:
		e.buf = strconv.AppendInt(e.buf, x, 10)
	case uint:
		e.buf = strconv.AppendUint(e.buf, uint64(x), 10)
	case uint8:
		e.buf = strconv.AppendUint(e.buf, uint64(x), 10)
	case uint16:
		e.buf = strconv.AppendUint(e.buf, uint64(x), 10)
	case uint32:
		e.buf = strconv.AppendUint(e.buf, uint64(x), 10)
	case uint64:
		e.buf = strconv.AppendUint(e.buf, x, 10)
	case uintptr:
		e.buf = strconv.AppendUint(e.buf, uint64(x), 10)
	case []any:
		if x == nil {
			e.buf = append(e.buf, "null"...)
			return nil
		}
		if depth >= MaxDepth {
			return ErrTooDeep
		}
		var key ptrKey
		repeat := false
		if len(x) > 0 && e.sharedKey(depth) {
			key = ptrKey{unsafe.Pointer(unsafe.SliceData(x)), len(x)}
			var err error
			if repeat, err = e.open(key, depth); err != nil {
				return err
			}
		}
		e.buf = append(e.buf, '[')
		for i, el := range x {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			if err := e.encode(el, depth+1); err != nil {
				return err
			}
		}
		e.buf = append(e.buf, ']')
		if key.p != nil {
			if err := e.close(key, repeat); err != nil {
				return err
			}
		}
	case map[string]any:
		if x == nil {
			e.buf = append(e.buf, "null"...)
			return nil
		}
		if depth >= MaxDepth {
			return ErrTooDeep
		}
		var key ptrKey
		repeat := false
		if len(x) > 0 && e.sharedKey(depth) {
			key = ptrKey{reflect.ValueOf(x).UnsafePointer(), -1}
			var err error
			if repeat, err = e.open(key, depth); err != nil {
				return err
			}
		}
		var arr [16]string
		keys := arr[:0]
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		e.buf = append(e.buf, '{')
		for i, k := range keys {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			e.buf = appendQuoted(e.buf, k)
			e.buf = append(e.buf, ':')
			if err := e.encode(x[k], depth+1); err != nil {
				return err
			}
		}
		e.buf = append(e.buf, '}')
		if key.p != nil {
			if err := e.close(key, repeat); err != nil {
				return err
			}
		}
	case json.RawMessage:
		return e.raw(x, depth)
	case *Object:
		if !e.tree || x == nil {
			return notLossless("unsupported type %T", v)
		}
		return e.object(x, depth)
	default:
		return notLossless("unsupported type %T", v)
	}
	return nil
}

func (e *encoder) enter(key ptrKey) error {
	if _, ok := e.seen[key]; ok {
		return errCycle
	}
	if e.seen == nil {
		e.seen = make(map[ptrKey]struct{})
	}
	e.seen[key] = struct{}{}
	return nil
}

// raw appends the canonical form of JSON text embedded at depth.
func (e *encoder) raw(b []byte, depth int) error {
	mark := len(e.buf)
	out, dup, err := compact(e.buf, b, depth, true)
	if err != nil {
		e.buf = e.buf[:mark]
		return err
	}
	if !dup {
		e.buf = out
		return nil
	}
	// Duplicate keys: decode (JSON.parse semantics) and encode the tree.
	e.buf = out[:mark]
	t, err := decodeTree(b, depth, true, false)
	if err != nil {
		return err
	}
	tree := e.tree
	e.tree = true
	err = e.encode(t, depth)
	e.tree = tree
	return err
}

func (e *encoder) object(o *Object, depth int) error {
	if len(o.Keys) != len(o.Values) {
		return notLossless("malformed *Object: %d keys, %d values", len(o.Keys), len(o.Values))
	}
	if depth >= MaxDepth {
		return ErrTooDeep
	}
	var key ptrKey
	if e.sharedKey(depth) {
		key = ptrKey{unsafe.Pointer(o), -2}
	}
	repeat, err := e.open(key, depth)
	if err != nil {
		return err
	}
	if hasDupStrings(o.Keys) {
		return notLossless("*Object with duplicate keys")
	}
	e.buf = append(e.buf, '{')
	for i, k := range o.Keys {
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		e.buf = appendQuoted(e.buf, k)
		e.buf = append(e.buf, ':')
		if err := e.encode(o.Values[i], depth+1); err != nil {
			return err
		}
	}
	e.buf = append(e.buf, '}')
	return e.close(key, repeat)
}

func hasDupStrings(keys []string) bool {
	if len(keys) <= 16 {
		for i := 1; i < len(keys); i++ {
			if slices.Contains(keys[:i], keys[i]) {
				return true
			}
		}
		return false
	}
	seen := make(map[string]struct{}, len(keys))
	for _, k := range keys {
		if _, ok := seen[k]; ok {
			return true
		}
		seen[k] = struct{}{}
	}
	return false
}

// Scanner states of compact.
const (
	stValue = iota // a value is expected
	stKey          // an object key is expected
	stAfter        // a value just ended
)

// compact validates the single JSON value in src (surrounding whitespace
// allowed) and, when emit is set, appends its canonical compact form to dst.
// depth is the nesting level at which src is embedded. dup reports an object
// with duplicate keys; dst is then incomplete and the caller must decode
// instead. compact is iterative, so deep input cannot exhaust the stack.
func compact(dst, src []byte, depth int, emit bool) (out []byte, dup bool, err error) {
	// Bit set of open levels that are objects; the inline words cover 256
	// levels, deeper input grows it on the heap.
	var kindArr [4]uint64
	kinds := kindArr[:]
	level := 0
	// Canonical key spans in dst of the open objects, and where each open
	// object's keys start; only kept when emitting.
	var keyArr [32]int
	keys := keyArr[:0]
	var baseArr [16]int
	bases := baseArr[:0]

	i := skipSpace(src, 0)
	st := stValue
	for {
		switch st {
		case stValue:
			if i >= len(src) {
				return dst, false, errSyntax
			}
			switch c := src[i]; c {
			case '{', '[':
				if depth+level >= MaxDepth {
					return dst, false, ErrTooDeep
				}
				w, m := level>>6, uint64(1)<<(level&63)
				if w == len(kinds) {
					kinds = append(kinds, 0)
				}
				closer := byte(']')
				if c == '{' {
					kinds[w] |= m
					closer = '}'
					if emit {
						bases = append(bases, len(keys))
					}
				} else {
					kinds[w] &^= m
				}
				level++
				if emit {
					dst = append(dst, c)
				}
				i = skipSpace(src, i+1)
				if i < len(src) && src[i] == closer {
					i++
					level--
					if emit {
						dst = append(dst, closer)
						if c == '{' {
							bases = bases[:len(bases)-1]
						}
					}
					st = stAfter
				} else if c == '{' {
					st = stKey
				}
				continue
			case '"':
				end, decode, ok := scanString(src, i)
				if !ok {
					return dst, false, errSyntax
				}
				if emit {
					if decode {
						dst = appendCanonicalBody(dst, src[i+1:end-1])
					} else {
						dst = append(dst, src[i:end]...)
					}
				}
				i = end
			case 't', 'f', 'n':
				lit := "null"
				if c == 't' {
					lit = "true"
				} else if c == 'f' {
					lit = "false"
				}
				if len(src)-i < len(lit) || string(src[i:i+len(lit)]) != lit {
					return dst, false, errSyntax
				}
				if emit {
					dst = append(dst, lit...)
				}
				i += len(lit)
			default:
				end, lossy, ok := scanNumber(src, i)
				if !ok {
					return dst, false, errSyntax
				}
				if lossy {
					return dst, false, errLossyNumber
				}
				if emit {
					dst = append(dst, src[i:end]...)
				}
				i = end
			}
			st = stAfter
		case stKey:
			if i >= len(src) || src[i] != '"' {
				return dst, false, errSyntax
			}
			end, decode, ok := scanString(src, i)
			if !ok {
				return dst, false, errSyntax
			}
			if emit {
				start := len(dst)
				if decode {
					dst = appendCanonicalBody(dst, src[i+1:end-1])
				} else {
					dst = append(dst, src[i:end]...)
				}
				keys = append(keys, start, len(dst))
			}
			i = skipSpace(src, end)
			if i >= len(src) || src[i] != ':' {
				return dst, false, errSyntax
			}
			if emit {
				dst = append(dst, ':')
			}
			i = skipSpace(src, i+1)
			st = stValue
		default: // stAfter
			i = skipSpace(src, i)
			if level == 0 {
				if i != len(src) {
					return dst, false, errSyntax
				}
				return dst, false, nil
			}
			if i >= len(src) {
				return dst, false, errSyntax
			}
			l := level - 1
			obj := kinds[l>>6]&(uint64(1)<<(l&63)) != 0
			switch c := src[i]; {
			case c == ',':
				if emit {
					dst = append(dst, ',')
				}
				i = skipSpace(src, i+1)
				if obj {
					st = stKey
				} else {
					st = stValue
				}
			case obj && c == '}', !obj && c == ']':
				i++
				level--
				if emit {
					dst = append(dst, c)
					if obj {
						b := bases[len(bases)-1]
						bases = bases[:len(bases)-1]
						if hasDupSpans(dst, keys[b:]) {
							return dst, true, nil
						}
						keys = keys[:b]
					}
				}
			default:
				return dst, false, errSyntax
			}
		}
	}
}

// hasDupSpans reports whether two of the canonical key spans (start, end
// pairs into buf) are equal. Canonical encoding is injective, so equal
// bytes mean equal keys.
func hasDupSpans(buf []byte, spans []int) bool {
	n := len(spans) / 2
	if n < 2 {
		return false
	}
	if n <= 16 {
		for a := 2; a < len(spans); a += 2 {
			ka := buf[spans[a]:spans[a+1]]
			for b := 0; b < a; b += 2 {
				if bytes.Equal(ka, buf[spans[b]:spans[b+1]]) {
					return true
				}
			}
		}
		return false
	}
	seen := make(map[string]struct{}, n)
	for a := 0; a < len(spans); a += 2 {
		k := buf[spans[a]:spans[a+1]]
		if _, ok := seen[string(k)]; ok {
			return true
		}
		seen[string(k)] = struct{}{}
	}
	return false
}

// AppendString appends s as a canonical JSON string (what Encode gives for
// a string value) without boxing it in an interface.
func AppendString(dst []byte, s string) []byte { return appendQuoted(dst, s) }
