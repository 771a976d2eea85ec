//go:build !race

package cluster_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolscope/toolscope/cluster"
	"github.com/toolscope/toolscope/cluster/internal/fixture"
	"github.com/toolscope/toolscope/cluster/internal/kvkey"
	"github.com/toolscope/toolscope/runtime"
)

// TestProcesses_Item22_ZombieRunsNothingAfterResume pauses a member
// (SIGSTOP) for longer than its lease while calls are sent to its trees:
// they activate on the other members and are served there. Resumed
// (SIGCONT), the paused member still holds its old activations and the
// requests queued in its sockets; it must run no body (its calls file
// gains no line) and make no write to the store in its old activations'
// name (no lease write by its holder, no state, no recorded result, no
// claim fence of its epochs). Every store message after the resume is read
// from the bucket's stream.
func TestProcesses_Item22_ZombieRunsNothingAfterResume(t *testing.T) {
	const lease = 1500 * time.Millisecond
	pc := startProcCluster(t, 3, lease)
	cl := cluster.NewClient(pc.client, cluster.WithResend(300*time.Millisecond), cluster.WithCancelGrace(cancelGrace), cluster.WithDefaultTimeout(callTimeout))
	ctx := context.Background()
	var trees []string
	for i := range 60 {
		trees = append(trees, fmt.Sprintf("z-%02d", i))
	}
	each(t, 8, trees, func(id string) error {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		return setupTree(cctx, cl.Tree(id))
	})

	const zombie = 1
	zp := pc.procs[zombie]
	epochs := map[string]uint64{} // the zombie's trees → its activations' epochs
	for _, id := range trees {
		if h, e := pc.holder(ctx, id); strings.HasPrefix(h, zp.addr+"/") {
			epochs[id] = e
		}
	}
	if len(epochs) == 0 {
		t.Fatal("placement put none of 60 trees on the member to pause")
	}
	var zt []string
	for id := range epochs {
		zt = append(zt, id)
	}

	pc.signal(zombie, syscall.SIGSTOP)
	stoppedAt := time.Now()
	// Calls to its trees: the first sends queue in the paused member's
	// socket; the resends reach the trees' new activations elsewhere once
	// the member has left membership and its leases expired.
	var mu sync.Mutex
	var ran []string
	each(t, 8, zt, func(id string) error {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		names := []string{fixture.ToolRecord, "say", fixture.ToolG2}
		var ids []string
		var rs []*runtime.Result
		for _, n := range names {
			cid := id + ".paused." + n
			args := `{}`
			if n == "say" {
				args = `{"text":"hi"}`
			}
			ids = append(ids, cid)
			rs = append(rs, cl.Tree(id).Execute(cctx, runtime.Call{ID: cid, Name: n, Arguments: raw(args)}))
		}
		r, err := checkRules(id, names, ids, rs, false)
		if err != nil {
			return fmt.Errorf("while the member is paused: %w", err)
		}
		if h := pc.hostOf(cctx, id); h == zombie || h < 0 {
			return fmt.Errorf("%s is held by member %d while the member is paused", id, h)
		}
		mu.Lock()
		ran = append(ran, r...)
		mu.Unlock()
		return nil
	})
	servedAfter := time.Since(stoppedAt)
	if d := 2*lease - time.Since(stoppedAt); d > 0 {
		time.Sleep(d) // paused for longer than the lease, whatever the machine's speed
	}

	// Everything written to the store from now on.
	type msg struct {
		subj string
		data []byte
	}
	var (
		wmu     sync.Mutex
		written []msg
	)
	cons, err := pc.js.OrderedConsumer(ctx, "KV_"+cluster.DefaultBucket, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverNewPolicy})
	if err != nil {
		t.Fatal(err)
	}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		wmu.Lock()
		written = append(written, msg{m.Subject(), append([]byte(nil), m.Data()...)})
		wmu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(zp.calls)
	if err != nil {
		t.Fatal(err)
	}
	pc.signal(zombie, syscall.SIGCONT)
	resumedAt := time.Now()
	// Its renewals are overdue and its queued requests are delivered at
	// once; give it several lease periods to act on them.
	time.Sleep(4 * lease)
	cc.Stop()

	after, err := os.ReadFile(zp.calls)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Errorf("the resumed member ran bodies: its calls file gained %q", after[len(before):])
	}
	wmu.Lock()
	defer wmu.Unlock()
	pre := "$KV." + cluster.DefaultBucket + "."
	treeOf := func(tok string) string {
		id, err := kvkey.ID(tok)
		if err != nil {
			t.Fatalf("store key token %q: %v", tok, err)
		}
		return id
	}
	createdClaims := 0
	for _, m := range written {
		key, ok := strings.CutPrefix(m.subj, pre)
		if !ok {
			continue
		}
		parts := strings.Split(key, ".")
		tree := treeOf(parts[1])
		zEpoch, ours := epochs[tree]
		switch parts[0] {
		case "l":
			var v struct {
				Holder string `json:"holder"`
			}
			if len(m.data) > 0 && json.Unmarshal(m.data, &v) == nil && strings.HasPrefix(v.Holder, zp.addr+"/") {
				t.Errorf("after resuming, the paused member wrote tree %s's lease: %s", tree, m.data)
			}
		case "s":
			if ours {
				t.Errorf("after resuming, tree %s's state was written (no mutation was sent): %d bytes", tree, len(m.data))
			}
		case "f":
			if e, n := binary.Uvarint(m.data); ours && n > 0 && e <= zEpoch {
				t.Errorf("after resuming, tree %s's claim fence was written at epoch %d (the paused member's was %d)", tree, e, zEpoch)
			}
		case "c":
			if len(m.data) < 2 || !ours {
				continue
			}
			e, n := binary.Uvarint(m.data[1:])
			if n <= 0 || e > zEpoch {
				continue
			}
			if m.data[0] == 'd' {
				t.Errorf("after resuming, a result was recorded for tree %s's call %s at the paused member's epoch %d", tree, treeOf(parts[2]), e)
			} else {
				// A claim key created by a fenced activation: the store's
				// documented exception (docs/cluster.md, "The store": its
				// fence write fails, so the id is never ClaimNew; later
				// claims read it as unknown). Counted, not a write of
				// state or result.
				createdClaims++
			}
		}
	}
	// Rejoined, the resumed member is again where disthash places its old
	// trees, while their activations elsewhere still hold the leases (no
	// idle timeout). Those activations are stopped by their members'
	// placement actors on the topology change (the tree is no longer
	// theirs), releasing the leases, so the rejoined member's new
	// activations take them: every call to those trees is served.
	rejoinedAt := time.Now()
	each(t, 8, zt, func(id string) error {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		names := []string{fixture.ToolRecord, "say", fixture.ToolG2}
		var ids []string
		var rs []*runtime.Result
		for _, n := range names {
			cid := id + ".rejoined." + n
			args := `{}`
			if n == "say" {
				args = `{"text":"hi"}`
			}
			ids = append(ids, cid)
			rs = append(rs, cl.Tree(id).Execute(cctx, runtime.Call{ID: cid, Name: n, Arguments: raw(args)}))
		}
		r, err := checkRules(id, names, ids, rs, false)
		if err != nil {
			return fmt.Errorf("after the member rejoined: %w", err)
		}
		mu.Lock()
		ran = append(ran, r...)
		mu.Unlock()
		return nil
	})
	rejoinServed := time.Since(rejoinedAt)
	hosts := map[int]int{}
	for _, id := range zt {
		hosts[pc.hostOf(ctx, id)]++
	}
	// Still alive, the resumed member shuts down gracefully.
	pc.signal(zombie, syscall.SIGTERM)
	pc.awaitExit(zombie)
	if zp.err != nil {
		t.Errorf("the resumed member's exit after SIGTERM: %v\n%s", zp.err, zp.stderr)
	}
	run := pc.callsRun()
	for id, members := range run {
		if len(members) > 1 {
			t.Errorf("call %s ran %d times, on members %v", id, len(members), members)
		}
	}
	for _, id := range ran {
		if len(run[id]) != 1 {
			t.Errorf("call %s succeeded but its body ran %d times", id, len(run[id]))
		}
	}
	t.Logf("%d of 60 trees on the paused member; their calls served elsewhere %s after the pause (lease %s); paused %s; after the resume (%s watched): %d store writes, %d claim keys created by the fenced member, no body run; after the rejoin every call to its trees served within %s (trees by member then: %v)",
		len(zt), servedAfter.Round(time.Millisecond), lease, resumedAt.Sub(stoppedAt).Round(time.Millisecond), (4 * lease), len(written), createdClaims, rejoinServed.Round(time.Millisecond), hosts)
}
