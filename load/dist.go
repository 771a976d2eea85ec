package load

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// The kinds of Distribution.
const (
	DistConstant    = "constant"
	DistUniform     = "uniform"
	DistNormal      = "normal"
	DistLognormal   = "lognormal"
	DistPercentiles = "percentiles"
)

// Distribution is a distribution of durations (a tool's latency, a think
// time). Kind selects which fields apply:
//
//   - constant: Value;
//   - uniform: Min, Max (inclusive of Min);
//   - normal: Mean, StdDev; a draw below 0 is drawn again (at most 16 times,
//     then 0), so keep Mean ≥ 3 StdDev for the mean to hold;
//   - lognormal: Median and Sigma (the standard deviation of the log);
//   - percentiles: Points of a trace, from p 0 (the minimum) to p 100 (the
//     maximum), p strictly and values weakly increasing; a draw interpolates
//     linearly between neighbouring points.
//
// Draws are capped at MaxLatency.
type Distribution struct {
	Kind   string   `json:"kind"`
	Value  Duration `json:"value,omitempty"`
	Min    Duration `json:"min,omitempty"`
	Max    Duration `json:"max,omitempty"`
	Mean   Duration `json:"mean,omitempty"`
	StdDev Duration `json:"stddev,omitempty"`
	Median Duration `json:"median,omitempty"`
	Sigma  float64  `json:"sigma,omitempty"`
	Points []Point  `json:"points,omitempty"`
}

// Point is one percentile of a trace: P in [0, 100] and its value.
type Point struct {
	P     float64  `json:"p"`
	Value Duration `json:"value"`
}

// distFields are the fields each kind of Distribution takes (besides kind).
var distFields = map[string][]string{
	DistConstant:    {"value"},
	DistUniform:     {"min", "max"},
	DistNormal:      {"mean", "stddev"},
	DistLognormal:   {"median", "sigma"},
	DistPercentiles: {"points"},
}

// check validates the distribution's fields for its kind.
func (d Distribution) check(path string) []FieldError {
	var probs []FieldError
	add := func(field, format string, args ...any) {
		probs = append(probs, FieldError{path + field, fmt.Sprintf(format, args...)})
	}
	// Which fields each kind takes; any other set field is refused.
	set := map[string]bool{
		"value": d.Value != 0, "min": d.Min != 0, "max": d.Max != 0, "mean": d.Mean != 0,
		"stddev": d.StdDev != 0, "median": d.Median != 0, "sigma": d.Sigma != 0, "points": d.Points != nil,
	}
	takes := distFields[d.Kind]
	switch d.Kind {
	case DistConstant:
	case DistUniform:
		if d.Max < d.Min {
			add(".max", "must be ≥ min (%v), got %v", d.Min.D(), d.Max.D())
		}
	case DistNormal:
	case DistLognormal:
		if d.Median <= 0 {
			add(".median", "must be > 0")
		}
		if !(d.Sigma >= 0) || d.Sigma > 10 {
			add(".sigma", "must be in [0, 10], got %v", d.Sigma)
		}
	case DistPercentiles:
		probs = append(probs, checkPoints(path+".points", d.Points)...)
	case "":
		add(".kind", "required: one of constant, uniform, normal, lognormal, percentiles")
		return probs
	default:
		add(".kind", "want one of constant, uniform, normal, lognormal, percentiles, got %q", d.Kind)
		return probs
	}
	for _, f := range []string{"value", "min", "max", "mean", "stddev", "median", "sigma", "points"} {
		if set[f] && !contains(takes, f) {
			add("."+f, "not a field of a %s distribution (it takes %v)", d.Kind, takes)
		}
	}
	return probs
}

func checkPoints(path string, pts []Point) []FieldError {
	var probs []FieldError
	if len(pts) < 2 {
		return append(probs, FieldError{path, "at least two points are required: p 0 (the minimum) and p 100 (the maximum)"})
	}
	if len(pts) > 1000 {
		return append(probs, FieldError{path, "at most 1000 points"})
	}
	if pts[0].P != 0 {
		probs = append(probs, FieldError{path + "[0].p", fmt.Sprintf("the first point must be p 0 (the minimum), got %v", pts[0].P)})
	}
	if last := pts[len(pts)-1]; last.P != 100 {
		probs = append(probs, FieldError{fmt.Sprintf("%s[%d].p", path, len(pts)-1), fmt.Sprintf("the last point must be p 100 (the maximum), got %v", last.P)})
	}
	for i := 1; i < len(pts); i++ {
		if !(pts[i].P > pts[i-1].P) {
			probs = append(probs, FieldError{fmt.Sprintf("%s[%d].p", path, i), fmt.Sprintf("p must increase: %v after %v", pts[i].P, pts[i-1].P)})
		}
		if pts[i].Value < pts[i-1].Value {
			probs = append(probs, FieldError{fmt.Sprintf("%s[%d].value", path, i), fmt.Sprintf("values must not decrease: %v after %v", pts[i].Value.D(), pts[i-1].Value.D())})
		}
	}
	return probs
}

// Sample draws one duration. The distribution must have passed Parse.
func (d Distribution) Sample(r *rand.Rand) time.Duration {
	var v float64 // nanoseconds
	switch d.Kind {
	case DistConstant:
		v = float64(d.Value)
	case DistUniform:
		v = float64(d.Min) + r.Float64()*float64(d.Max-d.Min)
	case DistNormal:
		for range 16 {
			v = float64(d.Mean) + r.NormFloat64()*float64(d.StdDev)
			if v >= 0 {
				break
			}
		}
	case DistLognormal:
		v = float64(d.Median) * math.Exp(d.Sigma*r.NormFloat64())
	case DistPercentiles:
		q := r.Float64() * 100
		pts := d.Points
		i := 1
		for i < len(pts)-1 && pts[i].P < q {
			i++
		}
		a, b := pts[i-1], pts[i]
		f := (q - a.P) / (b.P - a.P)
		v = float64(a.Value) + f*float64(b.Value-a.Value)
	}
	if !(v >= 0) {
		return 0
	}
	if v > float64(MaxLatency) {
		return MaxLatency
	}
	return time.Duration(v)
}

// MeanDuration is the distribution's mean (for normal, of the untruncated
// law); a mean past the largest time.Duration (a lognormal of a wide
// sigma) is that largest one.
func (d Distribution) MeanDuration() time.Duration {
	m := d.meanNs()
	if m >= math.MaxInt64 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(m)
}

func (d Distribution) meanNs() float64 {
	switch d.Kind {
	case DistConstant:
		return float64(d.Value)
	case DistUniform:
		return (float64(d.Min) + float64(d.Max)) / 2
	case DistNormal:
		return float64(d.Mean)
	case DistLognormal:
		return float64(d.Median) * math.Exp(d.Sigma*d.Sigma/2)
	case DistPercentiles:
		var m float64
		for i := 1; i < len(d.Points); i++ {
			a, b := d.Points[i-1], d.Points[i]
			m += (b.P - a.P) / 100 * (float64(a.Value) + float64(b.Value)) / 2
		}
		return m
	}
	return 0
}
