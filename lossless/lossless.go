package lossless

import (
	"encoding/json"

	"github.com/toolscope/toolscope/internal/jsonv"
)

// ErrNotLossless is wrapped by every error of the package: the input is not
// one JSON value of the lossless set.
var ErrNotLossless = jsonv.ErrNotLossless

// Object is a JSON object of an ordered tree: its keys in document order,
// and the value of each key at the same index (Values[i] is the value of
// Keys[i]). Its methods Get(key) (any, bool) and Len() int read it; a nil
// *Object has no keys. A tree is edited by editing Keys and Values together.
type Object = jsonv.Object

// Canonical returns the canonical text of the JSON value text holds
// (surrounding whitespace allowed): the bytes the registry holds for that
// value, so two texts of one value give equal bytes. The result never
// aliases text.
func Canonical(text []byte) ([]byte, error) {
	return jsonv.Encode(json.RawMessage(text))
}

// Decode parses the JSON value text holds into an ordered tree: nil, bool,
// string, json.Number (the literal as written), []any and *Object.
func Decode(text []byte) (any, error) {
	return jsonv.Decode(text)
}

// Encode returns the canonical text of an ordered tree: a value Decode
// returns, possibly edited, built from nil, bool, string, json.Number,
// finite float64 other than −0, the Go integer types, []any, *Object (key
// order kept; a key given twice is refused) and map[string]any (keys
// sorted). Anything else is refused with an error wrapping ErrNotLossless.
func Encode(tree any) ([]byte, error) {
	return jsonv.EncodeTree(tree)
}
