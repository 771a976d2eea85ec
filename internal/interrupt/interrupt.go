// Package interrupt is the load commands' handling of Ctrl-C: the first
// interrupt stops a run cleanly, a second one exits at once.
//
// toolscope-load, toolscope-load-mcp and toolscope-load-cluster stop on
// Ctrl-C (or SIGTERM) and write the report of what ran; the shutdown that
// takes is bounded (30 s for a registry's Close or a target's Detach), and
// a user who does not want to wait presses Ctrl-C again: the command exits
// at once, status 130 (128 + SIGINT, as a shell reports it), saying the
// report was not written.
package interrupt

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// ExitCode is the status a second interrupt exits with.
const ExitCode = 130

// Run runs f with a ctx that the first interrupt (SIGINT, SIGTERM)
// cancels, after saying so on stderr (name is the command's, for its
// lines). A second interrupt before f returns writes that the report was
// not written and calls exit(ExitCode); once f returned, a late one does
// nothing. Run returns f's status, and gives the signals back (Stop) as
// it returns.
func Run(name string, stderr io.Writer, exit func(int), f func(context.Context) int) int {
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
		exit(ExitCode)
	}()
	code := f(ctx)
	mu.Lock()
	finished = true
	mu.Unlock()
	close(done)
	return code
}
