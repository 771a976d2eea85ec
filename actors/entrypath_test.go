package actors_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/toolscope/toolscope/actors"
	"github.com/toolscope/toolscope/messages"
	"github.com/toolscope/toolscope/runtime"
)

// typedLog records a registry's typed events (runtime.Hooks.Event), with
// what may differ between two runs (times, tokens) left out.
type typedLog struct {
	mu  sync.Mutex
	evs []string
}

func (l *typedLog) hook(e runtime.Event) {
	if e.CallID == "probe" {
		return // the probes for a full queue: their number varies
	}
	s := fmt.Sprintf("%v call=%q tool=%q scope=%q nested=%v", e.Kind, e.CallID, e.Tool, e.Scope, !e.Parent.IsZero())
	switch e.Kind {
	case runtime.ExecutionStarted, runtime.ExecutionFinished:
		s += fmt.Sprintf(" mode=%v/%v turn=%q group=%d", e.Mode, e.Classified, e.TurnID, e.Group)
		if e.Kind == runtime.ExecutionFinished {
			s += fmt.Sprintf(" outcome=%v code=%q err=%v dispatched=%v", e.Outcome, e.Code, e.IsError, !e.DispatchDoneAt.IsZero())
		}
	case runtime.TurnStarted, runtime.TurnFinished:
		s += fmt.Sprintf(" turn=%q calls=%d concluded=%v err=%v", e.TurnID, e.Calls, e.Concluded, e.Err)
	case runtime.RegistryChanged:
		return
	}
	l.mu.Lock()
	l.evs = append(l.evs, s)
	l.mu.Unlock()
}

func (l *typedLog) snapshot() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.evs...)
}

// way is one of the two entry paths of a turn: Go (Scope.ExecuteTurn) or
// a protobuf TurnRequest to the scope's PID.
type way struct {
	name string
	turn func(t *testing.T, h *actors.Host, s *runtime.Scope, id string, calls []*messages.TurnCall) *messages.TurnReply
	exec func(t *testing.T, h *actors.Host, s *runtime.Scope, id, name string) *messages.Result
}

var ways = []way{
	{
		name: "go",
		turn: func(_ *testing.T, _ *actors.Host, s *runtime.Scope, id string, calls []*messages.TurnCall) *messages.TurnReply {
			tc := make([]runtime.TurnCall, len(calls))
			for i, c := range calls {
				tc[i] = runtime.TurnCall{ID: c.GetCallId(), Name: c.GetName(), ArgumentsText: c.GetArgumentsText()}
			}
			res, err := s.ExecuteTurn(context.Background(), tc, runtime.WithTurnID(id))
			reply := &messages.TurnReply{}
			if err != nil {
				reply.Error = err.Error()
			}
			if res == nil {
				return reply
			}
			reply.Concluded = res.Concluded
			for _, r := range res.Results {
				reply.Results = append(reply.Results, r.Proto())
			}
			for _, e := range res.Events {
				k := messages.TurnEventCallStarted
				if e.Kind == runtime.ResultRecorded {
					k = messages.TurnEventResult
				}
				reply.Events = append(reply.Events, &messages.TurnEvent{Kind: k, CallId: e.CallID})
			}
			for _, c := range res.Contexts {
				reply.Contexts = append(reply.Contexts, &messages.ContextMessage{Role: c.Role, Text: c.Text})
			}
			return reply
		},
		exec: func(_ *testing.T, _ *actors.Host, s *runtime.Scope, id, name string) *messages.Result {
			return s.Execute(context.Background(), runtime.Call{ID: id, Name: name}).Proto()
		},
	},
	{
		name: "message",
		turn: func(t *testing.T, h *actors.Host, s *runtime.Scope, id string, calls []*messages.TurnCall) *messages.TurnReply {
			return ask(t, h, h.PID(s), &messages.TurnRequest{TurnId: id, Calls: calls}).(*messages.TurnReply)
		},
		exec: func(t *testing.T, h *actors.Host, s *runtime.Scope, id, name string) *messages.Result {
			return ask(t, h, h.PID(s), &messages.ExecuteRequest{Call: &messages.Call{CallId: id, Name: name}}).(*messages.ExecuteReply).GetResult()
		},
	},
}

