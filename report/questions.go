package report

import (
	"fmt"
	"math"
	"regexp"
	"strings"

	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/stats"
)

// A profile asks questions (results.Plan.Questions): "pod-to-service
// connection rate, ebpf vs iptables". The report answers them first, in
// the orientation asked, and holds their verdicts to a false-discovery
// rate among themselves (the primary family); every other comparison is
// exploratory, in a family of its own. An answer leads with the effect
// and its interval, then the rounds won, then the verdict, and it is the
// very verdict the cell shows (the same comparison, turned round if the
// question asks it the other way).

// Answer is one line of the report's answers: a question's, or for a
// run without questions a headline metric's winner or overhead verdict.
type Answer struct {
	// Question is what was asked in words; "" for an answer that is no
	// declared question (exploratory).
	Question  string `json:"question,omitempty"`
	Test      string `json:"test"`
	Placement string `json:"placement"`
	Metric    string `json:"metric"`
	// B vs A, the orientation of Effect.
	B string `json:"b,omitempty"`
	A string `json:"a,omitempty"`
	// Words is the answer in words ("ebpf is faster", "no difference
	// beyond noise", "inconclusive: more rounds needed").
	Words    string `json:"words,omitempty"`
	DeltaPct Num    `json:"delta_pct"`
	Lo       Num    `json:"ci_lo_pct"`
	Hi       Num    `json:"ci_hi_pct"`
	Coverage Num    `json:"ci_coverage"`
	P        Num    `json:"p"`
	// RoundsWon is in how many of Rounds paired rounds B did better
	// than A (0 and 0 for separate runs).
	RoundsWon int `json:"rounds_won"`
	Rounds    int `json:"rounds"`
	// RoundsNeeded is, for a run with --rounds auto, the round after
	// which the question was first conclusive (0: never, within Max).
	RoundsNeeded int    `json:"rounds_needed,omitempty"`
	AutoMax      int    `json:"auto_max,omitempty"`
	Verdict      string `json:"verdict"`
	// Primary: a declared question, in the primary family.
	Primary bool   `json:"primary"`
	Text    string `json:"text"` // the whole line
}

// question is a declared question located in the report.
type question struct {
	q        results.Question
	index    int // in the plan's Questions
	sec, row int
	a, b     int // column indices
}

// locateQuestions finds each declared question of a single-run report:
// its section, row and columns. A question the run cannot answer (other
// scenarios, tests or placements) is left out.
func locateQuestions(rep *Report, run *results.Run) []question {
	var out []question
	col := func(name string) int {
		for i, c := range rep.Columns {
			if c.Scenario == name {
				return i
			}
		}
		return -1
	}
	for qi, q := range run.Plan.Questions {
		a, b := col(q.A), col(q.B)
		if a < 0 || b < 0 {
			continue
		}
		for si, sec := range rep.Sections {
			if sec.Test != q.Test || sec.Placement != q.Placement {
				continue
			}
			for ri, row := range sec.Metrics {
				if row.Metric == q.Metric {
					out = append(out, question{q: q, index: qi, sec: si, row: ri, a: a, b: b})
				}
			}
		}
	}
	return out
}

// questionKeys are the questions' comparisons as the false-discovery
// control names them.
func questionKeys(qs []question) map[string]bool {
	keys := map[string]bool{}
	for _, q := range qs {
		keys[pairKey(q.sec, q.row, q.a, q.b)] = true
	}
	return keys
}

