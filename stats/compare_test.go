package stats

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// normal draws n samples with the given mean and coefficient of variation.
func normal(r *rand.Rand, n int, mean, cv float64) []float64 {
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = mean * (1 + cv*r.NormFloat64())
	}
	return xs
}

var higher = CompareOptions{HigherIsBetter: true}

func TestCompareRealDifference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	a, b := normal(r, 10, 100, 0.03), normal(r, 10, 105, 0.03)
	v := Compare(a, b, higher)
	t.Log(v.Text)
	if !v.Significant || v.Better != "b" {
		t.Errorf("5%% better b not detected: %+v", v)
	}
	if v.DeltaPct < 3 || v.DeltaPct > 7 || !(v.Lo <= v.DeltaPct && v.DeltaPct <= v.Hi) || v.Lo <= 0 {
		t.Errorf("DeltaPct = %.2f, CI [%.2f, %.2f]; want ≈5 inside a positive CI", v.DeltaPct, v.Lo, v.Hi)
	}
	if !strings.HasPrefix(v.Text, "b is ") || !strings.Contains(v.Text, "% faster (significant, 95% CI ") {
		t.Errorf("text = %q", v.Text)
	}
	if v.NoisePct != (v.Hi-v.Lo)/2 {
		t.Errorf("NoisePct = %g, want half-width %g", v.NoisePct, (v.Hi-v.Lo)/2)
	}

	// Swapped, a is the better side and b is slower, by b's relative deficit.
	w := Compare(b, a, higher)
	if !w.Significant || w.Better != "a" || w.DeltaPct > -3 || w.DeltaPct < -7 || !strings.Contains(w.Text, "% slower (significant") {
		t.Errorf("swapped: %+v", w)
	}
}

func TestCompareSameDistribution(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	a, b := normal(r, 10, 100, 0.03), normal(r, 10, 100, 0.03)
	v := Compare(a, b, higher)
	t.Log(v.Text)
	if v.Significant || v.Better != "" || !strings.HasPrefix(v.Text, "within noise (±") {
		t.Errorf("same distribution: %+v", v)
	}
	if !(v.Lo < 0 && v.Hi > 0) || v.NoisePct <= 0 {
		t.Errorf("CI [%.2f, %.2f] should straddle 0", v.Lo, v.Hi)
	}
}

// Over 200 seeded trials of two identical distributions, a 95% interval
// should call ~5% of them significant; allow up to 10% for the bootstrap's
// small-sample bias and trial-to-trial noise.
func TestCompareFalsePositiveRate(t *testing.T) {
	for _, n := range []int{5, 10} {
		fp := 0
		for trial := range 200 {
			r := rand.New(rand.NewPCG(uint64(trial), 100))
			if Compare(normal(r, n, 100, 0.03), normal(r, n, 100, 0.03), higher).Significant {
				fp++
			}
		}
		t.Logf("n=%d per side, 3%% CV: false-positive rate %d/200 = %.1f%%", n, fp, float64(fp)/2)
		if fp > 20 {
			t.Errorf("n=%d: false-positive rate %d/200 > 10%%", n, fp)
		}
	}
}

// A true 5% difference at 2% CV with 10 samples a side is well within reach
// (≈4.5 standard errors of the median difference); ≥ 80% must be found, in
// the right direction.
func TestComparePower(t *testing.T) {
	hit := 0
	for trial := range 200 {
		r := rand.New(rand.NewPCG(uint64(trial), 200))
		if v := Compare(normal(r, 10, 100, 0.02), normal(r, 10, 105, 0.02), higher); v.Significant && v.Better == "b" {
			hit++
		}
	}
	t.Logf("power, 5%% difference, 2%% CV, 10 per side: %d/200 = %.1f%%", hit, float64(hit)/2)
	if hit < 160 {
		t.Errorf("power %d/200 < 80%%", hit)
	}
}

