//go:build race

package main

import (
	"testing"
	"time"

	"github.com/toolscope/toolscope/cluster/internal/norace"
)

// TestWithoutRace runs this package's tests again without -race, as the
// cluster package's TestWithoutRace does: the tests that start a protoactor
// cluster (cluster_test.go) are left out of -race builds, for protoactor's
// own data races.
func TestWithoutRace(t *testing.T) { norace.Run(t, 5*time.Minute) }
