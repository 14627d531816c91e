package httpload

import (
	"testing"

	"github.com/cnibench/cnibench/engine/internal/latencytest"
	"github.com/cnibench/cnibench/engine/kinds"
)

func TestMergeHTTP(t *testing.T) {
	a := &Result{Requests: 900, OK: 900, RPS: 900, OpenLoop: kinds.OpenLoop{TargetQPS: 1000}, Latency: latencytest.Equal(t, 100, 900), LatencyUncorrected: latencytest.Equal(t, 90, 900)}
	b := &Result{Requests: 1000, OK: 999, RPS: 1000, OpenLoop: kinds.OpenLoop{TargetQPS: 1000}, Latency: latencytest.Equal(t, 300, 1000), LatencyUncorrected: latencytest.Equal(t, 250, 1000),
		Errors: Errors{Status: 1, Total: 1, First: "503"}, StatusCodes: map[int]int64{200: 999, 503: 1}, ClientCPU: kinds.ClientCPU{ClientSaturated: true}}
	k, _ := kinds.Lookup("http")
	got, err := k.Merge([]any{a, b})
	if err != nil {
		t.Fatal(err)
	}
	m := got.(*Result)
	if m.Requests != 1900 || m.OK != 1899 || m.RPS != 1900 || m.TargetQPS != 2000 || m.Errors.Total != 1 || m.Errors.First != "503" || !m.ClientSaturated {
		t.Errorf("sums: %+v", m)
	}
	if m.AchievedRatio != 0.95 || !m.MissedTarget || m.MissedByPercent < 4.99 || m.MissedByPercent > 5.01 {
		t.Errorf("shortfall %.3f %v %.2f", m.AchievedRatio, m.MissedTarget, m.MissedByPercent)
	}
	if m.Latency.Count != 1900 || m.Latency.P50Us < 299 || m.LatencyUncorrected.Count != 1900 || m.LatencyUncorrected.MinUs > 91 {
		t.Errorf("merged latencies %+v %+v", m.Latency, m.LatencyUncorrected)
	}
}
