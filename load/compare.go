package load

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"
)

// DefaultNoise is the relative change Compare treats as run-to-run noise
// for the metrics it has no per-interval samples of (p90, p99.9,
// admission wait, failure rate): repeated runs of the examples on a shared
// machine move those by up to about this much.
const DefaultNoise = 0.25

// How Compare decides that a change of a metric with per-interval samples
// (throughput, and the p50 and p99 of call and turn latency) exceeds
// run-to-run noise: the two runs' interval values differ by a two-sided
// Mann–Whitney U test at NoiseAlpha, and the whole-run metric moved by
// more than MinEffect (with hundreds of intervals the test finds shifts
// too small to matter, and the part of run-to-run noise that lies between
// runs — the machine's load changing from one run to the next — cannot be
// seen inside one). A metric needs MinIntervals values on each side; with
// fewer, the DefaultNoise threshold decides.
//
// MinEffect is what two back-to-back runs of one scenario differed by on a
// shared two-core machine: p50 and throughput up to about 10 %, with the
// interval test alone calling that significant.
const (
	NoiseAlpha   = 0.01
	MinEffect    = 0.15
	MinIntervals = 8
)

// The ways Compare decides (Diff.Method).
const (
	MethodMannWhitney = "mann-whitney"
	MethodThreshold   = "threshold"
	// MethodTooFew: a tail percentile estimated from fewer than 10 values
	// beyond it on a side (p99.9 of under 10,000 calls) is never marked.
	MethodTooFew = "too-few"
)

// Diff is one metric of two reports side by side.
type Diff struct {
	Metric string
	A, B   float64
	// Ratio is B/A (NaN when A is 0 and B is not, 1 when both are 0).
	Ratio float64
	// Worse tells which direction is a regression: +1 when larger is
	// worse (latency), -1 when smaller is worse (throughput).
	Worse int
	// Method says how noise was told apart: MethodMannWhitney (P is the
	// test's p-value over NA and NB interval values) or MethodThreshold
	// (a relative change larger than the noise fraction; P is NaN).
	Method string
	P      float64
	NA, NB int
	// Marked: the change exceeds the noise, in either direction.
	Marked bool
	// Regression: a marked change in the worse direction.
	Regression bool
}

// Compare puts the metrics of two reports side by side (A is the base, B
// the candidate) and marks the changes that exceed run-to-run noise.
//
// Noise is estimated from the runs themselves where they carry the
// samples: each report's timeline holds, per interval (100 ms, longer for
// long runs), the calls answered and the p50 and p99 of the calls and
// turns that ended in it. For throughput and those percentiles the two
// runs' interval values are compared with a Mann–Whitney U test (see
// NoiseAlpha and MinEffect): it assumes no distribution (interval
// percentiles are skewed and heavy-tailed: one slow interval, a GC pause
// or a busy neighbour, would dominate a mean and standard deviation), it
// is deterministic (no resampling), and a run's own spread sets the bar,
// so a noisy machine needs a larger change to be marked than a quiet one.
// Intervals of one run are not independent (a slow phase spans several),
// which makes the p-value optimistic; the small alpha and the effect floor
// allow for it. A tail percentile with fewer than 10 values beyond it on a
// side is never marked (MethodTooFew). The other metrics, and any metric
// with fewer than
// MinIntervals values on a side, are marked when they change by more than
// noise (a fraction; 0 or less: DefaultNoise), either way. A latency
// change is marked only when it also exceeds 0.05 ms, below which a shared
// machine's scheduler decides more than the run.
func Compare(a, b *Report, noise float64) []Diff {
	if !(noise > 0) {
		noise = DefaultNoise
	}
	var out []Diff
	add := func(metric string, va, vb float64, worse int, floor float64, sa, sb []float64, tail tailCount) {
		d := Diff{Metric: metric, A: va, B: vb, Worse: worse, Method: MethodThreshold, P: math.NaN(), NA: len(sa), NB: len(sb)}
		rel := 0.0
		switch {
		case va == 0 && vb == 0:
			d.Ratio = 1
		case va == 0:
			d.Ratio = math.NaN()
			rel = math.Inf(1)
		default:
			d.Ratio = vb / va
			rel = math.Abs(d.Ratio - 1)
		}
		big := math.Abs(vb-va) > floor
		if tail.q > 0 && !(tail.enough(tail.a) && tail.enough(tail.b)) {
			d.Method = MethodTooFew
		} else if len(sa) >= MinIntervals && len(sb) >= MinIntervals {
			d.Method = MethodMannWhitney
			d.P = mannWhitneyP(sa, sb)
			d.Marked = d.P < NoiseAlpha && rel > MinEffect && big
		} else {
			d.Marked = rel > noise && big
		}
		d.Regression = d.Marked && float64(worse)*(vb-va) > 0
		out = append(out, d)
	}
	ta, tb := a.intervals(), b.intervals()
	add("throughput turns/s", a.Throughput.TurnsPerSecond, b.Throughput.TurnsPerSecond, -1, 0, ta.turnRate, tb.turnRate, tailCount{})
	add("throughput calls/s", a.Throughput.CallsPerSecond, b.Throughput.CallsPerSecond, -1, 0, ta.rate, tb.rate, tailCount{})
	lat := func(name string, la, lb Latency, p50a, p50b, p99a, p99b []float64) {
		add(name+" p50 ms", la.P50Ms, lb.P50Ms, +1, 0.05, p50a, p50b, tailCount{})
		add(name+" p90 ms", la.P90Ms, lb.P90Ms, +1, 0.05, nil, nil, tailCount{0.9, la.Count, lb.Count})
		add(name+" p99 ms", la.P99Ms, lb.P99Ms, +1, 0.05, p99a, p99b, tailCount{0.99, la.Count, lb.Count})
		add(name+" p99.9 ms", la.P999Ms, lb.P999Ms, +1, 0.05, nil, nil, tailCount{0.999, la.Count, lb.Count})
	}
	lat("turn", a.TurnLatency, b.TurnLatency, ta.turnP50, tb.turnP50, ta.turnP99, tb.turnP99)
	lat("call", a.CallLatency, b.CallLatency, ta.callP50, tb.callP50, ta.callP99, tb.callP99)
	if a.Measured(FigureAdmissionWait) && b.Measured(FigureAdmissionWait) {
		lat("admission wait", a.AdmissionWait, b.AdmissionWait, nil, nil, nil, nil)
	}
	failRate := func(r *Report) float64 {
		if r.Results == 0 {
			return 0
		}
		return float64(sumCounts(r.Failures)) / float64(r.Results)
	}
	add("failure rate", failRate(a), failRate(b), +1, 0.005, nil, nil, tailCount{})
	add("max turns in flight per agent", float64(a.QueueDepth.MaxTurnsInFlightPerAgent), float64(b.QueueDepth.MaxTurnsInFlightPerAgent), +1, 0, nil, nil, tailCount{})
	return out
}

