package report

import (
	"fmt"
	"strings"
)

// environmentSection is the provenance of every run (id, status, tool,
// host, machine, kernel) and every scenario's target details and checks.
type environmentSection struct{}

const (
	environmentHeading = "Environment and provenance"
	sysctlsLabel       = "Effective sysctls (read by each agent in its network namespace)"
)

func (environmentSection) markdown(b *strings.Builder, rep *Report) {
	b.WriteString("## " + environmentHeading + "\n\n")
	mdRunTable(b, rep, envTable(rep.Runs))
	b.WriteString("\n")
	for _, sc := range scenarioViews(rep) {
		fmt.Fprintf(b, "- Scenario **%s** (%s): %s\n", mdText(sc.Name), mdText(sc.Kind), mdText(sc.Details))
		if sc.Sysctls != "" {
			fmt.Fprintf(b, "  - %s: %s\n", sysctlsLabel, mdText(sc.Sysctls))
		}
		for _, c := range sc.Checks {
			fmt.Fprintf(b, "  - %s: %s\n", mdText(c.Label), mdText(c.Text))
		}
	}
}

var environmentHTML = sectionTmpl("environment", htmlHeading("h2", "environment", environmentHeading)+"\n"+runTableHTML+`
<ul>
{{range .Scenarios}}<li>Scenario <strong>{{.Name}}</strong> ({{.Kind}}): {{.Details}}{{if .Sysctls}}<br>`+sysctlsLabel+`: {{.Sysctls}}{{end}}{{range .Checks}}<br>{{.Label}}: {{.Text}}{{end}}</li>
{{end}}</ul>

`)

func (environmentSection) html(b *strings.Builder, rep *Report) error {
	return environmentHTML.Execute(b, struct {
		Head      []string
		Rows      []labelled
		Scenarios []scenarioView
	}{runHead(rep)[1:], envTable(rep.Runs), scenarioViews(rep)})
}

// scenarioView is a scenario as the section lists it.
type scenarioView struct {
	Name, Kind, Details, Sysctls string
	Checks                       []CheckLine
}

// scenarioViews are every run's scenarios, named by run when the report
// compares runs.
func scenarioViews(rep *Report) []scenarioView {
	var out []scenarioView
	for _, r := range rep.Runs {
		for _, sc := range r.Scenarios {
			name := sc.Name
			if len(rep.Runs) > 1 {
				name = r.Label + "/" + sc.Name
			}
			out = append(out, scenarioView{name, sc.Kind, detailsText(sc.Details), sc.Sysctls, sc.Checks})
		}
	}
	return out
}

// envTable are the provenance rows, one value per run.
func envTable(runs []RunInfo) []labelled {
	fields := []struct {
		label string
		f     func(RunInfo) string
	}{
		{"Run", func(r RunInfo) string { return r.RunID }},
		{"Status", statusText},
		{"Started", whenText},
		{"Tool", func(r RunInfo) string { return toolText(r.Tool) }},
		{"Host", func(r RunInfo) string { return r.Environment.Hostname }},
		{"Machine", func(r RunInfo) string { return machineText(r.Environment) }},
		{"Kernel", func(r RunInfo) string { return kernelText(r.Environment) }},
	}
	var out []labelled
	for _, f := range fields {
		row := labelled{Label: f.label}
		for _, r := range runs {
			row.Cells = append(row.Cells, f.f(r))
		}
		out = append(out, row)
	}
	return out
}
