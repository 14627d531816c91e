package stats

import (
	"fmt"
	"math"
)

// The two comparisons reports use (ComparePaired, CompareUnpaired) work on
// logarithms: a datapath change scales a rate or a latency, so the effect
// is a ratio, and a shared slow round scales both sides alike and cancels
// in a per-round ratio. Both return a Verdict with its Method, the exact
// Coverage of its interval and the Pairs it used.

// Methods, as reports name them.
const (
	MethodPaired   = "paired: t-interval of the per-round log ratios"
	MethodUnpaired = "unpaired: Mann-Whitney, Hodges-Lehmann shift of the logs (exact)"
)

// Defaults of the effect comparisons.
const (
	// DefaultMinRounds is the fewest pairs (or samples per side) for a
	// verdict: below 5, no interval holds its promised coverage against a
	// single odd round (at 3, identical scenarios were called different
	// 10.8% of the time by the old median bootstrap).
	DefaultMinRounds = 5
	// DefaultInconclusivePct: a non-significant interval reaching beyond
	// ±10% says nothing useful ("inconclusive: more rounds"); inside it,
	// the difference is bounded ("no difference beyond noise").
	DefaultInconclusivePct = 10.0
)

// effectOptions are the effect comparisons' settings with defaults filled.
type effectOptions struct {
	level, minEffect, inconclusive float64
	minN                           int
}

func (opt CompareOptions) effect() effectOptions {
	e := effectOptions{level: levelOrDefault(opt.Level), minEffect: opt.MinEffectPct, inconclusive: opt.InconclusivePct, minN: opt.MinSamples}
	if e.minEffect == 0 {
		e.minEffect = DefaultMinEffectPct
	}
	if e.minEffect < 0 {
		e.minEffect = 0
	}
	if e.inconclusive <= 0 {
		e.inconclusive = DefaultInconclusivePct
	}
	if e.minN == 0 {
		e.minN = DefaultMinRounds
	}
	e.minN = max(e.minN, 2)
	return e
}

// decide sets the verdict from its log-scale point estimate and interval:
// percentages of the ratio, significance, direction and text. The point
// printed is the ratio of the two sides' medians, the values a report's
// cells show, so a difference reads the same in the cell, the verdict and
// the gate; the interval is widened to hold it if the method's own
// estimate (mean log ratio, Hodges-Lehmann shift) sat elsewhere.
func decide(v *Verdict, medA, medB, lo, hi float64, opt CompareOptions, e effectOptions) {
	est := math.Log(medB / medA)
	lo, hi = math.Min(lo, est), math.Max(hi, est)
	v.DeltaPct = math.Expm1(est) * 100
	v.Lo, v.Hi = math.Expm1(lo)*100, math.Expm1(hi)*100
	v.NoisePct = (v.Hi - v.Lo) / 2
	excludesZero := lo > 0 || hi < 0
	v.Significant = excludesZero && math.Abs(v.DeltaPct) >= e.minEffect
	v.Inconclusive = !excludesZero && (v.Lo < -e.inconclusive || v.Hi > e.inconclusive)
	if v.Significant {
		if (v.DeltaPct > 0) == opt.HigherIsBetter {
			v.Better = "b"
		} else {
			v.Better = "a"
		}
	}
	ci := fmt.Sprintf("%s CI %s", levelText(v.Coverage), BoundsText(v.Lo, v.Hi))
	switch {
	case v.Significant:
		v.Text = fmt.Sprintf("b is %.1f%% %s (significant, %s)", math.Abs(v.DeltaPct), direction(opt, v.DeltaPct > 0), ci)
	case excludesZero:
		v.Text = fmt.Sprintf("no meaningful difference (b is %.1f%% %s, below the %g%% minimum effect; %s)",
			math.Abs(v.DeltaPct), direction(opt, v.DeltaPct > 0), e.minEffect, ci)
	case v.Inconclusive:
		v.Text = fmt.Sprintf("inconclusive (%s, %s): more rounds needed", SignedPct(v.DeltaPct), ci)
	default:
		v.Text = fmt.Sprintf("no difference beyond noise (%s, %s)", SignedPct(v.DeltaPct), ci)
	}
}

// levelText prints a coverage: "95%", or "96.8%" where an exact method
// cannot hit the asked level.
func levelText(c float64) string {
	return fmt.Sprintf("%.3g%%", 100*c)
}

// BoundsText prints an interval of percentages as its two signed bounds,
// which an asymmetric interval of a ratio needs ("−27.0%..+552.0%", never
// "±290%").
func BoundsText(lo, hi float64) string {
	return SignedPct(lo) + ".." + SignedPct(hi)
}

// SignedPct prints a percentage with its sign and one decimal; a value
// that rounds to zero is "+0.0%", never "-0.0%".
func SignedPct(x float64) string {
	if math.Abs(x) < 0.05 {
		x = 0
	}
	return fmt.Sprintf("%+.1f%%", x)
}

// positiveLogs returns the logs of the finite positive values and how many
// were dropped (a ratio of a zero or negative value means nothing).
func positiveLogs(xs []float64) (logs []float64, dropped int) {
	for _, x := range xs {
		if x > 0 && !math.IsInf(x, 0) && !math.IsNaN(x) {
			logs = append(logs, math.Log(x))
		} else {
			dropped++
		}
	}
	return logs, dropped
}
