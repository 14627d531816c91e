package report

import (
	"fmt"
	"io"
	"strings"
)

// Markdown writes the report as GitHub-flavoured Markdown: provenance,
// plan, the at-a-glance table, then every test with all its metrics.
// Long on purpose: the report's sections in the order the reader sees them, one place to reorder (issue 13 reshapes them).
func Markdown(w io.Writer, rep *Report) error {
	b := &strings.Builder{}
	fmt.Fprintf(b, "# %s\n\n", mdText(rep.Title))
	if rows := answerRows(rep); len(rows) > 0 {
		b.WriteString("## Answers\n\n")
		mdRow(b, "Question", "Answer", "Effect (CI)", "Rounds won", "Verdict")
		mdSep(b, 5, 0, 0)
		for _, r := range rows {
			mdRow(b, mdText(r.Question), mdText(r.Words), mdText(r.Effect), r.Rounds, mdText(r.Verdict))
		}
		b.WriteString("\n")
		for _, l := range correctionLines(rep) {
			b.WriteString(mdText(l) + "\n\n")
		}
	}
	if l := warningsLine(len(rep.Warnings)); l != "" {
		fmt.Fprintf(b, "> **%s**\n\n", strings.Replace(l, "Warnings below", "[Warnings](#warnings) below", 1))
	}

	b.WriteString("## Environment and provenance\n\n")
	labels, vals := envRows(rep.Runs)
	head := []string{""}
	for _, r := range rep.Runs {
		head = append(head, r.Label)
	}
	mdRow(b, head...)
	mdSep(b, len(head), 0, 0)
	for i, l := range labels {
		mdRow(b, append([]string{l}, vals[i]...)...)
	}
	b.WriteString("\n")
	for _, r := range rep.Runs {
		for _, sc := range r.Scenarios {
			name := sc.Name
			if len(rep.Runs) > 1 {
				name = r.Label + "/" + sc.Name
			}
			fmt.Fprintf(b, "- Scenario **%s** (%s): %s\n", mdText(name), mdText(sc.Kind), mdText(detailsText(sc.Details)))
			if sc.Sysctls != "" {
				fmt.Fprintf(b, "  - Effective sysctls (read by each agent in its network namespace): %s\n", mdText(sc.Sysctls))
			}
			for _, c := range sc.Checks {
				fmt.Fprintf(b, "  - %s: %s\n", mdText(c.Label), mdText(c.Text))
			}
		}
	}
	b.WriteString("\n## Plan\n\n")
	mdRow(b, head...)
	mdSep(b, len(head), 0, 0)
	for i, pr := range planRows(rep.Runs[0].Plan) {
		row := []string{pr[0]}
		for _, r := range rep.Runs {
			row = append(row, planRows(r.Plan)[i][1])
		}
		mdRow(b, row...)
	}
	for _, r := range rep.Runs {
		if len(r.Twins) > 0 {
			b.WriteString("\n### Twins on one target\n\n")
			for _, l := range r.Twins {
				fmt.Fprintf(b, "- %s\n", mdText(l))
			}
		}
	}

	if rep.ServiceScale != nil {
		markdownServiceScale(b, rep.ServiceScale)
	}
	if rep.PolicyScale != nil {
		markdownPolicyScale(b, rep.PolicyScale)
	}
	if rep.Churn != nil {
		markdownChurn(b, rep.Churn)
	}
	b.WriteString("\n## At a glance\n\n")
	multi := len(rep.Columns) > 1
	if multi {
		fmt.Fprintf(b, "%s Baseline: **%s**. Winner: the best median against the runner-up, named only when the difference is significant. ↑ higher is better, ↓ lower is better.\n\n", glanceLead(rep), mdText(rep.Baseline))
	} else {
		fmt.Fprintf(b, "%s ↑ higher is better, ↓ lower is better.\n\n", glanceLead(rep))
	}
	if s := rep.FDR.Sentence(); s != "" {
		b.WriteString(mdText(s) + "\n\n")
	}
	head = []string{"Test", "Placement", "Metric"}
	for _, c := range rep.Columns {
		head = append(head, c.Label)
	}
	if multi {
		head = append(head, winnerHead(rep.Columns))
	}
	mdRow(b, head...)
	mdSep(b, len(head), 3, 3+len(rep.Columns))
	for _, g := range rep.Glance {
		row := []string{g.Test, g.Placement, metricLabel(g.Row)}
		for _, v := range g.Values {
			row = append(row, cellText(v, rep.Options.Level))
		}
		if multi {
			row = append(row, winnerText(g.Winner))
		}
		mdRow(b, row...)
	}
	if len(rep.Glance) == 0 {
		b.WriteString("\nNo test produced a result.\n")
	}
	b.WriteString("\n")
	if len(rep.Warnings) > 0 {
		b.WriteString("## Warnings\n\n")
		for _, x := range rep.Warnings {
			fmt.Fprintf(b, "- %s\n", mdText(x))
		}
		b.WriteString("\n")
	}

	for _, sec := range rep.Sections {
		fmt.Fprintf(b, "## %s · %s\n\n", mdText(sec.Test), mdText(sec.Placement))
		if sec.About != "" {
			fmt.Fprintf(b, "%s.\n\n", mdText(sec.About))
		}
		if sec.Control != "" {
			fmt.Fprintf(b, "*%s.*\n\n", mdText(sec.Control))
		}
		var sm []string
		for i, sc := range sec.Samples {
			s := samplesText(sc)
			if multi {
				s = rep.Columns[i].Label + " " + s
			}
			sm = append(sm, s)
		}
		fmt.Fprintf(b, "Samples: %s.\n\n", mdText(strings.Join(sm, "; ")))
		if len(sec.Metrics) > 0 {
			head := []string{"Metric"}
			for _, c := range rep.Columns {
				head = append(head, c.Label)
			}
			for ci := range rep.Columns[1:] {
				head = append(head, vsLabel(rep.Columns, ci+1))
			}
			if len(rep.Columns) > 2 {
				head = append(head, winnerHead(rep.Columns))
			}
			mdRow(b, head...)
			mdSep(b, len(head), 1, 1+len(rep.Columns))
			for _, r := range sec.Metrics {
				row := []string{metricLabel(r)}
				for _, v := range r.Values {
					row = append(row, cellText(v, rep.Options.Level))
				}
				for i := range rep.Columns[1:] {
					row = append(row, deltaText(r.VsBaseline[i+1]))
				}
				if len(rep.Columns) > 2 {
					row = append(row, winnerText(r.Winner))
				}
				mdRow(b, row...)
			}
			b.WriteString("\n")
		}
		if len(sec.CPU) > 0 {
			b.WriteString("Where the CPU went:\n\n")
			for _, x := range sec.CPU {
				fmt.Fprintf(b, "- %s\n", mdText(x))
			}
			b.WriteString("\n")
		}
		for _, x := range sec.Warnings {
			fmt.Fprintf(b, "- **Warning:** %s\n", mdText(x))
		}
		if len(sec.Warnings) > 0 {
			b.WriteString("\n")
		}
	}
	markdownFlameGraphs(b, rep.FlameGraphs)
	fmt.Fprintf(b, "## How to read this\n\n%s%s\n", methodText, rep.WinnerRule)
	_, err := io.WriteString(w, b.String())
	return err
}

// mdText makes text safe inside a Markdown table cell or line: one line,
// no pipes, no HTML. Underscores stay: GFM does not emphasise inside
// words, and TCP_STREAM must stay greppable.
func mdText(s string) string {
	return mdEscaper.Replace(squash(s))
}

var mdEscaper = strings.NewReplacer("|", "\\|", "<", "&lt;", ">", "&gt;")

func mdRow(b *strings.Builder, cells ...string) {
	b.WriteString("|")
	for _, c := range cells {
		b.WriteString(" " + mdText(c) + " |")
	}
	b.WriteString("\n")
}

// mdSep writes the header separator; columns from..to-1 (the values) are
// right aligned.
func mdSep(b *strings.Builder, n, from, to int) {
	b.WriteString("|")
	for i := range n {
		if i >= from && i < to {
			b.WriteString("---:|")
		} else {
			b.WriteString("---|")
		}
	}
	b.WriteString("\n")
}
