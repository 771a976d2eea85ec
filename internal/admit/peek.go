package admit

// Admits reports whether a call would take the fast path on a gate in this
// state: nobody waits (queued, pending or nested) and the call fits what
// runs. A snapshot: the gate may change before the call tries.
func (w Word) Admits(parallel bool) bool {
	return uint64(w)&waiting == 0 && fits(uint64(w), parallel)
}
