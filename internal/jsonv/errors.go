package jsonv

import (
	"errors"
	"fmt"
)

// MaxDepth is the deepest container nesting (arrays and objects) that
// Encode, Valid, Decode, Validate and CompileSchema accept. Deeper input is
// rejected with an error wrapping ErrTooDeep instead of exhausting the
// stack. SPEC R34 asks for schemas "thousands of levels" deep; a schema
// level costs up to two containers (properties: an object holding an
// object), so the bound leaves room for 10,000+ schema levels of any shape.
// The walks that recurse use a few hundred bytes of stack per level, far
// below Go's 1 GB stack limit at this depth.
const MaxDepth = 50_000

// ErrNotLossless is returned (wrapped) when a value is outside the lossless
// JSON set of SPEC R47: NaN, ±Inf, negative zero, a cycle, a Go type other
// than the accepted ones, malformed JSON text, or nesting deeper than
// MaxDepth.
var ErrNotLossless = errors.New("jsonv: value is not lossless JSON")

// ErrTooDeep is returned (wrapped) when nesting exceeds MaxDepth. It wraps
// ErrNotLossless, so errors.Is(err, ErrNotLossless) also holds.
var ErrTooDeep = fmt.Errorf("nesting deeper than %d levels: %w", MaxDepth, ErrNotLossless)

// notLossless wraps ErrNotLossless with a reason.
func notLossless(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, ErrNotLossless)...)
}

var (
	errSyntax  = notLossless("malformed JSON text")
	errNegZero = notLossless("negative zero")
	// errLossyNumber is a number literal that denotes −0 or whose float64
	// rounding is ±Inf or −0 (SPEC R47 applies to the value it denotes).
	errLossyNumber = notLossless("number literal that is −0, or ±Inf or −0 as a float64")
	errCycle       = notLossless("value contains a cycle")
)
