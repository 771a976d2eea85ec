// Package norace runs a package's tests again in a build without -race, as
// a child `go test`, for the cluster module's tests that start a protoactor
// cluster: those are left out of -race builds (`//go:build !race`) for
// protoactor's own data races, and the README's one test command
// (`go test -race github.com/toolscope/toolscope/...`) still runs them this
// way. Only test code imports it.
package norace

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// childEnv marks the child run, so that it does not start another.
const childEnv = "TOOLSCOPE_CLUSTER_NORACE_CHILD"

// Run runs `go test -count=1 .` in the calling test's package directory
// without -race, bounded by timeout, and fails t with its output when the
// child fails. It skips under -short, in the child run itself, and without
// a go command.
func Run(t *testing.T, timeout time.Duration) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the cluster tests without -race")
	}
	if os.Getenv(childEnv) != "" {
		t.Skip("already the child run")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to run the tests without -race: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, gobin, "test", "-count=1", ".")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go test without -race (the protoactor cluster tests): %v\n%s", err, out)
	}
	t.Logf("without -race: %s", strings.TrimSpace(string(out)))
}
