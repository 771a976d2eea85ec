// Command toolscope-load-mcp load-tests an MCP server under toolscope's
// scheduler: it connects to the server (a command over stdio, or a
// streamable HTTP endpoint), imports its tools into an in-process registry
// through mcp.Import, and runs a load scenario (package load) whose calls
// go to them — so the figures are the server's, as an agent built on
// toolscope would see them: turns, classification, admission and all.
//
//	go run ./mcp/cmd/toolscope-load-mcp -- go run ./mcp/cmd/toolscope-mcp   # the embedded demo scenario, stdio
//	go run ./mcp/cmd/toolscope-load-mcp -url http://127.0.0.1:8080/mcp -scenario my.json \
//	    -tool lookup=search -args 'lookup={"query":"rate limits"}'
//
// The scenario's tools are mapped onto the server's: each is the server
// tool of its own name unless -tool NAME=SERVER_TOOL says otherwise, and
// is called with the arguments -args NAME=JSON gives ({} without). Two
// scenario tools may not map to one server tool. The scenario's modes
// classify the calls (parallel or exclusive; by-argument cannot be told to
// a server and is refused); its latency, failure and timeout rates and
// output sizes are not used: the server decides those. The embedded demo
// scenario (demo.json) fits toolscope-mcp's tools and brings its own
// arguments.
//
// Connecting and listing the server's tools are bounded (a minute each).
// It prints progress, stops cleanly on Ctrl-C with the report of what ran,
// prints the summary table and writes report.json and report.html as
// toolscope-load does. Exit status: 0 after a run, 1 when the server
// could not be reached or a report not written, 2 for bad flags (an -out
// or -html that cannot be written, or both naming one file, is found
// before the server is reached), a bad scenario or a mapping the server
// cannot serve.
package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolscope/toolscope/load"
	"github.com/toolscope/toolscope/mcp"
	"github.com/toolscope/toolscope/runtime"
)

// setupTimeout bounds connecting to the server and listing its tools
// (a server that accepts the connection and never answers would hang the
// command before the first call, with no progress to show).
var setupTimeout = time.Minute

//go:embed demo.json
var demoScenario []byte

// demoArgs are the arguments of the demo scenario's calls.
var demoArgs = map[string]string{
	"read":   `{"path":"/workspace/README.md"}`,
	"search": `{"query":"toolscope load testing"}`,
	"lint":   `{"path":"/workspace/main.go"}`,
	"write":  `{"path":"/workspace/notes.md","content":"load test"}`,
}

func main() {
	os.Exit(load.RunInterruptible("toolscope-load-mcp", os.Stderr, os.Exit, func(ctx context.Context) int {
		return run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	}))
}

// pairs is a repeated NAME=VALUE flag.
type pairs map[string]string

func (p pairs) String() string { return fmt.Sprint(map[string]string(p)) }

func (p pairs) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want NAME=VALUE, got %q", s)
	}
	if _, dup := p[k]; dup {
		return fmt.Errorf("%s given twice", k)
	}
	p[k] = v
	return nil
}

