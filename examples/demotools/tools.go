package demotools

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"path"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"github.com/toolscope/toolscope/runtime"
)

// Simulated latencies: small, so the whole demo runs in well under a
// second, but far enough apart that the overlap shows on the timeline.
const (
	slowdown     = 2                      // multiplies every latency below
	fetchTimeout = 300 * time.Millisecond // declared on fetch, enforced by the registry (R83)
)

// latency is a deterministic duration in [lo, hi)·slowdown derived from
// the call's arguments, so the same plan always asks for the same work.
func latency(args string, lo, hi time.Duration) time.Duration {
	h := fnv.New32a()
	h.Write([]byte(args))
	return slowdown * (lo + time.Duration(h.Sum32()%uint32(hi-lo)))
}

// Sleep is how a tool body or the approver waits d: nil or ctx's error,
// as simclock.Clock.Sleep.
type Sleep func(ctx context.Context, d time.Duration) error

type sleepKey struct{}

// WithSleep returns ctx carrying sleep: the tools and the approver, run
// under a ctx derived from it (a turn's, a call's, a nested call's), wait
// their latency with sleep instead of a wall-clock timer. A simulation on
// virtual time passes its clock's Sleep (cmd/demo -virtual).
func WithSleep(ctx context.Context, sleep Sleep) context.Context {
	return context.WithValue(ctx, sleepKey{}, sleep)
}

