package runtime

import (
	"fmt"
	"strings"
)

// Test-only views of admission state for the randomized checker
// (churn_checker_test.go): it asserts that no admission outlives its call.

// gateNestHold is admit's nestHold mark (a nested exclusive call runs
// inside an ancestor's slot).
const gateNestHold = 1 << 34

// HoldsAdmissionForTest reports whether e's dispatch still holds a scope
// admission (a slot of a gate, or a place inside an ancestor's).
func HoldsAdmissionForTest(e Execution) bool { return e.s.holding.Load() != nil }

// AdmissionStateForTest describes s's admission: held, what is taken (a
// slot of its gate, the exclusive or nested-hold mark, a place inside an
// ancestor's admission), and waiting, what waits for it (pending or queued
// callers, nested waiters). Both are "" when nothing is.
func AdmissionStateForTest(s *Scope) (held, waiting string) {
	sh := s.state
	w := sh.gate.Load()
	n, excl := w.Count(), w.Exclusive()
	var h, wt []string
	if n != 0 || excl || uint64(w)&gateNestHold != 0 {
		h = append(h, fmt.Sprintf("gate %#x: %d running, exclusive %v", uint64(w), n, excl))
	}
	if w.Queued() || w.NestWaiting() || sh.gate.Waiting() != 0 {
		wt = append(wt, fmt.Sprintf("gate %#x: queued %v, nested wait %v, %d waiting", uint64(w), w.Queued(), w.NestWaiting(), sh.gate.Waiting()))
	}
	reg := s.reg
	reg.nest.mu.Lock()
	if nest := sh.nest; nest != nil {
		inside, excl, waiters := nest.Counts()
		if inside != 0 || excl != 0 {
			h = append(h, fmt.Sprintf("%d nested calls inside (%d exclusive)", inside, excl))
		}
		if waiters != 0 {
			wt = append(wt, fmt.Sprintf("%d nested calls waiting", waiters))
		}
	}
	reg.nest.mu.Unlock()
	return strings.Join(h, "; "), strings.Join(wt, "; ")
}

// HeldScopeIdentityForTest names the scope admission e's dispatch holds (the
// gate's identity, as ScopeIdentityForTest names a scope's), or "" if none.
func HeldScopeIdentityForTest(e Execution) string {
	if sh := e.s.holding.Load(); sh != nil {
		return fmt.Sprintf("%p", sh)
	}
	return ""
}

// ScopeIdentityForTest names s's admission gate (see HeldScopeIdentityForTest).
func ScopeIdentityForTest(s *Scope) string { return fmt.Sprintf("%p", s.state) }
