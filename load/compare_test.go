package load

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

// TestMannWhitneyP_KnownValues: the normal approximation with continuity
// correction, against values worked by hand (and by scipy's
// mannwhitneyu(method="asymptotic")).
func TestMannWhitneyP_KnownValues(t *testing.T) {
	for _, c := range []struct {
		name string
		a, b []float64
		want float64
	}{
		{"separated 5/5", []float64{1, 2, 3, 4, 5}, []float64{6, 7, 8, 9, 10}, 0.01219},
		{"identical", []float64{3, 3, 3}, []float64{3, 3, 3}, 1},
		{"same values", []float64{1, 2, 3, 4}, []float64{1, 2, 3, 4}, 1},
		{"interleaved", []float64{1, 3, 5, 7}, []float64{2, 4, 6, 8}, 0.6650},
	} {
		p := mannWhitneyP(c.a, c.b)
		if math.Abs(p-c.want) > 5e-4 {
			t.Errorf("%s: p = %.5f, want %.5f", c.name, p, c.want)
		}
		if q := mannWhitneyP(c.b, c.a); math.Abs(p-q) > 1e-12 {
			t.Errorf("%s: not symmetric: %v vs %v", c.name, p, q)
		}
	}
}

// syntheticRun is a report of n intervals whose throughput and interval
// percentiles vary around the given levels by a lognormal factor (sigma
// 0.25: a shared machine), with the whole-run figures their medians.
func syntheticRun(rng *rand.Rand, n int, rate, callP50 float64) *Report {
	r := &Report{Scenario: "synthetic", Model: ModelClosed, Failures: map[string]int64{}}
	noisy := func(v float64) float64 { return v * math.Exp(0.25*rng.NormFloat64()) }
	var t float64
	var results, turns int64
	var rates, c50, c99, t50, t99 []float64
	for range n {
		t += 0.1
		q := noisy(rate)
		results += int64(q * 0.1)
		turns += int64(q * 0.1 / 3)
		s := Sample{Seconds: t, Results: results, TurnsDone: turns,
			CallP50Ms: noisy(callP50), CallP99Ms: noisy(4 * callP50), TurnP50Ms: noisy(2 * callP50), TurnP99Ms: noisy(8 * callP50)}
		r.Timeline = append(r.Timeline, s)
		rates, c50, c99, t50, t99 = append(rates, q), append(c50, s.CallP50Ms), append(c99, s.CallP99Ms), append(t50, s.TurnP50Ms), append(t99, s.TurnP99Ms)
	}
	med := func(xs []float64) float64 {
		ys := append([]float64(nil), xs...)
		sort.Float64s(ys)
		return ys[len(ys)/2]
	}
	r.Results = results
	r.Throughput.CallsPerSecond, r.Throughput.TurnsPerSecond = med(rates), med(rates)/3
	r.CallLatency = Latency{P50Ms: med(c50), P90Ms: 2 * med(c50), P99Ms: med(c99), P999Ms: 1.2 * med(c99)}
	r.TurnLatency = Latency{P50Ms: med(t50), P90Ms: 2 * med(t50), P99Ms: med(t99), P999Ms: 1.2 * med(t99)}
	return r
}

// TestCompare_NoiseFromIntervals: over 200 pairs of runs of the same
// (synthetic, noisy) scenario, a change is marked in at most 5 % of the
// pairs (NoiseAlpha is 1 % for each of 6 metrics; MinEffect guards too); a planted 2× latency
// regression (throughput halved) is marked, as a regression, in every one
// of 200 pairs, on each metric with interval samples; the same report
// twice marks nothing.
func TestCompare_NoiseFromIntervals(t *testing.T) {
	rng := rand.New(rand.NewPCG(24, 2))
	intervalMetrics := []string{"throughput calls/s", "throughput turns/s", "turn p50 ms", "turn p99 ms", "call p50 ms", "call p99 ms"}
	falseMarks := 0
	const pairs = 200
	for i := range pairs {
		a := syntheticRun(rng, 20+i%30, 2000, 5)
		same := syntheticRun(rng, 20+i%40, 2000, 5)
		marked := false
		for _, d := range Compare(a, same, 0) {
			if d.Marked {
				for _, m := range intervalMetrics {
					if d.Metric == m {
						marked = true
					}
				}
			}
		}
		if marked {
			falseMarks++
		}
		slow := syntheticRun(rng, 20+i%40, 1000, 10)
		got := map[string]Diff{}
		for _, d := range Compare(a, slow, 0) {
			got[d.Metric] = d
		}
		for _, m := range intervalMetrics {
			if d := got[m]; !d.Regression || d.Method != MethodMannWhitney {
				t.Fatalf("pair %d: 2× regression of %s not marked: %+v", i, m, d)
			}
		}
		for _, d := range Compare(a, a, 0) {
			if d.Marked || (d.Method == MethodMannWhitney && d.P < 0.99) {
				t.Fatalf("pair %d: the same report twice: %+v", i, d)
			}
		}
	}
	if falseMarks > pairs*5/100 {
		t.Fatalf("%d of %d pairs of the same scenario had a change marked", falseMarks, pairs)
	}
	t.Logf("%d of %d pairs of the same scenario had a change marked", falseMarks, pairs)
}

// TestCompare_FewIntervalsFallBackToThreshold: with fewer than
// MinIntervals interval values a side, the fixed threshold decides.
func TestCompare_FewIntervalsFallBackToThreshold(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	a, b := syntheticRun(rng, MinIntervals-1, 2000, 5), syntheticRun(rng, 30, 2000, 5)
	for _, d := range Compare(a, b, 0) {
		if d.Method != MethodThreshold || !math.IsNaN(d.P) {
			t.Fatalf("%s: %+v", d.Metric, d)
		}
	}
}

// TestCompare_TailNeedsTenValuesBeyondIt: a doubled p99.9 over 5,000
// calls a side (5 values beyond it) is not marked; over 20,000 it is.
func TestCompare_TailNeedsTenValuesBeyondIt(t *testing.T) {
	for _, c := range []struct {
		count  int64
		method string
		marked bool
	}{{5000, MethodTooFew, false}, {20000, MethodThreshold, true}} {
		a := &Report{CallLatency: Latency{Count: c.count, P999Ms: 10}}
		b := &Report{CallLatency: Latency{Count: c.count, P999Ms: 20}}
		for _, d := range Compare(a, b, 0) {
			if d.Metric == "call p99.9 ms" && (d.Method != c.method || d.Marked != c.marked || d.Regression != c.marked) {
				t.Errorf("%d calls: %+v, want method %s marked %v", c.count, d, c.method, c.marked)
			}
		}
	}
}
