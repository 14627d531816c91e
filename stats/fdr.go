package stats

import (
	"math"
	"sort"
)

// DefaultFDR is the false-discovery rate reports control.
const DefaultFDR = 0.05

// BenjaminiHochberg returns which of the p-values are discoveries when the
// expected share of false ones among them is held at q: sort the m
// p-values, find the largest k with p(k) ≤ k·q/m, and keep every p ≤ p(k).
// A report judges hundreds of metrics; at 5% each, identical code would
// show dozens of "significant" lines without this. When every hypothesis
// is null, the chance of any discovery is at most q.
//
// A NaN p-value (no test) is no discovery and does not count among the m.
func BenjaminiHochberg(p []float64, q float64) []bool {
	var idx []int
	for i, v := range p {
		if !math.IsNaN(v) {
			idx = append(idx, i)
		}
	}
	m := len(idx)
	sort.SliceStable(idx, func(a, b int) bool { return p[idx[a]] < p[idx[b]] })
	cut := -1.0
	for k := m; k >= 1; k-- {
		if v := p[idx[k-1]]; v <= float64(k)*q/float64(m) {
			cut = v
			break
		}
	}
	out := make([]bool, len(p))
	for i, v := range p {
		out[i] = v <= cut // false for NaN
	}
	return out
}
