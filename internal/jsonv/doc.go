// Package jsonv holds toolscope's JSON value rules: the lossless JSON set
// (R45–R48, R62), the JSON schema subset (R100, R101), value
// validation (R102) and schema derivation from Go types for typed tools.
// It is a pure library on the tool-execution hot path: no actors, no
// global state beyond sync.Pools, and every function is total — it returns
// an error or a violation list for any input and never panics.
//
// # Lossless JSON
//
// Values cross the registry as canonical JSON bytes. Encode takes a Go
// value from the R47 set (nil, bool, string, finite float64 other than −0,
// json.Number, the predeclared integer types, []any, map[string]any and
// json.RawMessage) and returns its canonical compact form; anything else
// fails with an error wrapping ErrNotLossless. The canonical form is a fixed
// point (Encode(json.RawMessage(out)) == out), so a snapshot can be copied
// by copying bytes, and two equal snapshots are byte-equal. Decode and
// DecodeStd turn bytes back into Go trees: ordered (*Object) for schema
// work, or encoding/json style (map[string]any) for user code.
//
// For a json.RawMessage, which is how tool-call arguments usually arrive,
// Encode validates and compacts in one pass with one allocation, so the
// hot path never builds a tree.
//
// # Schemas and validation
//
// CompileSchema checks a schema against the R100 subset, collecting every
// violation in the contract's order and wording, and compiles it into a Schema.
// Schema.Validate checks canonical bytes against it (R102): the bytes are
// flattened into a pooled "tape" of nodes that point into the input, so a
// small valid object validates without allocating. Before that, a quick
// check walks compact input once against schemas without enum, const or
// oneOf and answers "valid" outright (most tool arguments and outputs);
// anything it declines, including every violation, takes the tape. Schema.ValidateValue does
// the same for an arbitrary Go value, reporting NaN, −0, cycles and foreign
// types where R102 says. ForType derives schemas from Go types the way
// encoding/json would encode them, for the typed tool helper (R103, R105).
//
// # Decoding typed arguments
//
// UnmarshalerFor compiles a decoder for a Go type whose decoding it can
// reproduce exactly as encoding/json's Unmarshal (scalars, strings,
// pointers, slices, string-keyed maps, any, plain structs); Unmarshal then
// writes through precomputed offsets and allocates only what the result
// holds. For anything outside that subset — a type with its own
// UnmarshalJSON, a type mismatch, an overflow — it reports false and the
// caller decodes with encoding/json, which also words the error.
// FuzzUnmarshalMatchesStd holds it to encoding/json's results.
//
// # Sharing
//
// A Go value may use one map or slice in several places (a DAG: R100
// allows a sub-schema reused in sibling positions). JSON text repeats each
// use, so the text of n levels that each use the one below twice is 2^n
// copies. Every walk of Go values (Encode, EncodeTree, CompileSchema,
// ValidateValue, ForType) therefore counts what it writes while repeating
// a container and stops with ErrTooLarge, or the matching violation, once
// that exceeds both MaxSharedExpansion and everything else written: work
// and memory stay linear in the distinct input. Cycles are still reported
// as cycles.
//
// # Depth
//
// Everything that walks input either iterates (the byte scanners) or
// recurses with an explicit bound: nesting deeper than MaxDepth (50,000)
// containers is rejected with ErrTooDeep, or the matching violation, rather
// than exhausting the stack. Schemas thousands of levels deep (R34) are
// well inside the bound, even through properties (two containers a level).
package jsonv
