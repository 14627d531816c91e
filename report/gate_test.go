package report

import (
	"math/rand/v2"
	"testing"

	"github.com/cnibench/cnibench/stats"
)

// 1,000 synthetic gates between identical code (5 rounds a side, 50
// metrics, each value with its own uniform ±5% noise) fail at most 5% of
// the time at a 5% allowance; a true 15% drop in one metric is caught.
func TestGateOnIdenticalCode(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	gen := func(truth float64) []float64 {
		v := make([]float64, 5)
		for i := range v {
			v[i] = 1000 * truth * (1 + (rng.Float64()*2-1)*0.05)
		}
		return v
	}
	fails, caught := 0, 0
	for range 1000 {
		vs := make([]stats.Verdict, 50)
		for i := range vs {
			vs[i] = stats.CompareUnpaired(gen(1), gen(1), stats.CompareOptions{HigherIsBetter: true})
		}
		for _, reg := range gateDecide(vs, 5) {
			if reg {
				fails++
				break
			}
		}
		vs[0] = stats.CompareUnpaired(gen(1), gen(0.85), stats.CompareOptions{HigherIsBetter: true})
		if gateDecide(vs, 5)[0] {
			caught++
		}
	}
	t.Logf("identical code: %d of 1000 gates failed; a 15%% drop caught %d of 1000", fails, caught)
	if fails > 50 {
		t.Errorf("identical code failed %d of 1000 gates, want ≤ 50", fails)
	}
	if caught < 800 {
		t.Errorf("a 15%% drop caught in %d of 1000 gates, want ≥ 800", caught)
	}
}
