package stats

import (
	"math/rand/v2"
	"testing"
)

// The textbook example: with q = 0.05 and 10 p-values, the largest k with
// p(k) ≤ k·q/m is 2 (0.008 ≤ 0.010; 0.039 > 0.015).
func TestBenjaminiHochberg(t *testing.T) {
	p := []float64{0.039, 0.001, 0.041, 0.008, 0.042, 0.06, 0.074, 0.205, 0.212, 0.216}
	got := BenjaminiHochberg(p, 0.05)
	want := []bool{false, true, false, true, false, false, false, false, false, false}
	for i := range p {
		if got[i] != want[i] {
			t.Fatalf("discoveries %v, want %v", got, want)
		}
	}
	if d := BenjaminiHochberg(nil, 0.05); len(d) != 0 {
		t.Errorf("empty: %v", d)
	}
	// Under the global null (uniform p-values), any discovery at all
	// happens at most q of the time.
	rng := rand.New(rand.NewPCG(3, 4))
	any := 0
	for range 2000 {
		ps := make([]float64, 50)
		for i := range ps {
			ps[i] = rng.Float64()
		}
		for _, d := range BenjaminiHochberg(ps, 0.05) {
			if d {
				any++
				break
			}
		}
	}
	if rate := float64(any) / 2000; rate > 0.06 {
		t.Errorf("global null: a discovery in %.1f%% of trials, want ≤ 5%%", 100*rate)
	}
}
