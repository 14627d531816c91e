package stats

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// simRounds simulates one scenario's rounds on a shared, noisy machine: in
// 30% of rounds the machine is 20–80% slower (load[r], shared by every
// scenario of an interleaved run), and each value has its own uniform ±5%
// noise. truth scales the scenario (1.10: 10% faster).
func simRounds(rng *rand.Rand, load []float64, truth float64) []float64 {
	out := make([]float64, len(load))
	for i, l := range load {
		out[i] = 1000 * truth * l * (1 + (rng.Float64()*2-1)*0.05)
	}
	return out
}

// simLoad draws n rounds' shared machine state (a rate factor).
func simLoad(rng *rand.Rand, n int) []float64 {
	load := make([]float64, n)
	for i := range load {
		load[i] = 1
		if rng.Float64() < 0.3 {
			load[i] = 1 / (1.2 + 0.6*rng.Float64())
		}
	}
	return load
}

// rates counts, over trials, how often each comparison calls b
// significantly better, significantly worse, or neither.
type rates struct{ better, worse, trials int }

func (r *rates) add(v Verdict) {
	r.trials++
	switch {
	case v.Significant && v.Better == "b":
		r.better++
	case v.Significant:
		r.worse++
	}
}
func (r rates) pct(n int) float64 { return 100 * float64(n) / float64(r.trials) }

// The promises of the report's verdicts, on synthetic data whose truth is
// known (5 rounds, shared load, ±5% noise), for every one of 20 seeds of
// 1,000 trials each: identical scenarios are called different at most 5%
// of the time, paired and unpaired; a true +10% is found at least 80% of
// the time by the paired comparison and never called worse. The pooled
// rates over the 20,000 trials, with their 95% binomial (Wilson)
// intervals, are what docs/report.md quotes.
func TestEffectOnKnownTruth(t *testing.T) {
	opt := CompareOptions{HigherIsBetter: true}
	var all [4]rates
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(1+seed, 2))
		var pairedNull, unpairedNull, pairedTrue, unpairedTrue rates
		for range 1000 {
			load := simLoad(rng, 5)
			a, b := simRounds(rng, load, 1), simRounds(rng, load, 1)
			pairedNull.add(ComparePaired(a, b, opt))
			unpairedNull.add(CompareUnpaired(simRounds(rng, simLoad(rng, 5), 1), simRounds(rng, simLoad(rng, 5), 1), opt))
			pairedTrue.add(ComparePaired(a, simRounds(rng, load, 1.10), opt))
			unpairedTrue.add(CompareUnpaired(simRounds(rng, simLoad(rng, 5), 1), simRounds(rng, simLoad(rng, 5), 1.10), opt))
		}
		if p := pairedNull.pct(pairedNull.better + pairedNull.worse); p > 5 {
			t.Errorf("seed %d, paired: identical scenarios called different in %.1f%% of trials, want ≤ 5%%", seed, p)
		}
		if p := unpairedNull.pct(unpairedNull.better + unpairedNull.worse); p > 5 {
			t.Errorf("seed %d, unpaired: identical scenarios called different in %.1f%% of trials, want ≤ 5%%", seed, p)
		}
		if p := pairedTrue.pct(pairedTrue.better); p < 80 {
			t.Errorf("seed %d, paired: a true +10%% found in %.1f%% of trials, want ≥ 80%%", seed, p)
		}
		// Separate runs carry their own machine state, so an unpaired
		// comparison may, rarely, see the slower side faster (at most α/2).
		if pairedTrue.worse > 0 || unpairedTrue.pct(unpairedTrue.worse) > 2.5 {
			t.Errorf("seed %d: a true +10%% called worse: paired %d times, unpaired %.1f%%", seed, pairedTrue.worse, unpairedTrue.pct(unpairedTrue.worse))
		}
		for i, r := range []rates{pairedNull, unpairedNull, pairedTrue, unpairedTrue} {
			all[i].better += r.better
			all[i].worse += r.worse
			all[i].trials += r.trials
		}
	}
	t.Logf("over %d trials: identical called different: paired %s, unpaired %s", all[0].trials,
		wilson(all[0].better+all[0].worse, all[0].trials), wilson(all[1].better+all[1].worse, all[1].trials))
	t.Logf("true +10%% found: paired %s, unpaired (separate runs) %s", wilson(all[2].better, all[2].trials), wilson(all[3].better, all[3].trials))
}

// wilson prints a binomial rate with its 95% Wilson interval.
func wilson(k, n int) string {
	p, z := float64(k)/float64(n), 1.959964
	c := (p + z*z/(2*float64(n))) / (1 + z*z/float64(n))
	h := z / (1 + z*z/float64(n)) * math.Sqrt(p*(1-p)/float64(n)+z*z/(4*float64(n)*float64(n)))
	return fmt.Sprintf("%.2f%% (95%% CI %.2f–%.2f%%)", 100*p, 100*(c-h), 100*(c+h))
}

// One odd round (b alone 40% slower in it) does not flip a verdict at 5
// rounds: identical scenarios stay not significant, and a true +10% is
// never called worse (its interval widens instead).
func TestEffectOutlierRound(t *testing.T) {
	a := []float64{1000, 1010, 990, 1005, 995}
	same := []float64{1002, 1008, 991, 1003, 600}
	if v := ComparePaired(a, same, CompareOptions{HigherIsBetter: true}); v.Significant {
		t.Errorf("identical but one odd round: %s", v.Text)
	}
	if v := CompareUnpaired(a, same, CompareOptions{HigherIsBetter: true}); v.Significant {
		t.Errorf("unpaired, identical but one odd round: %s", v.Text)
	}
	faster := []float64{1100, 1111, 1089, 1105, 660}
	for _, v := range []Verdict{ComparePaired(a, faster, CompareOptions{HigherIsBetter: true}), CompareUnpaired(a, faster, CompareOptions{HigherIsBetter: true})} {
		if v.Significant && v.Better == "a" {
			t.Errorf("%s: +10%% with one odd round called worse: %s", v.Method, v.Text)
		}
	}
}

