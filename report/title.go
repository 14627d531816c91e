package report

import (
	"fmt"
	"strings"
)

// titleSection heads the report with its title.
type titleSection struct{}

func (titleSection) markdown(b *strings.Builder, rep *Report) {
	fmt.Fprintf(b, "# %s\n\n", mdText(rep.Title))
}

var titleHTML = sectionTmpl("title", "<h1>{{.}}</h1>\n")

func (titleSection) html(b *strings.Builder, rep *Report) error {
	return titleHTML.Execute(b, rep.Title)
}

// title names the profile and its question, where the run answers it
// (asked: some of the profile's questions were found in the run), else
// the scenarios it compared.
func title(rep *Report, asked bool) string {
	if len(rep.Runs) == 1 {
		r := rep.Runs[0]
		what := ""
		if asked {
			what = r.Plan.Ask
		}
		if what == "" {
			var names []string
			for _, sc := range r.Scenarios {
				names = append(names, sc.Name)
			}
			what = strings.Join(names, " vs ")
		}
		switch {
		case r.Plan.Profile != "" && what != "":
			return "cnibench " + r.Plan.Profile + ": " + what
		case what != "":
			return "cnibench: " + what
		}
		return "cnibench run " + r.RunID
	}
	var ls []string
	for _, r := range rep.Runs {
		ls = append(ls, r.Label)
	}
	return "cnibench comparison: " + strings.Join(ls, " vs ")
}
