package load

import (
	"fmt"
	"io"
	"math"
	"text/tabwriter"
)

// DefaultNoise is the relative change Compare treats as run-to-run noise
// by default: repeated runs of the examples on a shared machine move
// their percentiles by up to about this much.
const DefaultNoise = 0.25

// Diff is one metric of two reports side by side.
type Diff struct {
	Metric string
	A, B   float64
	// Ratio is B/A (NaN when A is 0 and B is not, 1 when both are 0).
	Ratio float64
	// Worse tells which direction is a regression: +1 when larger is
	// worse (latency), -1 when smaller is worse (throughput).
	Worse int
	// Marked: the change exceeds the noise, in either direction.
	Marked bool
	// Regression: a marked change in the worse direction.
	Regression bool
}

// Compare puts the metrics of two reports side by side (A is the base, B
// the candidate) and marks the changes larger than noise (a fraction:
// 0.25 marks a change of more than 25 %, either way). A latency change is
// marked only when it also exceeds 0.05 ms, below which a shared machine's
// scheduler decides more than the run.
func Compare(a, b *Report, noise float64) []Diff {
	if !(noise > 0) {
		noise = DefaultNoise
	}
	var out []Diff
	add := func(metric string, va, vb float64, worse int, floor float64) {
		d := Diff{Metric: metric, A: va, B: vb, Worse: worse}
		switch {
		case va == 0 && vb == 0:
			d.Ratio = 1
		case va == 0:
			d.Ratio = math.NaN()
			d.Marked = math.Abs(vb) > floor
		default:
			d.Ratio = vb / va
			d.Marked = math.Abs(d.Ratio-1) > noise && math.Abs(vb-va) > floor
		}
		d.Regression = d.Marked && float64(worse)*(vb-va) > 0
		out = append(out, d)
	}
	add("throughput turns/s", a.Throughput.TurnsPerSecond, b.Throughput.TurnsPerSecond, -1, 0)
	add("throughput calls/s", a.Throughput.CallsPerSecond, b.Throughput.CallsPerSecond, -1, 0)
	lat := func(name string, la, lb Latency) {
		add(name+" p50 ms", la.P50Ms, lb.P50Ms, +1, 0.05)
		add(name+" p90 ms", la.P90Ms, lb.P90Ms, +1, 0.05)
		add(name+" p99 ms", la.P99Ms, lb.P99Ms, +1, 0.05)
		add(name+" p99.9 ms", la.P999Ms, lb.P999Ms, +1, 0.05)
	}
	lat("turn", a.TurnLatency, b.TurnLatency)
	lat("call", a.CallLatency, b.CallLatency)
	lat("admission wait", a.AdmissionWait, b.AdmissionWait)
	failRate := func(r *Report) float64 {
		if r.Results == 0 {
			return 0
		}
		return float64(sumCounts(r.Failures)) / float64(r.Results)
	}
	add("failure rate", failRate(a), failRate(b), +1, 0.005)
	add("max turns in flight per agent", float64(a.QueueDepth.MaxTurnsInFlightPerAgent), float64(b.QueueDepth.MaxTurnsInFlightPerAgent), +1, 0)
	return out
}

// WriteComparison writes the diffs as a table; marked changes carry "!"
// (a regression) or "+" (an improvement).
func WriteComparison(w io.Writer, a, b *Report, diffs []Diff) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "metric\tA: %s (%s)\tB: %s (%s)\tB/A\t\n", a.Scenario, a.Model, b.Scenario, b.Model)
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
		fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%s\t%s\n", d.Metric, d.A, d.B, ratio, mark)
	}
	return tw.Flush()
}
