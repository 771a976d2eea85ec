package admit

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestNest_R86_RandomizedAgainstRules drives the transcript harness at
// random — calls that are not nested and nested ones (in their parent's
// scope or another, parallel or exclusive, several children of one body at
// once), bodies ending, waiters giving up — and checks after every step,
// deterministically, the rules the runtime's randomized stress test checks
// by running them:
//
//   - an exclusive call never overlaps a call of its scope that is not its
//     ancestor or descendant (R86);
//   - nothing hangs: a body ends only once its nested calls are answered
//     (a body waits for them), and ending the bodies that can end, over and
//     over, admits every waiter — a wait the policy let start can always
//     end (else it had to fail with WOULD_DEADLOCK).
func TestNest_R86_RandomizedAgainstRules(t *testing.T) {
	runs := 300
	if testing.Short() {
		runs = 50
	}
	for seed := range uint64(runs) {
		rng := rand.New(rand.NewPCG(seed, 0x6e657374))
		h := newHarness()
		scopes := []string{"s", "t", "u"}
		n := 0
		newCall := func(parent string) *tCall {
			n++
			x := &tCall{id: fmt.Sprintf("c%d", n), scope: scopes[rng.IntN(len(scopes))], parent: parent, parallel: rng.IntN(2) == 0}
			h.calls[x.id] = x
			h.order = append(h.order, x.id)
			return x
		}
		var log []string
		step := func(what string) {
			log = append(log, what)
			if msg := h.overlap(); msg != "" {
				t.Fatalf("seed %d: %s\nsteps:\n%s\nstate:\n%s", seed, msg, joinLines(log), h.describe())
			}
		}
		for range 60 {
			switch r := rng.IntN(10); {
			case r < 3:
				x := newCall("")
				h.acquire(x)
				step(fmt.Sprintf("call %s %s %s", x.id, x.scope, mode(x)))
			case r < 6:
				running := h.inState("running")
				if len(running) == 0 {
					continue
				}
				p := running[rng.IntN(len(running))]
				x := newCall(p.id)
				if rng.IntN(2) == 0 {
					x.scope = p.holding // most nesting stays in the parent's scope
				}
				h.acquire(x)
				step(fmt.Sprintf("call %s %s %s parent=%s", x.id, x.scope, mode(x), p.id))
			case r < 9:
				leaves := h.endable()
				if len(leaves) == 0 {
					continue
				}
				x := leaves[rng.IntN(len(leaves))]
				h.end(x)
				step("end " + x.id)
			default:
				waiting := slices.Concat(h.inState("queued"), h.inState("in line"), h.inState("waiting"))
				if len(waiting) == 0 {
					continue
				}
				x := waiting[rng.IntN(len(waiting))]
				h.cancel(x)
				step("cancel " + x.id)
			}
		}
		// Wind down: end whatever can end; every waiter must get in.
		for {
			leaves := h.endable()
			if len(leaves) == 0 {
				break
			}
			h.end(leaves[0])
			step("end " + leaves[0].id)
		}
		for _, x := range h.calls {
			if x.state != "ended" && x.state != "left" && x.state != "failed" {
				t.Fatalf("seed %d: %s is %s with nothing left to end (a hang)\nsteps:\n%s\nstate:\n%s",
					seed, x.id, x.state, joinLines(log), h.describe())
			}
		}
	}
}

func mode(x *tCall) string {
	if x.parallel {
		return "par"
	}
	return "excl"
}

func joinLines(l []string) string {
	out := ""
	for _, s := range l {
		out += "  " + s + "\n"
	}
	return out
}

func (h *harness) inState(state string) []*tCall {
	var out []*tCall
	for _, id := range h.order {
		if x := h.calls[id]; x.state == state {
			out = append(out, x)
		}
	}
	return out
}

// endable returns the running calls whose nested calls are all answered.
func (h *harness) endable() []*tCall {
	busy := map[string]bool{}
	for _, x := range h.calls {
		if x.parent != "" && x.state != "ended" && x.state != "left" && x.state != "failed" {
			busy[x.parent] = true
		}
	}
	var out []*tCall
	for _, x := range h.inState("running") {
		if !busy[x.id] {
			out = append(out, x)
		}
	}
	return out
}

func (h *harness) related(a, b string) bool {
	return h.nest.isAncestor(a, b) || h.nest.isAncestor(b, a)
}

// overlap reports two running calls of one scope, one exclusive, neither
// the other's ancestor.
func (h *harness) overlap() string {
	running := h.inState("running")
	for i, a := range running {
		for _, b := range running[i+1:] {
			if a.holding == b.holding && (a.excl || b.excl) && !h.related(a.id, b.id) {
				return fmt.Sprintf("%s (%s) and %s (%s) overlap in %s", a.id, mode(a), b.id, mode(b), a.holding)
			}
		}
	}
	return ""
}

func (h *harness) describe() string {
	h.out.Reset()
	h.state()
	for _, id := range h.order {
		if x := h.calls[id]; x.parent != "" {
			fmt.Fprintf(&h.out, "%s < %s\n", id, x.parent)
		}
	}
	return h.out.String()
}
