package runtime

// WithAfterFastPathFailedForTest makes f run on a call's goroutine between
// its scope gate's failed fast path (its ticket taken) and its post to the
// scope's admission line: the gap where, without tickets, a call that
// failed later could post first (docs/contract.md#n1).
func WithAfterFastPathFailedForTest(f func(tool string)) Option {
	return optionFunc(func(c *config) error {
		c.afterFastPathFailed = f
		return nil
	})
}

// AdmissionForTest reports the calls holding a slot of s's gate and the
// waiters posted to its admission line and not yet admitted.
func AdmissionForTest(s *Scope) (running, posted int) {
	sh := s.state
	running = sh.gate.Load().Count()
	if line := sh.line.Load(); line != nil {
		line.mu.Lock()
		posted = line.queue.Queued()
		line.mu.Unlock()
	}
	return running, posted
}