// Ties: equal values give finite results; identical sides are never
// significant; the same ratio in every round is.
func TestEffectTies(t *testing.T) {
	flat := []float64{45, 45, 45, 45, 45}
	for _, v := range []Verdict{ComparePaired(flat, flat, CompareOptions{}), CompareUnpaired(flat, flat, CompareOptions{})} {
		if v.Significant || v.DeltaPct != 0 || math.IsNaN(v.Lo) || math.IsNaN(v.Hi) || v.Inconclusive {
			t.Errorf("%s, identical flat sides: %+v", v.Method, v)
		}
	}
	up := []float64{50, 50, 50, 50, 50}
	for _, v := range []Verdict{ComparePaired(flat, up, CompareOptions{}), CompareUnpaired(flat, up, CompareOptions{})} {
		if !v.Significant || v.Better != "a" || math.Abs(v.DeltaPct-11.111) > 0.01 {
			t.Errorf("%s, +11.1%% latency in every round: %s", v.Method, v.Text)
		}
	}
	mixed := []float64{45, 46, 45, 46, 45}
	if v := CompareUnpaired(flat, mixed, CompareOptions{}); v.P <= 0 || v.P > 1 || math.IsNaN(v.DeltaPct) {
		t.Errorf("partial ties: %+v", v)
	}
}

// Fewer than 5 rounds get no verdict; the text says why.
func TestEffectNeedsFiveRounds(t *testing.T) {
	a, b := []float64{1, 1.01, 0.99}, []float64{2, 2.02, 1.98}
	if v := ComparePaired(a, b, CompareOptions{}); v.Significant || !strings.Contains(v.Text, "not enough rounds for a verdict (3 pairs, need ≥ 5)") {
		t.Errorf("paired at 3: %s", v.Text)
	}
	if v := CompareUnpaired(a, b, CompareOptions{}); v.Significant || !strings.Contains(v.Text, "need ≥ 5 per side") {
		t.Errorf("unpaired at 3: %s", v.Text)
	}
	// A round one side lacks is dropped from the pairs.
	v := ComparePaired([]float64{1, 1, 1, 1, 1, 1}, []float64{1.1, math.NaN(), 1.1, 1.1, 1.1, 1.1}, CompareOptions{})
	if v.N != 5 || v.Dropped != 1 {
		t.Errorf("pairs %d dropped %d", v.N, v.Dropped)
	}
}

// The exact Mann-Whitney interval at 5 and 5 leaves 2 differences out at
// each end with coverage 1 − 2·4/252 = 96.8%, and says so; the counts are
// the Gaussian binomial's.
func TestMannWhitneyExact(t *testing.T) {
	c := mannWhitneyCounts(5, 5)
	sum := 0.0
	for _, x := range c {
		sum += x
	}
	if sum != 252 || c[0] != 1 || c[1] != 1 || c[2] != 2 || c[3] != 3 || c[12] != c[13] {
		t.Fatalf("counts %v (sum %g)", c, sum)
	}
	a := []float64{100, 101, 102, 103, 104}
	b := []float64{110, 111, 112, 113, 114}
	v := CompareUnpaired(a, b, CompareOptions{HigherIsBetter: true})
	if math.Abs(v.Coverage-(1-8.0/252)) > 1e-12 || !strings.Contains(v.Text, "96.8% CI") {
		t.Errorf("coverage %g, text %s", v.Coverage, v.Text)
	}
	if math.Abs(v.P-2.0/252) > 1e-12 {
		t.Errorf("p %g, want 2/252", v.P)
	}
	// Asymmetric intervals print as two bounds, never as ±.
	if !strings.Contains(v.Text, "..+") || strings.Contains(v.Text, "±") {
		t.Errorf("text %s", v.Text)
	}
}

// A wide interval across 0 is "inconclusive", a narrow one bounds the
// difference; one that excludes no change but not the minimum effect, and
// reaches far, is inconclusive too, never "no meaningful difference".
func TestEffectInconclusive(t *testing.T) {
	a := []float64{1000, 1000, 1000, 1000, 1000}
	wild := []float64{700, 1500, 900, 1300, 800}
	if v := ComparePaired(a, wild, CompareOptions{HigherIsBetter: true}); !v.Inconclusive || !strings.HasPrefix(v.Text, "inconclusive") {
		t.Errorf("wide: %s", v.Text)
	}
	if v := ComparePaired([]float64{100, 100, 100, 100, 100}, []float64{104, 130, 104, 128, 113}, CompareOptions{HigherIsBetter: true}); v.Significant ||
		!v.Inconclusive || !strings.HasPrefix(v.Text, "inconclusive (b is 15.3% faster") {
		t.Errorf("beyond 0, not beyond 1%%, wide: %s", v.Text)
	}
	calm := []float64{1001, 999, 1002, 998, 1000}
	// Inside ±1% it is shown to be no change that matters.
	if v := ComparePaired(a, calm, CompareOptions{HigherIsBetter: true}); v.Inconclusive || v.Significant || !strings.HasPrefix(v.Text, "no meaningful difference") {
		t.Errorf("narrow: %s", v.Text)
	}
}
