package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolscope/toolscope/runtime"
)

// pointLog records every hook point, by call id (turns under "turn").
type pointLog struct {
	mu     sync.Mutex
	points map[string][]string
	opened []*runtime.Registry
	closed []*runtime.Registry
}

func newPointLog() *pointLog { return &pointLog{points: map[string][]string{}} }

func (l *pointLog) add(id, p string) {
	l.mu.Lock()
	l.points[id] = append(l.points[id], p)
	l.mu.Unlock()
}

type pointKey struct{}

// hooks records every field of Hooks.
func (l *pointLog) hooks() runtime.Hooks {
	return runtime.Hooks{
		Opened: func(r *runtime.Registry) error {
			l.mu.Lock()
			l.opened = append(l.opened, r)
			l.mu.Unlock()
			return nil
		},
		Closed: func(r *runtime.Registry) { l.mu.Lock(); l.closed = append(l.closed, r); l.mu.Unlock() },
		CallStart: func(ctx context.Context, c runtime.CallInfo) context.Context {
			l.add(c.CallID, "start")
			return context.WithValue(ctx, pointKey{}, c.CallID)
		},
		CallStage: func(ex runtime.Execution, st runtime.CallStage) {
			if ex.Context().Value(pointKey{}) != ex.CallID() {
				l.add(ex.CallID(), "stage without the ctx CallStart returned")
			}
			l.add(ex.CallID(), st.Stage.String())
		},
		CallFinished: func(ex runtime.Execution, d runtime.CallDone) { l.add(ex.CallID(), "finished") },
		CallEnd:      func(ex runtime.Execution, d runtime.CallDone) { l.add(ex.CallID(), "end") },
		CallAborted:  func(ctx context.Context, c runtime.CallInfo) { l.add(c.CallID, "aborted") },
		CallRefused:  func(code runtime.Code) { l.add("refused", string(code)) },
		TurnStart: func(ctx context.Context, t runtime.TurnInfo) context.Context {
			l.add("turn", "turn-start")
			return ctx
		},
		TurnEnd: func(ctx context.Context, t runtime.TurnInfo, err error) { l.add("turn", "turn-end") },
	}
}

var (
	gatePoints     = []string{"gate", "pre_execute", "guards"}
	dispatchPoints = []string{"admitted", "dispatching", "dispatched"}
	postPoints     = []string{"post_start", "post_execute"}
)

func points(parts ...[]string) []string {
	out := []string{"start", "resolved"}
	for _, p := range parts {
		out = append(out, p...)
	}
	return append(out, "finished", "end")
}

