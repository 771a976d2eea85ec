//go:build race

package main

import (
	"context"
	"os"
	osexec "os/exec"
	"strings"
	"testing"
	"time"
)

// TestWithoutRace runs this package's tests again without -race, as the
// cluster package's TestWithoutRace does: the tests that start a protoactor
// cluster (cluster_test.go) are left out of -race builds, for protoactor's
// own data races.
func TestWithoutRace(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the cluster tests without -race")
	}
	if os.Getenv("TOOLSCOPE_CLUSTER_NORACE_CHILD") != "" {
		t.Skip("already the child run")
	}
	gobin, err := osexec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to run the tests without -race: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := osexec.CommandContext(ctx, gobin, "test", "-count=1", ".")
	cmd.Env = append(os.Environ(), "TOOLSCOPE_CLUSTER_NORACE_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go test without -race (the protoactor cluster tests): %v\n%s", err, out)
	}
	t.Logf("without -race: %s", strings.TrimSpace(string(out)))
}
