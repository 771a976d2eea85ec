package actorsys

import (
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/toolscope/toolscope/internal/core"
)

func newSystem(t *testing.T) *actor.ActorSystem {
	t.Helper()
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}))
	t.Cleanup(sys.Shutdown)
	return sys
}

func send(t *testing.T, sys *actor.ActorSystem, pid *actor.PID, fn func(*core.Layer) (*core.Layer, error)) error {
	t.Helper()
	reply := make(chan error, 1)
	sys.Root.Send(pid, &Mutate{Apply: fn, Reply: reply})
	select {
	case err := <-reply:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("scope actor did not answer")
		return nil
	}
}

// The scope actor is the single writer: it applies a mutation, publishes
// the new layer on the node, and answers; a failed or panicking mutation
// answers with an error and publishes nothing.
func TestScopeActor_AppliesPublishesAndContainsPanics(t *testing.T) {
	sys := newSystem(t)
	node := core.NewNode("a", nil)
	pid := sys.Root.Spawn(ScopeProps(sys, node, nil, nil))

	if err := send(t, sys, pid, func(l *core.Layer) (*core.Layer, error) {
		n, _, _ := l.AddTool(core.Entry{ID: 1, Name: "read"})
		return n, nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, ok := node.Layer().Lookup("read"); !ok {
		t.Fatal("the mutation was not published")
	}
	before := node.Layer()
	boom := errors.New("boom")
	if err := send(t, sys, pid, func(*core.Layer) (*core.Layer, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	if err := send(t, sys, pid, func(*core.Layer) (*core.Layer, error) { panic("bad mutation") }); err == nil {
		t.Fatal("a panicking mutation must answer with an error")
	}
	if node.Layer() != before {
		t.Fatal("a failed mutation published a layer")
	}
	// Still serving.
	if err := send(t, sys, pid, func(l *core.Layer) (*core.Layer, error) { return l, nil }); err != nil {
		t.Fatal(err)
	}
}

type handlerFunc func(any) any

func (f handlerFunc) Handle(m any) any { return f(m) }

// Requests other than mutations go to the handler off the actor's
// goroutine (a blocked handler does not block the actor), through the
// spawner, and the reply goes back to the sender.
func TestScopeActor_RequestsReachHandler(t *testing.T) {
	sys := newSystem(t)
	node := core.NewNode("a", nil)
	var spawns atomic.Int32
	run := func(f func()) { spawns.Add(1); go f() }
	entered, release := make(chan struct{}), make(chan struct{})
	pid := sys.Root.Spawn(ScopeProps(sys, node, handlerFunc(func(m any) any {
		close(entered)
		<-release
		return m.(string) + "!"
	}), run))
	fut := sys.Root.RequestFuture(pid, "ping", 10*time.Second)
	<-entered
	before := spawns.Load()
	// The handler is blocked; the actor still applies a mutation.
	if err := send(t, sys, pid, func(l *core.Layer) (*core.Layer, error) { return l, nil }); err != nil {
		t.Fatal(err)
	}
	close(release)
	res, err := fut.Result()
	if err != nil {
		t.Fatal(err)
	}
	if res != "ping!" {
		t.Fatalf("reply = %v", res)
	}
	// At least one mailbox run (the dispatcher spawns through run too)
	// and the handler.
	if before < 2 {
		t.Fatalf("%d functions ran through the spawner, want the mailbox's and the handler's", before)
	}
}
