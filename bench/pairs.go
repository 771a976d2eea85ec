package main

// pairs.go lists the interleaved ratios: each pair names what its two
// sides do, and every pair goes through the same harness (interleave).

import (
	"context"
	"fmt"
	"regexp"
	"time"

	ts "github.com/toolscope/toolscope/runtime"
)

// pair is one interleaved ratio A ÷ B (time per call).
type pair struct {
	name  string // the ratio's key in the report
	block int    // ops per block: 32 for single calls, 8 for turns
	a, b  string // what each side does, for the report
	// scenarios are the timed scenarios the two sides correspond to; -run
	// selects the pair when it matches name or one of these.
	scenarios []string
	// setup builds both sides and returns their ops and a teardown.
	setup func() (a, b op, teardown func())
}

func (p pair) selected(filter *regexp.Regexp) bool {
	if filter.MatchString(p.name) {
		return true
	}
	for _, s := range p.scenarios {
		if filter.MatchString(s) {
			return true
		}
	}
	return false
}

// Descriptions of the sides, shared by the pairs.
const (
	descTSTyped = "toolscope Scope.Execute of a runtime.NewTool tool: decodes {\"x\":\"a\"} into a struct, " +
		"encodes, validates and renders \"ok\""
	descTSRaw = "toolscope Scope.Execute of a Definition with Execute(json.RawMessage): arguments canonicalised, " +
		"never decoded; returns the encoded \"ok\", checked against its output schema and rendered"
	descTSFull    = descTSTyped + "; 1 pre-execute hook, 1 guard, 1 post-execute hook, 1 result observer"
	descEinoTyped = "eino ToolsNode.Invoke, 1 call of a utils.InferTool tool: sonic decodes {\"x\":\"a\"} " +
		"into a struct and encodes \"ok\"; one ToolMessage"
	descEinoRaw = "eino ToolsNode.Invoke, 1 call of an InvokableTool whose InvokableRun keeps the " +
		"argument string undecoded and returns \"ok\"; one ToolMessage"
	descEinoFull = descEinoTyped + "; 4 pass-through ToolCallMiddlewares (pre, guard, post, observer)"
)

