package runtime

// SetBeforeInlineHookForTest makes f run in the turn driver each time a
// session ends holding a dispatch back for the driver to run itself, before
// the driver lets go of the turn. f gets the held call's ID and a channel
// that receives once each time a drive attempt (a finished dispatch trying
// to take over) finds the turn driven and leaves its outcome to the driver.
// The returned func removes the hooks.
func SetBeforeInlineHookForTest(f func(callID string, leftToDriver <-chan struct{})) (restore func()) {
	left := make(chan struct{}, 64)
	busy := func(*turnRun) {
		select {
		case left <- struct{}{}:
		default:
		}
	}
	h := func(tr *turnRun, inline *turnCall) { f(tr.calls[inline.i].ID, left) }
	testHookDriveBusy.Store(&busy)
	testHookBeforeInline.Store(&h)
	return func() {
		testHookBeforeInline.Store(nil)
		testHookDriveBusy.Store(nil)
	}
}

// SetCommitFailureForTest makes f run after each commit of every turn; an
// error it returns is an internal scheduler failure of that turn (R98).
// The returned func removes the hook.
func SetCommitFailureForTest(f func(call int) error) (restore func()) {
	testHookCommitted.Store(&f)
	return func() { testHookCommitted.Store(nil) }
}
