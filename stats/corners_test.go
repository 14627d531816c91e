package stats

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x5eed)) }

// The corners of issue 28, each with the input that reproduced it; every
// test here failed on c416370.

// Bug 2: a round that delivered nothing (0 Gbit/s at 100% loss) is the
// worst value, never a missing one: vxlan's two empty rounds make the
// comparison inconclusive (its interval reaches −100%), not "no
// difference beyond noise", and the text names them.
func TestZeroRoundsAreWorst(t *testing.T) {
	native := []float64{9.00, 9.01, 8.99, 9.27, 9.28, 9.90, 9.90}
	vxlan := []float64{9.135, 9.146, 9.125, 9.410, 9.419, 0, 0}
	opt := CompareOptions{HigherIsBetter: true, Noun: "throughput"}
	for _, v := range []Verdict{ComparePaired(native, vxlan, opt), CompareUnpaired(native, vxlan, opt)} {
		if v.N != 7 || v.Dropped != 0 {
			t.Errorf("%s: the zero rounds were dropped (n %d, dropped %d)", v.Method, v.N, v.Dropped)
		}
		if strings.HasPrefix(v.Text, "no difference beyond noise") || !v.Inconclusive || v.Lo > -99.9 {
			t.Errorf("%s: %s", v.Method, v.Text)
		}
		if !strings.Contains(v.Text, "b delivered nothing in 2 of 7 rounds") {
			t.Errorf("%s: the empty rounds are not named: %s", v.Method, v.Text)
		}
	}
	if v := ComparePaired(native, vxlan, opt); v.Method != MethodSignedRank {
		t.Errorf("paired with an infinite ratio: method %q", v.Method)
	}
	// At 5 rounds (every profile's default) signed ranks cannot reach 95%:
	// no verdict, never "no difference" or "no meaningful difference", and
	// the empty round is named.
	five := ComparePaired([]float64{9, 9, 9, 9, 9}, []float64{4.5, 4.5, 4.5, 4.5, 0}, opt)
	if five.Significant || five.Tested || !strings.HasPrefix(five.Text, "not enough rounds for a verdict by signed ranks (5 pairs") ||
		!strings.Contains(five.Text, "b delivered nothing in 1 of 5 rounds") {
		t.Errorf("5 rounds, one empty: %+v", five)
	}
	// Loss is judged on the delivered share: 100% loss is a share of 0.
	share := func(loss []float64) []float64 {
		out := make([]float64, len(loss))
		for i, l := range loss {
			out[i] = 100 - l
		}
		return out
	}
	lossN := []float64{0.1, 0.2, 0.1, 0.1, 0.2, 0.1, 0.1}
	lossV := []float64{0.1, 0.1, 0.2, 0.1, 0.1, 100, 100}
	if v := ComparePaired(share(lossN), share(lossV), CompareOptions{HigherIsBetter: true}); strings.HasPrefix(v.Text, "no difference") || v.N != 7 {
		t.Errorf("loss: %s", v.Text)
	}
	// A latency of 0 cannot be measured: it is dropped and said so.
	lat := []float64{100, 101, 99, 100, 102, 0}
	if v := ComparePaired(lat, lat, CompareOptions{}); v.Dropped != 1 || !strings.Contains(v.Text, "1 value dropped") {
		t.Errorf("latency 0: dropped %d, %s", v.Dropped, v.Text)
	}
	// Every round empty on one side: b is certainly worse.
	if v := ComparePaired([]float64{5, 5, 5, 5, 5, 5}, []float64{0, 0, 0, 0, 0, 0}, CompareOptions{HigherIsBetter: true}); v.DeltaPct != -100 || v.Better == "b" {
		t.Errorf("nothing delivered at all: %+v", v)
	}
}

