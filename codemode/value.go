package codemode

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.starlark.net/starlark"
)

// maxDepth bounds the nesting of values crossing between JSON and
// Starlark, both ways: a Starlark list may contain itself, and a tool's
// value is JSON of any depth.
const maxDepth = 200

// fromJSON converts lossless JSON (a tool's value) into Starlark values:
// objects become dicts in their key order, integers ints (of any size),
// other numbers floats.
func fromJSON(b []byte) (starlark.Value, error) {
	if v, ok := scalar(b); ok {
		return v, nil
	}
	if v, rest, ok := compactValue(b, 0); ok && len(rest) == 0 {
		return v, nil
	}
	return decodeJSON(b)
}

// decodeJSON is fromJSON for any JSON text, with the decoder.
func decodeJSON(b []byte) (starlark.Value, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	v, err := decodeValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the JSON value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder, depth int) (starlark.Value, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("value nested deeper than %d levels", maxDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case nil:
		return starlark.None, nil
	case bool:
		return starlark.Bool(t), nil
	case string:
		return starlark.String(t), nil
	case json.Number:
		return numberValue(string(t))
	case json.Delim:
		switch t {
		case '[':
			var elems []starlark.Value
			for dec.More() {
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				elems = append(elems, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return starlark.NewList(elems), nil
		case '{':
			d := starlark.NewDict(0)
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				if err := d.SetKey(starlark.String(k), v); err != nil {
					return nil, err
				}
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return d, nil
		}
	}
	return nil, fmt.Errorf("unexpected JSON token %v", tok)
}

// compactValue is fromJSON's fast path for compact JSON, the form a
// result's value has: it reads one value from the start of b and returns
// it and the bytes after it. ok is false for anything it does not read
// (whitespace, a string with escapes or invalid UTF-8, depth beyond
// maxDepth, malformed input): the decoder then reads b in full, so both
// give the same values.
func compactValue(b []byte, depth int) (v starlark.Value, rest []byte, ok bool) {
	if len(b) == 0 || depth > maxDepth {
		return nil, nil, false
	}
	switch c := b[0]; {
	case c == '{':
		d := starlark.NewDict(0)
		b = b[1:]
		if len(b) > 0 && b[0] == '}' {
			return d, b[1:], true
		}
		for {
			k, r, ok := compactString(b)
			if !ok || len(r) == 0 || r[0] != ':' {
				return nil, nil, false
			}
			var x starlark.Value
			if x, b, ok = compactValue(r[1:], depth+1); !ok || len(b) == 0 {
				return nil, nil, false
			}
			if d.SetKey(starlark.String(k), x) != nil {
				return nil, nil, false
			}
			if b[0] == '}' {
				return d, b[1:], true
			}
			if b[0] != ',' {
				return nil, nil, false
			}
			b = b[1:]
		}
	case c == '[':
		var elems []starlark.Value
		b = b[1:]
		if len(b) > 0 && b[0] == ']' {
			return starlark.NewList(nil), b[1:], true
		}
		for {
			var x starlark.Value
			if x, b, ok = compactValue(b, depth+1); !ok || len(b) == 0 {
				return nil, nil, false
			}
			elems = append(elems, x)
			if b[0] == ']' {
				return starlark.NewList(elems), b[1:], true
			}
			if b[0] != ',' {
				return nil, nil, false
			}
			b = b[1:]
		}
	case c == '"':
		s, r, ok := compactString(b)
		if !ok {
			return nil, nil, false
		}
		return starlark.String(s), r, true
	case c == 't' && bytes.HasPrefix(b, []byte("true")):
		return starlark.True, b[4:], true
	case c == 'f' && bytes.HasPrefix(b, []byte("false")):
		return starlark.False, b[5:], true
	case c == 'n' && bytes.HasPrefix(b, []byte("null")):
		return starlark.None, b[4:], true
	case c == '-' || c >= '0' && c <= '9':
		i := 1
		for i < len(b) && (b[i] >= '0' && b[i] <= '9' || b[i] == '.' || b[i] == 'e' || b[i] == 'E' || b[i] == '+' || b[i] == '-') {
			i++
		}
		if !json.Valid(b[:i]) {
			return nil, nil, false
		}
		x, err := numberValue(string(b[:i]))
		if err != nil {
			return nil, nil, false
		}
		return x, b[i:], true
	}
	return nil, nil, false
}

// compactString reads a JSON string without escapes at the start of b.
func compactString(b []byte) (string, []byte, bool) {
	if len(b) == 0 || b[0] != '"' {
		return "", nil, false
	}
	for i := 1; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			if !utf8.Valid(b[1:i]) {
				return "", nil, false
			}
			return string(b[1:i]), b[i+1:], true
		case c == '\\' || c < 0x20:
			return "", nil, false
		}
	}
	return "", nil, false
}

