package main

// fixtures.go builds the systems under test: toolscope registries and
// scopes, the in-process baselines (direct call, map+RWMutex registry),
// a bare protoactor round trip, and the peers (cloudwego/eino ToolsNode,
// mark3labs/mcp-go). Both entry points (go test -bench and go run .) use
// these, so the microbenchmarks and the load generator measure the same
// thing.

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/cloudwego/eino/components/tool"
	toolutils "github.com/cloudwego/eino/components/tool/utils"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolscope/toolscope/actors"
	"github.com/toolscope/toolscope/messages"
	"github.com/toolscope/toolscope/runtime"
)

// trivialIn is the argument type of every trivial tool, on every side.
type trivialIn struct {
	X string `json:"x"`
}

const trivialArgs = `{"x":"a"}`

var trivialRaw = json.RawMessage(trivialArgs)

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func check(err error) {
	if err != nil {
		panic(err)
	}
}

// trivialTool is a typed, parallel-classified tool that returns "ok".
func trivialTool(name string) runtime.Definition {
	return must(runtime.NewTool(name, "trivial tool",
		func(ctx context.Context, in trivialIn, rc *runtime.RunContext) (string, error) {
			return "ok", nil
		}, runtime.WithParallel()))
}

// exclusiveTool is the same tool without the parallel classification.
func exclusiveTool(name string) runtime.Definition {
	return must(runtime.NewTool(name, "exclusive trivial tool",
		func(ctx context.Context, in trivialIn, rc *runtime.RunContext) (string, error) {
			return "ok", nil
		}))
}

// sleepTool sleeps d and returns "ok"; it is parallel-classified.
func sleepTool(name string, d time.Duration) runtime.Definition {
	return must(runtime.NewTool(name, "sleeping tool",
		func(ctx context.Context, in trivialIn, rc *runtime.RunContext) (string, error) {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-t.C:
				return "ok", nil
			case <-ctx.Done():
				return "", ctx.Err()
			}
		}, runtime.WithParallel()))
}

// okJSON is the raw tools' result: the JSON text "ok", already encoded.
var okJSON = json.RawMessage(`"ok"`)

// okBlocks is the raw tools' content.
var okBlocks = []runtime.Block{runtime.Text("ok")}

