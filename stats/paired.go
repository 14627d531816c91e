package stats

import (
	"fmt"
	"math"
	"slices"
)

// ComparePaired compares b against baseline a where a[i] and b[i] were
// measured in the same round of an interleaved run, so they share what
// the machine did during that round.
//
// The per-round log ratios ln(b[i]/a[i]) are what a shared slow round
// cannot move; their mean's t-interval (n−1 degrees of freedom) is exact
// when the log ratios are normal and close to it otherwise, and a single
// odd round widens it instead of making it significant. The effect is the
// geometric mean ratio, printed as a percentage with the interval's two
// bounds. Rounds where either side has no positive finite value are
// dropped. With fewer than MinSamples pairs (default DefaultMinRounds) no
// verdict is given.
func ComparePaired(a, b []float64, opt CompareOptions) Verdict {
	e := opt.effect()
	v := Verdict{A: Describe(a, CIOptions{Level: e.level}), B: Describe(b, CIOptions{Level: e.level}),
		Method: MethodPaired, Coverage: e.level}
	var d, pa, pb []float64
	for i := range max(len(a), len(b)) {
		if i >= len(a) || i >= len(b) || !(a[i] > 0) || !(b[i] > 0) || math.IsInf(a[i], 0) || math.IsInf(b[i], 0) {
			v.Dropped++
			continue
		}
		d = append(d, math.Log(b[i]/a[i]))
		pa, pb = append(pa, a[i]), append(pb, b[i])
	}
	v.N = len(d)
	if len(d) < e.minN {
		v.Text = fmt.Sprintf("not enough rounds for a verdict (%d pairs, need ≥ %d)", len(d), e.minN)
		return v
	}
	mean, sd := meanSD(d)
	lo, hi := mean, mean
	v.P = 1
	if sd > 0 {
		se := sd / math.Sqrt(float64(len(d)))
		tc := tQuantile(1-(1-e.level)/2, float64(len(d)-1))
		lo, hi = mean-tc*se, mean+tc*se
		v.P = 2 * (1 - tCDF(math.Abs(mean)/se, float64(len(d)-1)))
	} else if mean != 0 {
		// The same ratio in every round (values at a measurement's
		// resolution): no spread to doubt it by.
		v.P = 0
	}
	decide(&v, median(pa), median(pb), lo, hi, opt, e)
	return v
}

// median of unsorted, non-empty xs.
func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	slices.Sort(s)
	return sortedMedian(s)
}

// meanSD is the mean and sample standard deviation of xs (len ≥ 2).
func meanSD(xs []float64) (mean, sd float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss / float64(len(xs)-1))
}
