package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/toolscope/toolscope/runtime"
)

// The simulated team. Every agent is one scope; sub-agents are nested
// scopes whose turns run inside their parent's "delegate" call.

const (
	roleCoordinator = "coordinator"
	roleCoder       = "coder"
	roleReviewer    = "reviewer"
	roleResearcher  = "researcher"
	roleTester      = "tester" // nested under a coder
	roleScout       = "scout"  // nested under a researcher
)

// workerRoles is the order in which top-level workers join the team; past
// its end the roles repeat (coder-3, reviewer-3, …).
var workerRoles = []string{roleCoder, roleReviewer, roleResearcher, roleCoder, roleReviewer, roleResearcher}

// agentPlan is one agent's script: its scope and the turns its model will
// emit. Sub-agents have no turns of their own: they run the turns listed in
// Plan.Delegations when their parent's delegate call executes.
type agentPlan struct {
	Key    string
	Role   string
	Parent string // "" for top-level agents
	Depth  int
	// Code: the agent's scope presents code (R107): its model writes each
	// turn as one run_code program that makes the turn's calls.
	Code  bool
	Turns []turnPlan
}

// turnPlan is one assistant message: the tool calls the model wrote.
type turnPlan struct {
	ID    string
	Calls []runtime.TurnCall
	// InterruptOn, if set, is the call id during which the simulated user
	// presses Ctrl-C: the turn's context is cancelled shortly after that call
	// starts (seen through Registry.Subscribe).
	InterruptOn string
}

// Plan is the whole scripted run. It depends on the seed and the flags
// only, never on timing.
type Plan struct {
	Seed   uint64
	Agents []*agentPlan
	// Delegations maps a delegate call id to the turn its sub-agent runs.
	Delegations map[string]turnPlan
	// Args maps every call id to its argument text (for the timeline).
	Args map[string]string
}

func (p *Plan) agent(key string) *agentPlan {
	for _, a := range p.Agents {
		if a.Key == key {
			return a
		}
	}
	return nil
}

// topLevelTurns is the number of turns the driver starts.
func (p *Plan) topLevelTurns() int {
	n := 0
	for _, a := range p.Agents {
		n += len(a.Turns)
	}
	return n
}

// totalTurns counts the top-level turns and the delegated sub-agent turns.
func (p *Plan) totalTurns() int { return p.topLevelTurns() + len(p.Delegations) }

