package runtime_test

import (
	"strings"
	"testing"
	"time"

	"runtime/pprof"
)

// Helpers that turn a hang into an informative failure: every wait is
// bounded by waitLimit, and a wait that runs out dumps every goroutine.

// goroutineDump returns the stacks of all goroutines (pprof debug=2).
func goroutineDump() string {
	var b strings.Builder
	if p := pprof.Lookup("goroutine"); p != nil {
		_ = p.WriteTo(&b, 2)
	}
	return b.String()
}

// failHung fails t with what and a dump of every goroutine. Safe to call
// from any goroutine (it does not stop the caller).
func failHung(t testing.TB, what string) {
	t.Helper()
	t.Errorf("hang: %s\n--- goroutines ---\n%s", what, goroutineDump())
}

// awaitClosed waits up to waitLimit for ch to be closed (or to deliver),
// failing with a goroutine dump otherwise. It reports whether ch fired.
func awaitClosed(t testing.TB, ch <-chan struct{}, what string) bool {
	t.Helper()
	select {
	case <-ch:
		return true
	case <-time.After(waitLimit):
		failHung(t, what)
		return false
	}
}
