package report

import (
	"strconv"
	"strings"
	"time"

	"github.com/cnibench/cnibench/results"
)

// planSection is what each run measured and how (profile, tests,
// placements, rounds, durations, order), and how a run of twins on one
// target was laid out.
type planSection struct{}

const (
	planHeading  = "Plan"
	twinsHeading = "Twins on one target"
)

func (planSection) markdown(b *strings.Builder, rep *Report) {
	b.WriteString("\n## " + planHeading + "\n\n")
	mdRunTable(b, rep, planTable(rep.Runs))
	for _, r := range rep.Runs {
		if len(r.Twins) > 0 {
			b.WriteString("\n### " + twinsHeading + "\n\n")
			mdList(b, r.Twins)
		}
	}
}

var planHTML = sectionTmpl("plan", htmlHeading("h2", "plan", planHeading)+"\n"+runTableHTML+`
{{if .Twins}}`+htmlHeading("h3", "twins", twinsHeading)+`
<ul>{{range .Twins}}<li>{{.}}</li>{{end}}</ul>
{{end}}
`)

func (planSection) html(b *strings.Builder, rep *Report) error {
	var twins []string
	for _, r := range rep.Runs {
		twins = append(twins, r.Twins...)
	}
	return planHTML.Execute(b, struct {
		Head, Twins []string
		Rows        []labelled
	}{runHead(rep)[1:], twins, planTable(rep.Runs)})
}

// planTable is the plans' fields, a row each with a value per run.
func planTable(runs []RunInfo) []labelled {
	var out []labelled
	for i, pr := range planRows(runs[0].Plan) {
		row := labelled{Label: pr[0]}
		for _, r := range runs {
			row.Cells = append(row.Cells, planRows(r.Plan)[i][1])
		}
		out = append(out, row)
	}
	return out
}

// planRows are the plan's fields as label/value pairs.
func planRows(p results.Plan) [][2]string {
	order := p.Order
	if order == "" {
		order = "not recorded"
	}
	return [][2]string{
		{"Profile", p.Profile},
		{"Tests", strings.Join(p.Tests, ", ")},
		{"Placements", strings.Join(p.Placements, ", ")},
		{"Rounds", strconv.Itoa(p.Rounds)},
		{"Duration", time.Duration(p.Duration).String() + " per sample after " + time.Duration(p.Warmup).String() + " warmup"},
		{"Order", order},
		{"Streams (*_MULTI)", strconv.Itoa(p.Streams)},
		{"RR mode", string(p.Mode)},
	}
}