func args(v map[string]any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

var (
	srcFiles = []string{"/workspace/cmd/api/main.go", "/workspace/internal/auth/token.go", "/workspace/internal/store/pg.go",
		"/workspace/internal/store/cache.go", "/workspace/go.mod", "/workspace/README.md", "/workspace/internal/api/routes.go",
		"/workspace/internal/api/handlers_test.go", "/workspace/docs/ARCHITECTURE.md"}
	queries = []string{"postgres connection pool tuning", "jwt refresh token rotation", "go 1.26 iterator patterns",
		"http retry backoff jitter", "lru cache eviction benchmark", "structured logging slog handler"}
	codeQueries = []string{"func NewStore", "TODO(auth)", "ctx.Done()", "sql.ErrNoRows", "type Cache interface"}
	urls        = []string{"https://pkg.go.dev/net/http", "https://go.dev/blog/range-functions", "https://www.postgresql.org/docs/16/runtime-config-connection.html",
		"https://datatracker.ietf.org/doc/html/rfc6749", "https://github.com/golang/go/issues/61405"}
	gitReads  = []string{"status --short", "diff HEAD~1", "log --oneline -n 20", "blame internal/auth/token.go", "show HEAD"}
	gitWrites = []string{"commit -am 'wip: cache layer'", "checkout -b feature/cache", "stash"}
	builds    = []string{"go build ./...", "go vet ./...", "gofmt -l ."}
	testPkgs  = []string{"./internal/auth", "./internal/store", "./internal/api", "./cmd/api"}
)

// planner draws one agent's calls from a seeded source.
type planner struct {
	r      *rand.Rand
	prefix string // call id prefix, e.g. "coder-1/t2"
	n      int
	calls  []runtime.TurnCall
}

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

func (p *planner) add(name, a string) string {
	p.n++
	id := fmt.Sprintf("%s/c%d", p.prefix, p.n)
	p.calls = append(p.calls, runtime.TurnCall{ID: id, Name: name, ArgumentsText: a})
	return id
}

func (p *planner) read()  { p.add("read", args(map[string]any{"path": pick(p.r, srcFiles)})) }
func (p *planner) lint()  { p.add("lint", args(map[string]any{"path": pick(p.r, srcFiles)})) }
func (p *planner) fetch() { p.add("fetch", args(map[string]any{"url": pick(p.r, urls)})) }
func (p *planner) search() {
	p.add("search", args(map[string]any{"query": pick(p.r, queries)}))
}
func (p *planner) codeSearch() {
	p.add("search", args(map[string]any{"query": pick(p.r, codeQueries)}))
}
func (p *planner) gitRead()  { p.add("git", args(map[string]any{"args": pick(p.r, gitReads)})) }
func (p *planner) gitWrite() { p.add("git", args(map[string]any{"args": pick(p.r, gitWrites)})) }
func (p *planner) write() {
	p.add("write", args(map[string]any{"path": pick(p.r, srcFiles), "content": "// edited by the agent\n"}))
}
func (p *planner) build() { p.add("shell", args(map[string]any{"cmd": pick(p.r, builds)})) }
func (p *planner) test() {
	p.add("shell", args(map[string]any{"cmd": "go test " + pick(p.r, testPkgs)}))
}

// weighted picks one of the generators by weight.
func (p *planner) weighted(gens ...any) {
	total := 0
	for i := 1; i < len(gens); i += 2 {
		total += gens[i].(int)
	}
	x := p.r.IntN(total)
	for i := 0; i < len(gens); i += 2 {
		w := gens[i+1].(int)
		if x < w {
			gens[i].(func())()
			return
		}
		x -= w
	}
}

// filler appends n calls typical of role.
func (p *planner) filler(role string, n int) {
	for range n {
		switch role {
		case roleCoordinator:
			p.weighted(p.read, 3, p.search, 2, p.fetch, 1, p.gitRead, 2)
		case roleCoder:
			p.weighted(p.read, 4, p.codeSearch, 3, p.gitRead, 1, p.write, 2, p.build, 1, p.gitWrite, 1)
		case roleReviewer:
			p.weighted(p.read, 4, p.gitRead, 3, p.lint, 2, p.codeSearch, 1)
		case roleResearcher:
			p.weighted(p.fetch, 3, p.search, 3, p.read, 1)
		case roleTester:
			p.weighted(p.test, 4, p.read, 1, p.lint, 1)
		case roleScout:
			p.weighted(p.fetch, 3, p.search, 2)
		}
	}
}

// maxAgents bounds -agents: enough for a crowded timeline, few enough
// that the demo still finishes in about a second.
const maxAgents = 50

// newPlan builds the scripted run. Every feature the demo shows is placed
// at a fixed spot; the rest of each turn is seeded-random filler.
func newPlan(seed uint64, agents, turns int) (*Plan, error) {
	if agents < 1 || agents > maxAgents {
		return nil, fmt.Errorf("-agents must be between 1 and %d, got %d", maxAgents, agents)
	}
	if turns < 1 || turns > 20 {
		return nil, fmt.Errorf("-turns must be between 1 and 20, got %d", turns)
	}
	plan := &Plan{Seed: seed, Delegations: map[string]turnPlan{}, Args: map[string]string{}}
	count := map[string]int{}
	add := func(role, parent string, depth int) *agentPlan {
		count[role]++
		key := role
		if role != roleCoordinator {
			key = fmt.Sprintf("%s-%d", role, count[role])
		}
		if parent != "" {
			key = parent + "." + role
		}
		a := &agentPlan{Key: key, Role: role, Parent: parent, Depth: depth}
		plan.Agents = append(plan.Agents, a)
		return a
	}
	add(roleCoordinator, "", 0)
	for i := range agents - 1 {
		w := add(workerRoles[i%len(workerRoles)], "", 0)
		switch w.Role {
		case roleCoder:
			add(roleTester, w.Key, 1)
		case roleResearcher:
			add(roleScout, w.Key, 1)
		}
	}
	last := turns - 1
	for ai, a := range plan.Agents {
		if a.Parent != "" {
			continue
		}
		r := rand.New(rand.NewPCG(seed, uint64(ai)+1))
		for t := range turns {
			tp := turnPlan{ID: fmt.Sprintf("%s/t%d", a.Key, t+1)}
			p := &planner{r: r, prefix: tp.ID}
			p.filler(a.Role, 2+r.IntN(3))
			switch a.Role {
			case roleCoordinator:
				if t == 0 {
					p.add("read", args(map[string]any{"path": "/workspace/.env"})) // secret → redacted
				}
				if t == min(1, last) {
					p.add("git", args(map[string]any{"args": "push origin main"})) // Ask → approved
				}
				if t == last {
					// The user interrupts a long end-to-end run; the calls after
					// it are never dispatched.
					tp.InterruptOn = p.add("shell", args(map[string]any{"cmd": "make e2e"}))
					p.read()
					p.gitRead()
				}
			case roleCoder:
				if t == 0 {
					p.add("delegate", args(map[string]any{"task": "run the unit tests"}))
				}
				if t == min(1, last) {
					p.add("write", args(map[string]any{"path": "/etc/hosts", "content": "127.0.0.1 api.internal\n"})) // guard
					p.add("shell", args(map[string]any{"cmd": "rm -rf /workspace/build"}))                            // Ask → rejected
				}
				if t == last && t > 0 {
					p.add("delegate", args(map[string]any{"task": "re-run the tests"}))
				}
			case roleReviewer:
				if t == 0 {
					p.add("lint", args(map[string]any{"path": "/workspace/web/static/app.min.js"})) // panics
				}
				if t == min(1, last) {
					p.add("write", args(map[string]any{"path": "/workspace/REVIEW.md", "content": "LGTM"})) // restricted
				}
			case roleResearcher:
				if t == 0 {
					p.add("fetch", args(map[string]any{"url": "https://slow.example.com/report.pdf"})) // timeout
				}
				if t == min(1, last) {
					p.add("delegate", args(map[string]any{"task": "collect benchmarks"}))
				}
			}
			p.filler(a.Role, r.IntN(2))
			tp.Calls = p.calls
			if a.Key == codeAgent {
				a.Code = true
				tp.Calls = programTurn(tp.ID, tp.Calls, pick(r, gitReads), plan.Args)
			}
			a.Turns = append(a.Turns, tp)
		}
		// Sub-agent turns, one per delegate call, drawn from the same source.
		for _, tp := range a.Turns {
			for _, c := range tp.Calls {
				if c.Name != "delegate" {
					continue
				}
				subRole := roleTester
				if a.Role == roleResearcher {
					subRole = roleScout
				}
				sub := plan.agent(a.Key + "." + subRole)
				st := turnPlan{ID: fmt.Sprintf("%s/%s", sub.Key, strings.ReplaceAll(c.ID[len(a.Key)+1:], "/", "."))}
				sp := &planner{r: r, prefix: st.ID}
				sp.filler(subRole, 3+r.IntN(3))
				if subRole == roleTester && len(plan.Delegations) == 0 {
					sp.add("lint", args(map[string]any{"path": "/workspace/web/static/vendor.min.js"})) // panics
				}
				st.Calls = sp.calls
				plan.Delegations[c.ID] = st
			}
		}
	}
	for _, a := range plan.Agents {
		for _, tp := range a.Turns {
			for _, c := range tp.Calls {
				if c.Name == runtime.RunCodeName {
					plan.Args[c.ID] = programText(c.ArgumentsText) // the program, readable
					continue
				}
				plan.Args[c.ID] = c.ArgumentsText
			}
		}
	}
	for _, tp := range plan.Delegations {
		for _, c := range tp.Calls {
			plan.Args[c.ID] = c.ArgumentsText
		}
	}
	return plan, nil
}

// codeAgent works in code mode: its turns are run_code programs.
const codeAgent = roleReviewer + "-1"

// programTurn turns a turn's planned calls into the one run_code call a
// code-mode model writes instead: a program that runs them as one
// parallel() batch (a nested turn: parallel calls overlap, exclusive ones
// stay barriers), counts the failures it sees, then makes one more call
// directly. The inner calls' ids are the ones run_code gives them
// (<run_code id>/<n>, in the order the program calls them); their
// arguments go into argsOf for the timeline.
func programTurn(turnID string, calls []runtime.TurnCall, gitArgs string, argsOf map[string]string) []runtime.TurnCall {
	id := turnID + "/c1"
	var b strings.Builder
	fmt.Fprintf(&b, "# %d calls as one batch, then one more\n", len(calls))
	b.WriteString("rs = parallel([\n")
	for i, c := range calls {
		fmt.Fprintf(&b, "    (%q, %s),\n", c.Name, c.ArgumentsText) // JSON objects are Starlark dicts
		argsOf[fmt.Sprintf("%s/%d", id, i+1)] = c.ArgumentsText
	}
	b.WriteString("])\n")
	b.WriteString("failed = [r.code for r in rs if not r.ok]\n")
	fmt.Fprintf(&b, "log = git(args=%q)\n", gitArgs)
	argsOf[fmt.Sprintf("%s/%d", id, len(calls)+1)] = `{"args":` + strconv.Quote(gitArgs) + `}`
	b.WriteString(`print(len(rs) - len(failed), "of", len(rs), "ok;", log)` + "\n")
	b.WriteString("failed\n")
	return []runtime.TurnCall{{ID: id, Name: runtime.RunCodeName, ArgumentsText: args(map[string]any{"code": b.String()})}}
}

// programText is run_code's argument text shown as its program.
func programText(argsText string) string {
	var in struct {
		Code string `json:"code"`
	}
	if json.Unmarshal([]byte(argsText), &in) != nil {
		return argsText
	}
	return in.Code
}
