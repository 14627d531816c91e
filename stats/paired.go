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
// bounds. A round in which one side of a higher-is-better metric
// delivered nothing (0) has an infinite log ratio: then the rounds are
// compared by signed ranks instead (CompareSignedRank's method), in which
// that round simply ranks worst. A round either side lacks (NaN, or a
// value that cannot be compared) is dropped and counted. With fewer than
// MinSamples pairs (default DefaultMinRounds) no verdict is given.
func ComparePaired(a, b []float64, opt CompareOptions) Verdict {
	e := opt.effect()
	v := Verdict{A: Describe(a, CIOptions{Level: e.level}), B: Describe(b, CIOptions{Level: e.level}),
		Method: MethodPaired, Coverage: e.level}
	var d []float64
	infinite := false
	for i := range max(len(a), len(b)) {
		if i >= len(a) || i >= len(b) {
			v.Dropped++
			continue
		}
		la, oka := logOf(a[i], opt.HigherIsBetter)
		lb, okb := logOf(b[i], opt.HigherIsBetter)
		if !oka || !okb {
			v.Dropped++
			continue
		}
		x := logDiff(lb, la)
		infinite = infinite || math.IsInf(x, 0)
		d = append(d, x)
	}
	v.N = len(d)
	if len(d) < e.minN {
		v.Text = fmt.Sprintf("not enough rounds for a verdict (%d pairs, need ≥ %d)", len(d), e.minN) + droppedText(v.Dropped)
		return v
	}
	if infinite {
		signedRank(&v, d, opt, e)
		v.Text += nothingText(a, b, opt)
		return v
	}
	mean, sd := meanSD(d)
	n := float64(len(d))
	lo, hi, p := mean, mean, 1.0
	if sd > 0 {
		se := sd / math.Sqrt(n)
		tc := tQuantile(1-(1-e.level)/2, n-1)
		lo, hi = mean-tc*se, mean+tc*se
		p = minEffectP(tSF((mean-e.delta())/se, n-1), tSF((-e.delta()-mean)/se, n-1))
	} else if math.Abs(mean) > e.delta() {
		// The same ratio in every round (values at a measurement's
		// resolution), beyond the minimum effect: no spread to doubt it by.
		p = 0
	}
	decide(&v, mean, lo, hi, p, opt, e)
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