// Each field of Hooks is called at its point, exactly once per call (or
// turn), in pipeline order, with the ctx CallStart returned; a stage the
// call never reached is not reported.
func TestHooks_EachPointOncePerCall(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, reg *runtime.Registry, s *runtime.Scope)
		want map[string][]string
	}{
		{"a call", func(t *testing.T, _ *runtime.Registry, s *runtime.Scope) {
			s.Execute(context.Background(), runtime.Call{ID: "c", Name: "ok"})
		}, map[string][]string{"c": points(gatePoints, dispatchPoints, postPoints)}},
		{"an unknown tool dispatches", func(t *testing.T, _ *runtime.Registry, s *runtime.Scope) {
			s.Execute(context.Background(), runtime.Call{ID: "c", Name: "ghost"})
		}, map[string][]string{"c": points(gatePoints, dispatchPoints, postPoints)}},
		{"a guard's denial never dispatches", func(t *testing.T, _ *runtime.Registry, s *runtime.Scope) {
			s.Execute(context.Background(), runtime.Call{ID: "c", Name: "denied"})
		}, map[string][]string{"c": points(gatePoints, postPoints)}},
		{"an Ask is approved", func(t *testing.T, _ *runtime.Registry, s *runtime.Scope) {
			s.Execute(context.Background(), runtime.Call{ID: "c", Name: "ask"})
		}, map[string][]string{"c": points([]string{"gate", "pre_execute", "approval", "guards"}, dispatchPoints, postPoints)}},
		{"bad arguments end before the gate", func(t *testing.T, _ *runtime.Registry, s *runtime.Scope) {
			s.Execute(context.Background(), runtime.Call{ID: "c", Name: "ok", Arguments: func() {}})
		}, map[string][]string{"c": points()}},
		{"a nested call", func(t *testing.T, _ *runtime.Registry, s *runtime.Scope) {
			s.Execute(context.Background(), runtime.Call{ID: "c", Name: "outer"})
		}, map[string][]string{
			"c":     points(gatePoints, dispatchPoints, postPoints),
			"inner": points(gatePoints, dispatchPoints, postPoints),
		}},
		{"a turn", func(t *testing.T, _ *runtime.Registry, s *runtime.Scope) {
			_, err := s.ExecuteTurn(context.Background(), []runtime.TurnCall{{ID: "1", Name: "ok"}, {ID: "2", Name: "excl"}, {ID: "3", Name: "denied"}})
			require.NoError(t, err)
		}, map[string][]string{
			"turn": {"turn-start", "turn-end"},
			"1":    points(gatePoints, dispatchPoints, postPoints),
			"2":    points(gatePoints, dispatchPoints, postPoints),
			"3":    points(gatePoints, postPoints),
		}},
		{"an aborted turn's never-started calls", func(t *testing.T, _ *runtime.Registry, s *runtime.Scope) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			_, err := s.ExecuteTurn(ctx, []runtime.TurnCall{{ID: "1", Name: "ok"}, {ID: "2", Name: "excl"}})
			require.NoError(t, err)
		}, map[string][]string{
			"turn": {"turn-start", "turn-end"},
			"1":    {"aborted"},
			"2":    {"aborted"},
		}},
		{"a call after Close is refused", func(t *testing.T, reg *runtime.Registry, s *runtime.Scope) {
			require.NoError(t, reg.Close(context.Background()))
			s.Execute(context.Background(), runtime.Call{ID: "c", Name: "ok"})
		}, map[string][]string{"refused": {"CLOSED"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := newPointLog()
			reg := r3Reg(t, runtime.WithHooks(log.hooks()),
				runtime.WithApprover(func(context.Context, runtime.ApprovalRequest) (runtime.ApprovalOutcome, error) {
					return runtime.ApprovalAllowedOnce, nil
				}))
			s := r3Scope(t, reg, "agent")
			registerEveryKind(s)
			r3M(s.Register(nestTool("ok", true, func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) { return "ok", nil })))
			r3M(s.Register(nestTool("ask", true, func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) { return "ok", nil })))
			r3M(s.OnPreExecute(func(_ context.Context, e runtime.Execution, next func() (runtime.Decision, error)) (runtime.Decision, error) {
				if e.Name() == "ask" {
					return runtime.Ask("sure?"), nil
				}
				return next()
			}))
			tc.run(t, reg, s)
			require.NoError(t, reg.Close(context.Background()))
			log.mu.Lock()
			got := log.points
			log.mu.Unlock()
			assert.Equal(t, tc.want, got)
			assert.Equal(t, []*runtime.Registry{reg}, log.opened, "Opened once")
			assert.Equal(t, []*runtime.Registry{reg}, log.closed, "Closed once")
		})
	}
}

// The ctx CallStart returns is the call's: its body sees it, and a nested
// call's CallStart gets a ctx derived from it. Several WithHooks are
// called in order, each CallStart getting the ctx the one before returned.
func TestHooks_CallStartCtxReachesBodyAndNestedCalls(t *testing.T) {
	type key struct{}
	var mu sync.Mutex
	var order []string
	parentOf := map[string]any{}
	mk := func(name string) runtime.Hooks {
		return runtime.Hooks{
			CallStart: func(ctx context.Context, c runtime.CallInfo) context.Context {
				mu.Lock()
				order = append(order, name+":"+c.CallID)
				if name == "a" {
					parentOf[c.CallID] = ctx.Value(key{})
				}
				mu.Unlock()
				prev, _ := ctx.Value(key{}).(string)
				return context.WithValue(ctx, key{}, prev+name+c.CallID+";")
			},
			CallStage: func(ex runtime.Execution, st runtime.CallStage) {
				mu.Lock()
				order = append(order, name+":"+st.Stage.String())
				mu.Unlock()
			},
		}
	}
	reg := r3Reg(t, runtime.WithHooks(mk("a")), runtime.WithHooks(mk("b")))
	var seen any
	r3M(reg.Global().Register(r3Tool("leaf", func(ctx context.Context, _ json.RawMessage, _ *runtime.RunContext) (any, error) {
		seen = ctx.Value(key{})
		return "leaf", nil
	})))
	r3M(reg.Global().Register(r3Tool("outer", func(ctx context.Context, _ json.RawMessage, _ *runtime.RunContext) (any, error) {
		return reg.Global().Execute(ctx, runtime.Call{ID: "in", Name: "leaf"}).Text(), nil
	})))
	res := reg.Global().Execute(context.Background(), runtime.Call{ID: "out", Name: "outer"})
	require.False(t, res.IsError(), res.ErrorMessage())
	assert.Equal(t, "aout;bout;ain;bin;", seen, "the body's ctx carries every CallStart's value, in order, the parent's first")
	assert.Equal(t, "aout;bout;", parentOf["in"], "the nested call's CallStart gets the parent's ctx")
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"a:out", "b:out", "a:resolved", "b:resolved", "a:gate", "b:gate"}, order[:6], "hooks in WithHooks order")
}

