package mcp_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolscope/toolscope/mcp"
	"github.com/toolscope/toolscope/runtime"
)

// TestImport_Attack_RandomCloseSyncEndReconnect races everything an import
// lives through: calls, Syncs, kills of the session, reconnects to servers
// with other tools (one shadowing the scope's own tool, one with hundreds
// of tools, one with none), an end handler that closes, and Close at a
// random moment. Every call is answered exactly once with an allowed code,
// the scope's own tool is never shadowed, after Done the scope holds none
// of the import's tools, and no goroutine is left.
func TestImport_Attack_RandomCloseSyncEndReconnect(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 3))
	baseline := goroutines()
	servers := []*sdk.Server{newServer(nil), newServer(nil), newServer(nil), newServer(nil)}
	textTool(servers[0], "fine", "fine")
	textTool(servers[0], "other", "other")
	textTool(servers[1], "read", "server read") // the scope's own tool
	textTool(servers[1], "fine", "fine again")
	for i := range 300 {
		textTool(servers[2], fmt.Sprint("t", i), "many")
	}
	textTool(servers[2], "fine", "fine many")
	for round := range 12 {
		func() {
			p := newPipes(t)
			defer p.closeAll()
			ctx, cancel := context.WithTimeout(context.Background(), bound)
			defer cancel()
			cs, kill := p.mustConnect(t, servers[0])
			dial := p.dialer(kill, 6, func(n int32) *sdk.Server { return servers[int(n)%len(servers)] })
			reg, err := runtime.New()
			if err != nil {
				t.Fatal(err)
			}
			defer reg.Close(context.Background())
			d, err := runtime.NewTool("read", "the scope's own", func(context.Context, struct{}, *runtime.RunContext) (string, error) { return "own read", nil })
			if err != nil {
				t.Fatal(err)
			}
			if _, err := reg.Global().Register(d); err != nil {
				t.Fatal(err)
			}
			var im *mcp.Imported
			var imReady = make(chan struct{})
			im, err = mcp.Import(ctx, reg.Global(), cs, mcp.WithReconnect(dial.connect, fastBackoff),
				mcp.WithEndHandler(func(error) { <-imReady; im.Close() }),
				mcp.WithSyncErrorHandler(func(error) {}))
			if err != nil {
				t.Fatal(err)
			}
			close(imReady)
			const calls = 50
			var answered [calls]atomic.Int32
			var wg sync.WaitGroup
			names := []string{"fine", "other", "read", "t7", "t299"}
			for i := range calls {
				wg.Add(1)
				go func() {
					defer wg.Done()
					time.Sleep(time.Duration(i%5) * time.Millisecond)
					name := names[i%len(names)]
					res := execute(t, reg.Global(), name, `{}`)
					answered[i].Add(1)
					if name == "read" && (res.IsError() || res.Text() != "own read") {
						t.Errorf("round %d: the scope's own read answered %q %q", round, res.Code(), res.Text())
					}
					if c := res.Code(); !slices.Contains([]runtime.Code{"", mcp.CodeUnavailable, runtime.CodeUnknownTool}, c) {
						t.Errorf("round %d: call %s: code %q (%s)", round, name, c, res.ErrorMessage())
					}
				}()
			}
			for range 3 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					sctx, scancel := context.WithTimeout(context.Background(), bound)
					defer scancel()
					_ = im.Sync(sctx) // any outcome; it must return
				}()
			}
			for range rng.IntN(4) {
				time.Sleep(time.Duration(rng.IntN(3)) * time.Millisecond)
				dial.killNewest()
			}
			if rng.IntN(2) == 0 {
				time.Sleep(time.Duration(rng.IntN(3)) * time.Millisecond)
				returns(t, fmt.Sprintf("round %d: Close", round), im.Close)
			}
			returns(t, fmt.Sprintf("round %d: every call and Sync to return", round), wg.Wait)
			for i := range answered {
				if n := answered[i].Load(); n != 1 {
					t.Fatalf("round %d: call %d answered %d times", round, i, n)
				}
			}
			returns(t, fmt.Sprintf("round %d: the last Close", round), im.Close)
			recv(t, im.Done(), "Done")
			if got := im.Tools(); len(got) != 0 {
				t.Fatalf("round %d: Tools() = %d names after Close", round, len(got))
			}
			if got := reg.Global().Tools(); !slices.Equal(got, []string{"read"}) {
				t.Fatalf("round %d: the scope holds %d tools after Close: %.10v", round, len(got), got)
			}
			if res := execute(t, reg.Global(), "read", `{}`); res.Text() != "own read" {
				t.Fatalf("round %d: read after Close: %q", round, res.Text())
			}
		}()
	}
	eventually(t, "the goroutines of the imports and sessions to end", func() bool { return goroutines() <= baseline })
}
