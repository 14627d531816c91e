package report

import (
	"fmt"
	"strings"

	"github.com/cnibench/cnibench/results"
)

// VerdictNotMeasured is the verdict of a question whose twin the run could
// not measure (results.Question.NotMeasured): said with its reason, and
// not one of the primary family the questions' verdicts are held in.
const VerdictNotMeasured = "not measured"

// notMeasuredAnswers are the answer lines of a run's questions it did not
// measure, each with why.
func notMeasuredAnswers(run *results.Run) []Answer {
	var out []Answer
	for _, q := range run.Plan.Questions {
		if q.NotMeasured == "" {
			continue
		}
		out = append(out, Answer{Question: q.Ask, Test: q.Test, Placement: q.Placement, Metric: q.Metric, A: q.A, B: q.B,
			Words: VerdictNotMeasured, Verdict: VerdictNotMeasured,
			Text: fmt.Sprintf("%s (%s %s, %s), %s vs %s: not measured: %s (left out of the questions' family)", q.Ask, q.Test, q.Metric, q.Placement, q.B, q.A, q.NotMeasured)})
	}
	return out
}

// notMeasuredLine counts them under the correction lines.
func notMeasuredLine(rep *Report) string {
	n := 0
	for _, a := range rep.Answers {
		if a.Verdict == VerdictNotMeasured {
			n++
		}
	}
	switch n {
	case 0:
		return ""
	case 1:
		return "1 question not measured (its line says why): not counted among the questions."
	}
	return fmt.Sprintf("%d questions not measured (each line says why): not counted among the questions.", n)
}

// twinsLines say how a run of twins on one target was laid out and each
// part's switches and first proof, for the report's notes; nil without.
func twinsLines(run *results.Run) []string {
	tw := run.Twins
	if tw == nil {
		return nil
	}
	out := []string{"Design: " + tw.Design}
	for _, p := range tw.Parts {
		n, failed, proof := 0, 0, ""
		for _, s := range p.Switches {
			if s.Round > 0 {
				n++
			}
			if s.Error != "" {
				failed++
			}
			if proof == "" && s.On && s.Proof != "" {
				proof = s.Proof
			}
		}
		line := fmt.Sprintf("%s (%s): %s; switched %d times during the rounds, every switch proved", p.Part, p.Scenario, p.How, n)
		if failed > 0 {
			line += fmt.Sprintf(" (%d failed)", failed)
		}
		if proof != "" {
			line += "; on: " + proof
		}
		out = append(out, line)
	}
	for _, nm := range tw.NotMeasured {
		out = append(out, fmt.Sprintf("%s: not measured: %s", nm.Part, nm.Reason))
	}
	return out
}

// isNotMeasured tells a not-measured answer's row apart.
func isNotMeasured(a Answer) bool {
	return a.Verdict == VerdictNotMeasured && strings.Contains(a.Text, "not measured: ")
}
