//go:build race

package cluster

import (
	"testing"
	"time"

	"github.com/toolscope/toolscope/cluster/internal/norace"
)

// TestWithoutRace runs this package's tests again in a build without -race,
// so that the README's one test command also runs the tests a -race build
// leaves out: those that start a protoactor cluster, in process or as member
// processes, whose upstream code has data races of its own (see
// cluster_test.go). Everything of this package that runs without a cluster
// has already run under -race in this binary.
func TestWithoutRace(t *testing.T) { norace.Run(t, 15*time.Minute) }
