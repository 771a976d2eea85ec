// Command toolscope-load-cluster runs a load scenario (package load)
// against a toolscope cluster: every agent tree of the scenario is a
// cluster tree (a grain), its scopes and per-level restrictions made
// through the cluster client, the scenario's simulated tools mounted from
// the members' catalog (cluster/loadtarget), and every turn one
// ExecuteTurn through the client, timed on the client's side. So the
// figures are the cluster's — placement, gRPC, the store's claims and
// records — as a client of it sees them.
//
//	go run ./cluster/cmd/toolscope-load-cluster -scenario example:closed -members 3
//	go run ./cluster/cmd/toolscope-load-cluster -scenario my.json \
//	    -name toolscope -peers 127.0.0.1:6331,127.0.0.1:6332   # join running members
//
// By default it starts -members members in this process (each its own
// actor system on loopback) on an embedded NATS JetStream store in a
// temporary directory, and joins them as a client-only member. With
// -peers it joins a running cluster instead (its name, the members'
// health endpoints, as toolscope-member takes them); the members must
// have loadtarget.Entry in their catalog (toolscope-member does).
//
// It prints progress, stops cleanly on Ctrl-C with the report of what
// ran, prints the summary table and writes report.json and report.html as
// toolscope-load does. Admission wait, call service and the time saved by
// parallelism happen on the members, out of the client's sight: they are
// reported as not measured. A cluster runs on the wall clock with its own
// tools: -virtual, -record and -replay are refused.
//
// Exit status: 0 after a run (interrupted or not), 1 when the cluster
// could not be started or reached or a report not written, 2 for bad
// flags or a bad scenario.
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
	"strings"
	"time"

	"github.com/toolscope/toolscope/cluster"
	"github.com/toolscope/toolscope/cluster/loadtarget"
	"github.com/toolscope/toolscope/load"
)

func main() {
	os.Exit(load.RunInterruptible("toolscope-load-cluster", os.Stderr, os.Exit, func(ctx context.Context) int {
		return run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	}))
}

