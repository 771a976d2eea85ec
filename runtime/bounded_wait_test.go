package runtime_test

import (
	"bytes"
	"runtime/pprof"
	"testing"
	"time"
)

// boundedWait runs f on a goroutine of its own and fails the test, with a
// dump of every goroutine, if f has not returned within d. f keeps running
// (it is leaked) when the wait fails: it is hung by definition.
func boundedWait(t testing.TB, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		var buf bytes.Buffer
		_ = pprof.Lookup("goroutine").WriteTo(&buf, 2)
		t.Fatalf("%s did not return within %v; goroutines:\n%s", what, d, buf.String())
	}
}
