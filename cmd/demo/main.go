// Command demo shows toolscope at work: a simulated team of agents — a
// coordinator, workers and nested sub-agents — runs seeded-random model
// turns concurrently on one registry. Global tools have realistic latency
// and are classified parallel or exclusive (git by its arguments); scopes
// shadow and restrict them; a guard, an approver, a redacting post-execute
// hook and a timeout are in play; one tool panics and the user cancels one
// turn; the first reviewer works in code mode, each of its turns one
// run_code program calling the tools. It prints a per-agent summary and writes timeline.html, drawn from
// the registry's execution events. With -metrics it serves Prometheus
// metrics while it runs (-metrics-hold keeps serving after the run); with
// -trace it writes the run's OpenTelemetry spans as OTLP JSON. With
// -virtual it runs on virtual time (package simclock): the tools'
// latencies sleep on a clock that moves only when every piece of the
// run's work waits for it, so the run takes a fraction of its simulated
// time and the timeline shows the simulated one (virtual.go says what
// counts as a task of the clock); -scale N stretches every simulated
// duration N times.
//
//	go run ./cmd/demo [-seed N] [-agents N] [-turns N] [-out DIR] [-json FILE]
//	    [-metrics ADDR [-metrics-hold DURATION]] [-trace FILE] [-virtual [-scale N]]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
)

// clusterPointer writes, for -cluster N (N>0), the command that runs the
// demo on N member processes, and reports whether it did. The cluster demo
// lives in the cluster module (cluster/cmd/demo-cluster) because it needs
// NATS and protoactor's cluster, which the root module does not require.
func clusterPointer(members int, w io.Writer) bool {
	if members <= 0 {
		return false
	}
	fmt.Fprintf(w, "demo: the cluster demo is its own command (the cluster module holds NATS): go run ./cluster/cmd/demo-cluster -members %d\n", members)
	return true
}

func main() {
	var cfg config
	flag.Uint64Var(&cfg.Seed, "seed", 1, "seed of the simulated plans (same seed, same plan and summary)")
	flag.IntVar(&cfg.Agents, "agents", 5, "top-level agents, the coordinator included (1–50); coders and researchers bring a sub-agent each")
	flag.IntVar(&cfg.Turns, "turns", 3, "model turns per top-level agent (1–20)")
	flag.StringVar(&cfg.OutDir, "out", ".", "directory for timeline.html (empty: don't write it)")
	flag.StringVar(&cfg.JSONFile, "json", "", "write the raw execution events to this file, one JSON object per line")
	flag.StringVar(&cfg.MetricsAddr, "metrics", "", "serve Prometheus metrics on http://ADDR/metrics while the demo runs (e.g. 127.0.0.1:9090)")
	flag.DurationVar(&cfg.MetricsHold, "metrics-hold", 0, "with -metrics, keep serving /metrics this long after the run (e.g. 30s)")
	flag.StringVar(&cfg.TraceFile, "trace", "", "write the run's spans to this file as OTLP JSON (loads in Jaeger UI)")
	flag.BoolVar(&cfg.Virtual, "virtual", false, "run on virtual time: the tools' latencies sleep on a simulated clock that moves only when every agent, call and program waits for it; the timeline and summary show virtual time (not with -trace: spans start and end on the wall clock)")
	flag.IntVar(&cfg.Scale, "scale", 1, "with -virtual, stretch every simulated duration (latencies, approver, interrupt, timeout) N times: the same run with tools that take seconds, at the same wall cost (1–1000000)")
	members := flag.Int("cluster", 0, "N>0: the cluster demo is a separate command (NATS lives in the cluster module, which this module does not import): print how to run it and exit 2")
	flag.Parse()
	if clusterPointer(*members, os.Stderr) {
		os.Exit(2)
	}
	if cfg.Scale == 0 { // config's zero means 1; on the command line it is a mistake
		fmt.Fprintf(os.Stderr, "demo: -scale must be between 1 and %d, got 0\n", maxScale)
		os.Exit(2)
	}
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "demo: unexpected arguments %q\n", flag.Args())
		os.Exit(2)
	}
	if isTerminal(os.Stderr) {
		cfg.Progress = os.Stderr
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if _, err := run(ctx, cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		stop()
		os.Exit(1)
	}
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
