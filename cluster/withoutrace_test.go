//go:build race

package cluster

import (
	"context"
	"os"
	osexec "os/exec"
	"strings"
	"testing"
	"time"
)

// TestWithoutRace runs this package's tests again in a build without -race,
// as a child `go test`, so that the README's one test command
// (`go test -race github.com/toolscope/toolscope/...`) also runs the tests a
// -race build leaves out: those that start a protoactor cluster, in process
// or as member processes, whose upstream code has data races of its own
// (see cluster_test.go). Everything of this package that runs without a
// cluster has already run under -race in this binary.
func TestWithoutRace(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the cluster tests without -race take a few minutes")
	}
	if os.Getenv("TOOLSCOPE_CLUSTER_NORACE_CHILD") != "" {
		t.Skip("already the child run")
	}
	gobin, err := osexec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to run the tests without -race: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := osexec.CommandContext(ctx, gobin, "test", "-count=1", ".")
	cmd.Env = append(os.Environ(), "TOOLSCOPE_CLUSTER_NORACE_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go test without -race (the protoactor cluster tests): %v\n%s", err, out)
	}
	t.Logf("without -race: %s", strings.TrimSpace(string(out)))
}
