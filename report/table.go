// Package report renders results documents for people: the terminal table
// printed at the end of a run and the Markdown summary written beside
// results.json. Everything is computed from the results document alone.
package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/cnibench/cnibench/results"
)

// row is one Result with its summary.
type row struct {
	res   results.Result
	sum   results.Summary
	where string // placement, with the scenario in front when there are several
}

func summarize(run *results.Run) (streams, rr []row, err error) {
	for _, r := range run.Results {
		s, err := results.Summarize(r)
		if err != nil {
			return nil, nil, fmt.Errorf("%s %s: %w", r.Test, r.Placement.Name(), err)
		}
		where := r.Placement.Name()
		if len(run.Scenarios) > 1 {
			where = r.Scenario + ": " + where
		}
		if isRequestReply(r.Test) {
			rr = append(rr, row{r, s, where})
		} else {
			streams = append(streams, row{r, s, where})
		}
	}
	return streams, rr, nil
}

func isRequestReply(test string) bool {
	return strings.HasSuffix(test, "_RR") || strings.HasSuffix(test, "_CRR")
}

// Table writes the cilium-connectivity-perf-like tables of a run.
func Table(w io.Writer, run *results.Run) error {
	streams, rr, err := summarize(run)
	if err != nil {
		return err
	}
	if len(rr) > 0 {
		tw := newTabWriter(w)
		fmt.Fprintln(tw, "Test\tPlacement\tSamples\tRate/s\tMin µs\tP50 µs\tP90 µs\tP99 µs\tP99.9 µs\tMax µs\tCPU µs/op (cli+srv)\t")
		for _, r := range rr {
			fmt.Fprintf(tw, "%s\t%s\t%s\t", r.res.Test, r.where, samplesCell(r.sum))
			if l := r.sum.Latency; l != nil && r.sum.Samples > r.sum.Failed {
				fmt.Fprintf(tw, "%.0f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%s\t\n", r.sum.RatePerSec, l.MinUs, l.P50Us, l.P90Us, l.P99Us, l.P999Us, l.MaxUs, cpuCell(r.sum.ClientCPUPerOp, r.sum.ServerCPUPerOp))
			} else {
				fmt.Fprintf(tw, "-\t-\t-\t-\t-\t-\t-\t-\t\n")
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	if len(streams) > 0 {
		tw := newTabWriter(w)
		fmt.Fprintln(tw, "Test\tPlacement\tSamples\tStreams\tGbit/s\tOffered Gbit/s\tLoss %\tCPU s/GB (cli+srv)\t")
		for _, r := range streams {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t", r.res.Test, r.where, samplesCell(r.sum), r.res.Options.Streams)
			if r.sum.Samples > r.sum.Failed {
				offered, loss := "-", "-"
				if r.sum.OfferedBits > 0 {
					offered = fmt.Sprintf("%.2f", r.sum.OfferedBits/1e9)
					loss = fmt.Sprintf("%.2f", r.sum.LossPercent)
				}
				fmt.Fprintf(tw, "%.2f\t%s\t%s\t%s\t\n", r.sum.ThroughputBits/1e9, offered, loss, cpuCell(r.sum.ClientCPUPerGB, r.sum.ServerCPUPerGB))
			} else {
				fmt.Fprintf(tw, "-\t-\t-\t-\t\n")
			}
		}
		return tw.Flush()
	}
	return nil
}

func newTabWriter(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
}

func samplesCell(s results.Summary) string {
	if s.Failed > 0 {
		return fmt.Sprintf("%d (%d failed)", s.Samples-s.Failed, s.Failed)
	}
	return fmt.Sprintf("%d", s.Samples)
}

func cpuCell(c, s float64) string {
	if c == 0 && s == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f+%.2f", c, s)
}
