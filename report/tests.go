package report

import (
	"fmt"
	"strings"
)

// testsSection is one part per test and placement: its samples, every
// metric in every column with its verdicts, where the CPU went, and its
// warnings.
type testsSection struct{}

const (
	samplesLabel = "Samples"
	cpuLead      = "Where the CPU went:"
)

func (testsSection) markdown(b *strings.Builder, rep *Report) {
	for _, sec := range testViews(rep) {
		fmt.Fprintf(b, "## %s · %s\n\n", mdText(sec.Test), mdText(sec.Placement))
		if sec.About != "" {
			fmt.Fprintf(b, "%s.\n\n", mdText(sec.About))
		}
		if sec.Control != "" {
			fmt.Fprintf(b, "*%s.*\n\n", mdText(sec.Control))
		}
		fmt.Fprintf(b, "%s: %s.\n\n", samplesLabel, mdText(sec.Samples))
		if len(sec.Rows) > 0 {
			mdRow(b, sec.Head...)
			mdSep(b, len(sec.Head), 1, 1+sec.Shown)
			for _, r := range sec.Rows {
				mdRow(b, append([]string{r.Metric}, cellTexts(r.Cells)...)...)
			}
			b.WriteString("\n")
		}
		if len(sec.CPU) > 0 {
			b.WriteString(cpuLead + "\n\n")
			mdList(b, sec.CPU)
			b.WriteString("\n")
		}
		for _, x := range sec.Warnings {
			fmt.Fprintf(b, "- **Warning:** %s\n", mdText(x))
		}
		if len(sec.Warnings) > 0 {
			b.WriteString("\n")
		}
	}
}

var testsHTML = sectionTmpl("tests", htmlHeading("h2", "tests", "Tests")+`
{{range .}}<h3 id="{{.ID}}">{{.Test}} · {{.Placement}}</h3>
{{if .About}}<p class="about">{{.About}}.</p>{{end}}
{{if .Control}}<p class="about"><em>{{.Control}}.</em></p>{{end}}
<p class="muted">`+samplesLabel+`: {{.Samples}}.</p>
{{if .Rows}}<table>
<tr>{{range .Head}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr><td>{{.Metric}}</td>{{range .Cells}}<td class="{{.Class}}">{{.Text}}</td>{{end}}</tr>
{{end}}</table>{{end}}
{{if .CPU}}<p>`+cpuLead+`</p><ul class="cpu">{{range .CPU}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{if .Warnings}}<ul class="warnings">{{range .Warnings}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{end}}
`)

func (testsSection) html(b *strings.Builder, rep *Report) error {
	return testsHTML.Execute(b, testViews(rep))
}

// testView is a test's part as both formats show it.
type testView struct {
	ID, Test, Placement, About, Control, Samples string
	Head                                         []string
	Shown                                        int // value columns shown (shownColumns)
	Rows                                         []rowView
	Warnings                                     []string
	CPU                                          []string
}

type rowView struct {
	Metric string
	Cells  []cellView // values, then deltas vs baseline, then winner
}

func testViews(rep *Report) []testView {
	var out []testView
	for i, sec := range rep.Sections {
		shown := shownColumns(sec, rep.Columns)
		v := testView{ID: fmt.Sprintf("t%d", i+1), Test: sec.Test, Placement: sec.Placement, About: sec.About, Control: sec.Control,
			Warnings: sec.Warnings, CPU: sec.CPU, Samples: samplesLine(sec, rep.Columns, shown), Head: testHead(rep.Columns, shown)}
		for _, s := range shown {
			if s {
				v.Shown++
			}
		}
		for _, r := range sec.Metrics {
			v.Rows = append(v.Rows, metricRow(r, rep, shown))
		}
		out = append(out, v)
	}
	return out
}

// shownColumns are the columns a test's section shows: every one but
// those whose run never planned the test in their scenario (Column.planned)
// and so have no result for it.
func shownColumns(sec Section, cols []Column) []bool {
	shown := make([]bool, len(cols))
	for ci, c := range cols {
		shown[ci] = ci >= len(sec.Samples) || sec.Samples[ci] != nil || c.planned(sec.Test)
	}
	return shown
}

// samplesLine is each shown column's sample counts, named when there are
// several columns.
func samplesLine(sec Section, cols []Column, shown []bool) string {
	var sm []string
	for ci, sc := range sec.Samples {
		if !shown[ci] {
			continue
		}
		s := samplesText(sc)
		if len(cols) > 1 {
			s = cols[ci].Label + " " + s
		}
		sm = append(sm, s)
	}
	return strings.Join(sm, "; ")
}

// testHead heads a test's table: the metric, the shown columns, each
// one's comparison, and the winner of three or more.
func testHead(cols []Column, shown []bool) []string {
	head := []string{"Metric"}
	for ci, c := range cols {
		if shown[ci] {
			head = append(head, c.Label)
		}
	}
	for ci := 1; ci < len(cols); ci++ {
		if shown[ci] {
			head = append(head, vsLabel(cols, ci))
		}
	}
	if len(cols) > 2 {
		head = append(head, winnerHead(cols))
	}
	return head
}

func metricRow(r Row, rep *Report, shown []bool) rowView {
	v := rowView{Metric: metricLabel(r)}
	for ci, x := range r.Values {
		if shown[ci] {
			v.Cells = append(v.Cells, valueCell(x, rep.Options.Level))
		}
	}
	for ci := 1; ci < len(r.VsBaseline); ci++ {
		if shown[ci] {
			v.Cells = append(v.Cells, deltaCell(r.VsBaseline[ci]))
		}
	}
	if len(rep.Columns) > 2 {
		v.Cells = append(v.Cells, winnerCell(r.Winner))
	}
	return v
}
