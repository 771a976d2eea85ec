package load

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// InterruptExitCode is the status a second interrupt exits with (128 +
// SIGINT, as a shell reports it).
const InterruptExitCode = 130

// RunInterruptible is a load command's handling of Ctrl-C (toolscope-load,
// toolscope-load-mcp, toolscope-load-cluster): it runs f with a ctx that
// the first interrupt (SIGINT, SIGTERM) cancels, after saying so on
// stderr (name is the command's, for its lines), so the run stops cleanly
// and writes the report of what ran. The shutdown that takes is bounded
// (30 s for a registry's Close or a target's Detach); a user who does not
// want to wait interrupts again: before f returns, a second interrupt
// writes that the report was not written and calls
// exit(InterruptExitCode); once f returned, a late one does nothing.
// RunInterruptible returns f's status, and gives the signals back
// (signal.Stop) as it returns.
func RunInterruptible(name string, stderr io.Writer, exit func(int), f func(context.Context) int) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	var mu sync.Mutex
	finished := false
	done := make(chan struct{})
	go func() {
		select {
		case <-sigs:
		case <-done:
			return
		}
		fmt.Fprintf(stderr, "%s: interrupted: stopping and writing the report (interrupt again to exit at once)\n", name)
		cancel()
		select {
		case <-sigs:
		case <-done:
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if finished {
			return
		}
		fmt.Fprintf(stderr, "%s: interrupted again: exiting at once; the report was not written\n", name)
		exit(InterruptExitCode)
	}()
	code := f(ctx)
	mu.Lock()
	finished = true
	mu.Unlock()
	close(done)
	return code
}