// Bug 5: the unpaired p-value with ties. The exact tie-aware permutation
// p of [45,45,45,45,46] vs [46,46,46,46,46] is 10/210 = 0.0476 (the old
// floor of the smaller tail gave 0.0317); the verdict's own p is the one
// its printed interval inverts, so a p below 5% never stands beside "no
// difference".
func TestUnpairedTies(t *testing.T) {
	a, b := []float64{45, 45, 45, 45, 46}, []float64{46, 46, 46, 46, 46}
	if p := MannWhitneyP(a, b); math.Abs(p-10.0/210) > 1e-12 {
		t.Errorf("tie-aware exact p = %g, want 0.0476", p)
	}
	v := CompareUnpaired(a, b, CompareOptions{})
	if (v.P < 0.05) != v.Significant || v.P < 10.0/210 {
		t.Errorf("p %g beside %q", v.P, v.Text)
	}
	// Without ties the point-null p is the classic exact one (2/252).
	if p := MannWhitneyP([]float64{1, 2, 3, 4, 5}, []float64{6, 7, 8, 9, 10}); math.Abs(p-2.0/252) > 1e-12 {
		t.Errorf("no ties: %g", p)
	}
}

// Bug 6: the printed interval is the tested one. a = 100 ×10, b = 99.9 ×6
// then 122 ×4 had p 0.039 beside "inconclusive (−0.1%, 95% CI
// −0.1%..+16.5%)", an interval widened to hold the ratio of medians. The
// estimate is now the Hodges–Lehmann shift, inside its own interval, and
// significance follows the p.
func TestPrintedIntervalIsTested(t *testing.T) {
	a := []float64{100, 100, 100, 100, 100, 100, 100, 100, 100, 100}
	b := []float64{99.9, 99.9, 99.9, 99.9, 99.9, 99.9, 122, 122, 122, 122}
	v := CompareUnpaired(a, b, CompareOptions{HigherIsBetter: true})
	if v.DeltaPct < v.Lo || v.DeltaPct > v.Hi || (v.P < 0.05) != v.Significant {
		t.Errorf("%+v", v)
	}
	if hl := math.Expm1(math.Log(99.9/100)) * 100; math.Abs(v.DeltaPct-hl) > 1e-9 {
		t.Errorf("estimate %g, want the Hodges–Lehmann shift %g", v.DeltaPct, hl)
	}
	// Over many seeded trials: a significant verdict's interval always
	// lies beyond the minimum effect and holds its estimate, and a
	// non-significant one has p ≥ 5%.
	for seed := range 400 {
		x, y := seeded(seed, 8, 1), seeded(seed+1000, 8, 1.02)
		for _, v := range []Verdict{CompareUnpaired(x, y, CompareOptions{HigherIsBetter: true}), ComparePaired(x, y, CompareOptions{HigherIsBetter: true})} {
			inside := v.DeltaPct >= v.Lo && v.DeltaPct <= v.Hi
			beyond := v.Lo > 1 || v.Hi < -1
			if !inside || v.Significant != (v.P < 0.05) || (v.Significant && !beyond) {
				t.Fatalf("seed %d %s: %s (p %g)", seed, v.Method, v.Text, v.P)
			}
		}
	}
}

// seeded draws n values around scale·1000 (±5%, deterministic).
func seeded(seed, n int, scale float64) []float64 {
	out := make([]float64, n)
	x := uint64(seed)*0x9e3779b97f4a7c15 + 1
	for i := range out {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		out[i] = 1000 * scale * (1 + (float64(x%10000)/10000*2-1)*0.05)
	}
	return out
}

