package main

// interleave.go measures a ratio A ÷ B the way a noisy, shared machine
// allows: one goroutine alternates blocks of A ops and B ops, so a burst of
// noise (another process, a GC cycle, a frequency change) lands on both
// sides alike instead of on whichever scenario happened to run at that
// moment. A run is split into rounds; each round yields one ratio of time
// per call, and the report keeps the median and the range of those.

import (
	"math"
	"slices"
	"strconv"
	"time"
)

// Interleaved is one interleaved ratio: A's time per call ÷ B's, per
// round, summarised.
type Interleaved struct {
	A          string  `json:"a"`             // what A does
	B          string  `json:"b"`             // what B does
	Median     float64 `json:"median"`        // median of the per-round ratios
	Min        float64 `json:"min"`           // lowest per-round ratio
	Max        float64 `json:"max"`           // highest per-round ratio
	Rounds     int     `json:"rounds"`        // rounds measured
	Block      int     `json:"block"`         // ops per block
	ANsPerCall float64 `json:"a_ns_per_call"` // median over rounds of A's ns per call
	BNsPerCall float64 `json:"b_ns_per_call"` // median over rounds of B's ns per call
}

// interleaveConfig sets a harness run: rounds of at least roundDur each,
// made of pairs of blocks of block ops. clock is the time source
// (time.Since a fixed start, unless a test substitutes its own).
type interleaveConfig struct {
	rounds   int
	roundDur time.Duration
	block    int
	clock    func() time.Duration
}

// monotonic is the harness's clock: time since the process started.
var monotonic = func() func() time.Duration {
	t0 := time.Now()
	return func() time.Duration { return time.Since(t0) }
}()

// roundStat is one round: the time and calls of each side, and the ratio
// of each pair of adjacent blocks.
type roundStat struct {
	aTime, bTime   time.Duration
	aCalls, bCalls int64
	pairs          []float64 // per pair: A's time per call ÷ B's
}

// ratio is the round's ratio: the median over its pairs of A's time per
// call ÷ B's in the adjacent B block. Two adjacent blocks see the same
// machine, and the median keeps a block that lost the CPU to another
// process (a 10 ms time slice against a 50 µs block) from deciding the
// round, as it would in a ratio of the round's sums. The price: a pair
// whose block met a GC pause also counts as an outlier, so the ratio
// weighs GC somewhat less than a mean would (the allocations per call are
// in the timed table).
func (r roundStat) ratio() float64 { return median(r.pairs) }

// interleave is the one harness every interleaved ratio goes through. On
// the calling goroutine it runs one warm-up block of each side, then
// cfg.rounds rounds; a round repeats pairs of blocks until it has lasted
// cfg.roundDur (at least one pair), and the order inside a pair flips from
// pair to pair (AB BA AB ...), so neither side always runs right after the
// other's allocations. Each round's ratio is roundStat.ratio.
func interleave(a, b op, cfg interleaveConfig) []roundStat {
	if cfg.rounds < 1 || cfg.block < 1 || cfg.clock == nil {
		panic("interleave: rounds, block and clock are required")
	}
	block := func(o op) (time.Duration, int64) {
		t := cfg.clock()
		var n int64
		for range cfg.block {
			n += int64(o())
		}
		return cfg.clock() - t, n
	}
	block(a)
	block(b)
	out := make([]roundStat, 0, cfg.rounds)
	flip := false
	for range cfg.rounds {
		var r roundStat
		start := cfg.clock()
		for first := true; first || cfg.clock()-start < cfg.roundDur; first = false {
			var da, db time.Duration
			var na, nb int64
			if flip {
				db, nb = block(b)
				da, na = block(a)
			} else {
				da, na = block(a)
				db, nb = block(b)
			}
			flip = !flip
			r.aTime, r.aCalls = r.aTime+da, r.aCalls+na
			r.bTime, r.bCalls = r.bTime+db, r.bCalls+nb
			r.pairs = append(r.pairs, (float64(max(da, 1))/float64(na))/(float64(max(db, 1))/float64(nb)))
		}
		out = append(out, r)
	}
	return out
}

// summarise turns the rounds into an Interleaved, with 3 significant digits.
func summarise(a, b string, block int, rs []roundStat) Interleaved {
	ratios := make([]float64, len(rs))
	aNs := make([]float64, len(rs))
	bNs := make([]float64, len(rs))
	for i, r := range rs {
		ratios[i] = r.ratio()
		aNs[i] = float64(r.aTime) / float64(r.aCalls)
		bNs[i] = float64(r.bTime) / float64(r.bCalls)
	}
	return Interleaved{A: a, B: b, Median: sig3(median(ratios)), Min: sig3(slices.Min(ratios)),
		Max: sig3(slices.Max(ratios)), Rounds: len(rs), Block: block,
		ANsPerCall: sig3(median(aNs)), BNsPerCall: sig3(median(bNs))}
}

// median of xs (the mean of the middle two for an even count); xs is not
// modified.
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return math.NaN()
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// sig3 rounds f to 3 significant digits, so that a ratio of 0.000123 stays
// 0.000123 and 0.0051 does not become 0.005; whole numbers of 1,000 and
// more keep every digit before the point (a byte count stays exact to the
// byte).
func sig3(f float64) float64 {
	if f == 0 || math.IsNaN(f) || math.IsInf(f, 0) {
		return f
	}
	if math.Abs(f) >= 1000 {
		return math.Round(f)
	}
	v, err := strconv.ParseFloat(strconv.FormatFloat(f, 'g', 3, 64), 64)
	if err != nil {
		panic(err)
	}
	return v
}

// fmtRatio prints a ratio as it is stored: up to 3 significant digits
// (whole numbers from 1,000), no exponent above 1e-6.
func fmtRatio(f float64) string {
	if math.Abs(f) >= 1000 {
		return strconv.FormatFloat(math.Round(f), 'f', 0, 64)
	}
	if f != 0 && math.Abs(f) < 1e-6 {
		return strconv.FormatFloat(f, 'g', 3, 64)
	}
	return strconv.FormatFloat(sig3(f), 'f', -1, 64)
}
