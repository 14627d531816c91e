package dnsload

import (
	"testing"

	"github.com/cnibench/cnibench/engine/internal/latencytest"
	"github.com/cnibench/cnibench/engine/kinds"
)

// Two pairs' DNS results: counts, rates and targets summed, the loss from
// the summed timeouts (not the mean of the pairs' losses), the shortfall
// against the summed target, both latencies merged, the first error kept.
func TestMergeDNS(t *testing.T) {
	a := &Result{Sent: 1000, Responses: 990, OK: 990, QPS: 990, Threads: 2, OpenLoop: kinds.OpenLoop{TargetQPS: 1000},
		Errors: Errors{Timeout: 10, Total: 10, First: "timeout"}, Latency: latencytest.Equal(t, 100, 990), LatencyUncorrected: latencytest.Equal(t, 90, 990)}
	b := &Result{Sent: 3000, Responses: 3000, OK: 2999, QPS: 3000, Threads: 2, OpenLoop: kinds.OpenLoop{TargetQPS: 3000},
		Errors: Errors{Rcode: 1, Total: 1}, Rcodes: map[string]int64{"NOERROR": 2999, "SERVFAIL": 1},
		Latency: latencytest.Equal(t, 300, 3000), LatencyUncorrected: latencytest.Equal(t, 250, 3000), ClientCPU: kinds.ClientCPU{ClientSaturated: true}}
	k, _ := kinds.Lookup("dns")
	got, err := k.Merge([]any{a, b})
	if err != nil {
		t.Fatal(err)
	}
	m := got.(*Result)
	if m.Sent != 4000 || m.Responses != 3990 || m.OK != 3989 || m.QPS != 3990 || m.Threads != 4 || m.TargetQPS != 4000 ||
		m.Errors.Timeout != 10 || m.Errors.Total != 11 || m.Errors.First != "timeout" || m.Rcodes["SERVFAIL"] != 1 || !m.ClientSaturated {
		t.Errorf("sums: %+v", m)
	}
	if want := 100 * 10.0 / 4000; m.LossPercent != want {
		t.Errorf("loss %.4f%%, want %.4f%% (summed timeouts over summed queries)", m.LossPercent, want)
	}
	if m.AchievedRatio != 3990.0/4000 || m.MissedTarget {
		t.Errorf("shortfall %.4f %v", m.AchievedRatio, m.MissedTarget)
	}
	if m.Latency.Count != 3990 || m.LatencyUncorrected.Count != 3990 || m.Latency.MinUs > 101 {
		t.Errorf("merged latencies %+v %+v", m.Latency, m.LatencyUncorrected)
	}
}