// A panicking hook, whatever its field, is contained and reported: the
// call, the turn and New go on as without it (a panicking Opened fails New).
func TestHooks_PanicsAreContained(t *testing.T) {
	var mu sync.Mutex
	var reported []string
	boom := func(field string) { panic("boom in " + field) }
	h := runtime.Hooks{
		Closed:       func(*runtime.Registry) { boom("Closed") },
		CallStart:    func(context.Context, runtime.CallInfo) context.Context { boom("CallStart"); return nil },
		CallStage:    func(runtime.Execution, runtime.CallStage) { boom("CallStage") },
		CallFinished: func(runtime.Execution, runtime.CallDone) { boom("CallFinished") },
		CallEnd:      func(runtime.Execution, runtime.CallDone) { boom("CallEnd") },
		CallAborted:  func(context.Context, runtime.CallInfo) { boom("CallAborted") },
		CallRefused:  func(runtime.Code) { boom("CallRefused") },
		TurnStart:    func(context.Context, runtime.TurnInfo) context.Context { boom("TurnStart"); return nil },
		TurnEnd:      func(context.Context, runtime.TurnInfo, error) { boom("TurnEnd") },
	}
	reg, err := runtime.New(runtime.WithHooks(h), runtime.WithErrorHandler(func(err error) {
		mu.Lock()
		reported = append(reported, err.Error())
		mu.Unlock()
	}))
	require.NoError(t, err)
	s := r3Scope(t, reg, "agent")
	registerEveryKind(s)
	res := s.Execute(context.Background(), runtime.Call{ID: "c", Name: "par"})
	require.False(t, res.IsError(), res.ErrorMessage())
	assert.Equal(t, `"p"`, res.Text())
	tr, err := s.ExecuteTurn(context.Background(), []runtime.TurnCall{{ID: "1", Name: "par"}})
	require.NoError(t, err)
	assert.Equal(t, `"p"`, tr.Results[0].Text())
	require.NoError(t, reg.Close(context.Background()))
	assert.Equal(t, runtime.CodeClosed, s.Execute(context.Background(), runtime.Call{ID: "late", Name: "par"}).Code())
	mu.Lock()
	all := strings.Join(reported, "\n")
	mu.Unlock()
	for _, field := range []string{"Closed", "CallStart", "CallStage", "CallFinished", "CallEnd", "CallRefused", "TurnStart", "TurnEnd"} {
		assert.Contains(t, all, fmt.Sprintf("hooks.%s panicked", field))
	}

	_, err = runtime.New(runtime.WithHooks(runtime.Hooks{Opened: func(*runtime.Registry) error { panic("no") }}))
	assert.ErrorContains(t, err, "hooks.Opened panicked")
	wantErr := errors.New("no instruments")
	closed := make(chan struct{})
	_, err = runtime.New(runtime.WithHooks(runtime.Hooks{
		Opened: func(*runtime.Registry) error { return wantErr },
		Closed: func(*runtime.Registry) { close(closed) },
	}))
	assert.ErrorIs(t, err, wantErr, "Opened's error fails New")
	nestAwait(t, closed) // the registry New closes calls Closed (its teardown may finish after New returns)
}