// Bug 7, the smaller corners.
func TestVerdictTextCorners(t *testing.T) {
	// 0.998% is below the 1% minimum: it must not print as "1.0%".
	if s := absPctText(0.998, 1); s != "0.998%" {
		t.Errorf("0.998%% printed %q", s)
	}
	if s := absPctText(5.04, 1); s != "5.0%" {
		t.Errorf("5.04%% printed %q", s)
	}
	// A one-ulp difference is no difference, and no p of 0.
	x, y := 0.1+0.2, 0.3
	v := ComparePaired([]float64{x, x, x, x, x}, []float64{y, y, y, y, y}, CompareOptions{HigherIsBetter: true, MinEffectPct: -1})
	if v.P != 1 || v.DeltaPct != 0 || v.Significant {
		t.Errorf("one ulp: %+v", v)
	}
	// A ratio beyond float range prints as a number or ∞, never "+Inf%".
	small, huge := []float64{1e-300, 1e-300, 1e-300, 1e-300, 1e-300}, []float64{1e300, 1e300, 1e300, 1e300, 1e300}
	if v := CompareUnpaired(small, huge, CompareOptions{HigherIsBetter: true}); strings.Contains(v.Text, "Inf") || math.IsNaN(v.DeltaPct) {
		t.Errorf("overflow: %s", v.Text)
	}
	// p far below 1e-16 keeps its digits.
	a := []float64{1000, 1000.1, 999.9, 1000.05, 999.95, 1000, 1000.02, 999.98}
	b := make([]float64, len(a))
	for i := range a {
		b[i] = a[i] * 2 * (1 + 1e-6*float64(i%3))
	}
	if v := ComparePaired(a, b, CompareOptions{HigherIsBetter: true}); !(v.P > 0 && v.P < 1e-16) {
		t.Errorf("tiny p: %g", v.P)
	}
	// The growth exponent at the edge of its range says so.
	for _, c := range []struct {
		k    float64
		want string
	}{{3, "≥ 3.00"}, {0.05, "≤ 0.05"}, {0, "flat"}, {1.234, "1.23"}, {math.NaN(), "n/a"}} {
		if got := ExponentText(c.k); got != c.want {
			t.Errorf("ExponentText(%g) = %q, want %q", c.k, got, c.want)
		}
	}
	xs := []float64{0, 1000, 2000, 5000, 10000}
	steep, flat := make([]float64, len(xs)), make([]float64, len(xs))
	for i, x := range xs {
		steep[i], flat[i] = 10+math.Pow(x/1000, 3.5), 42
	}
	if _, _, k, _, err := OffsetPowerFit(xs, steep); err != nil || ExponentText(k) != "≥ 3.00" {
		t.Errorf("true k 3.5 reads %s (%v)", ExponentText(k), err)
	}
	if _, _, k, _, err := OffsetPowerFit(xs, flat); err != nil || ExponentText(k) != "flat" {
		t.Errorf("flat data read %s (%v)", ExponentText(k), err)
	}
}

// Bug 7: Benjamini–Hochberg with a NaN p-value (no test) leaves it out
// and sorts the rest correctly.
func TestBenjaminiHochbergNaN(t *testing.T) {
	p := []float64{0.01, math.NaN(), 0.02, 0.03, 0.5}
	got := BenjaminiHochberg(p, 0.05)
	want := []bool{true, false, true, true, false} // m = 4: 0.03 ≤ 3·0.05/4
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("BH(%v) = %v, want %v", p, got, want)
		}
	}
}

// The per-look levels of --rounds auto hold: 40,000 simulated null runs
// of normal log ratios, looked at after every round from 5 to MAX, call
// the effect significant in 5% of runs (within the simulation's error),
// for MAX 5, 10, 15 and 40.
func TestSequentialAlphaTable(t *testing.T) {
	const paths = 40000
	for _, max := range []int{5, 10, 15, 40} {
		level, err := SequentialLevel(max)
		if err != nil {
			t.Fatal(err)
		}
		hits := 0
		rng := newRand(uint64(max))
		for range paths {
			var sum, sq float64
			for n := 1; n <= max; n++ {
				x := rng.NormFloat64()
				sum, sq = sum+x, sq+x*x
				if n < MinAutoRounds {
					continue
				}
				mean := sum / float64(n)
				sd := math.Sqrt((sq - float64(n)*mean*mean) / float64(n-1))
				if 2*tSF(math.Abs(mean)/(sd/math.Sqrt(float64(n))), float64(n-1)) < 1-level {
					hits++
					break
				}
			}
		}
		rate := float64(hits) / paths
		t.Logf("auto:%d: per-look level %.4f, any-look false rate %.4f", max, 1-level, rate)
		if math.Abs(rate-0.05) > 0.0045 { // ±4 standard errors
			t.Errorf("auto:%d: false rate %.4f, want 0.05", max, rate)
		}
	}
	if _, err := SequentialLevel(41); err == nil {
		t.Error("auto:41 accepted")
	}
}