// questionAnswers answers the located questions from the verdicts as the
// false-discovery control left them.
func questionAnswers(rep *Report, qs []question, auto *results.AutoRounds) []Answer {
	var out []Answer
	for _, q := range qs {
		sec := rep.Sections[q.sec]
		row := sec.Metrics[q.row]
		a := Answer{Question: q.q.Ask, Test: q.q.Test, Placement: q.q.Placement, Metric: q.q.Metric,
			A: rep.Columns[q.a].Label, B: rep.Columns[q.b].Label, Primary: true}
		d, flipped := orientedDelta(rep, row, q.a, q.b)
		if d == nil && row.Better == string(results.Info) {
			a.Verdict = VerdictNA
			a.Text = fmt.Sprintf("%s (%s %s, %s), %s vs %s: %s against %s %s; an informational metric (no better direction), shown, not judged",
				a.Question, a.Test, a.Metric, a.Placement, a.B, a.A, medianText(row.Values[q.b]), medianText(row.Values[q.a]), row.Unit)
			out = append(out, a)
			continue
		}
		if d == nil {
			a.Verdict = VerdictNA
			a.Text = fmt.Sprintf("%s (%s %s, %s), %s vs %s: not compared in this report (%s is compared with %s)",
				a.Question, a.Test, a.Metric, a.Placement, a.B, a.A, a.B, rep.Columns[rep.Columns[q.b].Against].Label)
			out = append(out, a)
			continue
		}
		fillAnswer(&a, rep, row, q.a, q.b, d, flipped)
		a.Words = answerWords(a, row, d)
		a.Text = fmt.Sprintf("%s (%s %s, %s), %s vs %s: ", a.Question, a.Test, a.Metric, a.Placement, a.B, a.A) + answerBody(a, d)
		if auto != nil && q.index < len(auto.ConclusiveAt) {
			a.RoundsNeeded, a.AutoMax = auto.ConclusiveAt[q.index], auto.Max
			min := rep.Options.MinEffectPct
			if !(d.Verdict == VerdictSignificant || (float64(a.Lo) >= -min && float64(a.Hi) <= min)) {
				a.RoundsNeeded = 0 // clear at a look, not as the report judges it in the end
			}
			a.Text += "; " + roundsNeededText(a)
		}
		out = append(out, a)
	}
	return out
}

// fillAnswer copies verdict d of columns a and b (turned round when
// flipped) into the answer, with the rounds b won.
func fillAnswer(an *Answer, rep *Report, row Row, a, b int, d *Delta, flipped bool) {
	an.Verdict, an.P, an.Coverage = d.Verdict, d.P, d.Coverage
	an.DeltaPct, an.Lo, an.Hi = d.DeltaPct, d.Lo, d.Hi
	if flipped {
		an.DeltaPct, an.Lo, an.Hi = invertPct(d.DeltaPct), invertPct(d.Hi), invertPct(d.Lo)
	}
	an.RoundsWon, an.Rounds = roundsWon(row, a, b, rep.Columns[a].Run == rep.Columns[b].Run)
}

// orientedDelta is the row's verdict between columns a and b: b's verdict
// against a, or a's against b turned round (flipped).
func orientedDelta(rep *Report, row Row, a, b int) (d *Delta, flipped bool) {
	if b < len(row.VsBaseline) && row.VsBaseline[b] != nil && rep.Columns[b].Against == a {
		return row.VsBaseline[b], false
	}
	if a < len(row.VsBaseline) && row.VsBaseline[a] != nil && rep.Columns[a].Against == b {
		return row.VsBaseline[a], true
	}
	return nil, false
}

// invertPct turns "b is x% off a" into "a is y% off b" (ratios invert).
func invertPct(x Num) Num {
	return Num((100/(1+float64(x)/100) - 100))
}

// roundsWon counts the paired rounds (the row's common rounds) in which
// b did better than a.
func roundsWon(row Row, a, b int, paired bool) (won, n int) {
	va, vb := row.Values[a], row.Values[b]
	if !paired || va == nil || vb == nil || len(va.Samples) != len(vb.Samples) {
		return 0, 0
	}
	higher := row.Better == string(results.HigherIsBetter)
	for i := range va.Samples {
		x, y := float64(va.Samples[i]), float64(vb.Samples[i])
		if (higher && y > x) || (!higher && y < x) {
			won++
		}
	}
	return won, len(va.Samples)
}

// answerWords says the answer in a few words, in the question's
// orientation.
func answerWords(a Answer, row Row, d *Delta) string {
	switch {
	case d.Verdict == VerdictSignificant:
		up := float64(a.DeltaPct) > 0
		better := up == (row.Better == string(results.HigherIsBetter))
		if better {
			return a.B + " is better"
		}
		return a.B + " is worse"
	case d.Verdict == VerdictInconclusive:
		return "inconclusive: more rounds needed"
	case d.Verdict == VerdictDemoted:
		return "not shown after the correction"
	case strings.HasPrefix(d.Text, "no meaningful difference"):
		return "no change that matters"
	case strings.HasPrefix(d.Text, "a small difference"):
		return "a small difference"
	case d.Verdict == VerdictNoise:
		return "no difference beyond noise"
	}
	return d.Verdict
}

