package main

import (
	"fmt"
	"io"
	"os"

	"github.com/toolscope/toolscope/load"
)

// readLog reads a log written by -record.
func readLog(path string) (*load.Log, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	l, err := load.ReadLog(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return l, nil
}

// simSummary prints what virtual time, the record and the replay add to
// the summary; the exit status is 4 when a replay diverged.
func simSummary(w io.Writer, rep *load.Report, recorded string) int {
	if rep.Virtual {
		fmt.Fprintf(w, "\nvirtual time: %.3f s simulated (every time above is the simulated clock's)\n", rep.Elapsed)
	}
	if rep.Stall != "" {
		fmt.Fprintf(w, "stalled: %s\n", rep.Stall)
	}
	if recorded != "" {
		fmt.Fprintf(w, "log: %s\n", recorded)
	}
	r := rep.Replay
	if r == nil {
		return 0
	}
	if r.First == nil {
		fmt.Fprintf(w, "replay: %d calls, every agent saw the logged results in the logged order\n", r.Calls)
		return 0
	}
	fmt.Fprintf(w, "replay: %d calls, %d divergences; the first: %s\n", r.Calls, r.Divergences, r.First)
	return 4
}