// run is the command without the process: args without the program name.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("toolscope-load-mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	scenario := fs.String("scenario", "demo", `scenario file (JSON or YAML), or "demo" for the embedded one (toolscope-mcp's tools)`)
	url := fs.String("url", "", "the server's streamable HTTP endpoint (instead of a command after --)")
	token := fs.String("token", "", `send "Authorization: Bearer TOKEN" to the HTTP endpoint`)
	out := fs.String("out", "report.json", "write the report as JSON to this file (empty: don't)")
	htmlOut := fs.String("html", "auto", "write the report as HTML to this file (auto: next to -out; empty: don't)")
	every := fs.Duration("progress", time.Second, "print progress this often to stderr (0: never)")
	callTimeout := fs.Duration("call-timeout", 0, "bound each tools/call (0: none)")
	toolMap, argMap := pairs{}, pairs{}
	fs.Var(toolMap, "tool", "NAME=SERVER_TOOL: call the server tool SERVER_TOOL for the scenario's tool NAME (repeatable)")
	fs.Var(argMap, "args", "NAME=JSON: the arguments of every call of the scenario's tool NAME (repeatable; default {})")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	command := fs.Args()
	if (*url == "") == (len(command) == 0) {
		fmt.Fprintln(stderr, "toolscope-load-mcp: give the server as -url URL or as a command after --, one of the two")
		return 2
	}

	data := demoScenario
	if *scenario != "demo" {
		b, err := load.ReadFileBounded(*scenario, load.MaxScenarioBytes)
		if err != nil {
			fmt.Fprintln(stderr, "toolscope-load-mcp:", err)
			return 2
		}
		data = b
	} else {
		for k, v := range demoArgs {
			if _, ok := argMap[k]; !ok {
				argMap[k] = v
			}
		}
	}
	sc, err := load.Parse(data)
	if err != nil {
		var se *load.ScenarioError
		if errors.As(err, &se) {
			fmt.Fprintf(stderr, "toolscope-load-mcp: %s: bad scenario:\n", *scenario)
			for _, p := range se.Problems {
				fmt.Fprintf(stderr, "  %s\n", p)
			}
		} else {
			fmt.Fprintln(stderr, "toolscope-load-mcp:", err)
		}
		return 2
	}
	target, err := newTarget(sc, toolMap, argMap)
	if err != nil {
		fmt.Fprintln(stderr, "toolscope-load-mcp:", err)
		return 2
	}
	if *callTimeout > 0 {
		target.opts = append(target.opts, mcp.WithCallTimeout(*callTimeout))
	}

	page := *htmlOut
	if page == "auto" {
		page = ""
		if *out != "" {
			page = strings.TrimSuffix(*out, filepath.Ext(*out)) + ".html"
		}
	}
	if err := checkOutputs(*out, page); err != nil {
		fmt.Fprintln(stderr, "toolscope-load-mcp:", err)
		return 2
	}

	client := sdk.NewClient(&sdk.Implementation{Name: "toolscope-load-mcp", Version: "0"},
		&sdk.ClientOptions{ToolListChangedHandler: mcp.ToolListChangedHandler})
	var transport sdk.Transport
	where := *url
	if *url != "" {
		t := &sdk.StreamableClientTransport{Endpoint: *url}
		if *token != "" {
			t.HTTPClient = &http.Client{Transport: bearer{*token, http.DefaultTransport}}
		}
		transport = t
	} else {
		where = strings.Join(command, " ")
		cmd := exec.Command(command[0], command[1:]...)
		cmd.Stderr = stderr
		transport = &sdk.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}
	}
	cctx, cancel := context.WithTimeout(ctx, setupTimeout)
	session, err := client.Connect(cctx, transport, nil)
	cancel()
	if err != nil {
		fmt.Fprintf(stderr, "toolscope-load-mcp: connecting to %s: %v\n", where, err)
		return 1
	}
	defer session.Close()
	target.session = session

	fmt.Fprintf(stderr, "toolscope-load-mcp: %s against %s: %d agents, %d turns each, %s loop (Ctrl-C stops and reports)\n",
		sc.Name, where, sc.AgentCount(), sc.Turns.PerAgent, sc.Load.Model)
	opts := load.Options{Target: target}
	if *every > 0 {
		opts.ProgressEvery = *every
		opts.Progress = func(p load.Progress) {
			fmt.Fprintf(stderr, "  %6.1fs  turns %d/%d (%d in flight)  calls %d  failed %d\n",
				p.Elapsed.Seconds(), p.TurnsDone, p.TurnsPlanned, p.TurnsInFlight, p.Calls, p.Failures)
		}
	}
	rep, err := load.Run(ctx, sc, opts)
	if err != nil {
		fmt.Fprintln(stderr, "toolscope-load-mcp:", err)
		var me *mappingError
		if errors.As(err, &me) {
			return 2
		}
		return 1
	}
	fmt.Fprintln(stdout)
	if err := rep.WriteSummary(stdout); err != nil {
		fmt.Fprintln(stderr, "toolscope-load-mcp:", err)
		return 1
	}
	if *out != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err == nil {
			err = os.WriteFile(*out, append(b, '\n'), 0o644)
		}
		if err != nil {
			fmt.Fprintln(stderr, "toolscope-load-mcp: report:", err)
			return 1
		}
		fmt.Fprintf(stdout, "\nreport: %s\n", *out)
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
			fmt.Fprintln(stderr, "toolscope-load-mcp: report.html:", err)
			return 1
		}
		fmt.Fprintf(stdout, "page:   %s\n", page)
	}
	return 0
}

// bearer adds an Authorization header to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// mappingError is a scenario-to-server mapping the server cannot serve.
type mappingError struct{ msg string }

func (e *mappingError) Error() string { return e.msg }

// target is the MCP server as a load.Target: Attach imports the server
// tools the scenario maps to into the registry's global scope.
type target struct {
	session  *sdk.ClientSession
	server   []string        // per scenario tool: the server tool
	args     []string        // per scenario tool: the arguments
	parallel map[string]bool // server tool → classified parallel
	opts     []mcp.ImportOption
	imported *mcp.Imported
}

