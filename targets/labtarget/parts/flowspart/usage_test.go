package flowspart

import (
	"testing"
	"time"

	"github.com/cnibench/cnibench/lab"
	"github.com/cnibench/cnibench/results"
)

// TestConsumerUsage: each node's consumer is a component of the sample's
// datapath usage with its CPU between the two readings, so the datapath
// CPU totals include it.
func TestConsumerUsage(t *testing.T) {
	nodes := []lab.Node{{Name: "node0"}, {Name: "node1"}}
	comps := consumerUsage("ebpf", nodes, []time.Duration{10 * time.Millisecond, 0}, []time.Duration{40 * time.Millisecond, 20 * time.Millisecond})
	if len(comps) != 2 || comps[0].Plugin != "flows-ebpf" || comps[0].Node != "node0" || comps[0].Pod != "consumer" {
		t.Fatalf("components %+v", comps)
	}
	proxy := results.ComponentUsage{Plugin: "haproxy-sidecar", Pod: "client-node0-pod0", CPUSec: 0.1}
	u := results.NewDatapathUsage(results.UsageSourceLab, 0.5, append(comps, proxy))
	if d := u.CPUSec - 0.15; d < -1e-9 || d > 1e-9 {
		t.Errorf("datapath CPU %v s, want 0.03 + 0.02 (consumers) + 0.1 (proxy)", u.CPUSec)
	}
	if got := consumerUsage("nflog", nodes, nil, []time.Duration{time.Second}); len(got) != 0 {
		t.Errorf("no start reading: %+v, want nothing", got)
	}
}
