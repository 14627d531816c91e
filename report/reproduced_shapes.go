package report

import (
	"fmt"
	"io"
	"math"

	"github.com/cnibench/cnibench/stats"
)

// judgeShape says whether the published shape holds here: the same
// direction, significant after the false-discovery control; or, for a
// published "about even", our interval within the same ±EvenWithinPct.
func judgeShape(s *ShapeLine) (holds, text string) {
	d := s.Delta
	pct, lo, hi := float64(d.DeltaPct), float64(d.Lo), float64(d.Hi)
	if s.flipped {
		pct, lo, hi = float64(invertPct(d.DeltaPct)), float64(invertPct(d.Hi)), float64(invertPct(d.Lo))
	}
	s.EffectPct, s.Lo, s.Hi = Num(pct), Num(lo), Num(hi)
	pubPct, tol := 100*(float64(s.PublishedRatio)-1), float64(s.EvenWithinPct)
	head := fmt.Sprintf("%s: published %.3g× (%s)", s.Ask, float64(s.PublishedRatio), stats.SignedPct(pubPct))
	if d.Verdict == VerdictTooFew || d.Verdict == VerdictNA {
		return ShapeNotJudged, head + "; here not judged: " + d.Text
	}
	here := fmt.Sprintf("here %s", effectText(pct, lo, hi, float64(d.Coverage)))
	inside := ""
	if lo <= pubPct && pubPct <= hi {
		inside = "; the published change lies inside our interval"
	} else if !math.IsNaN(lo) && !math.IsNaN(hi) {
		inside = "; the published change lies outside our interval"
	}
	within := lo >= -tol && hi <= tol
	sig := d.Verdict == VerdictSignificant
	var verdict string
	switch {
	case math.Abs(pubPct) <= tol && within:
		holds, verdict = ShapeHolds, fmt.Sprintf("even within ±%g%% here too", tol)
	case math.Abs(pubPct) <= tol && sig:
		holds, verdict = ShapeDoesNot, fmt.Sprintf("published about even (within ±%g%%), here a significant difference", tol)
	case math.Abs(pubPct) <= tol:
		holds, verdict = ShapeNotShown, fmt.Sprintf("published about even; our interval reaches beyond ±%g%%", tol)
	case sig && (pct > 0) == (pubPct > 0):
		holds, verdict = ShapeHolds, "the same direction, significant"
	case sig:
		holds, verdict = ShapeDoesNot, "reversed here, significant"
	case within:
		holds, verdict = ShapeDoesNot, fmt.Sprintf("even here (our interval within ±%g%%)", tol)
	case d.Verdict == VerdictDemoted:
		holds, verdict = ShapeNotShown, "not significant after the false-discovery control"
	default:
		holds, verdict = ShapeNotShown, "not significant here ("+d.Verdict+")"
	}
	return holds, fmt.Sprintf("%s; %s, p = %s%s → %s: %s", head, here, pText(float64(d.P)), inside, holds, verdict)
}

// writeShapes writes, for the terminal, whether the shapes of the
// published report the run reproduces hold here (nothing without one).
func writeShapes(w io.Writer, rep *Report) {
	m := rep.reproduced()
	if m == nil {
		return
	}
	fmt.Fprintf(w, "\nShapes of %s (%s), published beside ours in report.md:\n", m.Title, m.Date)
	for _, s := range m.Shapes {
		fmt.Fprintf(w, "  - %s\n", s.Text)
	}
}
