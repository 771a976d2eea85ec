package runtime

// Done returns a channel that is closed once the handle's Dispose has
// completed its teardown (every registration removed; their change
// notifications may still be under way), whether Dispose was called on it
// or on its scope, or Close disposed it. For a scope that is never
// disposed it is never closed; the global scope is never disposed (Close
// ends it without closing this channel). It lets a package that serves a
// scope by other means — package actors, which gives a scope a protoactor
// PID — learn of its end without polling. The channel is made on the first
// call: a handle nobody asks pays nothing.
func (s *Scope) Done() <-chan struct{} {
	t := &s.td
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done == nil {
		t.done = make(chan struct{})
	}
	return t.done
}
