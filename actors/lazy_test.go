package actors_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolscope/toolscope/messages"
	"github.com/toolscope/toolscope/runtime"
)

// An idle scope costs no actor: scopes that register, restrict and execute
// through the API spawn none; the first PID request of the host spawns the
// global scope's actor, and a scope's first PID request spawns that
// scope's actor, which serves everything registered before it existed and
// after; Dispose stops it.
func TestScope_ActorSpawnedOnFirstPIDRequest(t *testing.T) {
	h := newHost(t)
	reg, sys := h.Registry(), h.System()
	mustRegister(t, reg.Global(), constTool("g", true, "g"))
	before := processes(sys)
	scopes := make([]*runtime.Scope, 20)
	for i := range scopes {
		s := newScope(t, reg, fmt.Sprint("idle-", i))
		mustRegister(t, s, constTool("own", true, "own"))
		_, err := s.Restrict(runtime.Restriction{Allow: []string{"g"}})
		require.NoError(t, err)
		success(t, s.Execute(context.Background(), runtime.Call{ID: "1", Name: "own"}), `"own"`)
		scopes[i] = s
	}
	require.Equal(t, before, processes(sys), "idle scopes spawned actors")

	gpid := h.PID(reg.Global())
	require.Equal(t, before+1, processes(sys), "the first PID request spawns the global actor")
	before++
	s := scopes[0]
	pid := h.PID(s)
	require.Equal(t, before+1, processes(sys), "a scope's first PID request spawns its actor")
	require.Same(t, pid, h.PID(s), "a second PID request returns the same PID")
	assert.Contains(t, pid.Id, gpid.Id+"/", "a scope's actor is a child of the global actor")
	require.True(t, ask(t, h, pid, &messages.GetRequest{Name: "own"}).(*messages.GetReply).GetFound(),
		"the actor sees what was registered before it existed")
	dispose := mustRegister(t, s, constTool("late", true, "late"))
	require.True(t, ask(t, h, pid, &messages.GetRequest{Name: "late"}).(*messages.GetReply).GetFound())
	dispose()
	require.False(t, ask(t, h, pid, &messages.GetRequest{Name: "late"}).(*messages.GetReply).GetFound())
	s.Dispose()
	waitFor(t, "the disposed scope's actor to stop", func() bool { return processes(sys) == before })
	_, err := sys.Root.RequestFuture(pid, &messages.GetRequest{Name: "own"}, waitLimit).Result()
	require.ErrorIs(t, err, actor.ErrDeadLetter, "a disposed scope's PID fails at once")
}

// The PID of a scope disposed before anyone asked for it is served by no
// process: a request to it fails at once (a dead letter), and asking again
// gives the same PID. So does a scope of another registry, and any scope
// once the host is closed.
func TestScope_PIDOfScopeDisposedUnasked(t *testing.T) {
	h := newHost(t)
	s := newScope(t, h.Registry(), "a")
	h.PID(h.Registry().Global())
	before := processes(h.System())
	s.Dispose()
	pid := h.PID(s)
	require.NotNil(t, pid)
	require.True(t, pid.Equal(h.PID(s)), "the PID of a disposed scope is stable")
	require.Equal(t, before, processes(h.System()), "the PID of a disposed scope spawned a process")
	_, err := h.System().Root.RequestFuture(pid, &messages.GetRequest{Name: "x"}, waitLimit).Result()
	require.ErrorIs(t, err, actor.ErrDeadLetter)

	other, err := runtime.New()
	require.NoError(t, err)
	defer func() { _ = other.Close(context.Background()) }()
	_, err = h.System().Root.RequestFuture(h.PID(other.Global()), &messages.GetRequest{Name: "x"}, waitLimit).Result()
	require.ErrorIs(t, err, actor.ErrDeadLetter, "a scope of another registry")

	live := newScope(t, h.Registry(), "b")
	closeHost(t, h)
	_, err = h.System().Root.RequestFuture(h.PID(live), &messages.GetRequest{Name: "x"}, waitLimit).Result()
	require.True(t, errors.Is(err, actor.ErrDeadLetter) || err != nil, "after Close: %v", err)
}

// A request that reaches a disposed scope's actor before it stops gets an
// ErrorReply saying so, never silence.
func TestScope_DisposedScopeAnswersErrorReply(t *testing.T) {
	h := newHost(t)
	s := newScope(t, h.Registry(), "a")
	pid := h.PID(s)
	s.Dispose()
	for range 20 {
		v, err := h.System().Root.RequestFuture(pid, &messages.SchemasRequest{}, waitLimit).Result()
		if err != nil {
			require.ErrorIs(t, err, actor.ErrDeadLetter)
			return
		}
		er, ok := v.(*messages.ErrorReply)
		require.True(t, ok, "%T", v)
		assert.Contains(t, er.GetError(), `scope "a" was disposed`)
	}
}

// Concurrent first PID requests of one scope, racing registrations, get
// the same PID, and the actor sees every registration (each applied once).
func TestScope_FirstPIDRequestRacesMutations(t *testing.T) {
	h := newHost(t)
	const writers, each = 4, 100
	for round := range 5 {
		s := newScope(t, h.Registry(), fmt.Sprint("r", round))
		pids := make(chan *actor.PID, 3)
		boundedWait(t, 6*waitLimit, "registrations racing the spawn", func() {
			var wg sync.WaitGroup
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range each {
						if _, err := s.Register(constTool(fmt.Sprintf("w%d-%d", w, i), true, 1)); err != nil {
							t.Errorf("Register: %v", err)
							return
						}
					}
				}()
			}
			for range 3 {
				wg.Add(1)
				go func() { defer wg.Done(); pids <- h.PID(s) }()
			}
			wg.Wait()
		})
		a, b, c := <-pids, <-pids, <-pids
		require.True(t, a == b && b == c, "concurrent first PID requests returned different PIDs")
		require.Len(t, s.Tools(), writers*each)
		reply := ask(t, h, a, &messages.SchemasRequest{}).(*messages.SchemasReply)
		require.Len(t, reply.GetTools(), writers*each, "round %d", round)
		s.Dispose()
	}
}

// The host's first PID requests may come at once, for the global scope and
// for agent scopes: each gets its PID (the agent scopes' actors are
// children of the global actor, whoever spawned it).
func TestScope_ConcurrentFirstPIDRequestsOfAHost(t *testing.T) {
	for range 20 {
		h := newHost(t)
		reg := h.Registry()
		mustRegister(t, reg.Global(), constTool("t", true, 1))
		scopes := []*runtime.Scope{reg.Global(), newScope(t, reg, "a"), newScope(t, reg, "b"), newScope(t, reg, "c")}
		pids := make([]*actor.PID, len(scopes))
		boundedWait(t, waitLimit, "concurrent first PID requests", func() {
			var wg sync.WaitGroup
			for i, s := range scopes {
				wg.Add(1)
				go func() { defer wg.Done(); pids[i] = h.PID(s) }()
			}
			wg.Wait()
		})
		for i, pid := range pids {
			require.True(t, ask(t, h, pid, &messages.GetRequest{Name: "t"}).(*messages.GetReply).GetFound(), "scope %d", i)
			if i > 0 {
				assert.Contains(t, pid.Id, pids[0].Id+"/")
			}
		}
		closeHost(t, h)
	}
}
