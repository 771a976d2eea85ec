// Package lossless is toolscope's lossless JSON (contract R47) for code
// built on toolscope outside its module — the MCP bridge and the provider
// adapters are its users: the canonical text the registry gives a JSON
// value, and an ordered tree to read and edit a JSON document without
// losing its key order or the literal of a number.
//
// The canonical form is compact, keeps key order, keeps number literals
// verbatim, resolves a duplicate key as JavaScript's JSON.parse does (first
// position, last value) and escapes only '"', '\\' and control characters.
// It is a fixed point: Canonical of a canonical text returns it unchanged,
// so two equal values have byte-equal canonical texts. Text outside the
// lossless set (a number literal denoting −0 or rounding to ±Inf, nesting
// deeper than the registry accepts) is refused with an error wrapping
// ErrNotLossless. No function here panics, whatever its input.
//
// The package is a thin, stable face of the registry's own JSON code:
// the values it returns are those the registry computes.
package lossless
