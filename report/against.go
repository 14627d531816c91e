package report

import (
	"fmt"
	"strings"
)

// A scenario that adds parts to another scenario of the same run
// ("iptables+policy" over "iptables", "ebpf+flows" over "ebpf") asks what
// the added part costs, so its column is compared with that scenario's
// column, not with the first: one run then gives the overhead table of
// every feature against the same datapath without it. Other columns are
// compared with the first, as before.

// setAgainst fills Column.Against: the column with the most parts of
// those whose parts are a strict subset of the column's own (same run),
// else 0. The first column stays the baseline of everything else.
func setAgainst(cols []Column) {
	for i := 1; i < len(cols); i++ {
		own := cols[i].parts
		best, bestN := 0, 0
		for j := range cols {
			if j == i || cols[j].Run != cols[i].Run {
				continue
			}
			p := cols[j].parts
			if len(p) < len(own) && len(p) > bestN && own.Covers(p) {
				best, bestN = j, len(p)
			}
		}
		cols[i].Against = best
		if bestN > 0 {
			cols[i].Adds = own.Without(cols[best].parts.Has).String()
		}
	}
}

// anyAgainst tells whether some column is an overhead column (adds parts
// to the scenario it is compared with).
func anyAgainst(cols []Column) bool {
	for _, c := range cols {
		if c.Adds != "" {
			return true
		}
	}
	return false
}

// vsLabel is a verdict column's header: "b vs a".
func vsLabel(cols []Column, ci int) string {
	return cols[ci].Label + " vs " + cols[cols[ci].Against].Label
}

// overheadAnswers are the answer lines of a run with overhead columns:
// per headline metric of each contest, every column's verdict against the
// column it is compared with (what an added part costs; for the others,
// how they stand against the first), as the verdict says it. A winner
// among columns that measure different questions is not one of them.
func overheadAnswers(rep *Report) []Answer {
	var out []Answer
	for ci := range rep.Columns {
		if ci == 0 {
			continue
		}
		for _, sec := range rep.Sections {
			if sec.Control != "" {
				continue
			}
			for _, row := range sec.Metrics {
				d := row.VsBaseline[ci]
				if !row.Headline || d == nil || d.Verdict == VerdictNA {
					continue
				}
				against := rep.Columns[ci].Against
				a := Answer{Test: sec.Test, Placement: sec.Placement, Metric: row.Metric, A: rep.Columns[against].Label, B: rep.Columns[ci].Label}
				fillAnswer(&a, rep, row, against, ci, d, false)
				a.Words = answerWords(a, row, d)
				a.Text = fmt.Sprintf("%s %s, %s: %s: ", sec.Placement, sec.Test, row.Metric, vsLabel(rep.Columns, ci)) + answerBody(a, d)
				out = append(out, a)
			}
		}
	}
	return out
}

// overheadVerdicts fills the winner cell of every row of a run with
// overhead columns with the columns' own verdicts ("iptables+policy vs
// iptables: …; ebpf vs iptables: …"), after the false-discovery control
// has had its say, so the at-a-glance table and the terminal show what
// each feature costs instead of a winner among different questions.
func overheadVerdicts(rep *Report) {
	if !anyAgainst(rep.Columns) {
		return
	}
	for _, sec := range rep.Sections {
		for _, row := range sec.Metrics {
			if row.Winner == nil {
				continue
			}
			var parts []string
			for ci := 1; ci < len(rep.Columns); ci++ {
				if d := row.VsBaseline[ci]; d != nil {
					parts = append(parts, vsLabel(rep.Columns, ci)+": "+d.Text)
				}
			}
			row.Winner.Text = strings.Join(parts, "; ")
		}
	}
}

// winnerHead is the header of the winner column: in a run with overhead
// columns it holds each column's verdict against its baseline.
func winnerHead(cols []Column) string {
	if anyAgainst(cols) {
		return "Verdicts (each vs its baseline)"
	}
	return "Winner"
}
