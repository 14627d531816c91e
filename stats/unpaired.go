package stats

import (
	"fmt"
	"math"
	"slices"
)

// CompareUnpaired compares b against baseline a measured in separate runs
// (no round of a shares its machine state with a round of b), as
// benchstat does: the Mann-Whitney rank test with the Hodges-Lehmann
// shift, on logs so the shift is a ratio. The estimate is the median of
// all pairwise differences ln b[j] − ln a[i]; the interval runs between
// two of their order statistics chosen from the exact distribution of the
// Mann-Whitney U for these sample sizes, so its coverage is exact and
// printed as such where it cannot be the asked level (96.8% at 5 and 5).
// Ties make the exact distribution conservative. Non-positive or
// non-finite values are dropped; with fewer than MinSamples per side
// (default DefaultMinRounds) no verdict is given.
func CompareUnpaired(a, b []float64, opt CompareOptions) Verdict {
	e := opt.effect()
	v := Verdict{A: Describe(a, CIOptions{Level: e.level}), B: Describe(b, CIOptions{Level: e.level}), Method: MethodUnpaired}
	la, da := positiveLogs(a)
	lb, db := positiveLogs(b)
	v.Dropped, v.N = da+db, min(len(la), len(lb))
	if len(la) < e.minN || len(lb) < e.minN {
		v.Text = fmt.Sprintf("not enough samples for a verdict (%d and %d, need ≥ %d per side)", len(la), len(lb), e.minN)
		return v
	}
	n, m := len(la), len(lb)
	diffs := make([]float64, 0, n*m)
	u := 0.0 // pairs where b is larger, ties counting half
	for _, x := range la {
		for _, y := range lb {
			diffs = append(diffs, y-x)
			switch {
			case y > x:
				u++
			case y == x:
				u += 0.5
			}
		}
	}
	slices.Sort(diffs)
	counts, total := mannWhitneyCounts(n, m), 0.0
	for _, c := range counts {
		total += c
	}
	// The interval is [D(k), D(nm+1−k)] (1-based order statistics of the
	// differences) with the largest k such that P(U ≤ k−1) ≤ α/2; its
	// coverage is 1 − 2·P(U ≤ k−1).
	alpha, cum, k := 1-e.level, 0.0, 0
	for k < len(counts) && (cum+counts[k])/total <= alpha/2 {
		cum += counts[k]
		k++
	}
	if k == 0 {
		v.Text = fmt.Sprintf("not enough samples for a %s interval (%d and %d)", levelText(e.level), n, m)
		return v
	}
	v.Coverage = 1 - 2*cum/total
	v.P = mannWhitneyP(counts, total, u)
	decide(&v, math.Exp(median(la)), math.Exp(median(lb)), diffs[k-1], diffs[len(diffs)-k], opt, e)
	return v
}

// mannWhitneyCounts is the number of orderings of n and m distinct values
// giving each U = 0..n·m: the coefficients of the Gaussian binomial
// [n+m choose n], built as ∏ (1 − q^(m+i)) / (1 − q^i).
func mannWhitneyCounts(n, m int) []float64 {
	c := make([]float64, n*m+1)
	c[0] = 1
	for i := 1; i <= n; i++ {
		for u := n * m; u >= m+i; u-- {
			c[u] -= c[u-(m+i)]
		}
		for u := i; u <= n*m; u++ {
			c[u] += c[u-i]
		}
	}
	for i := range c {
		c[i] = math.Round(c[i]) // exact integers, whatever float rounding did
	}
	return c
}

// mannWhitneyP is the exact two-sided p-value of an observed U (ties:
// halves, rounded away from the centre, which is conservative).
func mannWhitneyP(counts []float64, total, u float64) float64 {
	mid := float64(len(counts)-1) / 2
	lo := math.Floor(math.Min(u, 2*mid-u)) // the smaller tail's edge
	tail := 0.0
	for i := 0; i <= int(lo) && i < len(counts); i++ {
		tail += counts[i]
	}
	return math.Min(1, 2*tail/total)
}
