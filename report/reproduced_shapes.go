package report

import (
	"fmt"
	"io"
	"math"

	"github.com/cnibench/cnibench/published"
	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/stats"
)

// A shape is B ÷ A for two of the original's cells (results.Shape): found
// in the run, judged by the run's paired verdict once the false-discovery
// control has left it final.

// reproducedDeltas are the verdicts the section computed itself, for the
// false-discovery control (fdr.go).
func reproducedDeltas(rep *Report) []*Delta {
	var out []*Delta
	if m := rep.reproduced(); m != nil {
		for _, s := range m.Shapes {
			if s.own && s.Delta != nil {
				out = append(out, s.Delta)
			}
		}
	}
	return out
}

// finishReproduced words the shapes once the false-discovery control has
// left their verdicts final.
func finishReproduced(rep *Report) {
	m := rep.reproduced()
	if m == nil {
		return
	}
	for i := range m.Shapes {
		s := &m.Shapes[i]
		if s.Holds == ShapeNotJudged {
			continue
		}
		s.Holds, s.Text = judgeShape(s)
	}
}

// shapeLine finds the run's verdict on a shape: B against A.
func shapeLine(rep *Report, run *results.Run, spec *results.Reproduction, pub published.Report, s results.Shape) ShapeLine {
	nan := Num(math.NaN())
	l := ShapeLine{Ask: s.Ask, PublishedRatio: nan, EvenWithinPct: Num(s.EvenWithinPct), Holds: ShapeNotJudged, EffectPct: nan, Lo: nan, Hi: nan}
	if s.Change {
		return changeShapeLine(rep, run, spec, pub, s, l)
	}
	pa, okA := pub.Cell(s.A.Row, s.A.Column)
	pb, okB := pub.Cell(s.B.Row, s.B.Column)
	if !okA || !okB || pa.Value == 0 {
		l.Text = s.Ask + ": not judged: the original published no ratio for it"
		return l
	}
	if pb.Unit != pa.Unit {
		v, ok := published.Convert(pb.Value, pb.Unit, pa.Unit)
		if !ok {
			l.Text = fmt.Sprintf("%s: not judged: the published cells are in %s and %s", s.Ask, pa.Unit, pb.Unit)
			return l
		}
		pb.Value = v
	}
	ca, cb := specCell(spec, s.A), specCell(spec, s.B)
	la, lb := locate(rep, run, ca), locate(rep, run, cb)
	l.PublishedRatio = Num(pb.Value / pa.Value)
	if s.Reciprocal {
		l.note = fmt.Sprintf(" in our metric, the inverse of the published one (published %.4g ÷ %.4g = %.3g×)", pb.Value, pa.Value, pb.Value/pa.Value)
		l.PublishedRatio = Num(pa.Value / pb.Value)
	}
	if la.why == "" && complemented(run, rep.Columns[la.col].Scenario, ca) && pa.Value < 100 {
		// A loss is judged on the delivered share (results.Metric
		// Complement), so the published ratio is of the same shares.
		l.note = fmt.Sprintf(" of the delivered share (%.4g%% → %.4g%%, as the report judges loss)", 100-pa.Value, 100-pb.Value)
		l.PublishedRatio = Num((100 - pb.Value) / (100 - pa.Value))
	}
	switch {
	case la.why != "":
		l.Text = fmt.Sprintf("%s: not judged: %s / %s %s", s.Ask, s.A.Row, s.A.Column, la.why)
		return l
	case lb.why != "":
		l.Text = fmt.Sprintf("%s: not judged: %s / %s %s", s.Ask, s.B.Row, s.B.Column, lb.why)
		return l
	case la.sec == lb.sec && la.row == lb.row:
		// Two scenarios of one measurement: the row's own verdict.
		d, flipped := orientedDelta(rep, rep.Sections[la.sec].Metrics[la.row], la.col, lb.col)
		if d == nil {
			l.Text = fmt.Sprintf("%s: not judged: this report compares %s with %s, not with %s", s.Ask,
				rep.Columns[lb.col].Label, rep.Columns[rep.Columns[lb.col].Against].Label, rep.Columns[la.col].Label)
			return l
		}
		l.Delta, l.flipped = d, flipped
	case la.col == lb.col:
		// Two measurements of one scenario, taken in the same rounds:
		// compared round by round as the report compares two columns.
		ma, mb := shapeMetric(run, rep.Columns[la.col].Scenario, ca), shapeMetric(run, rep.Columns[lb.col].Scenario, cb)
		if ma == nil || mb == nil {
			l.Text = s.Ask + ": not judged: a measurement has no values"
			return l
		}
		// Two Service counts are measured apart (the rounds, then the
		// sweep's step): compared unpaired, as the sweep's own table.
		paired := ca.Services == cb.Services
		if !paired {
			l.note = " (the two Service counts measured apart: unpaired)"
		}
		l.Delta, l.own = delta(ma, mb, rep.Options, paired), true
	default:
		l.Text = fmt.Sprintf("%s: not judged: it compares two measurements of two scenarios, which no paired verdict of this run covers", s.Ask)
		return l
	}
	l.Holds = ""
	return l
}

// changeShapeLine finds the run's verdict on a shape whose published
// figure is one cell's change in % (results.Shape.Change): the cell's
// column against the same datapath without the added part.
func changeShapeLine(rep *Report, run *results.Run, spec *results.Reproduction, pub published.Report, s results.Shape, l ShapeLine) ShapeLine {
	p, ok := pub.Cell(s.A.Row, s.A.Column)
	if !ok || p.Unit != "%" {
		l.Text = s.Ask + ": not judged: the original published no change in % for it"
		return l
	}
	l.PublishedRatio = Num(1 + p.Value/100)
	at := locate(rep, run, specCell(spec, s.A))
	if at.why != "" {
		l.Text = fmt.Sprintf("%s: not judged: %s / %s %s", s.Ask, s.A.Row, s.A.Column, at.why)
		return l
	}
	col, d := partChange(rep, at)
	if d == nil {
		l.Text = fmt.Sprintf("%s: not judged: this run has no column of %s's datapath without the part (--scenarios)", s.Ask, col.Label)
		return l
	}
	l.note = fmt.Sprintf(" for %s against %s", col.Label, rep.Columns[col.Against].Label)
	l.Delta, l.Holds = d, ""
	return l
}

// complemented tells whether a mapped cell's metric is judged on its
// complement (100 − loss).
func complemented(run *results.Run, scenario string, c results.ReproducedCell) bool {
	m := shapeMetric(run, scenario, c)
	return m != nil && m.Complement != ""
}

// specCell is the reproduction's mapping of a published cell.
func specCell(spec *results.Reproduction, ref results.CellRef) results.ReproducedCell {
	for _, c := range spec.Cells {
		if c.Row == ref.Row && c.Column == ref.Column {
			return c
		}
	}
	return results.ReproducedCell{Row: ref.Row, Column: ref.Column, NoEquivalent: "the profile does not map this cell"}
}

// shapeMetric is a mapped cell's metric in the run, every round of it.
func shapeMetric(run *results.Run, scenario string, c results.ReproducedCell) *results.Metric {
	for _, r := range run.Results {
		if r.Scenario != scenario || r.Test != c.Test || r.Placement.Name() != c.Placement || r.Services != c.Services {
			continue
		}
		s, err := results.Metrics(r)
		if err != nil {
			return nil
		}
		return s.Metric(c.Metric)
	}
	return nil
}

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
	head := fmt.Sprintf("%s: published %.3g×%s (%s)", s.Ask, float64(s.PublishedRatio), s.note, stats.SignedPct(pubPct))
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
