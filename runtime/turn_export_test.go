package runtime

// seams returns c's turn seams, creating them on first use.
func (c *config) seams() *turnSeams {
	if c.turnSeams == nil {
		c.turnSeams = &turnSeams{}
	}
	return c.turnSeams
}

// WithBeforeInlineHookForTest makes f run in the turn driver of the
// registry's turns each time a session ends holding a dispatch back for the
// driver to run itself, before the driver lets go of the turn. f gets the
// held call's ID and a channel that receives once each time a drive attempt
// (a finished dispatch trying to take over) finds the turn driven and leaves
// its outcome to the driver.
func WithBeforeInlineHookForTest(f func(callID string, leftToDriver <-chan struct{})) Option {
	return optionFunc(func(c *config) error {
		left := make(chan struct{}, 64)
		ts := c.seams()
		ts.driveBusy = func(*turnRun) {
			select {
			case left <- struct{}{}:
			default:
			}
		}
		ts.beforeInline = func(tr *turnRun, inline *turnCall) { f(tr.calls[inline.i].ID, left) }
		return nil
	})
}

// WithCommitFailureForTest makes f run after each commit of every turn of
// the registry; an error it returns is an internal scheduler failure of that
// turn (R98).
func WithCommitFailureForTest(f func(call int) error) Option {
	return optionFunc(func(c *config) error {
		c.seams().committed = f
		return nil
	})
}
