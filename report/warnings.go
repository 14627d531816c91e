package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/cnibench/cnibench/results"
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

// runWarnings flags runs that did not complete, plans that differ between
// compared runs, and runs with too few rounds for any verdict.
func runWarnings(rep *Report, opt Options) []string {
	var w []string
	for _, r := range rep.Runs {
		if r.Status != results.StatusComplete {
			msg := fmt.Sprintf("run %s is %s", r.Label, r.Status)
			if r.Error != "" {
				msg += " (" + r.Error + ")"
			}
			w = append(w, msg+": only its completed samples are reported")
		}
		if r.Teardown != "" {
			w = append(w, fmt.Sprintf("run %s: teardown failed (%s): its samples stand, but the lab or cluster may hold leftovers (cnibench lab down, cnibench k8s cleanup)", r.Label, r.Teardown))
		}
		for _, n := range r.Notes {
			w = append(w, "run "+r.Label+": "+squash(n))
		}
		if r.Plan.Rounds > 0 && r.Plan.Rounds < opt.MinSamples && len(rep.Columns) > 1 {
			w = append(w, fmt.Sprintf("run %s has %d round(s): a verdict needs at least %d per column, so no difference in it is judged (use --rounds %d or more)",
				r.Label, r.Plan.Rounds, opt.MinSamples, max(opt.MinSamples, 5)))
		}
	}
	if len(rep.Runs) > 1 {
		base := rep.Runs[0].Plan
		for _, r := range rep.Runs[1:] {
			p := r.Plan
			var diffs []string
			if p.Duration != base.Duration {
				diffs = append(diffs, fmt.Sprintf("duration %s vs %s", time.Duration(base.Duration), time.Duration(p.Duration)))
			}
			if p.Warmup != base.Warmup {
				diffs = append(diffs, fmt.Sprintf("warmup %s vs %s", time.Duration(base.Warmup), time.Duration(p.Warmup)))
			}
			if p.Mode != base.Mode {
				diffs = append(diffs, fmt.Sprintf("mode %s vs %s", base.Mode, p.Mode))
			}
			if p.Streams != base.Streams {
				diffs = append(diffs, fmt.Sprintf("streams %d vs %d", base.Streams, p.Streams))
			}
			if len(diffs) > 0 {
				w = append(w, fmt.Sprintf("plans differ between %s and %s (%s): compare with care", rep.Runs[0].Label, r.Label, strings.Join(diffs, ", ")))
			}
		}
	}
	return w
}

// suspectSamples lifts to the top of the report what makes a section's
// numbers suspect, so it is not found only deep in the test sections:
// saturated clients, local ports exhausted, stalled flows.
func suspectSamples(sec Section, cols []Column) []string {
	var out []string
	for i, sc := range sec.Samples {
		if sc == nil {
			continue
		}
		var what []string
		if sc.ClientSaturated > 0 {
			what = append(what, fmt.Sprintf("client CPU saturated in %d of %d samples (the rate may be the client's limit)", sc.ClientSaturated, sc.OK+sc.Failed))
		}
		if sc.PortExhausted > 0 {
			what = append(what, fmt.Sprintf("the client ran out of local ports in %d samples", sc.PortExhausted))
		}
		if sc.Stalled > 0 {
			what = append(what, fmt.Sprintf("a flow stalled for a second or more in %d samples", sc.Stalled))
		}
		if len(what) > 0 {
			out = append(out, fmt.Sprintf("%s %s, %s: %s", sec.Test, sec.Placement, cols[i].Label, strings.Join(what, "; ")))
		}
	}
	return out
}
