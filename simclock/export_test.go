package simclock

// Examined reports the ctxs and sleepers c's checks have looked at: the
// part of a move's cost that grows with the number of sleepers.
func Examined(c *Clock) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.examined
}
