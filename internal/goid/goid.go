// Package goid reads the current goroutine's id. Go exposes no cheaper way
// than parsing the header of the goroutine's stack trace, which costs about
// a microsecond, so it is only for paths that must tell a re-entrant caller
// from a concurrent one before they wait (a scope's Dispose, an MCP
// import's Close and Sync).
package goid

import "runtime"

// ID returns the current goroutine's id, parsed from the header of its
// stack trace ("goroutine 123 [running]:"); 0 if the header cannot be read.
// Goroutine ids are never reused.
func ID() uint64 {
	var buf [64]byte
	n := runtime.Stack(buf[:], false)
	const prefix = "goroutine "
	if n <= len(prefix) || string(buf[:len(prefix)]) != prefix {
		return 0
	}
	var id uint64
	for _, c := range buf[len(prefix):n] {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uint64(c-'0')
	}
	return id
}
