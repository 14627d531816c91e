package report

import (
	"fmt"
	"strings"
)

// glanceSection is one row per test, placement and headline metric, a
// column per scenario (or run × scenario), and the winner of each row.
type glanceSection struct{}

const (
	glanceHeading  = "At a glance"
	winnerSentence = "Winner: the best median against the runner-up, named only when the difference is significant."
	arrowsSentence = "↑ higher is better, ↓ lower is better."
	noResult       = "No test produced a result."
)

func (glanceSection) markdown(b *strings.Builder, rep *Report) {
	v := newGlanceView(rep)
	b.WriteString("\n## " + glanceHeading + "\n\n")
	if v.Multi {
		fmt.Fprintf(b, "%s Baseline: **%s**. %s %s\n\n", v.Lead, mdText(v.Baseline), winnerSentence, arrowsSentence)
	} else {
		fmt.Fprintf(b, "%s %s\n\n", v.Lead, arrowsSentence)
	}
	if v.FDR != "" {
		b.WriteString(mdText(v.FDR) + "\n\n")
	}
	mdRow(b, v.Head...)
	mdSep(b, len(v.Head), 3, 3+len(rep.Columns))
	for _, g := range v.Rows {
		mdRow(b, append([]string{g.Test, g.Placement, g.Metric}, cellTexts(g.Cells)...)...)
	}
	if len(v.Rows) == 0 {
		b.WriteString("\n" + noResult + "\n")
	}
	b.WriteString("\n")
}

var glanceHTML = sectionTmpl("glance", htmlHeading("h2", "glance", glanceHeading)+`
<p>{{.Lead}} {{if .Multi}}Baseline: <strong>{{.Baseline}}</strong>. `+winnerSentence+` {{end}}`+arrowsSentence+`</p>
{{with .FDR}}<p>{{.}}</p>{{end}}
<table>
<tr>{{range .Head}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr><td class="nw">{{.Test}}</td><td class="nw">{{.Placement}}</td><td>{{.Metric}}</td>{{range .Cells}}<td class="{{.Class}}">{{.Text}}</td>{{end}}</tr>
{{else}}<tr><td colspan="3">`+noResult+`</td></tr>
{{end}}</table>

`)

func (glanceSection) html(b *strings.Builder, rep *Report) error {
	return glanceHTML.Execute(b, newGlanceView(rep))
}

// glanceView is the section as both formats show it.
type glanceView struct {
	Lead, Baseline, FDR string
	Multi               bool // several columns: a baseline and a winner
	Head                []string
	Rows                []glanceRowView
}

// glanceRowView is a row: its values, then its winner when there are
// several columns.
type glanceRowView struct {
	Test, Placement, Metric string
	Cells                   []cellView
}

// notPlannedText is a glance cell of a scenario the run's plan never had
// measure that test (results.Plan.ScenarioTests).
const notPlannedText = "not planned"

func newGlanceView(rep *Report) glanceView {
	v := glanceView{Lead: glanceLead(rep), Baseline: rep.Baseline, FDR: rep.FDR.Sentence(), Multi: len(rep.Columns) > 1,
		Head: []string{"Test", "Placement", "Metric"}}
	for _, c := range rep.Columns {
		v.Head = append(v.Head, c.Label)
	}
	if v.Multi {
		v.Head = append(v.Head, winnerHead(rep.Columns))
	}
	for _, g := range rep.Glance {
		r := glanceRowView{Test: g.Test, Placement: g.Placement, Metric: metricLabel(g.Row)}
		for ci, x := range g.Values {
			if x == nil && !rep.Columns[ci].planned(g.Test) {
				// Never to be measured there: not "missing".
				r.Cells = append(r.Cells, cellView{notPlannedText, "num muted"})
				continue
			}
			r.Cells = append(r.Cells, valueCell(x, rep.Options.Level))
		}
		if v.Multi {
			r.Cells = append(r.Cells, winnerCell(g.Winner))
		}
		v.Rows = append(v.Rows, r)
	}
	return v
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
