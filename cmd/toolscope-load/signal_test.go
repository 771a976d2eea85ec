package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolscope/toolscope/load"
)

// TestLoadCommand_InterruptChild is the process the interrupt tests
// signal: the command itself (main) with the arguments in
// TOOLSCOPE_LOAD_CHILD, or, with TOOLSCOPE_LOAD_CHILD_HANG set, a run
// whose shutdown never ends. Without the variable it does nothing.
func TestLoadCommand_InterruptChild(t *testing.T) {
	args := os.Getenv("TOOLSCOPE_LOAD_CHILD")
	if args == "" {
		t.Skip("the child process of the interrupt tests")
	}
	if os.Getenv("TOOLSCOPE_LOAD_CHILD_HANG") != "" {
		os.Exit(load.RunInterruptible("toolscope-load", os.Stderr, os.Exit, func(ctx context.Context) int {
			os.Stderr.WriteString("child: running\n")
			<-ctx.Done()
			time.Sleep(time.Hour) // a shutdown that does not end
			return 0
		}))
	}
	var a []string
	if err := json.Unmarshal([]byte(args), &a); err != nil {
		panic(err)
	}
	os.Args = append([]string{"toolscope-load"}, a...)
	main()
}

// child starts the command in a process of its own and returns it with
// its stderr, line by line.
func child(t *testing.T, hang bool, args ...string) (*exec.Cmd, <-chan string, *strings.Builder) {
	t.Helper()
	a, _ := json.Marshal(args)
	cmd := exec.Command(os.Args[0], "-test.run=^TestLoadCommand_InterruptChild$")
	cmd.Env = append(os.Environ(), "TOOLSCOPE_LOAD_CHILD="+string(a))
	if hang {
		cmd.Env = append(cmd.Env, "TOOLSCOPE_LOAD_CHILD_HANG=1")
	}
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	lines := make(chan string, 100)
	all := &strings.Builder{}
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	return cmd, lines, all
}

// waitLine waits (bounded) for a line of stderr containing want.
func waitLine(t *testing.T, lines <-chan string, all *strings.Builder, want string) {
	t.Helper()
	deadline := time.After(2 * time.Minute)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("stderr ended without %q:\n%s", want, all)
			}
			all.WriteString(l + "\n")
			if strings.Contains(l, want) {
				return
			}
		case <-deadline:
			t.Fatalf("no %q on stderr within 2 minutes:\n%s", want, all)
		}
	}
}

// exitCode waits (bounded) for the process to end, reading the rest of
// its stderr, and returns its exit status.
func exitCode(t *testing.T, cmd *exec.Cmd, lines <-chan string, all *strings.Builder) int {
	t.Helper()
	deadline := time.After(2 * time.Minute)
	for open := true; open; {
		select {
		case l, ok := <-lines:
			if open = ok; ok {
				all.WriteString(l + "\n")
			}
		case <-deadline:
			t.Fatalf("the process did not end within 2 minutes:\n%s", all)
		}
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-deadline:
		t.Fatalf("the process did not end within 2 minutes:\n%s", all)
		return -1
	}
}

// The first Ctrl-C stops the run, which writes the report of what ran and
// exits 0.
func TestLoadCommand_FirstInterruptStopsWithTheReport(t *testing.T) {
	sc := writeScenario(t, `{"name": "stuck", "agents": {"count": 3},
	  "tools": [{"name": "forever", "mode": "parallel", "latency": {"kind": "constant", "value": "1h"}}],
	  "turns": {"perAgent": 100, "callsPerTurn": {"min": 1, "max": 1}},
	  "load": {"model": "closed"}}`)
	out := filepath.Join(t.TempDir(), "report.json")
	cmd, lines, all := child(t, false, "-scenario", sc, "-out", out, "-html", "", "-progress", "0")
	waitLine(t, lines, all, "Ctrl-C stops and reports")
	_ = cmd.Process.Signal(syscall.SIGINT)
	if code := exitCode(t, cmd, lines, all); code != 0 {
		t.Fatalf("exit %d after one interrupt, want 0; stderr:\n%s", code, all)
	}
	if !strings.Contains(all.String(), "interrupted: stopping and writing the report") {
		t.Fatalf("stderr does not say the run stops:\n%s", all)
	}
	if r := readReport(t, out); r.Stopped != load.StoppedInterrupted {
		t.Fatalf("report stopped %q, want %q", r.Stopped, load.StoppedInterrupted)
	}
}

// A second Ctrl-C while the run shuts down exits at once, status 130,
// saying the report was not written.
func TestLoadCommand_SecondInterruptExitsAtOnce(t *testing.T) {
	cmd, lines, all := child(t, true)
	waitLine(t, lines, all, "child: running")
	_ = cmd.Process.Signal(syscall.SIGINT)
	waitLine(t, lines, all, "interrupted: stopping")
	_ = cmd.Process.Signal(syscall.SIGINT)
	if code := exitCode(t, cmd, lines, all); code != load.InterruptExitCode {
		t.Fatalf("exit %d after a second interrupt, want 130; stderr:\n%s", code, all)
	}
	if !strings.Contains(all.String(), "interrupted again: exiting at once; the report was not written") {
		t.Fatalf("stderr does not say the report was not written:\n%s", all)
	}
}
