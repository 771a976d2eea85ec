package load

import (
	"math/bits"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Quantile is one point of a latency CDF: P percent of the values were at
// most Ms milliseconds.
type Quantile struct {
	P  float64 `json:"p"`
	Ms float64 `json:"ms"`
}

// Bucket is one bar of a latency histogram: Count values were above half
// of LeMs and at most LeMs milliseconds (the first bucket: at most LeMs).
type Bucket struct {
	LeMs  float64 `json:"leMs"`
	Count int64   `json:"count"`
}

// cdfPercentiles are the percentiles a Latency's CDF gives: dense in the
// tail, where a CDF chart's reader looks.
var cdfPercentiles = []float64{0, 1, 2.5, 5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 55, 60, 65, 70, 75, 80, 85, 90,
	92.5, 95, 97.5, 99, 99.5, 99.9, 99.95, 99.99, 100}

func cdf(h *hdr.Histogram) []Quantile {
	out := make([]Quantile, len(cdfPercentiles))
	for i, p := range cdfPercentiles {
		v := h.ValueAtQuantile(p)
		if p == 0 {
			v = h.Min()
		}
		out[i] = Quantile{P: p, Ms: float64(v) / 1000}
	}
	return out
}

// buckets counts h's values (µs) in power-of-two buckets: bucket k holds
// (2^(k-1), 2^k] µs, bucket 0 holds 1 µs.
func buckets(h *hdr.Histogram) []Bucket {
	var counts [64]int64
	lo, hi := 64, -1
	for _, bar := range h.Distribution() {
		if bar.Count == 0 {
			continue
		}
		v := bar.From
		if v < 1 {
			v = 1
		}
		k := bits.Len64(uint64(v - 1)) // the smallest k with v ≤ 2^k
		counts[k] += bar.Count
		lo, hi = min(lo, k), max(hi, k)
	}
	if hi < 0 {
		return nil
	}
	out := make([]Bucket, 0, hi-lo+1)
	for k := lo; k <= hi; k++ {
		out = append(out, Bucket{LeMs: float64(uint64(1)<<k) / 1000, Count: counts[k]})
	}
	return out
}

// interval reads the p50 and p99 (ms) of an interval's histogram and
// empties it for the next interval; zeros when it is empty.
func interval(h *hdr.Histogram) (p50, p99 float64) {
	if h.TotalCount() == 0 {
		return 0, 0
	}
	p50, p99 = float64(h.ValueAtQuantile(50))/1000, float64(h.ValueAtQuantile(99))/1000
	h.Reset()
	return p50, p99
}
