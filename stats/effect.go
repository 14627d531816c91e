package stats

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The two comparisons reports use (ComparePaired, CompareUnpaired) work on
// logarithms: a datapath change scales a rate or a latency, so the effect
// is a ratio, and a shared slow round scales both sides alike and cancels
// in a per-round ratio. Both return a Verdict with its Method, the exact
// Coverage of its interval and the pairs (or the smaller side) it used.
//
// One statistic decides and is printed: the method's own estimate of the
// ratio (the geometric mean of the per-round ratios, or the
// Hodges-Lehmann shift) with the method's own interval, never widened to
// hold another number. Its p-value tests the same question the verdict
// answers, "is the effect beyond the minimum effect?" (the null is
// |effect| ≤ MinEffectPct, two one-sided tests at its edges): a difference
// too small to matter gets a large p, so it cannot crowd a report's
// false-discovery family with discoveries that are never shown as
// significant. The verdict is significant exactly when that p is below
// 1 − Level, which for the t-interval is when the interval lies wholly
// beyond ±MinEffectPct.
//
// Zeros: a rate of 0 (a round that delivered nothing) is the worst value,
// never a missing one. For a higher-is-better metric it enters as ln 0 =
// −∞, and the comparison uses ranks (signed ranks when paired), which
// order −∞ like any other value; a lower-is-better metric of 0 (a latency
// that could not be measured) is dropped and counted as such. Values that
// are negative or not numbers are dropped; Text says how many.

