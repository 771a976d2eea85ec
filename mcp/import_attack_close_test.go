package mcp_test

import (
	"context"
	"errors"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolscope/toolscope/mcp"
)

// A connect that ignores its ctx does not hold Close: Close returns, and
// the session connect returns late is closed.
func TestImport_Attack_CloseDoesNotWaitForAConnectIgnoringItsCtx(t *testing.T) {
	p := newPipes(t)
	server := fineServer()
	cs, kill := p.mustConnect(t, server)
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	late := make(chan *sdk.ClientSession, 1)
	connect := func(context.Context) (*sdk.ClientSession, error) {
		entered <- struct{}{}
		<-release // ignores its ctx
		cs, _, err := p.connect(context.Background(), server)
		late <- cs
		return cs, err
	}
	reg := newRegistry(t)
	im := mustImport(t, reg.Global(), cs, mcp.WithReconnect(connect, mcp.Backoff{Attempts: 1, Max: time.Hour}))
	kill()
	recv(t, entered, "the reconnect attempt")
	closed := make(chan struct{})
	go func() { im.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(bound):
		close(release)
		dumpGoroutines(t)
		t.Fatal("Close waited for a connect that ignores its ctx")
	}
	close(release)
	s := recv(t, late, "the late session")
	if s == nil {
		t.Fatal("no late session")
	}
	returns(t, "the late session to be closed", func() { _ = s.Wait() })
}

// A change subscriber that blocks (until the test ends) while hearing a
// change of the re-sync after a reconnect does not hold Close, nor does
// an end handler or a sync error handler that blocks.
func TestImport_Attack_BlockingHandlersDoNotHoldClose(t *testing.T) {
	p := newPipes(t)
	server := fineServer()
	other := newServer(nil)
	textTool(other, "fine", "changed") // a changed tool: the re-sync replaces it
	cs, kill := p.mustConnect(t, server)
	connect := func(ctx context.Context) (*sdk.ClientSession, error) {
		cs, _, err := p.connect(ctx, other)
		return cs, err
	}
	reg := newRegistry(t)
	block := make(chan struct{})
	defer close(block)
	im := mustImport(t, reg.Global(), cs, mcp.WithReconnect(connect, fastBackoff),
		mcp.WithEndHandler(func(error) { <-block }), mcp.WithSyncErrorHandler(func(error) { <-block }))
	hearing := make(chan struct{}, 1)
	if _, err := reg.Global().OnChange(func(context.Context) error {
		select {
		case hearing <- struct{}{}:
		default:
		}
		<-block
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	kill()
	recv(t, hearing, "the subscriber to hear the re-sync's change")
	returns(t, "Close while a subscriber blocks", im.Close)
	recv(t, im.Done(), "Done")
}

// A connect that closes the import (a program giving up from inside its
// own dial) does not deadlock: Close waits for the recovery, which no
// longer waits for connect past its ctx.
func TestImport_Attack_ConnectMayClose(t *testing.T) {
	p := newPipes(t)
	server := fineServer()
	cs, kill := p.mustConnect(t, server)
	var im *mcp.Imported
	ready := make(chan struct{})
	returned := make(chan struct{})
	connect := func(context.Context) (*sdk.ClientSession, error) {
		<-ready
		im.Close()
		close(returned)
		return nil, errors.New("gave up")
	}
	reg := newRegistry(t)
	im = mustImport(t, reg.Global(), cs, mcp.WithReconnect(connect, mcp.Backoff{Attempts: 1, Max: time.Hour}))
	close(ready)
	kill()
	recv(t, returned, "Close called from connect to return")
	recv(t, im.Done(), "Done")
	if !errors.Is(im.Err(), mcp.ErrImportClosed) {
		t.Fatalf("Err: %v", im.Err())
	}
}
