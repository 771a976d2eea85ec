// Command toolscope-load runs a load scenario (package load) against an
// in-process toolscope registry: it prints progress while it runs, stops
// cleanly on Ctrl-C with the report of what ran, prints a summary table
// (throughput, call and turn latency p50/p90/p99/p99.9, admission wait,
// queue depth, failures by code, time saved by parallelism) and writes
// report.json and report.html (latency CDFs, throughput and queue depth over
// time, admission-wait histogram, per-tool breakdown, failures by code).
//
//	go run ./cmd/toolscope-load                      # the embedded closed-loop example
//	go run ./cmd/toolscope-load -scenario my.json -out report.json
//	go run ./cmd/toolscope-load -scenario example:open
//	go run ./cmd/toolscope-load -schema > scenario.schema.json
//	go run ./cmd/toolscope-load -compare a.json b.json
//	go run ./cmd/toolscope-load -virtual -scenario example:simulation -record run.jsonl
//	go run ./cmd/toolscope-load -replay run.jsonl
//
// -virtual runs on virtual time (simulated latency costs no wall time;
// the report's times are the clock's); -record writes the run's log;
// -replay runs the log's scenario again, on the time the log was recorded
// on, with the tools' outputs served from the log, and reports the first
// place an agent saw a different result (a -scenario, or a -virtual the
// log disagrees with, is refused with it rather than ignored).
//
// Ctrl-C (or SIGTERM) stops the run and writes the report of what ran; a
// second one while it shuts down exits at once, status 130, without the
// report (load.RunInterruptible).
//
// Exit status: 0 after a run (interrupted or not), 1 when the run could not
// start, the report could not be written or the -record log could not be
// (the report is still written), 2 for bad flags (an -out, -html or -record
// file that cannot be written, or two naming one file, is found before the
// run) or a bad
// scenario (every bad field is named by its JSON path) or log, 4 when a
// replay diverged from its log.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/toolscope/toolscope/load"
)

func main() {
	os.Exit(load.RunInterruptible("toolscope-load", os.Stderr, os.Exit, func(ctx context.Context) int {
		return run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	}))
}

// run is the command without the process: args without the program name.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("toolscope-load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	scenario := fs.String("scenario", "example:closed", "scenario file (JSON or YAML), or example:NAME for an embedded one ("+strings.Join(prefixed(load.Examples()), ", ")+")")
	out := fs.String("out", "report.json", "write the report as JSON to this file (empty: don't)")
	htmlOut := fs.String("html", "auto", "write the report as a self-contained HTML page to this file (auto: next to -out, its name ending .html; empty: don't)")
	every := fs.Duration("progress", time.Second, "print progress this often to stderr (0: never)")
	printSchema := fs.Bool("schema", false, "print the scenario format's JSON Schema and exit")
	compare := fs.Bool("compare", false, "compare two report.json files given as arguments (A then B) and exit")
	virtual := fs.Bool("virtual", false, "run on virtual time: tool latency, think time and timeouts pass on a simulated clock")
	recordTo := fs.String("record", "", "write the run's log (every call and turn, one JSON line each) to this file")
	replayFrom := fs.String("replay", "", "replay this log: its scenario, its outputs; report the first divergence")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *printSchema {
		_, _ = stdout.Write(load.Schema())
		return 0
	}
	if *compare {
		if fs.NArg() != 2 {
			fmt.Fprintln(stderr, "toolscope-load: -compare takes two report files: -compare a.json b.json")
			return 2
		}
		return compareFiles(fs.Arg(0), fs.Arg(1), stdout, stderr)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "toolscope-load: unexpected arguments %q\n", fs.Args())
		return 2
	}

	opts := load.Options{Virtual: *virtual}
	var data []byte
	var err error
	if *replayFrom != "" {
		given := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
		if given["scenario"] { // it was ignored: the replay ran the log's
			fmt.Fprintln(stderr, "toolscope-load: -scenario with -replay: a replay runs the scenario its log holds; leave -scenario out")
			return 2
		}
		l, err := readLog(*replayFrom)
		if err != nil {
			fmt.Fprintln(stderr, "toolscope-load:", err)
			return 2
		}
		if given["virtual"] && *virtual != l.Header.Virtual {
			fmt.Fprintf(stderr, "toolscope-load: -virtual=%v with -replay of a log recorded with -virtual=%v: a replay runs on the time its log was recorded on; leave -virtual out\n", *virtual, l.Header.Virtual)
			return 2
		}
		opts.Replay, opts.Virtual = l, l.Header.Virtual
		data = l.Header.Scenario
	} else {
		data, err = load.ReadScenario(*scenario)
	}
	if err != nil {
		fmt.Fprintln(stderr, "toolscope-load:", err)
		return 2
	}
	sc, err := load.Parse(data)
	if err != nil {
		var se *load.ScenarioError
		if errors.As(err, &se) {
			fmt.Fprintf(stderr, "toolscope-load: %s: bad scenario:\n", *scenario)
			for _, p := range se.Problems {
				fmt.Fprintf(stderr, "  %s\n", p)
			}
			return 2
		}
		fmt.Fprintln(stderr, "toolscope-load:", err)
		return 2
	}

	page := htmlPath(*htmlOut, *out)
	if err := checkOutputs([][2]string{{"-out", *out}, {"-html", page}, {"-record", *recordTo}}, *replayFrom); err != nil {
		fmt.Fprintln(stderr, "toolscope-load:", err)
		return 2
	}
	fmt.Fprintf(stderr, "toolscope-load: %s: %d agents, %d turns each, %s loop (Ctrl-C stops and reports)\n",
		sc.Name, sc.AgentCount(), sc.Turns.PerAgent, sc.Load.Model)
	if *recordTo != "" {
		f, err := os.Create(*recordTo)
		if err != nil {
			fmt.Fprintln(stderr, "toolscope-load: record:", err)
			return 1
		}
		defer f.Close()
		opts.Record = f
	}
	if *every > 0 {
		opts.ProgressEvery = *every
		opts.Progress = func(p load.Progress) {
			fmt.Fprintf(stderr, "  %6.1fs  turns %d/%d (%d in flight)  calls %d  failed %d\n",
				p.Elapsed.Seconds(), p.TurnsDone, p.TurnsPlanned, p.TurnsInFlight, p.Calls, p.Failures)
		}
	}
	rep, err := load.Run(ctx, sc, opts)
	if rep == nil {
		fmt.Fprintln(stderr, "toolscope-load:", err)
		return 1
	}
	recordFailed := err != nil // the log is lost; the report is written, the exit status 1
	if recordFailed {
		fmt.Fprintln(stderr, "toolscope-load:", err)
	}
	fmt.Fprintln(stdout)
	if err := rep.WriteSummary(stdout); err != nil {
		fmt.Fprintln(stderr, "toolscope-load:", err)
		return 1
	}
	status := simSummary(stdout, rep, *recordTo)
	if recordFailed {
		status = 1
	}
	if *out != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err == nil {
			err = os.WriteFile(*out, append(b, '\n'), 0o644)
		}
		if err != nil {
			fmt.Fprintln(stderr, "toolscope-load: report:", err)
			return 1
		}
		fmt.Fprintf(stdout, "\nreport: %s\n", *out)
	}
	if p := page; p != "" {
		if err := writeHTML(p, rep); err != nil {
			fmt.Fprintln(stderr, "toolscope-load: report.html:", err)
			return 1
		}
		fmt.Fprintf(stdout, "page:   %s\n", p)
	}
	return status
}

