package actors_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolscope/toolscope/actors"
	"github.com/toolscope/toolscope/messages"
	"github.com/toolscope/toolscope/runtime"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// With WithLogger, protoactor's own log on a system New makes goes to the
// same handler, from Warn up and marked component=protoactor, so a program
// has one log stream; the registry logs there too.
func TestLogger_ProtoactorLogsThroughWithLogger(t *testing.T) {
	var buf lockedBuffer
	h := newHost(t, actors.WithLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	pl := h.System().Logger()
	pl.Info("lifecycle chatter")
	pl.Warn("something protoactor warns about")
	out := buf.String()
	assert.Contains(t, out, "something protoactor warns about")
	assert.Contains(t, out, "component=protoactor")
	assert.False(t, strings.Contains(out, "lifecycle chatter"), "Info from protoactor is filtered: %s", out)
}

// Start embeds toolscope in the caller's system, which keeps its logger and
// outlives the host; Start refuses a nil system and a nil logger.
func TestStart_EmbedsInTheCallersSystem(t *testing.T) {
	sys := quietSystem(t)
	before := sys.Logger()
	h, err := actors.Start(sys, actors.WithLogger(slog.Default()))
	require.NoError(t, err)
	require.Same(t, sys, h.System())
	require.Same(t, before, sys.Logger(), "the caller's system keeps its logger")
	s := newScope(t, h.Registry(), "a")
	mustRegister(t, s, constTool("t", true, 1))
	require.True(t, ask(t, h, h.PID(s), &messages.GetRequest{Name: "t"}).(*messages.GetReply).GetFound())
	closeHost(t, h)
	// The system still runs: a fresh host lives in it.
	h2, err := actors.Start(sys)
	require.NoError(t, err)
	defer closeHost(t, h2)
	require.False(t, ask(t, h2, h2.PID(h2.Registry().Global()), &messages.GetRequest{Name: "t"}).(*messages.GetReply).GetFound())

	_, err = actors.Start(nil)
	require.ErrorIs(t, err, runtime.ErrInvalidConfig)
	_, err = actors.New(actors.WithLogger(nil))
	require.ErrorIs(t, err, runtime.ErrInvalidConfig)
	_, err = actors.New(actors.WithRegistry(runtime.WithMaxQueued(-1)))
	require.ErrorIs(t, err, runtime.ErrInvalidConfig, "a registry option's error is New's")
}

// The argument bound (WithMaxArgumentBytes) holds for requests by message
// as for Go calls: an ExecuteRequest's arguments and a TurnRequest call's
// text over the bound are refused INVALID_ARGS before any hook runs.
func TestExecute_ArgumentBoundHoldsByMessage(t *testing.T) {
	const bound = 100
	h := newHost(t, actors.WithRegistry(runtime.WithMaxArgumentBytes(bound)))
	s := newScope(t, h.Registry(), "a")
	mustRegister(t, s, constTool("echo", true, 1))
	over := []byte(fmt.Sprintf(`{"s":"%s"}`, strings.Repeat("a", bound)))
	at := []byte(fmt.Sprintf(`{"s":"%s"}`, strings.Repeat("a", bound-8)))
	require.Len(t, at, bound)
	v := ask(t, h, h.PID(s), &messages.ExecuteRequest{Call: &messages.Call{CallId: "pb", Name: "echo", ArgumentsJson: over}})
	res := runtime.ResultFromProto(v.(*messages.ExecuteReply).GetResult())
	assert.Equal(t, runtime.CodeInvalidArgs, res.Code())
	assert.Contains(t, res.ErrorMessage(), fmt.Sprint(len(over)))
	v = ask(t, h, h.PID(s), &messages.ExecuteRequest{Call: &messages.Call{CallId: "ok", Name: "echo", ArgumentsJson: at}})
	success(t, runtime.ResultFromProto(v.(*messages.ExecuteReply).GetResult()), "1")
	v = ask(t, h, h.PID(s), &messages.TurnRequest{Calls: []*messages.TurnCall{
		{CallId: "t1", Name: "echo", ArgumentsText: string(over)}, {CallId: "t2", Name: "echo", ArgumentsText: string(at)},
	}})
	results := v.(*messages.TurnReply).GetResults()
	require.Len(t, results, 2)
	assert.Equal(t, runtime.CodeInvalidArgs, runtime.ResultFromProto(results[0]).Code())
	success(t, runtime.ResultFromProto(results[1]), "1")
	// Classification never reads arguments over the bound (R36).
	m := ask(t, h, h.PID(s), &messages.ExecutionModeRequest{Call: &messages.Call{Name: "echo", ArgumentsJson: over}})
	assert.Equal(t, messages.ModeExclusive, m.(*messages.ExecutionModeReply).GetMode())
}
