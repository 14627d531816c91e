package report

import (
	"fmt"
	"strings"
)

// The warnings are in two places: folded into one line with their count
// under the answers (warningsLineSection), which links to the list after
// the at-a-glance table (warningsSection).

// warningsHeading names the list, and the line points to it by name.
const warningsHeading = "Warnings"

// warningsLine folds the warnings into one line with their count.
func warningsLine(n int) string {
	switch n {
	case 0:
		return ""
	case 1:
		return "1 warning, listed under " + warningsHeading + " below."
	}
	return fmt.Sprintf("%d warnings, listed under %s below.", n, warningsHeading)
}

// warningsLineSection is the warnings' count at the top of the report.
type warningsLineSection struct{}

func (warningsLineSection) markdown(b *strings.Builder, rep *Report) {
	if l := warningsLine(len(rep.Warnings)); l != "" {
		linked := "[" + warningsHeading + "](#warnings) below"
		fmt.Fprintf(b, "> **%s**\n\n", strings.Replace(l, warningsHeading+" below", linked, 1))
	}
}

var warningsLineHTML = sectionTmpl("warnings line", `{{with .}}<div class="warn"><strong><a href="#warnings">{{.}}</a></strong></div>
{{end}}
`)

func (warningsLineSection) html(b *strings.Builder, rep *Report) error {
	return warningsLineHTML.Execute(b, warningsLine(len(rep.Warnings)))
}

// warningsSection lists every warning of the report.
type warningsSection struct{}

func (warningsSection) markdown(b *strings.Builder, rep *Report) {
	if len(rep.Warnings) == 0 {
		return
	}
	b.WriteString("## " + warningsHeading + "\n\n")
	mdList(b, rep.Warnings)
	b.WriteString("\n")
}

var warningsHTML = sectionTmpl("warnings", `{{if .}}`+htmlHeading("h2", "warnings", warningsHeading)+`
<ul class="warnings">
{{range .}}<li>{{.}}</li>
{{end}}</ul>
{{end}}
`)

func (warningsSection) html(b *strings.Builder, rep *Report) error {
	return warningsHTML.Execute(b, rep.Warnings)
}
