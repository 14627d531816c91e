package stats

import (
	"fmt"
	"math"
)

// verdictText words a computed verdict (both sides have ≥ 2 samples and the
// baseline median is positive). Differences are stated as b relative to the
// baseline a, with magnitudes and a direction word, so "b is 5.2% slower"
// never needs a reader to decode the sign of -5.2%.
func verdictText(v Verdict, opt CompareOptions, level float64, excludesZero bool, minEffect float64) string {
	ci := fmt.Sprintf("%.3g%% CI %s", 100*level, magnitudeRange(v.Lo, v.Hi))
	switch {
	case v.Significant:
		return fmt.Sprintf("b is %.1f%% %s (significant, %s)",
			math.Abs(v.DeltaPct), direction(opt, v.DeltaPct > 0), ci)
	case excludesZero:
		return fmt.Sprintf("within noise (b is %.1f%% %s, below the %g%% minimum effect; %s)",
			math.Abs(v.DeltaPct), direction(opt, v.DeltaPct > 0), minEffect, ci)
	case math.IsInf(v.NoisePct, 0):
		return "within noise (unbounded: a's median can resample to zero)"
	}
	return fmt.Sprintf("within noise (±%.1f%%)", v.NoisePct)
}

// direction is the word for b being higher (up) or lower than a.
func direction(opt CompareOptions, up bool) string {
	switch {
	case opt.Noun != "" && up:
		return "higher " + opt.Noun
	case opt.Noun != "":
		return "lower " + opt.Noun
	case opt.HigherIsBetter && up:
		return "faster"
	case opt.HigherIsBetter:
		return "slower"
	case up:
		return "higher latency"
	}
	return "lower latency"
}

// magnitudeRange prints an interval that excludes 0 as magnitudes, smaller
// first ("3.9%..6.4%" for -6.4..-3.9), to match the direction word; an
// interval spanning 0 keeps its signs.
func magnitudeRange(lo, hi float64) string {
	if hi < 0 {
		lo, hi = -hi, -lo
	}
	if lo < 0 {
		return fmt.Sprintf("%+.1f%%..%+.1f%%", lo, hi)
	}
	return fmt.Sprintf("%.1f%%..%.1f%%", lo, hi)
}
