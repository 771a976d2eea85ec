package cluster

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/toolscope/toolscope/cluster/clustermsg"
	"github.com/toolscope/toolscope/messages"
	"github.com/toolscope/toolscope/runtime"
)

// TestChecker_Item4_RandomizedCallsNeverRunTwiceAndAlwaysAnswer drives
// activations of one tree with concurrent requests — repeated call ids
// (client resends and retries), cancels, mutations, and a second activation
// stealing the tree midway (a zombie's view) — and checks the invariants:
// every request is answered exactly once and within a bound, no body runs
// twice for one call id across all activations, a repeated call id gets the
// first result or a coded refusal (never a second run), and nothing leaks a
// running body.
func TestChecker_Item4_RandomizedCallsNeverRunTwiceAndAlwaysAnswer(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			store, m := newMemStore(), newMember(t)
			trees := []*tree{activeTree(t, m, store, "ck")}
			const requests = 200
			ids := make([]string, 40)
			for i := range ids {
				ids[i] = fmt.Sprintf("id%d", i)
			}
			type answer struct {
				id  string
				res *runtime.Result
			}
			answers := make(chan answer, requests)
			var wg sync.WaitGroup
			var mu sync.Mutex
			first := map[string]string{} // call id → the first success's text
			for n := range requests {
				id := ids[rng.IntN(len(ids))]
				tool := "count"
				if rng.IntN(5) == 0 {
					tool = "g1"
				}
				op := rng.IntN(20)
				mu.Lock()
				tr := trees[len(trees)-1]
				if op == 0 && len(trees) < 3 { // another activation takes the tree
					store.steal("ck")
					store.mu.Lock()
					store.trees["ck"].holder, store.trees["ck"].expires = "", time.Time{}
					store.mu.Unlock()
					tr = activeTree(t, m, store, "ck")
					trees = append(trees, tr)
				}
				mu.Unlock()
				wg.Add(1)
				go func() {
					defer wg.Done()
					switch {
					case op == 1:
						tr.cancel(id)
					case op == 2:
						mutate(tr, &clustermsg.RestrictRequest{Header: hdr("ck", "", fmt.Sprint("r", n)), Deny: []string{"g2"}, HasDeny: true})
					}
					req := &clustermsg.ExecuteRequest{Header: hdr("ck", "", id), Call: &messages.Call{CallId: id, Name: tool, ArgumentsJson: []byte(`{}`)}}
					f := tr.begin(req.GetHeader())
					r := tr.execute(f, req)
					tr.end(f, r)
					answers <- answer{id, runtime.ResultFromProto(r.GetResult())}
				}()
			}
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			awaitClosed(t, done, "every request to be answered")
			close(answers)
			got := 0
			for a := range answers {
				got++
				if !a.res.IsError() {
					mu.Lock()
					if prev, ok := first[a.id]; ok && prev != a.res.Text() {
						t.Errorf("call %s answered %q and %q: two different successes", a.id, prev, a.res.Text())
					}
					first[a.id] = a.res.Text()
					mu.Unlock()
					continue
				}
				switch a.res.Code() {
				case CodeOutcomeUnknown, CodeScopeUnavailable, runtime.CodeAbortedBeforeDispatch, runtime.CodeAborted:
				default:
					t.Errorf("call %s: unexpected failure %q %q", a.id, a.res.Code(), a.res.ErrorMessage())
				}
			}
			if got != requests {
				t.Fatalf("%d answers for %d requests", got, requests)
			}
			for _, id := range ids {
				if n := m.runs(id); n > 1 {
					t.Errorf("call id %s: body ran %d times", id, n)
				}
			}
		})
	}
}
