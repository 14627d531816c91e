package report

import (
	"math"
	"testing"
)

// Each way a shape is answered, from the verdict the run gave B against
// A (or A against B, flipped) and the published ratio.
func TestJudgeShape(t *testing.T) {
	sig := func(pct, lo, hi float64) *Delta {
		return &Delta{Verdict: VerdictSignificant, DeltaPct: Num(pct), Lo: Num(lo), Hi: Num(hi), Coverage: 0.95, P: 0.001}
	}
	noise := func(pct, lo, hi float64) *Delta {
		return &Delta{Verdict: VerdictNoise, DeltaPct: Num(pct), Lo: Num(lo), Hi: Num(hi), Coverage: 0.95, P: 0.6}
	}
	for _, tc := range []struct {
		name      string
		published float64
		d         *Delta
		flipped   bool
		want      string
	}{
		{"same direction", 0.44, sig(-50, -52, -48), false, ShapeHolds},
		{"reversed", 0.44, sig(+20, +15, +25), false, ShapeDoesNot},
		{"flipped: A against B is +100%, so B is half A", 0.44, sig(+100, +90, +110), true, ShapeHolds},
		{"a difference published, even here", 1.12, noise(0.1, -1.5, 1.7), false, ShapeDoesNot},
		{"a difference published, too wide to tell", 1.12, noise(3, -8, 14), false, ShapeNotShown},
		{"demoted by the control", 1.12, &Delta{Verdict: VerdictDemoted, DeltaPct: 8, Lo: 2, Hi: 14, Coverage: 0.95, P: 0.04}, false, ShapeNotShown},
		{"even both", 1.027, noise(0.1, -1.5, 1.7), false, ShapeHolds},
		{"even published, a difference here", 1.0, sig(-20, -25, -15), false, ShapeDoesNot},
		{"even published, too wide here", 1.0, noise(2, -9, 12), false, ShapeNotShown},
		{"too few rounds", 0.44, &Delta{Verdict: VerdictTooFew, Text: "not enough rounds for a verdict (n=3)", DeltaPct: Num(math.NaN())}, false, ShapeNotJudged},
	} {
		s := &ShapeLine{Ask: tc.name, PublishedRatio: Num(tc.published), EvenWithinPct: 5, Delta: tc.d, flipped: tc.flipped}
		got, text := judgeShape(s)
		if got != tc.want {
			t.Errorf("%s: %q (%s), want %q", tc.name, got, text, tc.want)
		}
	}
}