func TestCompareLatencyDirection(t *testing.T) {
	a := []float64{100, 102, 98, 101, 99, 100, 103, 97}
	b := []float64{90, 92, 88, 91, 89, 90, 93, 87} // lower latency: better
	v := Compare(a, b, CompareOptions{})
	if !v.Significant || v.Better != "b" || v.DeltaPct != -10 {
		t.Errorf("lower latency b: %+v", v)
	}
	if !strings.HasPrefix(v.Text, "b is 10.0% lower latency (significant, 95% CI ") {
		t.Errorf("text = %q", v.Text)
	}
	// The CI is printed as magnitudes, smaller first, to match "lower".
	if lo, hi := -v.Hi, -v.Lo; !strings.Contains(v.Text, fmtRange(lo, hi)) {
		t.Errorf("text %q does not show CI %s", v.Text, fmtRange(lo, hi))
	}
	w := Compare(b, a, CompareOptions{Noun: "CPU per op"})
	if !w.Significant || w.Better != "a" || !strings.HasPrefix(w.Text, "b is 11.1% higher CPU per op (significant") {
		t.Errorf("higher latency b: %+v", w)
	}
	// The same data as a higher-is-better metric flips the winner.
	if x := Compare(a, b, higher); x.Better != "a" || !strings.Contains(x.Text, "slower") {
		t.Errorf("throughput: %+v", x)
	}
}

func fmtRange(lo, hi float64) string { return fmt.Sprintf("%.1f%%..%.1f%%", lo, hi) }

func TestCompareZeroVariance(t *testing.T) {
	v := Compare([]float64{100, 100, 100}, []float64{110, 110, 110}, higher)
	if !v.Significant || v.Better != "b" || v.DeltaPct != 10 || v.Lo != 10 || v.Hi != 10 || v.NoisePct != 0 {
		t.Errorf("constant, different: %+v", v)
	}
	if v.Text != "b is 10.0% faster (significant, 95% CI 10.0%..10.0%)" {
		t.Errorf("text = %q", v.Text)
	}
	v = Compare([]float64{100, 100, 100}, []float64{100, 100, 100}, higher)
	if v.Significant || v.DeltaPct != 0 || v.NoisePct != 0 || v.Text != "within noise (±0.0%)" {
		t.Errorf("constant, identical: %+v", v)
	}
	// Identical inputs with spread: no difference, but the noise is not 0.
	xs := []float64{95, 100, 105, 98, 102}
	v = Compare(xs, xs, higher)
	if v.Significant || v.DeltaPct != 0 || v.NoisePct <= 0 || !strings.HasPrefix(v.Text, "within noise (±") {
		t.Errorf("identical with spread: %+v", v)
	}
}

// A 0.2% difference measured with a tight interval is real but below the
// default 1% minimum effect: "within noise" in the report sense. With the
// threshold disabled it is significant.
func TestCompareMinEffect(t *testing.T) {
	a := []float64{1000, 1000.1, 999.9, 1000.05, 999.95}
	b := []float64{1002, 1002.1, 1001.9, 1002.05, 1001.95}
	v := Compare(a, b, higher)
	if v.Significant || v.Better != "" || v.Lo <= 0 || math.Abs(v.DeltaPct-0.2) > 1e-9 {
		t.Errorf("0.2%% with tight CI: %+v", v)
	}
	if !strings.HasPrefix(v.Text, "within noise (b is 0.2% faster, below the 1% minimum effect; 95% CI 0.2%..0.2%)") {
		t.Errorf("text = %q", v.Text)
	}
	if v := Compare(a, b, CompareOptions{HigherIsBetter: true, MinEffectPct: -1}); !v.Significant || v.Better != "b" {
		t.Errorf("threshold disabled: %+v", v)
	}
	if v := Compare(a, b, CompareOptions{HigherIsBetter: true, MinEffectPct: 0.1}); !v.Significant {
		t.Errorf("threshold 0.1%%: %+v", v)
	}
}

