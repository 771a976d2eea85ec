// Package kvkey encodes the user's ids (tree ids, call ids) as key tokens of
// the cluster store's JetStream KV bucket. It is its own package, with no
// NATS dependency, so its fuzz target builds in seconds.
package kvkey

import (
	"encoding/base64"
	"errors"
	"fmt"
	"unicode/utf8"
)

// MaxIDBytes bounds a tree id and a call id, in bytes. Ids are user data; the
// store encodes them into subject tokens, and NATS bounds a subject's length.
const MaxIDBytes = 256

// ErrInvalidID: an id the store cannot take (empty, longer than MaxIDBytes,
// or not UTF-8). The wrapped error names which id and why.
var ErrInvalidID = errors.New("cluster: invalid id")

// Token encodes a user id (kind names it in errors: "tree", "call") as one
// legal KV key token: unpadded base64url, whose alphabet [A-Za-z0-9_-] has no
// '.', '*', '>' or space, so no id can reach another tree's keys or form a
// wildcard, and the encoding is one-to-one.
func Token(kind, id string) (string, error) {
	switch {
	case id == "":
		return "", fmt.Errorf("%w: empty %s id", ErrInvalidID, kind)
	case len(id) > MaxIDBytes:
		return "", fmt.Errorf("%w: %s id is %d bytes, more than %d", ErrInvalidID, kind, len(id), MaxIDBytes)
	case !utf8.ValidString(id):
		return "", fmt.Errorf("%w: %s id %q is not UTF-8", ErrInvalidID, kind, id)
	}
	return base64.RawURLEncoding.EncodeToString([]byte(id)), nil
}

// ID decodes a token made by Token.
func ID(tok string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return "", fmt.Errorf("%w: bad key token %q: %v", ErrInvalidID, tok, err)
	}
	return string(b), nil
}
