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

// answersSection is the top of the report: the answers table and how its
// verdicts were held together.
type answersSection struct{}

// answersHead heads the answers table in every format.
var answersHead = []string{"Question", "Answer", "Effect (CI)", "Rounds won", "Verdict"}

func (answersSection) markdown(b *strings.Builder, rep *Report) {
	rows := answerRows(rep)
	if len(rows) == 0 {
		return
	}
	b.WriteString("## Answers\n\n")
	mdRow(b, answersHead...)
	mdSep(b, len(answersHead), 0, 0)
	for _, r := range rows {
		mdAnswerRow(b, r)
	}
	b.WriteString("\n")
	for _, l := range correctionLines(rep) {
		b.WriteString(mdText(l) + "\n\n")
	}
}

// mdAnswerRow is one row of the answers table (report.md, report-short.md).
func mdAnswerRow(b *strings.Builder, r answerRow) {
	mdRow(b, mdText(r.Question), mdText(r.Words), mdText(r.Effect), r.Rounds, mdText(r.Verdict))
}

var answersHTML = sectionTmpl("answers", `{{if .Rows}}`+htmlHeading("h2", "answers", "Answers")+`
<table class="answers">
<tr>{{range .Head}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr><td>{{.Question}}</td><td class="{{.Class}}">{{.Words}}</td><td class="num">{{.Effect}}</td><td class="nw">{{.Rounds}}</td><td class="verdict">{{.Verdict}}</td></tr>
{{end}}</table>
{{range .Corrections}}<p class="muted">{{.}}</p>
{{end}}{{end}}`)

func (answersSection) html(b *strings.Builder, rep *Report) error {
	return answersHTML.Execute(b, struct {
		Head, Corrections []string
		Rows              []answerRow
	}{answersHead, correctionLines(rep), answerRows(rep)})
}
