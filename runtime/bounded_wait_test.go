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

// boundedHere runs f on the calling goroutine (for calls whose behaviour
// depends on the goroutine they are made on, such as Close from inside a
// callback). If f has not returned within d, a watchdog panics with a dump
// of every goroutine: a hung goroutine cannot be made to fail its test, so
// the test binary is stopped instead of hanging until go test's timeout.
func boundedHere(d time.Duration, what string, f func()) {
	watchdog := time.AfterFunc(d, func() {
		var buf bytes.Buffer
		_ = pprof.Lookup("goroutine").WriteTo(&buf, 2)
		panic(what + " did not return within " + d.String() + "; goroutines:\n" + buf.String())
	})
	defer watchdog.Stop()
	f()
}