// tailCount is a tail percentile q (0: not one) and the values each
// side's histogram holds. A count of 0 is a report without counts (built
// by hand), taken as enough.
type tailCount struct {
	q    float64
	a, b int64
}

func (t tailCount) enough(n int64) bool { return n == 0 || float64(n)*(1-t.q) >= 10-1e-9 }

// series are a report's per-interval values (intervals where nothing
// ended have no latency value).
type series struct {
	rate, turnRate, callP50, callP99, turnP50, turnP99 []float64
}

func (r *Report) intervals() series {
	var s series
	prev := Sample{}
	for _, p := range r.Timeline {
		if dt := p.Seconds - prev.Seconds; dt > 0 {
			s.rate = append(s.rate, float64(p.Results-prev.Results)/dt)
			s.turnRate = append(s.turnRate, float64(p.TurnsDone-prev.TurnsDone)/dt)
		}
		prev = p
		if p.CallP50Ms > 0 {
			s.callP50 = append(s.callP50, p.CallP50Ms)
			s.callP99 = append(s.callP99, p.CallP99Ms)
		}
		if p.TurnP50Ms > 0 {
			s.turnP50 = append(s.turnP50, p.TurnP50Ms)
			s.turnP99 = append(s.turnP99, p.TurnP99Ms)
		}
	}
	return s
}

// mannWhitneyP is the two-sided p-value of the Mann–Whitney U test of a
// against b, by the normal approximation with tie correction and
// continuity correction (fine from about 8 values a side).
func mannWhitneyP(a, b []float64) float64 {
	type v struct {
		x    float64
		inA  bool
		rank float64
	}
	all := make([]v, 0, len(a)+len(b))
	for _, x := range a {
		all = append(all, v{x: x, inA: true})
	}
	for _, x := range b {
		all = append(all, v{x: x})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].x < all[j].x })
	n := float64(len(all))
	var ties float64
	for i := 0; i < len(all); {
		j := i
		for j < len(all) && all[j].x == all[i].x {
			j++
		}
		r := float64(i+j+1) / 2 // the average of ranks i+1 .. j
		for k := i; k < j; k++ {
			all[k].rank = r
		}
		t := float64(j - i)
		ties += t*t*t - t
		i = j
	}
	var ra float64
	for _, e := range all {
		if e.inA {
			ra += e.rank
		}
	}
	na, nb := float64(len(a)), float64(len(b))
	u := ra - na*(na+1)/2
	mu := na * nb / 2
	sigma := math.Sqrt(na * nb / 12 * ((n + 1) - ties/(n*(n-1))))
	if !(sigma > 0) {
		return 1
	}
	z := math.Max(math.Abs(u-mu)-0.5, 0) / sigma
	return math.Erfc(z / math.Sqrt2)
}

// shown is a name from a report file as a table shows it: quoted (and
// cut to 80 bytes) when it holds a control character, a tab or a newline —
// a report from elsewhere cannot break the table or send the terminal an
// escape sequence — or is longer.
func shown(s string) string {
	if len(s) <= 80 && !strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) && r != ' ' }) {
		return s
	}
	if len(s) > 80 {
		return strconv.Quote(s[:80]) + "…"
	}
	return strconv.Quote(s)
}

// WriteComparison writes the diffs as a table; marked changes carry "!"
// (a regression) or "+" (an improvement); the last column says how noise
// was told apart (the Mann–Whitney p-value over the intervals of A and B,
// or the fixed threshold).
func WriteComparison(w io.Writer, a, b *Report, diffs []Diff) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "metric\tA: %s (%s)\tB: %s (%s)\tB/A\t\tnoise test\n", shown(a.Scenario), shown(a.Model), shown(b.Scenario), shown(b.Model))
	for _, d := range diffs {
		mark := ""
		switch {
		case d.Regression:
			mark = "! worse"
		case d.Marked:
			mark = "+ better"
		}
		ratio := fmt.Sprintf("%.2f×", d.Ratio)
		if math.IsNaN(d.Ratio) {
			ratio = "new"
		}
		how := "threshold"
		switch d.Method {
		case MethodMannWhitney:
			how = fmt.Sprintf("p=%.2g over %d/%d intervals", d.P, d.NA, d.NB)
		case MethodTooFew:
			how = "too few values in the tail"
		}
		fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%s\t%s\t%s\n", d.Metric, d.A, d.B, ratio, mark, how)
	}
	return tw.Flush()
}