// observed is everything one run of the scenario lets an observer see.
type observed struct {
	overloaded *messages.Result
	reply      *messages.TurnReply
	nested     *messages.TurnReply
	events     []string
}

// runScenario drives one scope through the given way: an exclusive call X
// holds the scope, an exclusive call Y waits behind it (the scope's queue
// is then full: a further call is refused OVERLOADED), then the turn comes
// — it must get its go-ahead only after Y, which asked first — and a body
// sends a turn of its own while it runs.
func runScenario(t *testing.T, w way) observed {
	log := &typedLog{}
	h := newHost(t, actors.WithRegistry(runtime.WithMaxQueued(1), runtime.WithHooks(runtime.Hooks{Event: log.hook})))
	reg := h.Registry()
	s := newScope(t, reg, "a")
	entered, release := make(chan struct{}), make(chan struct{})
	mustRegister(t, s, tool("hold", false, func(context.Context, json.RawMessage) (any, error) {
		close(entered)
		<-release
		return "held", nil
	}))
	mustRegister(t, s, constTool("y", false, "y"))
	mustRegister(t, s, constTool("z", false, "z"))
	mustRegister(t, s, tool("p", true, func(_ context.Context, args json.RawMessage) (any, error) { return args, nil }))
	mustRegister(t, s, constTool("denied", true, 0))
	_, err := s.Guard(func(_ context.Context, e runtime.Execution) (string, bool) {
		return "not this one", e.Name() == "denied"
	})
	require.NoError(t, err)
	var nested *messages.TurnReply
	mustRegister(t, s, tool("nest", true, func(context.Context, json.RawMessage) (any, error) {
		nested = w.turn(t, h, s, "N", []*messages.TurnCall{{CallId: "n1", Name: "p", ArgumentsText: `{"n":1}`}})
		return "nested", nil
	}))
	pid := h.PID(s) // both ways: the actor exists, so neither run pays for its spawn in the middle
	require.NotNil(t, pid)

	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); s.Execute(context.Background(), runtime.Call{ID: "x", Name: "hold"}) }()
	<-entered
	go func() { defer wg.Done(); s.Execute(context.Background(), runtime.Call{ID: "y", Name: "y"}) }()
	var o observed
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	waitFor(t, "y to wait for admission (the queue full)", func() bool {
		// A probe with an ended ctx never waits: until the queue is full
		// it is aborted, then refused OVERLOADED at entry.
		return s.Execute(cancelled, runtime.Call{ID: "probe", Name: "z"}).Code() == runtime.CodeOverloaded
	})
	o.overloaded = w.exec(t, h, s, "over", "z")
	done := make(chan *messages.TurnReply, 1)
	go func() {
		done <- w.turn(t, h, s, "T", []*messages.TurnCall{
			{CallId: "t1", Name: "z"}, {CallId: "t2", Name: "p", ArgumentsText: `{"a":1}`}, {CallId: "t3", Name: "p", ArgumentsText: ""},
			{CallId: "t4", Name: "ghost"}, {CallId: "t5", Name: "denied"}, {CallId: "t6", Name: "nest"},
		})
	}()
	waitFor(t, "the turn to enter", func() bool { return reg.InFlight() == 3 })
	close(release)
	o.reply = await(t, done)
	wg.Wait()
	o.nested = nested
	o.events = log.snapshot()
	return o
}

