package report

import (
	"strings"

	"github.com/cnibench/cnibench/engine/kinds"
	"github.com/cnibench/cnibench/results"
)

// The terminal tables get datapath columns (CPU of kube-proxy, the CNI
// agent, ... per unit of work, average cores, memory) only when some
// sample of the table has datapath usage: lab runs keep their shape.

// hasDatapath tells whether any column of secs has a datapath metric.
func hasDatapath(secs []Section) bool {
	for _, s := range secs {
		for _, r := range s.Metrics {
			if r.Metric == results.MetricDatapathCores {
				for _, v := range r.Values {
					if v != nil {
						return true
					}
				}
			}
		}
	}
	return false
}

// datapathHead is the datapath columns' header for a kind of test.
func datapathHead(pw kinds.PerWork) string {
	return pw.Head + "\tDP cores\tDP MiB"
}

func datapathCells(sec Section, ci int, pw kinds.PerWork) string {
	return strings.Join([]string{
		cell(sec, ci, pw.Datapath, "%.2f"),
		cell(sec, ci, results.MetricDatapathCores, "%.3f"),
		cell(sec, ci, results.MetricDatapathMemory, "%.0f"),
	}, "\t")
}