// answerBody is the answer after its head: effect and interval, rounds
// won, then the verdict.
func answerBody(a Answer, d *Delta) string {
	if d.Verdict == VerdictTooFew || d.Verdict == VerdictNA {
		return d.Text
	}
	s := effectText(float64(a.DeltaPct), float64(a.Lo), float64(a.Hi), float64(a.Coverage))
	if a.Rounds > 0 {
		s += fmt.Sprintf(", %s ahead in %d of %d rounds", a.B, a.RoundsWon, a.Rounds)
	}
	s += "; " + verdictWords(d)
	for _, m := range deliveredNothing.FindAllStringSubmatch(d.Text, -1) {
		s += "; " + m[1] // the rounds that delivered nothing, named
	}
	return s
}

// deliveredNothing finds the verdict's notes on rounds that delivered
// nothing ("vxlan delivered nothing in 2 of 7 rounds").
var deliveredNothing = regexp.MustCompile(`(?:; |, )([^;,()]+ delivered nothing in \d+ of \d+ rounds)`)

// effectText is "+38.8% (95% CI +3.9%..+82.5%)".
func effectText(pct, lo, hi, coverage float64) string {
	if !(coverage > 0) {
		coverage = stats.DefaultLevel
	}
	return fmt.Sprintf("%s (%.3g%% CI %s)", stats.SignedPct(pct), 100*coverage, stats.BoundsText(lo, hi))
}

// verdictWords is the verdict part of an answer line: significant or
// not, and why, with the p-value that decided.
func verdictWords(d *Delta) string {
	p := float64(d.P)
	switch {
	case d.Verdict == VerdictSignificant:
		return fmt.Sprintf("significant (p = %s)", pText(p))
	case strings.Contains(d.Text, "not significant"):
		return d.Text[strings.Index(d.Text, "not significant"):]
	case d.Verdict == VerdictInconclusive:
		return fmt.Sprintf("inconclusive, more rounds needed (p = %s)", pText(p))
	case strings.HasPrefix(d.Text, "no meaningful difference"):
		return fmt.Sprintf("within the minimum effect: no change that matters (p = %s)", pText(p))
	case strings.HasPrefix(d.Text, "a small difference"):
		return fmt.Sprintf("a small difference, not shown beyond the minimum effect (p = %s)", pText(p))
	}
	if math.IsNaN(p) {
		return d.Verdict
	}
	return fmt.Sprintf("no difference beyond noise (p = %s)", pText(p))
}

// roundsNeededText says after how many rounds a question of a --rounds
// auto run was clear.
func roundsNeededText(a Answer) string {
	if a.RoundsNeeded == 0 {
		return fmt.Sprintf("not conclusive within %d rounds", a.AutoMax)
	}
	return fmt.Sprintf("conclusive after %d rounds", a.RoundsNeeded)
}

// orientWinners turns the winner cells that compare a question's two
// columns round to the question's orientation (b vs a as asked, "ebpf vs
// iptables" even where iptables had the better median), in every row, so
// the glance table, the sections and the terminal read the run's
// comparison one way, as the answers do. The winner's label (the
// significantly better column) stays.
func orientWinners(rep *Report, qs []question) {
	asked := map[[2]int]bool{}
	for _, q := range qs {
		asked[[2]int{q.a, q.b}] = true
	}
	for si := range rep.Sections {
		for ri := range rep.Sections[si].Metrics {
			row := rep.Sections[si].Metrics[ri]
			w := row.Winner
			if w == nil || w.Verdict == VerdictNA || w.Verdict == VerdictTooFew {
				continue
			}
			a, b := w.pair[1], w.pair[0] // as asked when the question is (best, runner-up)
			if !asked[[2]int{a, b}] {
				if a, b = w.pair[0], w.pair[1]; !asked[[2]int{a, b}] {
					continue
				}
			}
			d, flipped := orientedDelta(rep, row, a, b)
			if d == nil {
				continue
			}
			an := Answer{A: rep.Columns[a].Label, B: rep.Columns[b].Label}
			fillAnswer(&an, rep, row, a, b, d, flipped)
			w.DeltaPct, w.Lo, w.Hi, w.Coverage = an.DeltaPct, an.Lo, an.Hi, an.Coverage
			w.Best, w.RunnerUp, w.AsAsked, w.pair = an.B, an.A, true, [2]int{a, b}
			w.Text = an.B + " vs " + an.A + ": " + answerBody(an, d)
		}
	}
}

// medianText is a column's median as the answer prints it ("–" without a
// value).
func medianText(v *Value) string {
	if v == nil || v.N == 0 {
		return "–"
	}
	return fmtNum(float64(v.Median))
}
