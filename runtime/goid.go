package runtime

import goruntime "runtime"

// goroutineID returns the current goroutine's id, parsed from the header
// of its stack trace ("goroutine 123 [running]:"). Go exposes no cheaper
// way; it costs a few microseconds, so it is used only where Dispose needs
// to tell a re-entrant caller from a concurrent one (teardownState).
// Goroutine ids are never reused. 0 means the header could not be read.
func goroutineID() uint64 {
	var buf [64]byte
	n := goruntime.Stack(buf[:], false)
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
