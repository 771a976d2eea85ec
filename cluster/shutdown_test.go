package cluster

import (
	"strings"
	"testing"
)

func TestShutdownGuard_UpstreamPanicBecomesAnError(t *testing.T) {
	if err := shutdownGuard(func() {}); err != nil {
		t.Fatalf("a clean shutdown: %v", err)
	}
	err := shutdownGuard(func() {
		ch := make(chan bool)
		close(ch)
		ch <- true // what protoactor's endpoint manager does at shutdown
	})
	if err == nil || !strings.Contains(err.Error(), "send on closed channel") {
		t.Fatalf("the panic: %v, want an error naming it", err)
	}
}