// work sleeps for d or until ctx is done, like a well-behaved tool body:
// with the ctx's Sleep (WithSleep), else on the wall clock.
func work(ctx context.Context, d time.Duration) error {
	if sleep, ok := ctx.Value(sleepKey{}).(Sleep); ok && sleep != nil {
		return sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

type (
	pathIn struct {
		Path string `json:"path"`
	}
	queryIn struct {
		Query string `json:"query"`
	}
	urlIn struct {
		URL string `json:"url"`
	}
	cmdIn struct {
		Cmd string `json:"cmd"`
	}
	gitIn struct {
		Args string `json:"args"`
	}
	taskIn struct {
		Task string `json:"task"`
	}
	writeIn struct {
		Path    string `json:"path"`
		Content string `json:"content"`
	}
)

func key(in any) string { b, _ := json.Marshal(in); return string(b) }

// Stats counts what the demo's policies did (the redacting hook and the
// approver). A nil counter is not counted.
type Stats struct {
	Redacted, Approved, Rejected *atomic.Int64
}

func count(c *atomic.Int64, n int) {
	if c != nil {
		c.Add(int64(n))
	}
}

var secretRE = regexp.MustCompile(`sk-live-[A-Za-z0-9]+|AKIA[0-9A-Z]{16}`)

// readOnlyGit lists the git subcommands that never mutate the repository.
var readOnlyGit = map[string]bool{"status": true, "diff": true, "log": true, "show": true, "blame": true}

// RegisterGlobal registers the shared toolset and the registry-wide
// policies on reg's global scope: the tools read, search, fetch (declared
// timeout), write, shell, git (parallel for read-only subcommands) and lint
// (panics on *.min.js paths); the timeout hook; a guard refusing writes
// outside /workspace; a pre-execute hook asking for approval of "rm ..."
// shell commands and "git push"; a post-execute hook redacting secrets.
func RegisterGlobal(reg *runtime.Registry, st Stats) error {
	read, err := runtime.NewTool("read", "Read a file from the workspace",
		func(ctx context.Context, in pathIn, rc *runtime.RunContext) (string, error) {
			if err := work(ctx, latency(key(in), 4*time.Millisecond, 16*time.Millisecond)); err != nil {
				return "", err
			}
			if strings.HasSuffix(in.Path, ".env") {
				return "DATABASE_URL=postgres://app@db/app\nOPENAI_API_KEY=sk-live-9f8e7d6c5b4a\nAWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE\n", nil
			}
			return fmt.Sprintf("%s: %d lines", in.Path, 40+len(in.Path)*3), nil
		}, runtime.WithParallel())
	if err != nil {
		return err
	}
	search, err := runtime.NewTool("search", "Search the web",
		func(ctx context.Context, in queryIn, rc *runtime.RunContext) (string, error) {
			if err := work(ctx, latency(key(in), 15*time.Millisecond, 35*time.Millisecond)); err != nil {
				return "", err
			}
			return fmt.Sprintf("10 web results for %q", in.Query), nil
		}, runtime.WithParallel())
	if err != nil {
		return err
	}
	fetch, err := runtime.NewTool("fetch", "Fetch a URL",
		func(ctx context.Context, in urlIn, rc *runtime.RunContext) (string, error) {
			d := latency(key(in), 20*time.Millisecond, 45*time.Millisecond)
			if strings.Contains(in.URL, "slow.example.com") {
				d = time.Minute // hangs: the timeout ends it
			}
			if err := work(ctx, d); err != nil {
				return "", err
			}
			return fmt.Sprintf("200 OK %s (%d KiB)", in.URL, 8+len(in.URL)%50), nil
		}, runtime.WithParallel(), runtime.WithTimeout(fetchTimeout))
	if err != nil {
		return err
	}
	write, err := runtime.NewTool("write", "Write a file",
		func(ctx context.Context, in writeIn, rc *runtime.RunContext) (string, error) {
			if err := work(ctx, latency(key(in), 6*time.Millisecond, 14*time.Millisecond)); err != nil {
				return "", err
			}
			return fmt.Sprintf("wrote %d bytes to %s", len(in.Content), in.Path), nil
		}) // no classifier: exclusive
	if err != nil {
		return err
	}
	shell, err := runtime.NewTool("shell", "Run a shell command in the workspace",
		func(ctx context.Context, in cmdIn, rc *runtime.RunContext) (string, error) {
			d := latency(key(in), 20*time.Millisecond, 45*time.Millisecond)
			if in.Cmd == "make e2e" {
				d = time.Minute // the user interrupts it
			}
			if work(ctx, d) != nil {
				// Report what ran so far; the registry turns a success after
				// cancellation into ABORTED.
				return "$ " + in.Cmd + "\n^C", nil
			}
			return "$ " + in.Cmd + "\nok", nil
		})
	if err != nil {
		return err
	}
	git, err := runtime.NewTool("git", "Run git",
		func(ctx context.Context, in gitIn, rc *runtime.RunContext) (string, error) {
			if err := work(ctx, latency(key(in), 8*time.Millisecond, 20*time.Millisecond)); err != nil {
				return "", err
			}
			return "git " + in.Args + ": ok", nil
		},
		// Parallel for read-only subcommands, exclusive for everything else.
		runtime.WithClassifier(func(_ context.Context, a json.RawMessage) (bool, error) {
			var in gitIn
			if err := json.Unmarshal(a, &in); err != nil {
				return false, err
			}
			sub, _, _ := strings.Cut(in.Args, " ")
			return readOnlyGit[sub], nil
		}))
	if err != nil {
		return err
	}
	lint, err := runtime.NewTool("lint", "Lint a source file",
		func(ctx context.Context, in pathIn, rc *runtime.RunContext) (string, error) {
			if strings.HasSuffix(in.Path, ".min.js") {
				var lines []string
				_ = lines[strings.Count(in.Path, "/")] // a linter bug: index out of range
			}
			if err := work(ctx, latency(key(in), 10*time.Millisecond, 20*time.Millisecond)); err != nil {
				return "", err
			}
			return in.Path + ": 0 issues", nil
		}, runtime.WithParallel())
	if err != nil {
		return err
	}
	g := reg.Global()
	for _, d := range []runtime.Definition{read, search, fetch, write, shell, git, lint} {
		if _, err := g.Register(d); err != nil {
			return err
		}
	}

	// Timeouts declared with WithTimeout are enforced by the registry itself
	// (R83), counted from dispatch: no hook is needed.
	// Guard: nobody writes outside /workspace.
	if _, err := g.Guard(func(_ context.Context, e runtime.Execution) (string, bool) {
		if e.Name() != "write" {
			return "", false
		}
		a, _ := e.Arguments()
		var in writeIn
		_ = json.Unmarshal(a, &in)
		if p := path.Clean(in.Path); !strings.HasPrefix(p, "/workspace/") {
			return "write outside /workspace refused: " + p, true
		}
		return "", false
	}); err != nil {
		return err
	}
	// Pre-execute: destructive commands go to the approver.
	if _, err := g.OnPreExecute(func(_ context.Context, e runtime.Execution, next func() (runtime.Decision, error)) (runtime.Decision, error) {
		a, _ := e.Arguments()
		switch e.Name() {
		case "shell":
			var in cmdIn
			_ = json.Unmarshal(a, &in)
			if strings.HasPrefix(in.Cmd, "rm ") {
				return runtime.Ask("destructive command: " + in.Cmd), nil
			}
		case "git":
			var in gitIn
			_ = json.Unmarshal(a, &in)
			if strings.HasPrefix(in.Args, "push") {
				return runtime.Ask("publishes to the remote: git " + in.Args), nil
			}
		}
		return next()
	}); err != nil {
		return err
	}
	// Post-execute: secrets never reach the model.
	if _, err := g.OnPostExecute(func(_ context.Context, e runtime.Execution, r *runtime.Result, next func() (runtime.PostDecision, error)) (runtime.PostDecision, error) {
		if !r.IsError() {
			if txt := r.Text(); secretRE.MatchString(txt) {
				n := len(secretRE.FindAllString(txt, -1))
				count(st.Redacted, n)
				return runtime.AcceptContent(runtime.Text(secretRE.ReplaceAllString(txt, "[REDACTED]"))), nil
			}
		}
		return next()
	}); err != nil {
		return err
	}
	return nil
}

// Approver is the human in the loop: the agent pusher may push, nobody may
// delete. It answers after a short think.
func Approver(st Stats, pusher string) runtime.Approver {
	return func(ctx context.Context, req runtime.ApprovalRequest) (runtime.ApprovalOutcome, error) {
		if err := work(ctx, 5*time.Millisecond); err != nil {
			return runtime.ApprovalCancelled, nil
		}
		if req.Agent == pusher && req.Tool == "git" {
			count(st.Approved, 1)
			return runtime.ApprovalAllowedOnce, nil
		}
		count(st.Rejected, 1)
		return req.Reject(fmt.Sprintf("only %s may push, and nobody may delete", pusher)), nil
	}
}

// CodeSearch is a code index that shadows the global web search.
func CodeSearch() (runtime.Definition, error) {
	return runtime.NewTool("search", "Search the repository",
		func(ctx context.Context, in queryIn, rc *runtime.RunContext) (string, error) {
			if err := work(ctx, latency(key(in), 3*time.Millisecond, 9*time.Millisecond)); err != nil {
				return "", err
			}
			return fmt.Sprintf("%d matches for %q in the repository", 1+len(in.Query)%7, in.Query), nil
		}, runtime.WithParallel())
}

// SandboxShell is a sandboxed shell that shadows the global one: every
// sandbox is its own container, so test runs may overlap.
func SandboxShell() (runtime.Definition, error) {
	return runtime.NewTool("shell", "Run a command in a throwaway sandbox",
		func(ctx context.Context, in cmdIn, rc *runtime.RunContext) (string, error) {
			if err := work(ctx, latency(key(in), 20*time.Millisecond, 40*time.Millisecond)); err != nil {
				return "", err
			}
			return "[sandbox] $ " + in.Cmd + "\nPASS", nil
		}, runtime.WithParallel())
}

// Delegate hands a task to the sub-agent sub: run runs the sub-agent's turn.
func Delegate(sub string, run func(ctx context.Context, sub string, rc *runtime.RunContext) (string, error)) (runtime.Definition, error) {
	return runtime.NewTool("delegate", "Hand a task to "+sub,
		func(ctx context.Context, in taskIn, rc *runtime.RunContext) (string, error) {
			return run(ctx, sub, rc)
		}, runtime.WithParallel())
}
