// Package admit is the pure admission policy of a scope's supervisor
// (issue 3): parallel-classified calls overlap, an exclusive call waits
// until the scope's in-flight calls finish, runs alone and holds later
// calls back. Admission is first come, first served, so exclusive calls
// never starve. No goroutines, no clocks: the supervisor actor drives it.
package admit

// Waiter is one call waiting for admission. Ready is closed (or sent to)
// by the shell when the call is admitted.
type Waiter struct {
	Parallel bool
	Ready    chan struct{}
}

// State is the admission state of one scope.
type State struct {
	running   int  // admitted, not yet released
	exclusive bool // the running call is exclusive
	queue     []*Waiter
	head      int
}

// Admit registers w and returns the waiters admitted now (w itself when it
// may start at once).
func (s *State) Admit(w *Waiter) []*Waiter {
	if s.head == len(s.queue) && s.can(w) {
		s.start(w)
		return []*Waiter{w}
	}
	s.queue = append(s.queue, w)
	return nil
}

// Release ends one admitted call and returns the waiters admitted now.
func (s *State) Release() []*Waiter {
	if s.running > 0 {
		s.running--
	}
	if s.running == 0 {
		s.exclusive = false
	}
	var out []*Waiter
	for s.head < len(s.queue) {
		w := s.queue[s.head]
		if !s.can(w) {
			break
		}
		s.queue[s.head] = nil
		s.head++
		s.start(w)
		out = append(out, w)
	}
	if s.head == len(s.queue) {
		s.queue, s.head = s.queue[:0], 0
	}
	return out
}

// Drain admits every waiter unconditionally (the supervisor is stopping;
// nobody may be left waiting).
func (s *State) Drain() []*Waiter {
	out := append([]*Waiter(nil), s.queue[s.head:]...)
	s.queue, s.head = nil, 0
	s.running += len(out)
	return out
}

// Running reports the number of admitted calls and whether one of them is
// exclusive.
func (s *State) Running() (n int, exclusive bool) { return s.running, s.exclusive }

// Queued is the number of waiting calls.
func (s *State) Queued() int { return len(s.queue) - s.head }

func (s *State) can(w *Waiter) bool {
	if w.Parallel {
		return !s.exclusive
	}
	return s.running == 0
}

func (s *State) start(w *Waiter) {
	s.running++
	if !w.Parallel {
		s.exclusive = true
	}
}
