// Package report renders results documents for people and machines: the
// terminal table printed at the end of a run, report.md, a self-contained
// report.html with charts, and report.json. Everything is computed from
// results documents alone (Build), for one run or several compared.
package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

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
	kinds := []struct {
		kind string
		head string
		row  func(sec Section, ci int) string
	}{
		{results.KindRR, "Rate/s\tMin µs\tP50 µs\tP90 µs\tP99 µs\tP99.9 µs\tMax µs\tCPU µs/op (cli+srv)", rrCells},
		{results.KindHTTP, "Req/s\tP50 µs\tP90 µs\tP99 µs\tP99.9 µs\tErrors %\tCPU µs/req (cli+srv)\tFlags", httpCells},
		{results.KindDNS, "Queries/s\tP50 µs\tP90 µs\tP99 µs\tP99.9 µs\tLost %\tCPU µs/query (cli+srv)\tFlags", dnsCells},
		{results.KindStream, "Streams\tGbit/s\tOffered Gbit/s\tLoss %\tCPU s/GB (cli+srv)", streamCells},
	}
	multi := len(rep.Columns) > 1
	first := true
	for _, k := range kinds {
		var secs []Section
		for _, s := range rep.Sections {
			if s.Kind == k.kind || (s.Kind == "" && k.kind == guessKind(s.Test)) {
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
		head, dp := k.head, hasDatapath(secs)
		if dp {
			head += "\t" + datapathHead(k.kind)
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
				row := k.row(sec, ci)
				if dp {
					row += "\t" + datapathCells(sec, ci, k.kind)
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

// guessKind places a section without any successful sample by its name.
func guessKind(test string) string {
	switch {
	case strings.HasPrefix(test, "HTTP"):
		return results.KindHTTP
	case strings.HasPrefix(test, "DNS"):
		return results.KindDNS
	case strings.HasSuffix(test, "_RR"), strings.HasSuffix(test, "_CRR"):
		return results.KindRR
	}
	return results.KindStream
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

func rrCells(sec Section, ci int) string {
	return strings.Join([]string{
		cell(sec, ci, results.MetricRate, "%.0f"),
		cell(sec, ci, results.MetricMin, "%.1f"),
		cell(sec, ci, results.MetricP50, "%.1f"),
		cell(sec, ci, results.MetricP90, "%.1f"),
		cell(sec, ci, results.MetricP99, "%.1f"),
		cell(sec, ci, results.MetricP999, "%.1f"),
		cell(sec, ci, results.MetricMax, "%.1f"),
		pair(sec, ci, results.MetricClientCPUOp, results.MetricServerCPUOp, "%.2f"),
	}, "\t")
}

func dnsCells(sec Section, ci int) string {
	return strings.Join([]string{
		cell(sec, ci, results.MetricQPS, "%.0f"),
		cell(sec, ci, results.MetricP50, "%.1f"),
		cell(sec, ci, results.MetricP90, "%.1f"),
		cell(sec, ci, results.MetricP99, "%.1f"),
		cell(sec, ci, results.MetricP999, "%.1f"),
		cell(sec, ci, results.MetricDNSLoss, "%.2f"),
		pair(sec, ci, results.MetricClientCPUQuery, results.MetricServerCPUQuery, "%.2f"),
		flagsCell(sec, ci),
	}, "\t")
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

func httpCells(sec Section, ci int) string {
	f := flagsCell(sec, ci)
	return strings.Join([]string{
		cell(sec, ci, results.MetricRPS, "%.0f"),
		cell(sec, ci, results.MetricP50, "%.1f"),
		cell(sec, ci, results.MetricP90, "%.1f"),
		cell(sec, ci, results.MetricP99, "%.1f"),
		cell(sec, ci, results.MetricP999, "%.1f"),
		cell(sec, ci, results.MetricErrors, "%.2f"),
		pair(sec, ci, results.MetricClientCPUReq, results.MetricServerCPUReq, "%.2f"),
		f,
	}, "\t")
}

func streamCells(sec Section, ci int) string {
	streams := "-"
	if n := sec.Samples[ci].Streams; n > 0 {
		streams = fmt.Sprint(n)
	}
	return strings.Join([]string{
		streams,
		cell(sec, ci, results.MetricThroughput, "%.2f"),
		cell(sec, ci, results.MetricOffered, "%.2f"),
		cell(sec, ci, results.MetricLoss, "%.2f"),
		pair(sec, ci, results.MetricClientCPUGB, results.MetricServerCPUGB, "%.2f"),
	}, "\t")
}
