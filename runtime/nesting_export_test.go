package runtime

import (
	"fmt"
	"strings"
)

// NestStateForTest describes the nested waiters of reg, for hang reports.
func NestStateForTest(reg *Registry) string {
	n := &reg.nest
	n.mu.Lock()
	defer n.mu.Unlock()
	var b strings.Builder
	desc := func(s *execState) string {
		sh, excl := s.holder()
		h := "-"
		if sh != nil {
			h = fmt.Sprintf("holds %p excl=%v slot=%v", sh, excl, s.holdSlot)
		}
		return fmt.Sprintf("%s/%s@%s[%s]", s.callID, s.name, s.agent, h)
	}
	n.p.EachWaiter(func(s *execState, sh *scopeState, parallel, inLine bool) {
		fmt.Fprintf(&b, "waiter %s on %p parallel=%v in-line=%v gate=%#x inside=%v\n", desc(s), sh, parallel, inLine, uint64(sh.gate.Load()), reg.insideOf(s, sh))
		for p := s.host; p != nil; p = p.host {
			fmt.Fprintf(&b, "   host %s\n", desc(p))
		}
		if sh.nest != nil {
			fmt.Fprintf(&b, "   %v\n", sh.nest)
		}
	})
	return b.String()
}

// NestWaitersForTest reports the nested calls waiting for admission.
func NestWaitersForTest(reg *Registry) int {
	reg.nest.mu.Lock()
	defer reg.nest.mu.Unlock()
	return reg.nest.p.Waiting()
}

// QueuedForTest reports the calls waiting for admission that are not
// nested (pending or in an admission line's queue), across the registry.
func QueuedForTest(reg *Registry) int64 { return reg.queuedCalls() }

// QueuedOnScopeForTest reports whether calls that are not nested wait in
// (or are on their way to) the admission line's queue of s's own gate.
func QueuedOnScopeForTest(s *Scope) bool { return s.state.gate.Load().Queued() }
