// Package report renders results documents for people and machines: the
// terminal table printed at the end of a run, report.md, a self-contained
// report.html with charts, and report.json. Everything is computed from
// results documents alone (Build), for one run or several compared.
package report

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/cnibench/cnibench/engine/kinds"
	"github.com/cnibench/cnibench/results"
)

// Table writes the cilium-connectivity-perf-like tables of a run: one row
// per test, placement and scenario, request/response, HTTP and throughput
// apart; then, with several scenarios, the headline verdicts.
func Table(w io.Writer, run *results.Run) error {
	rep, err := Build([]Input{{Run: run}}, Options{})
	if err != nil {
		return err
	}
	return TableOf(w, rep)
}

// TableOf writes the terminal tables of a built report.
func TableOf(w io.Writer, rep *Report) error {
	tables := kinds.All()
	slices.SortStableFunc(tables, func(a, b kinds.Kind) int { return a.Table.Order - b.Table.Order })
	multi := len(rep.Columns) > 1
	first := true
	for _, k := range tables {
		var secs []Section
		for _, s := range rep.Sections {
			if s.TableKind() == k.Name {
				secs = append(secs, s)
			}
		}
		if len(secs) == 0 {
			continue
		}
		if !first {
			fmt.Fprintln(w)
		}
		first = false
		head, dp := columnsHead(k.Table.Columns), hasDatapath(secs)
		if dp {
			head += "\t" + datapathHead(k.PerWork)
		}
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "Test\tPlacement\tSamples\t%s\t\n", head)
		ncols := strings.Count(head, "\t") + 1
		for _, sec := range secs {
			for ci, col := range rep.Columns {
				where := sec.Placement
				if multi {
					where = col.Label + ": " + where
				}
				sc := sec.Samples[ci]
				if sc == nil {
					continue
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t", sec.Test, where, samplesCell(sc))
				if sc.OK == 0 {
					fmt.Fprintf(tw, "%s\t\n", strings.Repeat("-\t", ncols-1)+"-")
					continue
				}
				row := cells(k.Table.Columns, sec, ci)
				if dp {
					row += "\t" + datapathCells(sec, ci, k.PerWork)
				}
				fmt.Fprintf(tw, "%s\t\n", row)
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if multi && len(rep.Glance) > 0 {
		fmt.Fprintf(w, "\nVerdicts (baseline %s):\n", rep.Baseline)
		for _, g := range rep.Glance {
			var vals []string
			for ci, v := range g.Values {
				vals = append(vals, rep.Columns[ci].Label+" "+cellText(v, rep.Options.Level))
			}
			fmt.Fprintf(w, "  %s %s %s (%s): %s → %s\n", g.Test, g.Placement, g.Metric, g.Unit, strings.Join(vals, ", "), winnerText(g.Winner))
		}
	}
	return nil
}

func samplesCell(sc *SampleCount) string {
	if sc.Skipped != "" && sc.OK+sc.Failed == 0 {
		return "skipped"
	}
	s := fmt.Sprintf("%d", sc.OK+sc.Failed)
	var notes []string
	if sc.Failed > 0 {
		s = fmt.Sprintf("%d", sc.OK)
		notes = append(notes, fmt.Sprintf("%d failed", sc.Failed))
	}
	// Flagged samples count as taken, but their rate is not the datapath's.
	if sc.PortExhausted > 0 {
		notes = append(notes, fmt.Sprintf("%d out of ports", sc.PortExhausted))
	}
	if sc.Stalled > 0 {
		notes = append(notes, fmt.Sprintf("%d stalled", sc.Stalled))
	}
	if len(notes) > 0 {
		s += " (" + strings.Join(notes, ", ") + ")"
	}
	return s
}

// cell prints a metric's displayed value in column ci with a fixed format,
// "-" when missing.
func cell(sec Section, ci int, name, format string) string {
	for _, r := range sec.Metrics {
		if r.Metric == name && r.Values[ci] != nil {
			return fmt.Sprintf(format, float64(r.Values[ci].Display))
		}
	}
	return "-"
}

func pair(sec Section, ci int, a, b, format string) string {
	x, y := cell(sec, ci, a, format), cell(sec, ci, b, format)
	if x == "-" && y == "-" {
		return "-"
	}
	return x + "+" + y
}

// columnsHead is a kind's table header after Test, Placement and Samples.
func columnsHead(cols []kinds.Column) string {
	var h []string
	for _, c := range cols {
		h = append(h, c.Head)
	}
	return strings.Join(h, "\t")
}

// cells is a section's row in column ci of a kind's table.
func cells(cols []kinds.Column, sec Section, ci int) string {
	var out []string
	for _, c := range cols {
		switch {
		case c.Special == kinds.ColumnStreams:
			out = append(out, streamsCell(sec, ci))
		case c.Special == kinds.ColumnFlags:
			out = append(out, flagsCell(sec, ci))
		case c.Plus != "":
			out = append(out, pair(sec, ci, c.Metric, c.Plus, c.Format))
		default:
			out = append(out, cell(sec, ci, c.Metric, c.Format))
		}
	}
	return strings.Join(out, "\t")
}

func streamsCell(sec Section, ci int) string {
	if n := sec.Samples[ci].Streams; n > 0 {
		return fmt.Sprint(n)
	}
	return "-"
}

// flagsCell lists what makes an open-loop or client-bound number suspect.
func flagsCell(sec Section, ci int) string {
	var flags []string
	if m := cell(sec, ci, results.MetricMissedBy, "%.1f"); m != "-" && m != "0.0" {
		flags = append(flags, "missed target by "+m+"%")
	}
	if sc := sec.Samples[ci]; sc.ClientSaturated > 0 {
		flags = append(flags, fmt.Sprintf("client saturated (%d of %d)", sc.ClientSaturated, sc.OK))
	}
	f := strings.Join(flags, ", ")
	if f == "" {
		f = "-"
	}
	return f
}
