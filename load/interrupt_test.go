package load_test

import (
	"bytes"
	"context"
	"testing"

	"go.uber.org/goleak"

	"github.com/toolscope/toolscope/load"
)

// Without an interrupt, Run returns f's status with f's ctx live while f
// runs, says nothing, never exits, and leaves no goroutine behind. (The
// interrupts themselves are sent to a real process by cmd/toolscope-load's
// TestLoadCommand_FirstInterruptStopsWithTheReport and
// TestLoadCommand_SecondInterruptExitsAtOnce.)
func TestRunInterruptible_WithoutInterruptReturnsFsStatus(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	var stderr bytes.Buffer
	code := load.RunInterruptible("cmd", &stderr, func(c int) { t.Errorf("exit(%d) without an interrupt", c) }, func(ctx context.Context) int {
		if ctx.Err() != nil {
			t.Error("f's ctx ended without an interrupt")
		}
		return 7
	})
	if code != 7 || stderr.Len() != 0 {
		t.Fatalf("Run returned %d and wrote %q, want 7 and nothing", code, stderr.String())
	}
}
