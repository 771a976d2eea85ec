package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolscope/toolscope/mcp"
	"github.com/toolscope/toolscope/runtime"
)

// A server that flaps — it accepts every connection, then dies before the
// tools could be listed on it — spends WithReconnect's attempts: the
// import ends after Backoff.Attempts connections, not never.
func TestImport_Attack_FlappingServerSpendsTheAttempts(t *testing.T) {
	p := newPipes(t)
	server := fineServer()
	cs, kill := p.mustConnect(t, server)
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
	err := recv(t, ended, "the end handler")
	if !errors.Is(err, mcp.ErrServerGone) {
		t.Fatalf("end: %v", err)
	}
	if n := made.Load(); n > int32(fastBackoff.Attempts) {
		t.Fatalf("%d connections to a server that never listed its tools, want at most %d (Backoff.Attempts)", n, fastBackoff.Attempts)
	}
	recv(t, im.Done(), "Done")
	requireGone(t, reg.Global(), im)
}

// Between a reconnect and the listing of the tools on the new session, a
// call of a tool the new server may not have is not sent to it: it
// answers CodeUnavailable, and once the tools are listed the tool is gone
// (CodeUnknownTool) — never the new server's "unknown tool" error.
func TestImport_Attack_CallsWaitForTheListingAfterReconnect(t *testing.T) {
	p := newPipes(t)
	server := fineServer()
	textTool(server, "other", "other")
	cs, kill := p.mustConnect(t, server)
	listing := make(chan struct{}, 1)
	release := make(chan struct{})
	var sent atomic.Int32
	h := hostile{
		list: func(string) string {
			listing <- struct{}{}
			<-release
			return toolList("", `{"name":"fine","inputSchema":{"type":"object"}}`)
		},
		call: func(name string, _ json.RawMessage) string {
			sent.Add(1)
			if name != "fine" {
				return `!{"code":-32602,"message":"unknown tool"}`
			}
			return `{"content":[{"type":"text","text":"new fine"}]}`
		},
	}
	var made atomic.Int32
	connect := func(context.Context) (*sdk.ClientSession, error) {
		if made.Add(1) > 1 {
			return nil, errors.New("no server")
		}
		return connectHostile(t, h), nil
	}
	reg := newRegistry(t)
	im := mustImport(t, reg.Global(), cs, mcp.WithReconnect(connect, fastBackoff))
	kill()
	recv(t, listing, "the listing on the new session")
	if res := execute(t, reg.Global(), "other", `{}`); res.Code() != mcp.CodeUnavailable {
		close(release)
		t.Fatalf("a call while the tools are listed: code %q (%s), want MCP_UNAVAILABLE", res.Code(), res.ErrorMessage())
	}
	close(release)
	eventually(t, "other to be disposed", func() bool { return !slices.Contains(im.Tools(), "other") })
	if res := execute(t, reg.Global(), "other", `{}`); res.Code() != runtime.CodeUnknownTool {
		t.Fatalf("after the listing: code %q", res.Code())
	}
	if res := execute(t, reg.Global(), "fine", `{}`); res.IsError() || res.Text() != "new fine" {
		t.Fatalf("fine after the listing: %q %q", res.Code(), res.Text())
	}
	if n := sent.Load(); n != 1 {
		t.Fatalf("%d calls reached the new server, want 1", n)
	}
}

// A reconnected session whose listing the import refuses (past
// WithListLimits) but whose server answers has recovered: its later loss
// has every attempt again. (Only a session lost before its tools could be
// listed spends the attempts of the next recovery.)
func TestImport_Attack_AnsweringSessionRecoversTheAttempts(t *testing.T) {
	p := newPipes(t)
	server := fineServer()
	crowded := fineServer()
	textTool(crowded, "more", "more") // past WithListLimits(1, 1)
	cs, kill := p.mustConnect(t, server)
	var made atomic.Int32
	kills := make(chan func(), 4)
	connect := func(ctx context.Context) (*sdk.ClientSession, error) {
		if made.Add(1) > 2 {
			return nil, errors.New("no server")
		}
		cs, kill, err := p.connect(ctx, crowded)
		if err == nil {
			kills <- kill
		}
		return cs, err
	}
	reg := newRegistry(t)
	syncErr := make(chan error, 4)
	ended := make(chan error, 1)
	im := mustImport(t, reg.Global(), cs, mcp.WithListLimits(1, 1), mcp.WithReconnect(connect, mcp.Backoff{Attempts: 1, Initial: time.Millisecond, Max: time.Millisecond}),
		mcp.WithSyncErrorHandler(func(err error) { syncErr <- err }), mcp.WithEndHandler(func(err error) { ended <- err }))
	kill()
	recv(t, syncErr, "the re-sync after reconnecting to fail on the limits")
	if res := execute(t, reg.Global(), "fine", `{}`); res.IsError() {
		t.Fatalf("fine on the reconnected session: %q %s", res.Code(), res.ErrorMessage())
	}
	recv(t, kills, "the first reconnect's kill")()
	recv(t, syncErr, "the second reconnect's re-sync")
	if n := made.Load(); n != 2 {
		t.Fatalf("%d connects, want 2: the answering session's loss had no attempt left", n)
	}
	select {
	case err := <-ended:
		t.Fatalf("ended: %v", err)
	default:
	}
	_ = im
}
