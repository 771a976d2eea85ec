package sched_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/toolscope/toolscope/internal/sched"
)

// TestTranscripts runs the turn transcripts in testdata/*.txt: a Turn
// driven one input at a time, as the shell drives it, every action it hands
// out written down. Regenerate the expected output with
// `go test ./internal/sched -run TestTranscripts -rewrite` (then read the
// diff: it is the spec).
//
// Commands:
//
//	new n=3 [max=2]                 a turn of n calls, at most max dispatches in flight
//	next                            Next, repeated while it hands out Synthetic
//	classified call=0 mode=par|excl the answer to Classify
//	prepared call=0 dispatched=true the answer to Prepare (false: denied, aborted, failed)
//	dispatch-done call=0            a launched dispatch completed
//	committed call=0                the answer to Commit
//	abort                           the step ctx ended (R97)
//	fail                            an internal failure (R98)
//	err                             Turn.Err
//
// An input prints "ok", or the error that rejected it (the turn is
// unchanged then).
func TestTranscripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		var turn *sched.Turn
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			call := func() int {
				var c int
				d.ScanArgs(t, "call", &c)
				return c
			}
			result := func(err error) string {
				if err != nil {
					return "error: " + err.Error() + "\n"
				}
				return "ok\n"
			}
			if d.Cmd != "new" && turn == nil {
				d.Fatalf(t, "no turn: start with new")
			}
			switch d.Cmd {
			case "new":
				n, max := 0, sched.DefaultMaxParallel
				d.ScanArgs(t, "n", &n)
				if d.HasArg("max") {
					d.ScanArgs(t, "max", &max)
				}
				var err error
				turn, err = sched.New(n, max)
				if errors.Is(err, sched.ErrMaxParallel) {
					return "error: ErrMaxParallel\n" // the sentinel, not its wording
				}
				return result(err)
			case "next":
				var b strings.Builder
				for {
					a := turn.Next()
					fmt.Fprintln(&b, a)
					if a.Kind != sched.Synthetic {
						return b.String()
					}
				}
			case "classified":
				var m string
				d.ScanArgs(t, "mode", &m)
				mode := map[string]sched.Mode{"par": sched.Parallel, "excl": sched.Exclusive, "bad": sched.Mode(9)}[m]
				return result(turn.Classified(call(), mode))
			case "prepared":
				var disp bool
				d.ScanArgs(t, "dispatched", &disp)
				return result(turn.Prepared(call(), disp))
			case "dispatch-done":
				return result(turn.DispatchDone(call()))
			case "committed":
				return result(turn.Committed(call()))
			case "abort":
				turn.Abort()
				return "ok\n"
			case "fail":
				return result(turn.Fail(errors.New("the shell could not run a step")))
			case "err":
				return fmt.Sprintln(turn.Err())
			}
			d.Fatalf(t, "unknown command %q", d.Cmd)
			return ""
		})
	})
}