// run is the command without the process: args without the program name.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("toolscope-load-cluster", flag.ContinueOnError)
	fs.SetOutput(stderr)
	scenario := fs.String("scenario", "example:closed", "scenario file, or example:NAME for an embedded one ("+strings.Join(prefixed(load.Examples()), ", ")+")")
	members := fs.Int("members", 1, "members to start in this process on an embedded NATS store (1–9; not with -peers)")
	peers := fs.String("peers", "", "join a running cluster: the comma-separated health endpoints of its members (as toolscope-member's -peers)")
	name := fs.String("name", "toolscope", "the running cluster's name (with -peers)")
	kind := fs.String("kind", cluster.KindName, "the grain kind hosting the trees (with -peers)")
	lease := fs.Duration("lease", 10*time.Second, "the in-process members' lease TTL")
	callTimeout := fs.Duration("call-timeout", time.Minute, "bound each request to the cluster (a turn, a mutation)")
	out := fs.String("out", "report.json", "write the report as JSON to this file (empty: don't)")
	htmlOut := fs.String("html", "auto", "write the report as HTML to this file (auto: next to -out; empty: don't)")
	every := fs.Duration("progress", time.Second, "print progress this often to stderr (0: never)")
	virtual := fs.Bool("virtual", false, "refused: a cluster runs on the wall clock")
	record := fs.String("record", "", "refused: the members' tools are not the load tool's to record")
	replay := fs.String("replay", "", "refused: the members' tools are not the load tool's to replay")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	switch {
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "toolscope-load-cluster: unexpected arguments %q\n", fs.Args())
		return 2
	case *virtual || *record != "" || *replay != "":
		fmt.Fprintln(stderr, "toolscope-load-cluster: -virtual, -record and -replay are for toolscope-load's in-process runs: a cluster runs on the wall clock with its members' own tools")
		return 2
	case *peers == "" && (*members < 1 || *members > 9):
		fmt.Fprintf(stderr, "toolscope-load-cluster: -members must be 1 to 9, got %d\n", *members)
		return 2
	case *lease < 500*time.Millisecond:
		fmt.Fprintf(stderr, "toolscope-load-cluster: -lease must be at least 500ms, got %s\n", *lease)
		return 2
	case *callTimeout <= 0:
		fmt.Fprintf(stderr, "toolscope-load-cluster: -call-timeout must be positive, got %s\n", *callTimeout)
		return 2
	}
	membersSet := false
	fs.Visit(func(f *flag.Flag) { membersSet = membersSet || f.Name == "members" })
	if *peers != "" && membersSet {
		fmt.Fprintln(stderr, "toolscope-load-cluster: -members starts members here, -peers joins running ones: give one of the two")
		return 2
	}
	var peerHosts []string
	if *peers != "" {
		var err error
		if peerHosts, err = peerList(*peers); err != nil {
			fmt.Fprintln(stderr, "toolscope-load-cluster:", err)
			return 2
		}
	}

	data, err := load.ReadScenario(*scenario)
	if err != nil {
		fmt.Fprintln(stderr, "toolscope-load-cluster:", err)
		return 2
	}
	sc, err := load.Parse(data)
	if err != nil {
		var se *load.ScenarioError
		if errors.As(err, &se) {
			fmt.Fprintf(stderr, "toolscope-load-cluster: %s: bad scenario:\n", *scenario)
			for _, p := range se.Problems {
				fmt.Fprintf(stderr, "  %s\n", p)
			}
		} else {
			fmt.Fprintln(stderr, "toolscope-load-cluster:", err)
		}
		return 2
	}

	var c *conn
	if *peers != "" {
		c, err = join(ctx, *name, peerHosts)
	} else {
		c, err = startLocal(ctx, *members, *lease)
	}
	if err != nil {
		fmt.Fprintln(stderr, "toolscope-load-cluster:", err)
		return 1
	}
	defer c.close()
	copts := []cluster.ClientOption{cluster.WithDefaultTimeout(*callTimeout)}
	if *peers != "" {
		copts = append(copts, cluster.WithKind(*kind))
	}
	target := loadtarget.New(cluster.NewClient(c.client, copts...))

	fmt.Fprintf(stderr, "toolscope-load-cluster: %s against %s: %d agents, %d turns each, %s loop (Ctrl-C stops and reports)\n",
		sc.Name, c.where, sc.AgentCount(), sc.Turns.PerAgent, sc.Load.Model)
	opts := load.Options{Remote: target}
	if *every > 0 {
		opts.ProgressEvery = *every
		opts.Progress = func(p load.Progress) {
			fmt.Fprintf(stderr, "  %6.1fs  turns %d/%d (%d in flight)  calls %d  failed %d\n",
				p.Elapsed.Seconds(), p.TurnsDone, p.TurnsPlanned, p.TurnsInFlight, p.Calls, p.Failures)
		}
	}
	rep, err := load.Run(ctx, sc, opts)
	if err != nil {
		fmt.Fprintln(stderr, "toolscope-load-cluster:", err)
		return 1
	}
	rep.Target = c.where
	fmt.Fprintln(stdout)
	if err := rep.WriteSummary(stdout); err != nil {
		fmt.Fprintln(stderr, "toolscope-load-cluster:", err)
		return 1
	}
	if *out != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err == nil {
			err = os.WriteFile(*out, append(b, '\n'), 0o644)
		}
		if err != nil {
			fmt.Fprintln(stderr, "toolscope-load-cluster: report:", err)
			return 1
		}
		fmt.Fprintf(stdout, "\nreport: %s\n", *out)
	}
	page := *htmlOut
	if page == "auto" {
		page = ""
		if *out != "" {
			page = strings.TrimSuffix(*out, filepath.Ext(*out)) + ".html"
		}
	}
	if page != "" {
		f, err := os.Create(page)
		if err == nil {
			err = rep.WriteHTML(f)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			fmt.Fprintln(stderr, "toolscope-load-cluster: report.html:", err)
			return 1
		}
		fmt.Fprintf(stdout, "page:   %s\n", page)
	}
	return 0
}

func prefixed(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = "example:" + n
	}
	return out
}
