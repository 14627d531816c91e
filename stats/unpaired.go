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
// Mann-Whitney U for these sample sizes, so its coverage is exact (for
// values without ties) and printed as such where it cannot be the asked
// level (96.8% at 5 and 5); its p-value is the one that interval inverts
// (invertedP), so the two never disagree, and ties count against a
// difference. MannWhitneyP gives the tie-aware exact point-null p-value
// for checks against other tools. A 0 of a higher-is-better metric is its worst value; other
// values that cannot be compared are dropped. With fewer than MinSamples
// per side (default DefaultMinRounds) no verdict is given.
func CompareUnpaired(a, b []float64, opt CompareOptions) Verdict {
	e := opt.effect()
	v := Verdict{A: Describe(a, CIOptions{Level: e.level}), B: Describe(b, CIOptions{Level: e.level}), Method: MethodUnpaired}
	la, da := logsOf(a, opt.HigherIsBetter)
	lb, db := logsOf(b, opt.HigherIsBetter)
	v.Dropped, v.N = da+db, min(len(la), len(lb))
	if len(la) < e.minN || len(lb) < e.minN {
		v.Text = fmt.Sprintf("not enough samples for a verdict (%d and %d, need ≥ %d per side)", len(la), len(lb), e.minN) + droppedText(v.Dropped)
		return v
	}
	n, m := len(la), len(lb)
	diffs := make([]float64, 0, n*m)
	for _, x := range la {
		for _, y := range lb {
			diffs = append(diffs, logDiff(y, x))
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
		v.Text = fmt.Sprintf("not enough samples for a %s interval (%d and %d)", levelText(e.level), n, m) + droppedText(v.Dropped)
		return v
	}
	v.Coverage = 1 - 2*cum/total
	p := invertedP(diffs, e.delta(), func(c int) float64 { return cumulative(counts, c) / total })
	decide(&v, sortedMedianInf(diffs), diffs[k-1], diffs[len(diffs)-k], p, opt, e)
	v.Text += nothingText(a, b, opt)
	return v
}

// invertedP is the p-value of the minimum-effect test that the interval
// [D(k), D(N+1−k)] of sorted estimates ds (pairwise differences, or Walsh
// averages) inverts: the interval lies above +delta iff fewer than k of
// them are ≤ +delta, so the one-sided p is P(S ≤ #{D ≤ +delta}) for the
// statistic's null distribution (cdf), and likewise below −delta. Ties
// at the edge count against the effect (conservative), so p < 1 − level
// exactly when the printed interval excludes the whole region of no
// meaningful change: one statistic decides and is printed.
func invertedP(ds []float64, delta float64, cdf func(c int) float64) float64 {
	below, above := 0, 0
	for _, x := range ds {
		if x <= delta {
			below++
		}
		if x >= -delta {
			above++
		}
	}
	return minEffectP(cdf(below), cdf(above))
}

// cumulative is the sum of counts[0..c].
func cumulative(counts []float64, c int) float64 {
	s := 0.0
	for i := 0; i <= c && i < len(counts); i++ {
		s += counts[i]
	}
	return s
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

// MannWhitneyP is the exact two-sided p-value of the Mann-Whitney test
// that x and y come from one distribution, ties included: twice the
// smaller one-sided tail of the permutation distribution of U (the
// point-null test, for checks against other tools).
func MannWhitneyP(x, y []float64) float64 {
	return math.Min(1, 2*math.Min(mannWhitneyTail(x, y, true), mannWhitneyTail(x, y, false)))
}

// maxSplits bounds the exact permutation distribution of a tied sample:
// its counts stay exact integers in a float64 up to about 2^53.
const maxSplits = 1e15

// mannWhitneyTail is the one-sided p-value of U (pairs where y is larger,
// ties counting half): P(U ≥ observed) when upper, else P(U ≤ observed).
// Without ties it is read off the exact counts; with ties, from the exact
// permutation distribution of U given the pooled values' mid-ranks when
// there are at most maxSplits splits, else from the normal approximation
// with the tie correction.
func mannWhitneyTail(x, y []float64, upper bool) float64 {
	n, m := len(x), len(y)
	pooled := append(append([]float64(nil), x...), y...)
	r2 := midRanks2(pooled, func(x float64) float64 { return x })
	// 2·U = 2·(sum of y's ranks) − m(m+1): work in doubled rank units.
	obs := 0
	for i := n; i < n+m; i++ {
		obs += r2[i]
	}
	tied := false
	for i := range r2 {
		if r2[i]%2 != 0 {
			tied = true // an odd doubled rank is a mid-rank
			break
		}
	}
	if !tied {
		for i := range r2 {
			for j := i + 1; j < len(r2) && !tied; j++ {
				tied = r2[i] == r2[j]
			}
		}
	}
	uObs := (obs - m*(m+1)) / 2 // exact: doubled units, U counts halves
	if !tied {
		counts, total := mannWhitneyCounts(n, m), 0.0
		for _, c := range counts {
			total += c
		}
		tail := 0.0
		for u, c := range counts {
			if (upper && u >= uObs) || (!upper && u <= uObs) {
				tail += c
			}
		}
		return tail / total
	}
	if binom(n+m, m) <= maxSplits {
		return rankSumTail(r2, m, obs, upper)
	}
	return rankSumNormalTail(r2, n, m, obs, upper)
}

// rankSumTail enumerates every choice of m of the pooled (doubled) ranks
// for y and returns the share whose sum is ≥ obs (upper) or ≤ obs.
func rankSumTail(r2 []int, m, obs int, upper bool) float64 {
	// Distribution of the sum over m-subsets by dynamic programming on
	// (values taken, sum): exact, and far cheaper than listing subsets.
	sum := 0
	for _, r := range r2 {
		sum += r
	}
	dp := make([][]float64, m+1)
	for k := range dp {
		dp[k] = make([]float64, sum+1)
	}
	dp[0][0] = 1
	for _, r := range r2 {
		for k := m; k >= 1; k-- {
			for s := sum - r; s >= 0; s-- {
				if dp[k-1][s] != 0 {
					dp[k][s+r] += dp[k-1][s]
				}
			}
		}
	}
	tail, total := 0.0, 0.0
	for s, c := range dp[m] {
		total += c
		if (upper && s >= obs) || (!upper && s <= obs) {
			tail += c
		}
	}
	return tail / total
}

// rankSumNormalTail is the normal approximation of rankSumTail, with the
// variance corrected for ties and a continuity correction of half a rank.
func rankSumNormalTail(r2 []int, n, m, obs int, upper bool) float64 {
	N := float64(n + m)
	mean := float64(m) * (N + 1) // doubled units
	var ties float64
	counts := map[int]int{}
	for _, r := range r2 {
		counts[r]++
	}
	for _, t := range counts {
		ft := float64(t)
		ties += ft*ft*ft - ft
	}
	variance := 4 * float64(n*m) / 12 * ((N + 1) - ties/(N*(N-1)))
	if variance <= 0 {
		return 1
	}
	z := (float64(obs) - mean) / math.Sqrt(variance)
	cc := 1 / math.Sqrt(variance) // half a rank, in doubled units
	if upper {
		return 0.5 * math.Erfc((z-cc)/math.Sqrt2)
	}
	return 0.5 * math.Erfc(-(z+cc)/math.Sqrt2)
}

// binom is C(n, k) as a float.
func binom(n, k int) float64 {
	r := 1.0
	for i := 1; i <= k; i++ {
		r = r * float64(n-k+i) / float64(i)
	}
	return r
}
