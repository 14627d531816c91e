package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// For N = 10 at 95%: P(Bin(10,½) ≤ 1) = 11/1024, so [x(2), x(9)] covers with
// 1 - 22/1024; [x(3), x(8)] would cover only 1 - 112/1024 < 95%.
func TestDescribeOrderStatisticsKnownAnswer(t *testing.T) {
	xs := []float64{7, 3, 10, 1, 5, 9, 2, 8, 4, 6}
	orig := slices.Clone(xs)
	e := Describe(xs, CIOptions{})
	if e.N != 10 || e.Median != 5.5 || e.Lo != 2 || e.Hi != 9 {
		t.Errorf("got N=%d median=%g CI=[%g,%g], want N=10 median=5.5 CI=[2,9]", e.N, e.Median, e.Lo, e.Hi)
	}
	if want := 1 - 22.0/1024; math.Abs(e.Coverage-want) > 1e-12 {
		t.Errorf("coverage = %.6f, want %.6f", e.Coverage, want)
	}
	if !strings.Contains(e.Method, "order statistics x(2)..x(9) of 10") {
		t.Errorf("method = %q", e.Method)
	}
	if !slices.Equal(xs, orig) {
		t.Errorf("input modified: %v", xs)
	}
	// At 80% the interval narrows to [x(3), x(8)] (coverage 89.1%).
	if e := Describe(xs, CIOptions{Level: 0.8}); e.Lo != 3 || e.Hi != 8 {
		t.Errorf("80%% CI = [%g,%g], want [3,8]", e.Lo, e.Hi)
	}
}

// Six samples are the fewest whose range reaches 95% (1 - 2/64); with five
// the range only covers 1 - 2/32 and Describe must say so.
func TestDescribeSmallN(t *testing.T) {
	e := Describe([]float64{4, 1, 6, 2, 5, 3}, CIOptions{})
	if e.Lo != 1 || e.Hi != 6 || e.Coverage != 1-2.0/64 || strings.Contains(e.Method, "only") {
		t.Errorf("N=6: %+v", e)
	}
	e = Describe([]float64{4, 1, 2, 5, 3}, CIOptions{})
	if e.Median != 3 || e.Lo != 1 || e.Hi != 5 || e.Coverage != 1-2.0/32 {
		t.Errorf("N=5: %+v", e)
	}
	if !strings.Contains(e.Method, "only 93.8% coverage") || !strings.Contains(e.Method, "need ≥ 6") {
		t.Errorf("N=5 method = %q", e.Method)
	}
	e = Describe([]float64{3, 1}, CIOptions{})
	if e.Median != 2 || e.Lo != 1 || e.Hi != 3 || e.Coverage != 0.5 {
		t.Errorf("N=2: %+v", e)
	}
	e = Describe([]float64{42}, CIOptions{})
	if e.N != 1 || e.Median != 42 || e.Lo != 42 || e.Hi != 42 || e.Coverage != 0 || e.Method != "single sample, no interval" {
		t.Errorf("N=1: %+v", e)
	}
	if e := Describe(nil, CIOptions{}); e != (Estimate{}) {
		t.Errorf("N=0: %+v, want zero Estimate", e)
	}
}

func TestDescribeDropsNonFinite(t *testing.T) {
	e := Describe([]float64{math.NaN(), 1, math.Inf(1), 2, 3, math.Inf(-1)}, CIOptions{})
	if e.N != 3 || e.Dropped != 3 || e.Median != 2 || e.Lo != 1 || e.Hi != 3 {
		t.Errorf("got %+v, want N=3 Dropped=3 median=2 CI=[1,3]", e)
	}
	if e := Describe([]float64{math.NaN()}, CIOptions{}); e.N != 0 || e.Dropped != 1 || e.Median != 0 {
		t.Errorf("all NaN: %+v", e)
	}
}

func TestDescribeZeroVariance(t *testing.T) {
	e := Describe([]float64{7, 7, 7, 7, 7, 7, 7, 7}, CIOptions{})
	if e.Median != 7 || e.Lo != 7 || e.Hi != 7 {
		t.Errorf("got %+v, want 7 [7,7]", e)
	}
}

// The interval is ordered and contains the median for every size.
func TestDescribeOrdered(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := 1; n <= 60; n++ {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = r.ExpFloat64() * 100
		}
		e := Describe(xs, CIOptions{})
		if e.N != n || !(e.Lo <= e.Median && e.Median <= e.Hi) {
			t.Errorf("n=%d: not ordered: %+v", n, e)
		}
		if n >= 6 && e.Coverage < 0.95 {
			t.Errorf("n=%d: coverage %.4f < 95%%", n, e.Coverage)
		}
	}
}

// Empirical coverage on a skewed distribution (exponential, true median
// ln 2) must reach the exact coverage claimed: 97.85% for N = 10, 95.9% for
// N = 25. A 95% bootstrap or a wrong k would fall clearly below 95%.
func TestDescribeCoverageSkewed(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{10, 25} {
		const trials = 4000
		hit, claimed := 0, 0.0
		xs := make([]float64, n)
		for range trials {
			for i := range xs {
				xs[i] = r.ExpFloat64()
			}
			e := Describe(xs, CIOptions{})
			claimed = e.Coverage
			if e.Lo <= math.Ln2 && math.Ln2 <= e.Hi {
				hit++
			}
		}
		got := float64(hit) / trials
		t.Logf("n=%d: empirical coverage %.4f, claimed %.4f", n, got, claimed)
		if got < claimed-0.01 { // 3+ standard errors
			t.Errorf("n=%d: empirical coverage %.4f below claimed %.4f", n, got, claimed)
		}
	}
}