// newTarget checks the mapping against the scenario: every -tool and
// -args names a scenario tool, every argument is a JSON object, no two
// scenario tools share a server tool, and no mode is by-argument.
func newTarget(sc *load.Scenario, toolMap, argMap pairs) (*target, error) {
	t := &target{parallel: map[string]bool{}}
	names := map[string]bool{}
	owner := map[string]string{}
	for _, tool := range sc.Tools {
		names[tool.Name] = true
		server := tool.Name
		if s, ok := toolMap[tool.Name]; ok {
			server = s
		}
		if other, dup := owner[server]; dup {
			return nil, fmt.Errorf("-tool: the scenario's tools %q and %q both map to the server tool %q; map each to its own", other, tool.Name, server)
		}
		owner[server] = tool.Name
		if tool.Mode == load.ModeByArgument {
			return nil, fmt.Errorf("tool %q: mode by-argument cannot be applied to a server's tool (use parallel or exclusive)", tool.Name)
		}
		args := argMap[tool.Name]
		if args == "" {
			args = "{}"
		}
		var obj map[string]any
		if err := json.Unmarshal([]byte(args), &obj); err != nil || obj == nil {
			return nil, fmt.Errorf("-args %s: not a JSON object: %s", tool.Name, args)
		}
		t.server = append(t.server, server)
		t.args = append(t.args, args)
		t.parallel[server] = tool.Mode == load.ModeParallel
	}
	for _, m := range []pairs{toolMap, argMap} {
		for k := range m {
			if !names[k] {
				return nil, fmt.Errorf("-tool/-args %s: the scenario has no tool %q (it has %s)", k, k, strings.Join(sortedKeys(names), ", "))
			}
		}
	}
	t.opts = []mcp.ImportOption{
		mcp.WithAllow(t.server...),
		mcp.WithClassifier(func(tool *sdk.Tool, _ json.RawMessage) bool { return t.parallel[tool.Name] }),
	}
	return t, nil
}

func (t *target) Attach(ctx context.Context, reg *runtime.Registry, _ *load.Scenario) ([]load.TargetTool, error) {
	lctx, cancel := context.WithTimeout(ctx, setupTimeout) // a server that never answers tools/list hung the run
	defer cancel()
	im, err := mcp.Import(lctx, reg.Global(), t.session, t.opts...)
	if err != nil {
		if ctx.Err() == nil && errors.Is(lctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("importing the server's tools: no answer to tools/list in %v: %w", setupTimeout, err)
		}
		return nil, err
	}
	t.imported = im
	have := map[string]bool{}
	for _, n := range im.Tools() {
		have[n] = true
	}
	var missing []string
	for _, s := range t.server {
		if !have[s] {
			why := "the server does not list it"
			for _, sk := range im.Skipped() {
				if sk.Tool == s {
					why = sk.Reason
				}
			}
			missing = append(missing, fmt.Sprintf("%q (%s)", s, why))
		}
	}
	if len(missing) > 0 {
		im.Close()
		t.imported = nil
		return nil, &mappingError{"server tools not imported: " + strings.Join(missing, ", ") + "; map the scenario's tools with -tool NAME=SERVER_TOOL"}
	}
	out := make([]load.TargetTool, len(t.server))
	for i := range t.server {
		out[i] = load.TargetTool{Name: t.server[i], Arguments: t.args[i]}
	}
	return out, nil
}

func (t *target) Detach(context.Context) error {
	if t.imported != nil {
		t.imported.Close()
		t.imported = nil
	}
	return nil
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// checkOutputs refuses, before the server is reached, a report (-out) or
// page (-html) that cannot be written, or both naming one file, so a long
// run is not lost to a report it cannot write.
func checkOutputs(out, page string) error {
	for _, o := range [][2]string{{"-out", out}, {"-html", page}} {
		if o[1] == "" {
			continue
		}
		fi, statErr := os.Stat(o[1])
		if o[0] == "-html" && out != "" && filepath.Clean(out) == filepath.Clean(page) && (statErr != nil || fi.Mode().IsRegular()) {
			return fmt.Errorf("-html %s: the same file as -out (-html auto names the page after -out, its extension replaced by .html); give each its own", page)
		}
		f, err := os.OpenFile(o[1], os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			return fmt.Errorf("%s: cannot write the file: %w", o[0], err)
		}
		_ = f.Close()
		if os.IsNotExist(statErr) {
			_ = os.Remove(o[1]) // only a probe: the file is written after the run
		}
	}
	return nil
}