// numberValue is an int for an integer literal (any size), else a float.
func numberValue(s string) (starlark.Value, error) {
	if !strings.ContainsAny(s, ".eE") {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return starlark.MakeInt64(i), nil
		}
		if bi, ok := new(big.Int).SetString(s, 10); ok {
			return starlark.MakeBigInt(bi), nil
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, fmt.Errorf("number %s: %w", s, err)
	}
	return starlark.Float(f), nil
}

// toJSON writes a Starlark value as JSON: None, bools, ints, finite
// floats, strings, lists and tuples, and dicts with string keys (in their
// order); result objects as their fields. Anything else is an error naming
// its type. max bounds the bytes written (0: none).
func toJSON(v starlark.Value, max int) ([]byte, error) {
	w := &jsonWriter{max: max}
	if err := w.value(v, 0); err != nil {
		return nil, err
	}
	return w.buf.Bytes(), nil
}

type jsonWriter struct {
	buf bytes.Buffer
	max int
}

var errTooLarge = errors.New("value too large")

func (w *jsonWriter) check() error {
	if w.max > 0 && w.buf.Len() > w.max {
		return errTooLarge
	}
	return nil
}

func (w *jsonWriter) value(v starlark.Value, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("value nested deeper than %d levels (a list or dict that contains itself?)", maxDepth)
	}
	if err := w.check(); err != nil {
		return err
	}
	switch x := v.(type) {
	case starlark.NoneType:
		w.buf.WriteString("null")
	case starlark.Bool:
		if x {
			w.buf.WriteString("true")
		} else {
			w.buf.WriteString("false")
		}
	case starlark.Int:
		if i, ok := x.Int64(); ok { // within float64's range: written without a string
			var num [20]byte
			w.buf.Write(strconv.AppendInt(num[:0], i, 10))
			break
		}
		if f := float64(x.Float()); math.IsInf(f, 0) {
			// JSON numbers are read as float64 at the other end: a literal
			// past its range is not lossless (R47).
			return errors.New("cannot convert an int beyond the float64 range to JSON")
		}
		w.buf.WriteString(x.String())
	case starlark.Float:
		f := float64(x)
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return fmt.Errorf("cannot convert float %v to JSON", f)
		}
		if f == 0 && math.Signbit(f) {
			f = 0 // -0 is not lossless JSON (R47): written as 0
		}
		w.buf.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
	case starlark.String:
		w.str(string(x))
	case *starlark.List:
		return w.seq(x, depth)
	case starlark.Tuple:
		return w.seq(x, depth)
	case *starlark.Dict:
		w.buf.WriteByte('{')
		for i, item := range x.Items() {
			k, ok := item[0].(starlark.String)
			if !ok {
				return fmt.Errorf("dict key %s is a %s; JSON object keys must be strings", item[0].String(), item[0].Type())
			}
			if i > 0 {
				w.buf.WriteByte(',')
			}
			w.str(string(k))
			w.buf.WriteByte(':')
			if err := w.value(item[1], depth+1); err != nil {
				return err
			}
		}
		w.buf.WriteByte('}')
	case *result:
		w.buf.WriteString(`{"ok":`)
		w.buf.WriteString(strconv.FormatBool(x.ok))
		if x.ok {
			w.buf.WriteString(`,"value":`)
			if err := w.value(x.value, depth+1); err != nil {
				return err
			}
		} else {
			w.buf.WriteString(`,"error":`)
			w.str(x.errMsg)
			w.buf.WriteString(`,"code":`)
			w.str(x.code)
		}
		w.buf.WriteByte('}')
	default:
		return fmt.Errorf("cannot convert a %s to JSON", v.Type())
	}
	return w.check()
}

func (w *jsonWriter) seq(s starlark.Indexable, depth int) error {
	w.buf.WriteByte('[')
	for i := 0; i < s.Len(); i++ {
		if i > 0 {
			w.buf.WriteByte(',')
		}
		if err := w.value(s.Index(i), depth+1); err != nil {
			return err
		}
	}
	w.buf.WriteByte(']')
	return nil
}

func (w *jsonWriter) str(s string) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			b, _ := json.Marshal(s) // a string always marshals
			w.buf.Write(b)
			return
		}
	}
	w.buf.WriteByte('"')
	w.buf.WriteString(s)
	w.buf.WriteByte('"')
}

// scalar is fromJSON's fast path for the commonest values, a string
// without escapes, a number or a literal: no decoder.
func scalar(b []byte) (starlark.Value, bool) {
	if len(b) == 0 {
		return nil, false
	}
	switch c := b[0]; {
	case c == '"':
		if len(b) >= 2 && b[len(b)-1] == '"' && bytes.IndexByte(b[1:len(b)-1], '\\') < 0 && bytes.IndexByte(b[1:len(b)-1], '"') < 0 && utf8.Valid(b[1:len(b)-1]) {
			return starlark.String(b[1 : len(b)-1]), true
		}
	case c == '-' || c >= '0' && c <= '9':
		if v, err := numberValue(string(b)); err == nil {
			return v, true
		}
	case string(b) == "true":
		return starlark.True, true
	case string(b) == "false":
		return starlark.False, true
	case string(b) == "null":
		return starlark.None, true
	}
	return nil, false
}