func pairs() []pair {
	ctx := context.Background()
	one := func(f func()) op { return func() int { f(); return 1 } }
	sixteen := func(f func()) op { return func() int { f(); return 16 } }
	turn := func(w *world, calls []ts.TurnCall) op {
		return func() int { execTurn(ctx, w.agent, calls, ts.WithMaxParallel(16)); return len(calls) }
	}
	return []pair{
		{name: "bare_vs_eino", block: 32, a: descTSTyped, b: descEinoTyped,
			scenarios: []string{"ts_execute_bare", "eino_toolsnode_1"},
			setup: func() (op, op, func()) {
				w, e := newWorld(worldOpts{}), newEino(ctx)
				return one(func() { execOnce(ctx, w.agent) }), one(func() { e.call(ctx, e.one) }), w.close
			}},
		{name: "raw_vs_eino_raw", block: 32, a: descTSRaw, b: descEinoRaw,
			scenarios: []string{"ts_execute_raw", "eino_toolsnode_raw_1"},
			setup: func() (op, op, func()) {
				w, e := newWorld(worldOpts{}), newEinoRaw(ctx)
				return one(func() { execRaw(ctx, w.agent) }), one(func() { e.call(ctx, e.one) }), w.close
			}},
		{name: "full_vs_eino", block: 32, a: descTSFull, b: descEinoTyped,
			scenarios: []string{"ts_execute_full", "eino_toolsnode_1"},
			setup: func() (op, op, func()) {
				w, e := newWorld(worldOpts{full: true}), newEino(ctx)
				return one(func() { execOnce(ctx, w.agent) }), one(func() { e.call(ctx, e.one) }), w.close
			}},
		{name: "full_vs_eino_middleware", block: 32, a: descTSFull, b: descEinoFull,
			scenarios: []string{"ts_execute_full"},
			setup: func() (op, op, func()) {
				w, e := newWorld(worldOpts{full: true}), newEinoFull(ctx)
				return one(func() { execOnce(ctx, w.agent) }), one(func() { e.call(ctx, e.one) }), w.close
			}},
		{name: "turn16_vs_eino", block: 8,
			a:         "toolscope Scope.ExecuteTurn of 16 calls of the typed tool, WithMaxParallel(16)",
			b:         "eino ToolsNode.Invoke of one message with 16 calls of the typed tool (parallel)",
			scenarios: []string{"ts_turn_16", "eino_toolsnode_16"},
			setup: func() (op, op, func()) {
				w, e := newWorld(worldOpts{}), newEino(ctx)
				return turn(w, turnCalls(16, "t")), sixteen(func() { e.call(ctx, e.many) }), w.close
			}},
		{name: "raw_turn16_vs_eino_raw", block: 8,
			a:         "toolscope Scope.ExecuteTurn of 16 calls of the no-decode tool, WithMaxParallel(16)",
			b:         "eino ToolsNode.Invoke of one message with 16 calls of the no-decode tool (parallel)",
			scenarios: []string{"ts_turn_raw_16", "eino_toolsnode_raw_16"},
			setup: func() (op, op, func()) {
				w, e := newWorld(worldOpts{}), newEinoRaw(ctx)
				return turn(w, turnCalls(16, "r")), sixteen(func() { e.call(ctx, e.many) }), w.close
			}},
		{name: "tools10k_vs_1", block: 32,
			a: "toolscope typed Execute with 10,000 global tools", b: "the same with 1 global tool",
			scenarios: []string{"ts_execute_tools_10k", "ts_execute_tools_1"},
			setup: func() (op, op, func()) {
				big, small := newWorld(worldOpts{extraTools: 9_999}), newWorld(worldOpts{})
				return one(func() { execOnce(ctx, big.agent) }), one(func() { execOnce(ctx, small.agent) }),
					func() { big.close(); small.close() }
			}},
		{name: "message_path_vs_protoactor_roundtrip", block: 32,
			a:         "protobuf ExecuteRequest to the scope's PID with RequestFuture, typed tool, ExecuteReply back",
			b:         "bare protoactor RequestFuture to a trivial actor that Responds",
			scenarios: []string{"ts_message_path", "protoactor_roundtrip"},
			setup: func() (op, op, func()) {
				w := newWorld(worldOpts{actors: true})
				m, e := newMsgClient(w), newEcho()
				return one(m.call), one(e.call), func() { w.close(); e.close() }
			}},
		{name: "bare_vs_mcpgo", block: 32, a: descTSTyped,
			b:         "mark3labs/mcp-go MCPServer.HandleMessage of a JSON-RPC tools/call, BindArguments into a struct",
			scenarios: []string{"ts_execute_bare", "mcpgo_tools_call"},
			setup: func() (op, op, func()) {
				w, m := newWorld(worldOpts{}), newMCP()
				return one(func() { execOnce(ctx, w.agent) }), one(func() { m.call(ctx) }), w.close
			}},
		{name: "bare_vs_floor", block: 32, a: descTSTyped,
			b:         "a direct function call decoding {\"x\":\"a\"} with encoding/json",
			scenarios: []string{"ts_execute_bare", "floor_direct_call"},
			setup: func() (op, op, func()) {
				w := newWorld(worldOpts{})
				return one(func() { execOnce(ctx, w.agent) }), one(func() { check(second(floorCall(ctx))) }), w.close
			}},
		{name: "turn_sleep_makespan_vs_goroutines", block: 4,
			a:         "toolscope ExecuteTurn of 16 tools each sleeping 1 ms, WithMaxParallel(16)",
			b:         "16 plain goroutines each waiting 1 ms on a timer, and a WaitGroup",
			scenarios: []string{"ts_turn_sleep_16x1ms", "goroutines_sleep_16x1ms"},
			setup: func() (op, op, func()) {
				w := newWorld(worldOpts{})
				return turn(w, turnCalls(16, "sleep")),
					func() int { sleepGoroutines(ctx, 16, time.Millisecond); return 16 }, w.close
			}},
	}
}

// runPairs measures every selected pair with the interleaved harness.
func runPairs(cfg runConfig, filter *regexp.Regexp) map[string]Interleaved {
	out := map[string]Interleaved{}
	var list []pair
	for _, p := range pairs() {
		if p.selected(filter) {
			list = append(list, p)
		}
	}
	for i, p := range list {
		progress.set(fmt.Sprintf("interleaved [%d/%d] %s", i+1, len(list), p.name))
		out[p.name] = measurePair(cfg, p.a, p.b, p.block, p.setup)
	}
	return out
}

// measurePair builds a pair's sides, interleaves them and tears them down.
func measurePair(cfg runConfig, a, b string, block int, setup func() (op, op, func())) Interleaved {
	opA, opB, teardown := setup()
	defer teardown()
	rs := interleave(opA, opB, interleaveConfig{rounds: cfg.pairRounds, roundDur: cfg.pairRoundDur,
		block: block, clock: monotonic})
	return summarise(a, b, block, rs)
}
