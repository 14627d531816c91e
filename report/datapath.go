package report

import (
	"strings"

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
func datapathHead(kind string) string {
	per := map[string]string{results.KindStream: "DP CPU s/GB", results.KindRR: "DP CPU µs/op",
		results.KindHTTP: "DP CPU µs/req", results.KindDNS: "DP CPU µs/query"}[kind]
	return per + "\tDP cores\tDP MiB"
}

func datapathCells(sec Section, ci int, kind string) string {
	name, _ := results.DatapathCPUMetric(kind)
	return strings.Join([]string{
		cell(sec, ci, name, "%.2f"),
		cell(sec, ci, results.MetricDatapathCores, "%.3f"),
		cell(sec, ci, results.MetricDatapathMemory, "%.0f"),
	}, "\t")
}