func prefixed(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = "example:" + n
	}
	return out
}

// checkOutputs refuses, before anything runs, output files (flag name,
// path; empty: none) that cannot be written, or two that name one file —
// one another's, or the -replay log's (it would be overwritten) — so a
// long run is not lost to a report it cannot write.
func checkOutputs(outs [][2]string, replay string) error {
	seen := map[string]string{}
	if replay != "" {
		if abs, err := filepath.Abs(replay); err == nil {
			seen[abs] = "-replay"
		}
	}
	for _, o := range outs {
		flagName, path := o[0], o[1]
		if path == "" {
			continue
		}
		abs, err := filepath.Abs(path)
		if err != nil {
			return fmt.Errorf("%s %s: %w", flagName, path, err)
		}
		fi, statErr := os.Stat(path)
		if other, dup := seen[abs]; dup && (statErr != nil || fi.Mode().IsRegular()) { // two /dev/null are fine
			hint := ""
			if flagName == "-html" {
				hint = " (-html auto names the page after -out, its extension replaced by .html)"
			}
			return fmt.Errorf("%s %s: the same file as %s%s; give each its own", flagName, path, other, hint)
		}
		seen[abs] = flagName
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			return fmt.Errorf("%s: cannot write the file: %w", flagName, err)
		}
		_ = f.Close()
		if os.IsNotExist(statErr) {
			_ = os.Remove(path) // only a probe: the file is written after the run
		}
	}
	return nil
}

// compareFiles prints two reports side by side; exit status 0 when no
// regression is marked, 3 when one is (so a script can gate on it).
func compareFiles(pa, pb string, stdout, stderr io.Writer) int {
	var reps [2]*load.Report
	for i, p := range []string{pa, pb} {
		b, err := load.ReadFileBounded(p, 64<<20)
		if err == nil {
			reps[i] = new(load.Report)
			err = json.Unmarshal(b, reps[i])
		}
		if err == nil && (reps[i].Scenario == "" || reps[i].Stopped == "") {
			err = errors.New("not a report written by toolscope-load (it has no scenario or stopped field)")
		}
		if err != nil {
			fmt.Fprintf(stderr, "toolscope-load: %s: %v\n", p, err)
			return 2
		}
	}
	a, b := reps[0], reps[1]
	if a.Scenario != b.Scenario || a.Model != b.Model {
		fmt.Fprintf(stderr, "toolscope-load: note: A ran %s (%s loop), B %s (%s loop): the figures are of different workloads\n",
			strconv.Quote(a.Scenario), a.Model, strconv.Quote(b.Scenario), b.Model)
	}
	if a.Virtual != b.Virtual {
		fmt.Fprintf(stderr, "toolscope-load: note: one run was on virtual time, the other on the wall clock: their times are of different clocks\n")
	}
	diffs := load.Compare(reps[0], reps[1], load.DefaultNoise)
	if err := load.WriteComparison(stdout, reps[0], reps[1], diffs); err != nil {
		fmt.Fprintln(stderr, "toolscope-load:", err)
		return 1
	}
	for _, d := range diffs {
		if d.Regression {
			return 3
		}
	}
	return 0
}
