//go:build !race

// Like cluster_test.go, these start protoactor (a cluster client), so they
// are left out of -race builds; withoutrace_test.go runs them.

package main

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"
	"time"
)

// TestAttack_Peers_InterruptWhileJoining: -peers pointing at nothing makes
// the command wait for members (bounded by joinWait, a minute), and Ctrl-C
// during that wait did nothing: the join loop slept on the wall clock
// without looking at the command's ctx. Now an interrupt ends the wait at
// once: exit 1 with a message saying so (join shuts the client down).
func TestAttack_Peers_InterruptWhileJoining(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0") // a port nobody answers as a member
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	type outcome struct {
		code           int
		stdout, stderr string
	}
	done := make(chan outcome, 1)
	go func() {
		var stdout, stderr bytes.Buffer
		code := run(ctx, []string{"-peers", dead, "-out", "", "-progress", "0"}, &stdout, &stderr)
		done <- outcome{code, stdout.String(), stderr.String()}
	}()
	time.Sleep(300 * time.Millisecond) // let it reach the join wait (the test holds either way)
	cancel()
	select {
	case o := <-done:
		if o.code != 1 || !strings.Contains(o.stderr, "interrupted") {
			t.Fatalf("exit %d, stderr %q; want 1 and a message saying the join was interrupted", o.code, o.stderr)
		}
	case <-time.After(20 * time.Second): // joinWait is 60 s: only an ignored ctx gets here
		failHung(t, "run did not return after its ctx ended while joining")
	}
}