// rawTool is toolscope's no-decode tool, the counterpart of einoRawTool: a
// Definition whose Execute takes the argument snapshot as json.RawMessage
// and never decodes it, returning the pre-encoded JSON string "ok";
// parallel-classified. What toolscope still does for it is its contract:
// canonicalise the arguments, check the result against the output schema
// {"type":"string"} and render it (to a shared block slice).
func rawTool(name string) runtime.Definition {
	return runtime.Definition{
		Name:        name,
		Description: "trivial tool, arguments not decoded",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"x":{"type":"string"}}}`),
		Output: &runtime.Output{
			Schema: json.RawMessage(`{"type":"string"}`),
			Render: func(_ context.Context, _, _ json.RawMessage) ([]runtime.Block, error) { return okBlocks, nil },
		},
		Execute: func(ctx context.Context, args json.RawMessage, rc *runtime.RunContext) (any, error) {
			return okJSON, nil
		},
		IsConcurrencySafe: func(context.Context, json.RawMessage) (bool, error) { return true, nil },
	}
}

// world is one toolscope registry with its agent scopes.
type world struct {
	host  *actors.Host // the registry's actor host (worldOpts.actors), else nil
	reg   *runtime.Registry
	agent *runtime.Scope   // the scope calls go through (3 deep when chain)
	chain []*runtime.Scope // every scope created, root first
}

type worldOpts struct {
	extraTools int  // filler global tools besides "t"
	full       bool // 1 pre-execute hook, 1 guard, 1 post-execute hook, 1 observer on the agent
	depth      int  // scope chain depth (default 1)
	restrict   bool // restrict the agent to {"t", "x", "sleep", "r"}
	// noEvents is kept for the benchmark named after it: a registry
	// publishes no protobuf events (package actors does, when asked), so
	// every world is without them.
	noEvents bool
	actors   bool // the registry lives in an actors.Host (the message path)
}

func newWorld(o worldOpts) *world {
	w := &world{}
	if o.actors {
		w.host = must(actors.New())
		w.reg = w.host.Registry()
	} else {
		w.reg = must(runtime.New())
	}
	reg := w.reg
	g := reg.Global()
	must(g.Register(trivialTool("t")))
	must(g.Register(exclusiveTool("x")))
	must(g.Register(sleepTool("sleep", time.Millisecond)))
	must(g.Register(rawTool("r")))
	registerFillers(reg, o.extraTools)
	depth := max(o.depth, 1)
	s := must(reg.NewScope("agent0"))
	w.chain = append(w.chain, s)
	for i := 1; i < depth; i++ {
		s = must(s.NewScope(fmt.Sprintf("agent%d", i)))
		w.chain = append(w.chain, s)
	}
	w.agent = s
	if o.restrict {
		must(s.Restrict(runtime.Restriction{Allow: []string{"t", "x", "sleep", "r"}}))
	}
	if o.full {
		addFullPipeline(s)
	}
	return w
}

func registerFillers(reg *runtime.Registry, n int) {
	g := reg.Global()
	for i := range n {
		must(g.Register(trivialTool(fmt.Sprintf("filler_%05d", i))))
	}
}

// addFullPipeline installs 1 pre-execute hook, 1 guard, 1 post-execute
// hook and 1 result observer, each a pass-through.
func addFullPipeline(s *runtime.Scope) {
	must(s.OnPreExecute(func(_ context.Context, e runtime.Execution, next func() (runtime.Decision, error)) (runtime.Decision, error) {
		return next()
	}))
	must(s.Guard(func(_ context.Context, e runtime.Execution) (string, bool) { return "", false }))
	must(s.OnPostExecute(func(_ context.Context, e runtime.Execution, r *runtime.Result, next func() (runtime.PostDecision, error)) (runtime.PostDecision, error) {
		return next()
	}))
	must(s.OnResult(func(_ context.Context, e runtime.Execution, r *runtime.Result) error { return nil }))
}

func (w *world) close() {
	if w.host != nil {
		_ = w.host.Close(context.Background())
		return
	}
	_ = w.reg.Close(context.Background())
}

var (
	trivialCall = runtime.Call{ID: "c1", Name: "t", Arguments: trivialRaw}
	rawCall     = runtime.Call{ID: "c1", Name: "r", Arguments: trivialRaw}
)

// execOnce runs one trivial typed call and panics on a failure result.
func execOnce(ctx context.Context, s *runtime.Scope) { execCall(ctx, s, trivialCall) }

// execRaw runs one call of the no-decode tool "r".
func execRaw(ctx context.Context, s *runtime.Scope) { execCall(ctx, s, rawCall) }

func execCall(ctx context.Context, s *runtime.Scope, c runtime.Call) {
	if r := s.Execute(ctx, c); r.IsError() {
		panic("toolscope execute: " + r.ErrorMessage())
	}
}

func turnCalls(n int, name string) []runtime.TurnCall {
	calls := make([]runtime.TurnCall, n)
	for i := range calls {
		calls[i] = runtime.TurnCall{ID: fmt.Sprintf("c%d", i), Name: name, ArgumentsText: trivialArgs}
	}
	return calls
}

// mixedTurnCalls is 16 calls: runs of parallel calls split by 3 exclusive
// barriers (PPPPX PPPPX PPPPX P).
func mixedTurnCalls() []runtime.TurnCall {
	calls := turnCalls(16, "t")
	for _, i := range []int{4, 9, 14} {
		calls[i].Name = "x"
	}
	return calls
}

func execTurn(ctx context.Context, s *runtime.Scope, calls []runtime.TurnCall, opts ...runtime.TurnOption) {
	tr, err := s.ExecuteTurn(ctx, calls, opts...)
	if err != nil {
		panic(err)
	}
	for _, r := range tr.Results {
		if r.IsError() {
			panic("toolscope turn: " + r.ErrorMessage())
		}
	}
}

// --- message path ---------------------------------------------------------

// msgClient sends ExecuteRequest to a scope PID from the actor system's root
// context and waits for the reply future. The world must have been made
// with worldOpts.actors.
type msgClient struct {
	root *actor.RootContext
	pid  *actor.PID
	req  *messages.ExecuteRequest
}

func newMsgClient(w *world) *msgClient {
	return &msgClient{
		root: w.host.System().Root,
		pid:  w.host.PID(w.agent),
		req: &messages.ExecuteRequest{Call: &messages.Call{
			CallId: "c1", Name: "t", ArgumentsJson: []byte(trivialArgs)}},
	}
}

func (m *msgClient) call() {
	res, err := m.root.RequestFuture(m.pid, m.req, 5*time.Second).Result()
	if err != nil {
		panic(err)
	}
	rep, ok := res.(*messages.ExecuteReply)
	if !ok || rep.GetResult().GetIsError() {
		panic(fmt.Sprintf("message path: unexpected reply %v", res))
	}
}

// --- baselines ------------------------------------------------------------

type bodyFn func(ctx context.Context, args json.RawMessage) (string, error)

// trivialBody decodes its arguments like the typed tools do and returns "ok".
func trivialBody(ctx context.Context, args json.RawMessage) (string, error) {
	var in trivialIn
	if err := json.Unmarshal(args, &in); err != nil {
		return "", err
	}
	return "ok", nil
}

// floorCall is the direct function call: the floor.
//
//go:noinline
func floorCall(ctx context.Context) (string, error) { return trivialBody(ctx, trivialRaw) }

// mapRegistry is the naive registry: a map behind an RWMutex.
type mapRegistry struct {
	mu    sync.RWMutex
	tools map[string]bodyFn
}

func newMapRegistry(extra int) *mapRegistry {
	m := &mapRegistry{tools: map[string]bodyFn{"t": trivialBody}}
	for i := range extra {
		m.tools[fmt.Sprintf("filler_%05d", i)] = trivialBody
	}
	return m
}

func (m *mapRegistry) call(ctx context.Context, name string, args json.RawMessage) (string, error) {
	m.mu.RLock()
	fn, ok := m.tools[name]
	m.mu.RUnlock()
	if !ok {
		return "", fmt.Errorf("unknown tool %q", name)
	}
	return fn(ctx, args)
}

// callGo runs the body on its own goroutine and waits for it.
func (m *mapRegistry) callGo(ctx context.Context, name string, args json.RawMessage) (string, error) {
	m.mu.RLock()
	fn, ok := m.tools[name]
	m.mu.RUnlock()
	if !ok {
		return "", fmt.Errorf("unknown tool %q", name)
	}
	type answer struct {
		s   string
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		s, err := fn(ctx, args)
		ch <- answer{s, err}
	}()
	a := <-ch
	return a.s, a.err
}

// --- bare protoactor --------------------------------------------------------

type ping struct{}
type pong struct{}

type echo struct {
	sys  *actor.ActorSystem
	pid  *actor.PID
	ping *ping
}

func newEcho() *echo {
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.DiscardHandler)
	}))
	pid := sys.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		if _, ok := c.Message().(*ping); ok {
			c.Respond(&pong{})
		}
	}))
	return &echo{sys: sys, pid: pid, ping: &ping{}}
}

func (e *echo) call() {
	if _, err := e.sys.Root.RequestFuture(e.pid, e.ping, 5*time.Second).Result(); err != nil {
		panic(err)
	}
}

func (e *echo) close() { e.sys.Shutdown() }

// --- cloudwego/eino -------------------------------------------------------

// einoNode is an eino ToolsNode with one tool and the messages that call
// it once and 16 times. Invoke runs a message's calls in parallel (eino's
// default): the first on the caller, each other on a fresh goroutine, then
// a WaitGroup; every result becomes a schema.ToolMessage.
type einoNode struct {
	node *compose.ToolsNode
	one  *schema.Message
	many *schema.Message
}

// newEino is the typed eino tool (utils.InferTool over trivialIn): eino
// decodes {"x":"a"} into trivialIn with sonic and encodes the "ok" result,
// like runtime.NewTool does with its own decoder.
func newEino(ctx context.Context) *einoNode {
	t := must(toolutils.InferTool("t", "trivial tool", func(ctx context.Context, in trivialIn) (string, error) {
		return "ok", nil
	}))
	return newEinoNode(ctx, t, "t", nil)
}

// newEinoRaw is eino's no-decode tool (einoRawTool), the counterpart of
// rawTool: the argument string is handed over and never parsed.
func newEinoRaw(ctx context.Context) *einoNode {
	return newEinoNode(ctx, einoRawTool{}, "r", nil)
}

// newEinoFull is the typed eino tool behind four pass-through
// ToolCallMiddlewares, eino's hook point, standing for toolscope's full
// pipeline (pre-execute hook, guard, post-execute hook, result observer):
// each wraps the call and inspects its input or output as a hook would.
func newEinoFull(ctx context.Context) *einoNode {
	t := must(toolutils.InferTool("t", "trivial tool", func(ctx context.Context, in trivialIn) (string, error) {
		return "ok", nil
	}))
	pre := func(next compose.InvokableToolEndpoint) compose.InvokableToolEndpoint {
		return func(ctx context.Context, in *compose.ToolInput) (*compose.ToolOutput, error) { return next(ctx, in) }
	}
	guard := func(next compose.InvokableToolEndpoint) compose.InvokableToolEndpoint {
		return func(ctx context.Context, in *compose.ToolInput) (*compose.ToolOutput, error) {
			if in.Name == "" { // a guard that never refuses
				return nil, fmt.Errorf("refused")
			}
			return next(ctx, in)
		}
	}
	post := func(next compose.InvokableToolEndpoint) compose.InvokableToolEndpoint {
		return func(ctx context.Context, in *compose.ToolInput) (*compose.ToolOutput, error) {
			out, err := next(ctx, in)
			if err != nil {
				return nil, err
			}
			return out, nil
		}
	}
	observe := func(next compose.InvokableToolEndpoint) compose.InvokableToolEndpoint {
		return func(ctx context.Context, in *compose.ToolInput) (*compose.ToolOutput, error) {
			out, err := next(ctx, in)
			if out != nil {
				_ = len(out.Result)
			}
			return out, err
		}
	}
	var mws []compose.ToolMiddleware
	for _, m := range []compose.InvokableToolMiddleware{observe, pre, guard, post} {
		mws = append(mws, compose.ToolMiddleware{Invokable: m})
	}
	return newEinoNode(ctx, t, "t", mws)
}

func newEinoNode(ctx context.Context, t tool.BaseTool, name string, mws []compose.ToolMiddleware) *einoNode {
	node := must(compose.NewToolNode(ctx, &compose.ToolsNodeConfig{Tools: []tool.BaseTool{t}, ToolCallMiddlewares: mws}))
	msg := func(n int) *schema.Message {
		calls := make([]schema.ToolCall, n)
		for i := range calls {
			calls[i] = schema.ToolCall{ID: fmt.Sprintf("c%d", i), Type: "function",
				Function: schema.FunctionCall{Name: name, Arguments: trivialArgs}}
		}
		return schema.AssistantMessage("", calls)
	}
	return &einoNode{node: node, one: msg(1), many: msg(16)}
}

// einoRawTool is an eino InvokableTool whose InvokableRun keeps the
// argument string as it is (no JSON decoding) and returns "ok".
type einoRawTool struct{}

var einoRawInfo = &schema.ToolInfo{Name: "r", Desc: "trivial tool, arguments not decoded",
	ParamsOneOf: schema.NewParamsOneOfByParams(map[string]*schema.ParameterInfo{"x": {Type: schema.String}})}

// Info describes the tool to the model.
func (einoRawTool) Info(context.Context) (*schema.ToolInfo, error) { return einoRawInfo, nil }

// InvokableRun returns "ok" without looking inside the arguments.
func (einoRawTool) InvokableRun(_ context.Context, args string, _ ...tool.Option) (string, error) {
	if args == "" {
		return "", fmt.Errorf("no arguments")
	}
	return "ok", nil
}

func (e *einoNode) call(ctx context.Context, m *schema.Message) {
	out, err := e.node.Invoke(ctx, m)
	if err != nil {
		panic(err)
	}
	if len(out) != len(m.ToolCalls) {
		panic("eino: wrong number of results")
	}
}

// --- mark3labs/mcp-go -----------------------------------------------------

type mcpServer struct {
	srv *server.MCPServer
	msg json.RawMessage
}

func newMCP() *mcpServer {
	srv := server.NewMCPServer("bench", "1.0.0", server.WithToolCapabilities(false))
	srv.AddTool(mcp.NewTool("t", mcp.WithDescription("trivial tool"), mcp.WithString("x")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in trivialIn
			if err := req.BindArguments(&in); err != nil {
				return nil, err
			}
			return mcp.NewToolResultText("ok"), nil
		})
	return &mcpServer{srv: srv, msg: json.RawMessage(
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":` + trivialArgs + `}}`)}
}

func (m *mcpServer) call(ctx context.Context) {
	out := m.srv.HandleMessage(ctx, m.msg)
	if r, ok := out.(mcp.JSONRPCResponse); ok {
		if res, ok := r.Result.(*mcp.CallToolResult); ok && !res.IsError {
			return
		}
	}
	panic(fmt.Sprintf("mcp: unexpected reply %#v", out))
}

// sleepGoroutines is the floor of the sleeping turn: n goroutines that
// each wait d the way sleepTool does (a timer or ctx), and a WaitGroup.
func sleepGoroutines(ctx context.Context, n int, d time.Duration) {
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done():
			}
		}()
	}
	wg.Wait()
}
