package actors_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolscope/toolscope/actors"
	"github.com/toolscope/toolscope/runtime"
)

// waitLimit bounds every wait of these tests: a hang fails with a dump of
// every goroutine instead of blocking until go test's timeout.
const waitLimit = 10 * time.Second

// quietSystem is a user's own actor system, logging nothing.
func quietSystem(t testing.TB) *actor.ActorSystem {
	t.Helper()
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}))
	t.Cleanup(sys.Shutdown)
	return sys
}

// newHost starts a host in a system of its own, closed when the test ends.
func newHost(t testing.TB, opts ...actors.Option) *actors.Host {
	t.Helper()
	h, err := actors.New(opts...)
	require.NoError(t, err)
	t.Cleanup(func() { closeHost(t, h) })
	return h
}

func closeHost(t testing.TB, h *actors.Host) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := h.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// ask sends msg to pid with RequestFuture and returns the reply.
func ask(t testing.TB, h *actors.Host, pid *actor.PID, msg any) any {
	t.Helper()
	v, err := h.System().Root.RequestFuture(pid, msg, waitLimit).Result()
	require.NoError(t, err, "request %T", msg)
	return v
}

func newScope(t testing.TB, reg *runtime.Registry, key string) *runtime.Scope {
	t.Helper()
	s, err := reg.NewScope(key)
	require.NoError(t, err)
	return s
}

func mustRegister(t testing.TB, s *runtime.Scope, d runtime.Definition) func() {
	t.Helper()
	dispose, err := s.Register(d)
	require.NoError(t, err)
	return dispose
}

// tool is a tool with a fixed mode whose body is body.
func tool(name string, parallel bool, body func(ctx context.Context, args json.RawMessage) (any, error)) runtime.Definition {
	return runtime.Definition{
		Name:        name,
		Description: "tool " + name,
		Parameters:  json.RawMessage(`{"type":"object"}`),
		Output: &runtime.Output{
			Schema: json.RawMessage(`{}`),
			Render: func(_ context.Context, _, v json.RawMessage) ([]runtime.Block, error) {
				return []runtime.Block{runtime.Text(string(v))}, nil
			},
		},
		Execute: func(ctx context.Context, args json.RawMessage, _ *runtime.RunContext) (any, error) {
			return body(ctx, args)
		},
		IsConcurrencySafe: func(context.Context, json.RawMessage) (bool, error) { return parallel, nil },
	}
}

func constTool(name string, parallel bool, v any) runtime.Definition {
	return tool(name, parallel, func(context.Context, json.RawMessage) (any, error) { return v, nil })
}

func success(t testing.TB, res *runtime.Result, value string) {
	t.Helper()
	require.False(t, res.IsError(), "unexpected failure: %s", res.ErrorMessage())
	v, ok := res.Value()
	require.True(t, ok)
	assert.JSONEq(t, value, string(v))
}

// boundedWait runs f on a goroutine of its own and fails the test, with a
// dump of every goroutine, if f has not returned within d.
func boundedWait(t testing.TB, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		var buf bytes.Buffer
		_ = pprof.Lookup("goroutine").WriteTo(&buf, 2)
		t.Fatalf("%s did not return within %v; goroutines:\n%s", what, d, buf.String())
	}
}

// waitFor polls cond until it holds, failing after waitLimit.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			var buf bytes.Buffer
			_ = pprof.Lookup("goroutine").WriteTo(&buf, 2)
			t.Fatalf("timed out waiting for %s; goroutines:\n%s", what, buf.String())
		}
		time.Sleep(time.Millisecond)
	}
}

// await receives from ch within waitLimit.
func await[T any](t testing.TB, ch <-chan T) T {
	t.Helper()
	timer := time.NewTimer(waitLimit)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		var buf bytes.Buffer
		_ = pprof.Lookup("goroutine").WriteTo(&buf, 2)
		t.Fatalf("timed out; goroutines:\n%s", buf.String())
		var zero T
		return zero
	}
}

// processes counts the actor system's local processes.
func processes(sys *actor.ActorSystem) int {
	n := 0
	for _, m := range sys.ProcessRegistry.LocalPIDs.LocalPIDs {
		n += m.Count()
	}
	return n
}

type clientSend struct {
	to  *actor.PID
	msg any
}

// client spawns a small actor that forwards a request to a PID with itself
// as sender and hands every reply it receives to the returned channel.
func client(t testing.TB, sys *actor.ActorSystem) (*actor.PID, <-chan any) {
	t.Helper()
	replies := make(chan any, 16)
	pid := sys.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		switch m := c.Message().(type) {
		case *clientSend:
			c.Request(m.to, m.msg)
		case *actor.Started, *actor.Stopping, *actor.Stopped, *actor.Restarting:
		default:
			replies <- m
		}
	}))
	t.Cleanup(func() { sys.Root.Stop(pid) })
	return pid, replies
}

// askWithin sends msg to pid from a throwaway actor and waits up to d for
// its reply; ok is false when none came in time or the request became a
// dead letter. Tests that expect lost replies (actors stopped behind the
// host's back) use it instead of RequestFuture with a short timeout:
// protoactor's futureProcess writes a late reply's result without the lock
// its timeout takes, a race in protoactor itself that -race reports when a
// reply lands as the future times out. A throwaway actor receives late
// replies serially, or they become dead letters once it is stopped.
func askWithin(sys *actor.ActorSystem, pid *actor.PID, msg any, d time.Duration) (reply any, ok bool) {
	got := make(chan any, 1)
	client := sys.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		switch m := c.Message().(type) {
		case actor.SystemMessage, actor.AutoReceiveMessage:
		default:
			select {
			case got <- m:
			default:
			}
		}
	}))
	defer sys.Root.Stop(client)
	sys.Root.RequestWithCustomSender(pid, msg, client)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case m := <-got:
		if _, dead := m.(*actor.DeadLetterResponse); dead {
			return nil, false
		}
		return m, true
	case <-t.C:
		return nil, false
	}
}
