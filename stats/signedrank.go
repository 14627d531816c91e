package stats

import (
	"fmt"
	"math"
	"slices"
)

// CompareSignedRank compares b against baseline a round by round, like
// ComparePaired, with the Wilcoxon signed-rank test on the per-round log
// ratios instead of the t-interval. ComparePaired switches to it when a
// round delivered nothing on one side (a log ratio of ±∞ that no mean can
// hold); it is exported for tests and for readers who want the rank view
// of any paired data.
func CompareSignedRank(a, b []float64, opt CompareOptions) Verdict {
	e := opt.effect()
	v := Verdict{A: Describe(a, CIOptions{Level: e.level}), B: Describe(b, CIOptions{Level: e.level})}
	var d []float64
	for i := range max(len(a), len(b)) {
		la, oka := 0.0, false
		lb, okb := 0.0, false
		if i < len(a) && i < len(b) {
			la, oka = logOf(a[i], opt.HigherIsBetter)
			lb, okb = logOf(b[i], opt.HigherIsBetter)
		}
		if !oka || !okb {
			v.Dropped++
			continue
		}
		d = append(d, logDiff(lb, la))
	}
	v.N = len(d)
	if len(d) < e.minN {
		v.Method = MethodSignedRank
		v.Text = fmt.Sprintf("not enough rounds for a verdict (%d pairs, need ≥ %d)", len(d), e.minN) + droppedText(v.Dropped)
		return v
	}
	signedRank(&v, d, opt, e)
	v.Text += nothingText(a, b, opt)
	return v
}

// signedRank decides v from the per-round log ratios d (n ≥ 2, ±∞
// allowed): the Hodges-Lehmann estimate (the median of the Walsh
// averages (d[i]+d[j])/2, i ≤ j), the interval between two of their order
// statistics chosen from the exact signed-rank distribution (as R's
// wilcox.test(conf.int = TRUE) does), and the minimum-effect p-value
// that interval inverts (invertedP: T+ at a shift is the number of Walsh
// averages above it).
func signedRank(v *Verdict, d []float64, opt CompareOptions, e effectOptions) {
	v.Method = MethodSignedRank
	n := len(d)
	walsh := make([]float64, 0, n*(n+1)/2)
	for i := range d {
		for j := i; j < n; j++ {
			walsh = append(walsh, walshAverage(d[i], d[j]))
		}
	}
	slices.Sort(walsh)
	// The interval [W(k), W(N+1−k)] with the largest k such that
	// P(T ≤ k−1) ≤ α/2 under the no-ties distribution of T for n; where
	// even k = 1 covers less than the asked level (n = 5 at 95%), the
	// whole range, with its coverage printed.
	ranks := make([]int, n)
	for i := range ranks {
		ranks[i] = 2 * (i + 1) // doubled ranks 1..n
	}
	counts, total := signedRankCounts(ranks)
	alpha, cum, k := 1-e.level, 0.0, 0
	for k < len(counts) && (cum+counts[2*k])/total <= alpha/2 {
		cum += counts[2*k]
		k++
	}
	// Even the whole range of the Walsh averages may cover less than the
	// asked level (2 of 2^5 sign patterns lie outside it at 5 pairs): the
	// estimate and that range are still computed, but no verdict given,
	// since none could be significant.
	tooFew := k == 0
	if tooFew {
		k, cum = 1, counts[0]
	}
	v.Coverage = 1 - 2*cum/total
	lo, hi := walsh[k-1], walsh[len(walsh)-k]
	p := invertedP(walsh, e.delta(), func(c int) float64 { return cumulative(counts, 2*c) / total })
	decide(v, sortedMedianInf(walsh), lo, hi, p, opt, e)
	if tooFew {
		v.Significant, v.Better, v.Inconclusive, v.Tested = false, "", false, false
		v.Text = fmt.Sprintf("not enough rounds for a verdict by signed ranks (%d pairs; a %s interval needs ≥ %d)", n, levelText(e.level), minSignedRankPairs(e.level))
	}
}

// walshAverage is (x+y)/2 where −∞ and +∞ together count as no change.
func walshAverage(x, y float64) float64 {
	if math.IsInf(x, 0) && math.IsInf(y, 0) && x != y {
		return 0
	}
	return (x + y) / 2
}

// sortedMedianInf is the median of sorted s, which may hold ±∞ (the mean
// of −∞ and a finite middle value is −∞).
func sortedMedianInf(s []float64) float64 {
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return walshAverage(s[n/2-1], s[n/2])
}

func shift(d []float64, by float64) []float64 {
	out := make([]float64, len(d))
	for i, x := range d {
		out[i] = x + by
		if math.Abs(out[i]) < resolution {
			out[i] = 0
		}
	}
	return out
}

// signedRankTail is the exact one-sided p-value of the signed-rank
// statistic of d: P(T+ ≥ observed) when upper, else P(T+ ≤ observed),
// over the 2^n equally likely signs of the non-zero values given their
// mid-ranks of |d|.
func signedRankTail(d []float64, upper bool) float64 {
	var nz []float64
	for _, x := range d {
		if x != 0 {
			nz = append(nz, x)
		}
	}
	if len(nz) == 0 {
		return 1
	}
	ranks := midRanks2(nz, math.Abs)
	obs := 0
	for i, x := range nz {
		if x > 0 {
			obs += ranks[i]
		}
	}
	counts, total := signedRankCounts(ranks)
	tail := 0.0
	for s, c := range counts {
		if (upper && s >= obs) || (!upper && s <= obs) {
			tail += c
		}
	}
	return tail / total
}

// midRanks2 is twice the mid-rank of each key(x) among xs (integers, so
// ties of two ranks stay exact; −∞ and +∞ rank like any other value).
func midRanks2(xs []float64, key func(float64) float64) []int {
	idx := make([]int, len(xs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(i, j int) int { return cmpFloat(key(xs[i]), key(xs[j])) })
	r := make([]int, len(xs))
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && key(xs[idx[j+1]]) == key(xs[idx[i]]) {
			j++
		}
		for k := i; k <= j; k++ {
			r[idx[k]] = i + j + 2 // (i+1 + j+1): twice the mean rank
		}
		i = j + 1
	}
	return r
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// signedRankCounts is, for each s, the number of the 2^n sign choices
// whose positive (doubled) ranks sum to s.
func signedRankCounts(ranks2 []int) (counts []float64, total float64) {
	sum := 0
	for _, r := range ranks2 {
		sum += r
	}
	counts = make([]float64, sum+1)
	counts[0] = 1
	top := 0
	for _, r := range ranks2 {
		for s := top; s >= 0; s-- {
			if counts[s] != 0 {
				counts[s+r] += counts[s]
			}
		}
		top += r
	}
	return counts, math.Pow(2, float64(len(ranks2)))
}

// SignedRankP is the exact two-sided p-value of the Wilcoxon signed-rank
// test that the log ratios d are centred on 0 (mid-ranks for ties, zeros
// carry no sign): the point-null test, for checks against other tools.
func SignedRankP(d []float64) float64 {
	return math.Min(1, 2*math.Min(signedRankTail(d, true), signedRankTail(d, false)))
}

// minSignedRankPairs is the fewest pairs whose signed-rank interval can
// reach the level (6 at 95%).
func minSignedRankPairs(level float64) int {
	for n := 2; n < 64; n++ {
		if 2/math.Pow(2, float64(n)) <= 1-level {
			return n
		}
	}
	return 64
}
