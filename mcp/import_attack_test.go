package mcp_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolscope/toolscope/mcp"
)

// A server that flaps — it accepts every connection, then dies before the
// tools could be listed on it — spends WithReconnect's attempts: the
// import ends after Backoff.Attempts connections, not never.
func TestImport_Attack_FlappingServerSpendsTheAttempts(t *testing.T) {
	p := newPipes(t)
	server := newServer(nil)
	textTool(server, "fine", "fine")
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	cs, kill, err := p.connect(ctx, server)
	if err != nil {
		t.Fatal(err)
	}
	const give = 200 // after these, connect fails: the test ends either way
	var made atomic.Int32
	connect := func(ctx context.Context) (*sdk.ClientSession, error) {
		if made.Add(1) > give {
			return nil, errors.New("no server")
		}
		cs, kill, err := p.connect(ctx, server)
		if err != nil {
			return nil, err
		}
		kill() // dies at once, before anything is listed
		return cs, nil
	}
	reg := newRegistry(t)
	ended := make(chan error, 1)
	im := mustImport(t, reg.Global(), cs, mcp.WithReconnect(connect, fastBackoff), mcp.WithEndHandler(func(err error) { ended <- err }))
	kill()
	err = recv(t, ended, "the end handler")
	if !errors.Is(err, mcp.ErrServerGone) {
		t.Fatalf("end: %v", err)
	}
	if n := made.Load(); n > int32(fastBackoff.Attempts) {
		t.Fatalf("%d connections to a server that never listed its tools, want at most %d (Backoff.Attempts)", n, fastBackoff.Attempts)
	}
	recv(t, im.Done(), "Done")
	requireGone(t, reg.Global(), im)
}
