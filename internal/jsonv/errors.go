package jsonv

import (
	"errors"
	"fmt"
)

// MaxDepth is the deepest container nesting (arrays and objects) that
// Encode, Valid, Decode, Validate and CompileSchema accept. Deeper input is
// rejected with an error wrapping ErrTooDeep instead of exhausting the
// stack. R34 asks for schemas "thousands of levels" deep; a schema
// level costs up to two containers (properties: an object holding an
// object), so the bound leaves room for 10,000+ schema levels of any shape.
// The walks that recurse use a few hundred bytes of stack per level, far
// below Go's 1 GB stack limit at this depth.
const MaxDepth = 50_000

// ErrNotLossless is returned (wrapped) when a value is outside the lossless
// JSON set of R47: NaN, ±Inf, negative zero, a cycle, a Go type other
// than the accepted ones, malformed JSON text, or nesting deeper than
// MaxDepth.
var ErrNotLossless = errors.New("jsonv: value is not lossless JSON")

// ErrTooDeep is returned (wrapped) when nesting exceeds MaxDepth. It wraps
// ErrNotLossless, so errors.Is(err, ErrNotLossless) also holds.
var ErrTooDeep = fmt.Errorf("nesting deeper than %d levels: %w", MaxDepth, ErrNotLossless)

// MaxSharedExpansion bounds how far maps and slices shared by several
// positions of a Go value (a DAG: the same sub-schema in sibling places, as
// R100 allows) may expand. JSON text has no sharing, so such a value
// is written out once per use, and n levels that each use the one below
// twice expand to 2^n copies. Encode, EncodeTree, CompileSchema and
// ValidateValue count the values they write (or visit) while repeating a
// container already written and give up, with an error wrapping
// ErrTooLarge, once that count exceeds both MaxSharedExpansion and the
// number of other values: the work and memory stay linear in the distinct
// input. Sharing is tracked from the 4097th value on, so small values pay
// nothing for it. JSON text (json.RawMessage) cannot share.
const MaxSharedExpansion = 1 << 16

// sharedTrackAfter is the number of values written before sharing is
// tracked: below it, no expansion can exceed MaxSharedExpansion.
const sharedTrackAfter = 4096

// ErrTooLarge is returned (wrapped) when shared maps or slices expand past
// MaxSharedExpansion. It wraps ErrNotLossless.
var ErrTooLarge = fmt.Errorf("shared maps or slices expand to more than %d repeated values "+
	"(JSON writes a value used in several places once per use): %w", MaxSharedExpansion, ErrNotLossless)

// notLossless wraps ErrNotLossless with a reason.
func notLossless(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, ErrNotLossless)...)
}

var (
	errSyntax  = notLossless("malformed JSON text")
	errNegZero = notLossless("negative zero")
	// errLossyNumber is a number literal that denotes −0 or whose float64
	// rounding is ±Inf or −0 (R47 applies to the value it denotes).
	errLossyNumber = notLossless("number literal that is −0, or ±Inf or −0 as a float64")
	errCycle       = notLossless("value contains a cycle")
)
