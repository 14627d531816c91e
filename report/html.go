package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"strings"
)

//go:embed report.html.tmpl
var htmlSource string

// htmlTmpl is parsed once; html/template escapes every value for its
// context (text, attribute), so names from results cannot inject markup.
var htmlTmpl = template.Must(template.New("report").Parse(htmlSource))

// HTML writes the report as one self-contained page: inline CSS and SVG,
// no script, no external reference.
func HTML(w io.Writer, rep *Report) error {
	v := newHTMLView(rep)
	var err error
	v.PolicyScale = htmlPolicyScale(rep.PolicyScale)
	v.Churn = htmlChurn(rep.Churn)
	v.FlameGraphs = htmlFlameGraphs(rep.FlameGraphs)
	if v.ServiceScale, err = htmlServiceScale(rep.ServiceScale); err != nil {
		return err
	}
	return htmlTmpl.Execute(w, v)
}

type htmlView struct {
	Title     string
	Warnings  []string
	RunHead   []string
	EnvRows   []labelled
	Scenarios []scenarioView
	PlanRows  []labelled
	Twins     []string // a run of twins on one target: design, parts, proofs
	Columns   []colView
	Multi     bool
	FDR       string      // the false-discovery sentence
	Answers   []answerRow // one row per answer, at the top
	// Corrections say how the answers were held together; WarningsLine
	// folds the warnings into one line (listed in full further down).
	Corrections  []string
	WarningsLine string
	Baseline     string
	// WinnerHead heads the glance table's last column (winnerHead).
	WinnerHead string
	Glance     []glanceView
	Charts     []chart
	Sections   []sectionView
	Method     string
	GlanceLead string // what a cell is (glanceLead)
	// ServiceScale is the rendered Service-scale section (servicescale_render.go).
	ServiceScale template.HTML
	// PolicyScale is the rendered policy-scale section (policyscale.go).
	PolicyScale template.HTML
	// Churn is the rendered churn section (churn.go).
	Churn template.HTML
	// FlameGraphs is the rendered flame-graph section (flamegraph.go).
	FlameGraphs template.HTML
}

type labelled struct {
	Label string
	Cells []string
}

type scenarioView struct {
	Name, Kind, Details, Sysctls string
	Checks                       []CheckLine
}

type colView struct{ Label, Colour string }

type cellView struct{ Text, Class string }

type glanceView struct {
	Test, Placement, Metric string
	Cells                   []cellView
	Winner                  cellView
}

type sectionView struct {
	ID, Test, Placement, About, Control, Samples string
	Head                                         []string
	Rows                                         []rowView
	Warnings                                     []string
	CPU                                          []string
}

type rowView struct {
	Metric string
	Cells  []cellView // values, then deltas vs baseline, then winner
}

func newHTMLView(rep *Report) htmlView {
	v := htmlView{Title: rep.Title, Warnings: rep.Warnings, Multi: len(rep.Columns) > 1, Baseline: rep.Baseline, WinnerHead: winnerHead(rep.Columns), FDR: rep.FDR.Sentence(), Answers: answerRows(rep),
		Corrections: correctionLines(rep), WarningsLine: warningsLine(len(rep.Warnings)),
		Method: methodText + rep.WinnerRule, GlanceLead: glanceLead(rep)}
	for _, r := range rep.Runs {
		v.RunHead = append(v.RunHead, r.Label)
		for _, sc := range r.Scenarios {
			name := sc.Name
			if len(rep.Runs) > 1 {
				name = r.Label + "/" + sc.Name
			}
			v.Scenarios = append(v.Scenarios, scenarioView{name, sc.Kind, detailsText(sc.Details), sc.Sysctls, sc.Checks})
		}
	}
	labels, vals := envRows(rep.Runs)
	for i, l := range labels {
		v.EnvRows = append(v.EnvRows, labelled{l, vals[i]})
	}
	for i, pr := range planRows(rep.Runs[0].Plan) {
		row := labelled{Label: pr[0]}
		for _, r := range rep.Runs {
			row.Cells = append(row.Cells, planRows(r.Plan)[i][1])
		}
		v.PlanRows = append(v.PlanRows, row)
	}
	for _, r := range rep.Runs {
		v.Twins = append(v.Twins, r.Twins...)
	}
	for i, c := range rep.Columns {
		v.Columns = append(v.Columns, colView{c.Label, colour(i)})
	}
	level := rep.Options.Level
	for _, g := range rep.Glance {
		gv := glanceView{Test: g.Test, Placement: g.Placement, Metric: metricLabel(g.Row)}
		for _, x := range g.Values {
			gv.Cells = append(gv.Cells, valueCell(x, level))
		}
		gv.Winner = winnerCell(g.Winner)
		v.Glance = append(v.Glance, gv)
	}
	v.Charts = rep.charts()
	for i, sec := range rep.Sections {
		sv := sectionView{ID: fmt.Sprintf("t%d", i+1), Test: sec.Test, Placement: sec.Placement, About: sec.About, Control: sec.Control, Warnings: sec.Warnings, CPU: sec.CPU}
		var sm []string
		for ci, sc := range sec.Samples {
			s := samplesText(sc)
			if v.Multi {
				s = rep.Columns[ci].Label + " " + s
			}
			sm = append(sm, s)
		}
		sv.Samples = strings.Join(sm, "; ")
		sv.Head = append(sv.Head, "Metric")
		for _, c := range rep.Columns {
			sv.Head = append(sv.Head, c.Label)
		}
		for ci := range rep.Columns[1:] {
			sv.Head = append(sv.Head, vsLabel(rep.Columns, ci+1))
		}
		if len(rep.Columns) > 2 {
			sv.Head = append(sv.Head, winnerHead(rep.Columns))
		}
		for _, r := range sec.Metrics {
			rv := rowView{Metric: metricLabel(r)}
			for _, x := range r.Values {
				rv.Cells = append(rv.Cells, valueCell(x, level))
			}
			for _, d := range r.VsBaseline[1:] {
				rv.Cells = append(rv.Cells, deltaCell(d))
			}
			if len(rep.Columns) > 2 {
				rv.Cells = append(rv.Cells, winnerCell(r.Winner))
			}
			sv.Rows = append(sv.Rows, rv)
		}
		v.Sections = append(v.Sections, sv)
	}
	return v
}

func valueCell(x *Value, level float64) cellView {
	if x == nil {
		return cellView{"missing", "num muted"}
	}
	return cellView{cellText(x, level), "num"}
}

func deltaCell(d *Delta) cellView {
	switch {
	case d == nil:
		return cellView{"", "verdict"}
	case d.Better:
		return cellView{d.Text, "verdict better"}
	case d.Worse:
		return cellView{d.Text, "verdict worse"}
	}
	return cellView{d.Text, "verdict muted"}
}

func winnerCell(w *Winner) cellView {
	switch {
	case w == nil:
		return cellView{"", "verdict"}
	case w.Verdict == VerdictSignificant:
		return cellView{w.Text, "verdict win"}
	}
	return cellView{w.Text, "verdict muted"}
}