// The hooks' information: the stage details, the finished call's
// outcome, times and whether its name resolved, and the turn's identity.
func TestHooks_WhatThePointsCarry(t *testing.T) {
	var mu sync.Mutex
	stages := map[string]runtime.CallStage{}
	done := map[string]runtime.CallDone{}
	var turn runtime.TurnInfo
	var turnErr error = errors.New("unset")
	reg := r3Reg(t, runtime.WithHooks(runtime.Hooks{
		CallStage: func(ex runtime.Execution, st runtime.CallStage) {
			mu.Lock()
			stages[ex.CallID()+"/"+st.Stage.String()] = st
			mu.Unlock()
		},
		CallFinished: func(ex runtime.Execution, d runtime.CallDone) {
			mu.Lock()
			done[ex.CallID()] = d
			mu.Unlock()
		},
		TurnStart: func(ctx context.Context, t runtime.TurnInfo) context.Context { turn = t; return ctx },
		TurnEnd:   func(_ context.Context, _ runtime.TurnInfo, err error) { turnErr = err },
	}))
	s := r3Scope(t, reg, "agent")
	registerEveryKind(s)
	r3M(s.OnResult(func(context.Context, runtime.Execution, *runtime.Result) error { return nil }))
	_, err := s.ExecuteTurn(context.Background(), []runtime.TurnCall{{ID: "1", Name: "par"}, {ID: "3", Name: "fail"}, {ID: "4", Name: "denied"}, {ID: "6", Name: "ghost"}}, runtime.WithTurnID("t1"))
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, "agent", turn.Scope)
	assert.Equal(t, "t1", turn.TurnID)
	assert.Equal(t, 4, turn.Calls)
	assert.True(t, turn.Parent.IsZero())
	assert.NoError(t, turnErr)
	assert.Equal(t, "tool par", stages["1/resolved"].Description)
	assert.Equal(t, runtime.DecisionAllow, stages["1/pre_execute"].Decision)
	assert.True(t, stages["1/dispatched"].BodyInvoked)
	assert.True(t, stages["4/guards"].Denied)
	assert.Equal(t, runtime.OutcomeOK, done["1"].Outcome)
	assert.Equal(t, runtime.Parallel, done["1"].Mode)
	assert.True(t, done["1"].Classified)
	assert.Equal(t, 1, done["1"].Observers)
	assert.True(t, done["1"].ToolKnown)
	assert.False(t, done["1"].DispatchDoneAt.IsZero())
	assert.False(t, done["1"].Now().Before(done["1"].EnteredAt))
	assert.Equal(t, runtime.OutcomeFailed, done["3"].Outcome)
	assert.Equal(t, runtime.OutcomeDenied, done["4"].Outcome)
	assert.True(t, done["4"].Denied)
	assert.True(t, done["4"].DispatchDoneAt.IsZero(), "a denied call never dispatched")
	assert.Zero(t, done["4"].AdmissionWait())
	assert.Equal(t, runtime.OutcomeFailed, done["6"].Outcome)
	assert.Equal(t, runtime.CodeUnknownTool, done["6"].Result.Code())
	assert.False(t, done["6"].ToolKnown)
}

// A registry without hooks allocates nothing more per call than one
// whose hooks only hear registry-level points, and hooks that do nothing
// add no allocation to a call either: the points pass values, not
// pointers.
func TestHooks_NoAllocationsPerCall(t *testing.T) {
	nop := runtime.Hooks{
		CallStart:    func(ctx context.Context, _ runtime.CallInfo) context.Context { return ctx },
		CallStage:    func(runtime.Execution, runtime.CallStage) {},
		CallFinished: func(runtime.Execution, runtime.CallDone) {},
		CallEnd:      func(runtime.Execution, runtime.CallDone) {},
	}
	allocs := func(opts ...runtime.Option) float64 {
		reg := r3Reg(t, opts...)
		g := reg.Global()
		r3M(g.Register(r3Const("ok", "x")))
		call := runtime.Call{ID: "c", Name: "ok", Arguments: json.RawMessage(`{}`)}
		g.Execute(context.Background(), call)
		return testing.AllocsPerRun(200, func() { g.Execute(context.Background(), call) })
	}
	none := allocs()
	assert.Equal(t, none, allocs(runtime.WithHooks(runtime.Hooks{CallRefused: func(runtime.Code) {}})), "registry-level hooks cost a call nothing")
	assert.Equal(t, none, allocs(runtime.WithHooks(nop)), "call hooks that do nothing allocate nothing")
}

// A turn aborted while it runs: every call that started ends (CallEnd
// once), and every other call is reported aborted, never both.
func TestHooks_AbortedTurnEndsEveryStartedCall(t *testing.T) {
	log := newPointLog()
	reg := r3Reg(t, runtime.WithHooks(log.hooks()))
	s := r3Scope(t, reg, "agent")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r3M(s.Register(nestTool("cancel", false, func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) {
		cancel()
		return "c", nil
	})))
	r3M(s.Register(nestTool("par", true, func(context.Context, json.RawMessage, *runtime.RunContext) (any, error) { return "p", nil })))
	calls := []runtime.TurnCall{{ID: "0", Name: "par"}, {ID: "1", Name: "cancel"}, {ID: "2", Name: "par"}, {ID: "3", Name: "par"}, {ID: "4", Name: "cancel"}}
	_, err := s.ExecuteTurn(ctx, calls)
	require.NoError(t, err)
	require.NoError(t, reg.Close(context.Background()))
	log.mu.Lock()
	defer log.mu.Unlock()
	for _, c := range calls {
		got := log.points[c.ID]
		if len(got) == 1 {
			assert.Equal(t, []string{"aborted"}, got, c.ID)
			continue
		}
		require.NotEmpty(t, got, c.ID)
		assert.Equal(t, "start", got[0], c.ID)
		assert.Equal(t, []string{"finished", "end"}, got[len(got)-2:], c.ID)
		assert.NotContains(t, got, "aborted", c.ID)
	}
	assert.Equal(t, []string{"aborted"}, log.points["4"], "the call after the cancelling one never started")
}
