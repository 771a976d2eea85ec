//go:build race

package jsonv

// raceEnabled: the race detector makes sync.Pool drop items at random, so
// allocation counts of pooled paths are meaningless under -race.
const raceEnabled = true
