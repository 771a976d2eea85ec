package runtime

import "github.com/asynkron/protoactor-go/actor"

// SupervisorPIDForTest returns the PID of s's supervisor actor, or nil if
// none was spawned yet (tests inject actor faults with it).
func SupervisorPIDForTest(s *Scope) *actor.PID {
	if sup := s.shell.sup.Load(); sup != nil {
		sup.mu.Lock()
		defer sup.mu.Unlock()
		return sup.pid
	}
	return nil
}