// One entry path per concept: a turn sent as a protobuf TurnRequest to a
// scope's PID and the same turn by Scope.ExecuteTurn go through the same
// function, so everything an observer sees is the same — the results and
// the turn's record, the typed events in order with their fields, the
// turn's go-ahead after a call that queued before it (FIFO), the refusal
// of a call when the scope's queue is full (OVERLOADED), and the parent of
// a turn sent from inside a body (by message a request carries no ctx, so
// it is a top-level turn, as a Go turn with a ctx that carries no
// execution).
func TestEntryPath_TurnByMessageIsTheGoTurn(t *testing.T) {
	var runs [2]observed
	for i, w := range ways {
		runs[i] = runScenario(t, w)
	}
	g, m := runs[0], runs[1]
	require.Equal(t, string(runtime.CodeOverloaded), g.overloaded.GetError().GetInfo().GetCode())
	assert.True(t, proto.Equal(g.overloaded, m.overloaded), "OVERLOADED refusal:\ngo:      %v\nmessage: %v", g.overloaded, m.overloaded)
	require.Empty(t, g.reply.GetError())
	require.Len(t, g.reply.GetResults(), 6)
	assert.True(t, proto.Equal(g.reply, m.reply), "turn reply:\ngo:      %v\nmessage: %v", g.reply, m.reply)
	require.NotNil(t, g.nested)
	assert.True(t, proto.Equal(g.nested, m.nested), "nested turn reply:\ngo:      %v\nmessage: %v", g.nested, m.nested)
	// The typed events with their fields: the same set, and the exclusive
	// calls admitted in the same order. (Other orders are not fixed on
	// either path: a call's finish event comes after its admission is
	// released, so the next call may start first, and parallel calls
	// overlap.)
	assert.ElementsMatch(t, g.events, m.events, "typed events")
	assert.Equal(t, admissions(g.events), admissions(m.events), "exclusive calls admitted in order")

	// FIFO: y, which queued before the turn, is admitted before the turn's
	// first dispatch, by either path.
	for _, run := range runs {
		ys, t1 := -1, -1
		for i, e := range run.events {
			if strings.HasPrefix(e, `execution-started call="y"`) {
				ys = i
			}
			if strings.HasPrefix(e, `execution-started call="t1"`) {
				t1 = i
			}
		}
		require.True(t, ys >= 0 && t1 >= 0, "events: %v", run.events)
		assert.Less(t, ys, t1, "the turn's first call was admitted before y, which queued first: %v", run.events)
	}
}

// admissions is the start events of exclusive calls, in order.
func admissions(events []string) []string {
	var out []string
	for _, e := range events {
		if strings.HasPrefix(e, "execution-started") && strings.Contains(e, "mode=exclusive") {
			out = append(out, e)
		}
	}
	return out
}

// A request by message carries no ctx, so it is never nested in an
// execution — even sent from inside a body, and whatever parent_token it
// names (a number in a message cannot prove where it comes from) — while
// a Go call made with the body's ctx is nested in the body's execution.
func TestEntryPath_RequestByMessageIsNeverNested(t *testing.T) {
	log := &typedLog{}
	h := newHost(t, actors.WithRegistry(runtime.WithHooks(runtime.Hooks{Event: log.hook})))
	s := newScope(t, h.Registry(), "a")
	mustRegister(t, s, constTool("leaf", true, 1))
	pid := h.PID(s)
	mustRegister(t, s, tool("body", true, func(ctx context.Context, _ json.RawMessage) (any, error) {
		s.Execute(ctx, runtime.Call{ID: "go-nested", Name: "leaf"})
		ask(t, h, pid, &messages.ExecuteRequest{Call: &messages.Call{CallId: "msg", Name: "leaf", ParentToken: 1}})
		return 0, nil
	}))
	success(t, s.Execute(context.Background(), runtime.Call{ID: "outer", Name: "body"}), "0")
	var nested []string
	for _, e := range log.snapshot() {
		if strings.HasPrefix(e, "execution-started") && strings.Contains(e, "nested=true") {
			nested = append(nested, e[:strings.Index(e, " tool=")])
		}
	}
	assert.Equal(t, []string{`execution-started call="go-nested"`}, nested)
}
