package report

import (
	"strings"
	"testing"

	"github.com/cnibench/cnibench/results"
)

// withMeshCPU gives a recorded run's samples what a lab run records of
// the CPUs: the nodes' pinned CPUs busy per request (Istio ambient 100 µs,
// Cilium 130 µs, a little off by round) and the mesh components' cores
// and memory (48 MiB).
func withMeshCPU(run *results.Run) {
	perReq := map[string]float64{"iptables+ambient+waypoint": 100e-6, "ebpf+wireguard+l7-node": 130e-6}
	for ri := range run.Results {
		r := &run.Results[ri]
		for i := range r.Samples {
			s := &r.Samples[i]
			busy := s.ClientCPUSec / 30e-6 * perReq[r.Scenario] * (1 + 0.01*float64(i%3))
			s.Pinned = &results.PinnedCPU{CPUs: "0,1", BusySec: busy, SoftirqSec: busy / 3}
			s.DatapathUsage = results.NewDatapathUsage(results.UsageSourceLab, 12, []results.ComponentUsage{
				{Plugin: "haproxy", Node: "node1", Pod: "proxy-node1", CPUSec: busy / 2, MemoryBytes: 48 << 20}})
		}
	}
}

// The istio-scale profile on a recorded run: the report's table in its
// order (total QPS, tail latency, CPU under load, memory, queries per
// core; Istio ambient, Cilium), the published queries per core in their
// cells from reports.json, the proxies' memory measured, and the
// one published shape judged: Istio ambient's 1.2× queries per core read
// as CPU per request, its reciprocal, lower here too.
func TestReproducedIstioScale(t *testing.T) {
	f := factors{"ebpf+wireguard+l7-node": {"FORTIO_RPS_C64": 0.9}}
	run := recordedRun(t, "istio-scale", f)
	withMeshCPU(run)
	m, out := reproducedReport(t, run)
	checkOriginalLayout(t, "istio-scale", m, out)
	got := shapeVerdicts(m)
	const ask = "queries per core, Istio ambient ÷ Cilium (judged as CPU per request, its reciprocal; the kernel's share counted here)"
	if len(got) != 1 || got[ask] != ShapeHolds {
		t.Errorf("shapes %v, want %q %s:\n%s", got, ask, ShapeHolds, out["md"])
	}
	for _, l := range m.Cells {
		if l.NotMeasured != "" || l.Ours == nil {
			t.Errorf("%s / %s: not measured (%s) though the run has it", l.Row, l.Column, l.NotMeasured)
		}
	}
	for _, s := range []string{
		"| Total QPS | Istio ambient | FORTIO_RPS_C64 · pod-to-service/other-node · iptables+ambient+waypoint · request rate |",
		"| Tail latency | Cilium | FORTIO_RPS_C64 · pod-to-service/other-node · ebpf+wireguard+l7-node · p99 latency |",
		"| CPU under load | Cilium | FORTIO_RPS_C64 · pod-to-service/other-node · ebpf+wireguard+l7-node · datapath cores |",
		"| Queries per core | Istio ambient | FORTIO_RPS_C64 · pod-to-service/other-node · iptables+ambient+waypoint · total CPU per request | 2,178 queries/s per core |",
		"# cnibench istio-scale: whether the 2024 Istio ambient vs Cilium scale report's shapes hold here; runs 4 client→server pairs at once per scenario, a fortio client each (the report ran one per namespace, 500 of them): compare its ratios, not its totals",
		"| Memory | Istio ambient | FORTIO_RPS_C64 · pod-to-service/other-node · iptables+ambient+waypoint · datapath memory |",
		"48.0 against 48.0 MiB; an informational metric (no better direction), shown, not judged",
		"published 0.833× in our metric, the inverse of the published one (published 2178 ÷ 1815 = 1.2×)",
	} {
		if !strings.Contains(out["md"], s) {
			t.Errorf("report.md lacks %q:\n%s", s, out["md"])
		}
	}
}
