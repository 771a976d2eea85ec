//go:build !race

package cluster_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolscope/toolscope/cluster"
	"github.com/toolscope/toolscope/cluster/internal/fixture"
	"github.com/toolscope/toolscope/runtime"
)

// TestProcesses_Item22_Throughput_3vs1Members measures the calls per
// second of 1,000 agents served by 3 member processes and by 1, on this
// machine: both clusters run side by side (each its own embedded NATS and
// client-only member in this process), every agent's tree is activated on
// both first, then rounds of calls alternate between them (1 then 3, then
// 3 then 1, ...) so both see the same machine load. Every call is a remote
// Execute of the fixture's record tool (a claim and a recorded result in
// JetStream, and one fsync of the calls file on the member) from 64
// concurrent callers. It prints the median and range of calls/s for each
// and their ratio; it asserts only that every call succeeded. Skipped under
// -short.
func TestProcesses_Item22_Throughput_3vs1Members(t *testing.T) {
	if testing.Short() {
		t.Skip("throughput figures: run without -short")
	}
	const (
		agents  = 1000
		workers = 64
		perRun  = 3000
		rounds  = 3
	)
	sizes := []int{1, 3}
	clients := map[int]*cluster.Client{}
	for _, n := range sizes {
		pc := startProcCluster(t, n, procLease)
		clients[n] = cluster.NewClient(pc.client, cluster.WithResend(500*time.Millisecond), cluster.WithCancelGrace(cancelGrace), cluster.WithDefaultTimeout(callTimeout))
	}
	ids := make([]string, agents)
	for i := range ids {
		ids[i] = fmt.Sprintf("tp-%04d", i)
	}
	var seq atomic.Int64
	call := func(cl *cluster.Client, id string) error {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		defer cancel()
		cid := fmt.Sprint(id, ".", seq.Add(1))
		if r := cl.Tree(id).Execute(ctx, runtime.Call{ID: cid, Name: fixture.ToolRecord, Arguments: raw(`{}`)}); r.IsError() {
			return fmt.Errorf("%s: %s %s", cid, r.Code(), r.ErrorMessage())
		}
		return nil
	}
	for _, n := range sizes { // activate every tree first: steady state only
		each(t, workers, ids, func(id string) error { return call(clients[n], id) })
	}
	work := make([]string, perRun)
	for i := range work {
		work[i] = ids[(i*7919)%agents] // spread over the agents
	}
	rates := map[int][]float64{}
	for r := range rounds {
		order := sizes
		if r%2 == 1 {
			order = []int{sizes[1], sizes[0]}
		}
		for _, n := range order {
			start := time.Now()
			each(t, workers, work, func(id string) error { return call(clients[n], id) })
			rates[n] = append(rates[n], float64(perRun)/time.Since(start).Seconds())
		}
	}
	med := func(xs []float64) float64 { s := slices.Clone(xs); slices.Sort(s); return s[len(s)/2] }
	for _, n := range sizes {
		t.Logf("%d member process(es): %.0f calls/s median of %d rounds (range %.0f–%.0f); %d agents, %d callers, %d calls a round",
			n, med(rates[n]), rounds, slices.Min(rates[n]), slices.Max(rates[n]), agents, workers, perRun)
	}
	var ratios []float64
	for i := range rates[3] {
		ratios = append(ratios, rates[3][i]/rates[1][i])
	}
	t.Logf("3 members / 1 member, round by round: median %.2f× (range %.2f–%.2f×)", med(ratios), slices.Min(ratios), slices.Max(ratios))
}