func TestCompareNotEnoughSamples(t *testing.T) {
	for _, c := range []struct{ a, b []float64 }{
		{nil, []float64{1, 2, 3}},
		{[]float64{1}, []float64{1, 2, 3}},
		{[]float64{1, 2, 3}, []float64{5, 6}},
		{[]float64{1, 2, math.NaN()}, []float64{5, 6, 7}}, // NaN does not count
	} {
		v := Compare(c.a, c.b, higher)
		if v.Significant || v.Better != "" || v.Text != "not enough samples (need ≥ 3 per side)" || v.Lo != 0 || v.Hi != 0 {
			t.Errorf("%v vs %v: %+v", c.a, c.b, v)
		}
	}
	// Two a side only when asked for, and then a clear difference is seen.
	v := Compare([]float64{100, 101}, []float64{120, 121}, CompareOptions{HigherIsBetter: true, MinSamples: 2})
	if !v.Significant || v.Better != "b" {
		t.Errorf("MinSamples 2: %+v", v)
	}
	if v := Compare([]float64{100}, []float64{120}, CompareOptions{MinSamples: 1}); v.Significant || !strings.Contains(v.Text, "need ≥ 2") {
		t.Errorf("MinSamples 1 must act as 2: %+v", v)
	}
}

func TestCompareZeroBaseline(t *testing.T) {
	v := Compare([]float64{0, 0, 0, 1}, []float64{1, 2, 3}, CompareOptions{})
	if v.Significant || v.Text != "n/a (median of a is zero)" || v.DeltaPct != 0 || math.IsNaN(v.DeltaPct) {
		t.Errorf("zero baseline: %+v", v)
	}
	v = Compare([]float64{-3, -2, -1}, []float64{1, 2, 3}, CompareOptions{})
	if v.Significant || !strings.HasPrefix(v.Text, "n/a") {
		t.Errorf("negative baseline: %+v", v)
	}
	// b's median may be zero: that is a 100% drop, not a division by zero.
	v = Compare([]float64{10, 10, 10}, []float64{0, 0, 0}, CompareOptions{})
	if v.DeltaPct != -100 || !v.Significant || v.Better != "b" {
		t.Errorf("zero b: %+v", v)
	}
	// a's median is positive but resamples can reach 0: unbounded interval.
	v = Compare([]float64{0, 0, 2, 2, 2}, []float64{2, 2, 2, 2, 2}, higher)
	if v.Significant || !math.IsInf(v.Hi, 1) || !math.IsInf(v.NoisePct, 1) || !strings.Contains(v.Text, "unbounded") {
		t.Errorf("baseline resampling to zero: %+v", v)
	}
}

func TestCompareDropsNonFinite(t *testing.T) {
	a := []float64{100, math.NaN(), 101, 99, math.Inf(1)}
	b := []float64{100, 101, math.Inf(-1), 99}
	v := Compare(a, b, higher)
	if v.Dropped != 3 || v.A.N != 3 || v.B.N != 3 || v.A.Dropped != 2 || v.B.Dropped != 1 {
		t.Errorf("dropped: %+v", v)
	}
	if v.Significant || v.DeltaPct != 0 || math.IsNaN(v.Lo) || math.IsNaN(v.Hi) {
		t.Errorf("after dropping, identical: %+v", v)
	}
}

func TestCompareDeterministic(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	a, b := normal(r, 7, 100, 0.05), normal(r, 7, 103, 0.05)
	v1, v2 := Compare(a, b, higher), Compare(a, b, higher)
	if !reflect.DeepEqual(v1, v2) {
		t.Errorf("not deterministic:\n%+v\n%+v", v1, v2)
	}
	// The seed does reach the bootstrap: another one gives other resamples.
	a, _ = finiteSorted(a)
	b, _ = finiteSorted(b)
	d1 := bootstrapDeltas(a, b, CompareOptions{})
	d2 := bootstrapDeltas(a, b, CompareOptions{Seed: 99})
	if reflect.DeepEqual(d1, d2) || !reflect.DeepEqual(d1, bootstrapDeltas(a, b, CompareOptions{Seed: defaultSeed})) {
		t.Error("Seed not used by the bootstrap")
	}
}
