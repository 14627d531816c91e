package report

import (
	"fmt"
	"strings"
)

// The top of every report answers: a table with one row per answer
// (question · answer in words · effect [CI] · rounds won · verdict), the
// correction it was held to, and the warnings folded into one line with
// their count (listed in full further down). Markdown, HTML and the
// terminal render the same rows.

// answerRow is one answer as the top table shows it.
type answerRow struct {
	Question, Words, Effect, Rounds, Verdict string
	Class                                    string // better, worse or "" (HTML)
}

// answerRows turns the report's answers into table rows.
func answerRows(rep *Report) []answerRow {
	var out []answerRow
	for _, a := range rep.Answers {
		if a.Question == "" && a.Test == "" {
			out = append(out, answerRow{Question: "one scenario", Words: "nothing compared", Verdict: a.Text})
			continue
		}
		q := a.Question
		if q == "" {
			q = fmt.Sprintf("%s %s, %s", a.Placement, a.Test, a.Metric)
		}
		if a.B != "" {
			q += " · " + a.B + " vs " + a.A
		}
		r := answerRow{Question: q, Words: a.Words}
		if isNotMeasured(a) {
			r.Verdict = a.Text[strings.Index(a.Text, "not measured: ")+len("not measured: "):]
			out = append(out, r)
			continue
		}
		switch a.Verdict {
		case VerdictTooFew, VerdictNA, "":
			r.Verdict = a.Text
			if a.Question != "" || a.Test != "" {
				r.Verdict = strings.TrimSpace(a.Text[strings.LastIndex(a.Text, ": ")+1:])
			}
			out = append(out, r)
			continue
		}
		r.Effect = effectText(float64(a.DeltaPct), float64(a.Lo), float64(a.Hi), float64(a.Coverage))
		if a.Rounds > 0 {
			r.Rounds = fmt.Sprintf("%d of %d", a.RoundsWon, a.Rounds)
		}
		r.Verdict = answerVerdict(a)
		if a.Verdict == VerdictSignificant {
			r.Class = "worse"
			if strings.HasSuffix(a.Words, "is better") {
				r.Class = "better"
			}
		}
		out = append(out, r)
	}
	return out
}

// answerVerdict is the verdict column of an answer: its line after the
// effect and rounds.
func answerVerdict(a Answer) string {
	if i := strings.Index(a.Text, " rounds; "); i >= 0 && a.Rounds > 0 {
		return a.Text[i+len(" rounds; "):]
	}
	if i := strings.Index(a.Text, "); "); i >= 0 {
		return a.Text[i+len("); "):]
	}
	return a.Verdict
}

// correctionLines say how the answers' verdicts were held together: the
// questions' family, then the exploratory rest.
func correctionLines(rep *Report) []string {
	var out []string
	if s := rep.QuestionsFDR.Sentence(); s != "" {
		out = append(out, s)
	}
	if s := rep.FDR.Sentence(); s != "" {
		out = append(out, s)
	}
	if s := notMeasuredLine(rep); s != "" {
		out = append(out, s)
	}
	return out
}

// warningsLine folds the warnings into one line with their count.
func warningsLine(n int) string {
	switch n {
	case 0:
		return ""
	case 1:
		return "1 warning, listed under Warnings below."
	}
	return fmt.Sprintf("%d warnings, listed under Warnings below.", n)
}

// glanceLead opens the at-a-glance table: what a cell is, at the level
// the report's intervals have (stricter than 95% for --rounds auto).
func glanceLead(rep *Report) string {
	s := fmt.Sprintf("Median over rounds (%.3g%% CI).", 100*rep.Options.Level)
	if len(rep.Runs) == 1 {
		if a := rep.Runs[0].Plan.Auto; a != nil {
			stopped := a.Stopped
			if stopped == "" {
				stopped = "stopped before the questions were clear (the run did not complete)"
			}
			s += fmt.Sprintf(" Rounds until the questions were clear (--rounds auto:%d): %s; every interval and verdict is at the %.3g%% level of each look, "+
				"so that looking after every round keeps the chance of a false verdict at 5%%.", a.Max, stopped, 100*a.Level)
		}
	}
	return s
}
