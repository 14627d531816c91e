package fortioload

import (
	"testing"

	"github.com/cnibench/cnibench/engine/internal/latencytest"
	"github.com/cnibench/cnibench/engine/kinds"
)

// Two pairs' fortio results: counts, rates and targets summed, the
// shortfall against the summed target, latency from the merged histograms,
// the first error and a saturated client kept; fortio's own summary keeps
// its counts and no bucketed statistics.
func TestMergeFortio(t *testing.T) {
	a := &Result{Requests: 900, OK: 900, RPS: 900, Sockets: 64, Conns: 64, OpenLoop: kinds.OpenLoop{TargetQPS: 1000}, Latency: latencytest.Equal(t, 100, 900),
		Fortio: Summary{RequestedQPS: "1000", Calls: 900, ActualQPS: 900, AvgUs: 100}}
	b := &Result{Requests: 1000, OK: 999, RPS: 1000, Sockets: 64, Conns: 64, OpenLoop: kinds.OpenLoop{TargetQPS: 1000}, Latency: latencytest.Equal(t, 300, 1000),
		Errors: Errors{Status: 1, Total: 1, First: "HTTP 503"}, StatusCodes: map[int]int64{200: 999, 503: 1},
		ClientCPU: kinds.ClientCPU{ClientSaturated: true, ClientCPUs: 1}, Fortio: Summary{RequestedQPS: "1000", Calls: 1000, Errors: 1, ActualQPS: 1000, AvgUs: 300}}
	k, _ := kinds.Lookup("fortio")
	got, err := k.Merge([]any{a, b})
	if err != nil {
		t.Fatal(err)
	}
	m := got.(*Result)
	if m.Requests != 1900 || m.OK != 1899 || m.RPS != 1900 || m.Sockets != 128 || m.Conns != 128 || m.TargetQPS != 2000 ||
		m.Errors.Total != 1 || m.Errors.First != "HTTP 503" || m.StatusCodes[503] != 1 || !m.ClientSaturated || m.ClientCPUs != 1 {
		t.Errorf("sums: %+v", m)
	}
	if m.AchievedRatio != 0.95 || !m.MissedTarget {
		t.Errorf("shortfall %.3f %v", m.AchievedRatio, m.MissedTarget)
	}
	if m.Latency.Count != 1900 || m.Latency.P50Us < 299 || m.Latency.MinUs > 101 {
		t.Errorf("merged latency %+v", m.Latency)
	}
	if f := m.Fortio; f.Calls != 1900 || f.Errors != 1 || f.ActualQPS != 1900 || f.RequestedQPS != "2000" || f.AvgUs != 0 || f.Percentiles != nil {
		t.Errorf("fortio's summary %+v", f)
	}
}