// Methods, as reports name them.
const (
	MethodPaired     = "paired: t-interval of the per-round log ratios"
	MethodSignedRank = "paired: Wilcoxon signed-rank, Hodges-Lehmann ratio of the rounds (exact; a round that delivered nothing ranks worst)"
	MethodUnpaired   = "unpaired: Mann-Whitney, Hodges-Lehmann shift of the logs (exact)"
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

// resolution is the smallest log ratio taken for a difference: below it
// two values differ only in floating-point rounding (0.1+0.2 vs 0.3), far
// below anything a measurement resolves.
const resolution = 1e-9

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

// delta is the minimum effect on the log scale: the null region of the
// verdict's test is [−delta, +delta].
func (e effectOptions) delta() float64 { return math.Log1p(e.minEffect / 100) }

// decide sets the verdict from the method's log-scale estimate, its
// interval and the p-value of the minimum-effect test: percentages of the
// ratio, significance, direction and text.
func decide(v *Verdict, est, lo, hi, p float64, opt CompareOptions, e effectOptions) {
	v.Tested = true
	v.DeltaPct = pctOfLog(est)
	v.Lo, v.Hi = pctOfLog(lo), pctOfLog(hi)
	v.NoisePct = (v.Hi - v.Lo) / 2
	if math.IsInf(v.NoisePct, 0) || math.IsNaN(v.NoisePct) {
		v.NoisePct = math.Inf(1)
	}
	v.P = p
	excludesZero := lo > 0 || hi < 0
	inBand := v.Lo >= -e.minEffect && v.Hi <= e.minEffect // no change that matters, shown
	v.Significant = p < 1-e.level && excludesZero
	v.Inconclusive = !v.Significant && (v.Lo < -e.inconclusive || v.Hi > e.inconclusive)
	if v.Significant {
		if (est > 0) == opt.HigherIsBetter {
			v.Better = "b"
		} else {
			v.Better = "a"
		}
	}
	ci := fmt.Sprintf("%s CI %s", levelText(v.Coverage), BoundsText(v.Lo, v.Hi))
	moved := fmt.Sprintf("b is %s %s", absPctText(v.DeltaPct, e.minEffect), direction(opt, est > 0))
	switch {
	case v.Significant:
		v.Text = fmt.Sprintf("%s (significant, %s)", moved, ci)
	case excludesZero && v.Inconclusive:
		v.Text = fmt.Sprintf("inconclusive (%s, %s, not shown beyond the %g%% minimum effect): more rounds needed", moved, ci, e.minEffect)
	case excludesZero && inBand:
		v.Text = fmt.Sprintf("no meaningful difference (%s, %s: within the %g%% minimum effect)", moved, ci, e.minEffect)
	case excludesZero:
		v.Text = fmt.Sprintf("a small difference (%s, %s, not shown beyond the %g%% minimum effect)", moved, ci, e.minEffect)
	case v.Inconclusive:
		v.Text = fmt.Sprintf("inconclusive (%s, %s): more rounds needed", SignedPct(v.DeltaPct), ci)
	case inBand:
		v.Text = fmt.Sprintf("no meaningful difference (%s, %s: within the %g%% minimum effect)", SignedPct(v.DeltaPct), ci, e.minEffect)
	default:
		v.Text = fmt.Sprintf("no difference beyond noise (%s, %s)", SignedPct(v.DeltaPct), ci)
	}
	v.Text += droppedText(v.Dropped)
}

// pctOfLog turns a log ratio into a percentage change: −∞ is −100% (b
// delivered nothing), +∞ stays +Inf (b's baseline delivered nothing).
func pctOfLog(x float64) float64 { return math.Expm1(x) * 100 }

// minEffectP is the two-sided p-value of the minimum-effect test from the
// two one-sided p-values: pUp that the effect is above +delta, pDown
// that it is below −delta (each the chance of data this extreme if the
// effect sat at that edge).
func minEffectP(pUp, pDown float64) float64 {
	return math.Min(1, 2*math.Min(pUp, pDown))
}

// droppedText says how many values a comparison could not use.
func droppedText(n int) string {
	switch n {
	case 0:
		return ""
	case 1:
		return "; 1 value dropped (negative, not a number, or a latency of 0)"
	}
	return fmt.Sprintf("; %d values dropped (negative, not a number, or a latency of 0)", n)
}

// absPctText prints |pct| with one decimal, or with three significant
// digits where one decimal would round onto (or past) the minimum effect
// and so misstate the comparison with it ("0.998%", not "1.0%").
func absPctText(pct, minEffect float64) string {
	a := math.Abs(pct)
	if math.IsInf(a, 0) {
		return "∞%"
	}
	s := strconv.FormatFloat(a, 'f', 1, 64)
	if r, _ := strconv.ParseFloat(s, 64); (r >= minEffect) != (a >= minEffect) {
		s = strconv.FormatFloat(a, 'g', 3, 64)
	}
	return s + "%"
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
// that rounds to zero is "+0.0%", never "-0.0%"; an unbounded one is
// "+∞%", a very large one is written with an exponent.
func SignedPct(x float64) string {
	switch {
	case math.IsNaN(x):
		return "n/a"
	case math.IsInf(x, 1):
		return "+∞%"
	case math.IsInf(x, -1):
		return "−∞%"
	case math.Abs(x) < 0.05:
		x = 0
	case math.Abs(x) >= 1e6:
		return fmt.Sprintf("%+.3g%%", x)
	}
	return fmt.Sprintf("%+.1f%%", x)
}

// logsOf returns the logs of the values a comparison can use and how many
// it dropped: positive finite values as they are; 0 as −∞ when higher is
// better (nothing delivered: the worst value); everything else dropped.
func logsOf(xs []float64, higherIsBetter bool) (logs []float64, dropped int) {
	for _, x := range xs {
		if l, ok := logOf(x, higherIsBetter); ok {
			logs = append(logs, l)
		} else {
			dropped++
		}
	}
	return logs, dropped
}

func logOf(x float64, higherIsBetter bool) (float64, bool) {
	switch {
	case x > 0 && !math.IsInf(x, 0):
		return math.Log(x), true
	case x == 0 && higherIsBetter:
		return math.Inf(-1), true
	}
	return 0, false
}

// logDiff is y − x for logs that may be −∞: two −∞ (both delivered
// nothing) are equal, and differences below the resolution are 0.
func logDiff(y, x float64) float64 {
	if math.IsInf(x, -1) && math.IsInf(y, -1) {
		return 0
	}
	d := y - x
	if math.Abs(d) < resolution {
		return 0
	}
	return d
}

// nothingText says how often each side of a higher-is-better metric
// delivered nothing (a value of 0): such rounds are in the verdict as the
// worst values, and a reader must see them named.
func nothingText(a, b []float64, opt CompareOptions) string {
	if !opt.HigherIsBetter {
		return ""
	}
	count := func(xs []float64) int {
		n := 0
		for _, x := range xs {
			if x == 0 {
				n++
			}
		}
		return n
	}
	var parts []string
	if n := count(a); n > 0 {
		parts = append(parts, fmt.Sprintf("a delivered nothing in %d of %d rounds", n, len(a)))
	}
	if n := count(b); n > 0 {
		parts = append(parts, fmt.Sprintf("b delivered nothing in %d of %d rounds", n, len(b)))
	}
	if len(parts) == 0 {
		return ""
	}
	return "; " + strings.Join(parts, ", ")
}

// Thousands prints n with thousands separators (30,000), as the
// published reports write Service counts.
func Thousands(n int) string {
	if n < 0 {
		return "-" + Thousands(-n)
	}
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
