package suite

import (
	"time"

	"github.com/cnibench/cnibench/results"
)

// The istio-scale profile reproduces Istio's 2024 comparison of ambient
// mode and Cilium at scale (AKS, 1,000 nodes, 500 Services × 100 pods,
// L7 policy and encryption on in both). The lab has neither, so each
// column is the lab scenario built from the same mechanisms: Cilium as
// the eBPF Service datapath, WireGuard between the nodes and its per-node
// L7 proxy; Istio ambient as kube-proxy's iptables, the per-node mTLS
// proxy (ztunnel's role) and the waypoint enforcing the L7 policy. The
// lab runs one client→server pair per scenario: the L7 parts are set up
// around one server and refused with --pairs > 1 (docs/pairs.md), so the
// many-pairs load of the original is pending, and so is its churn
// (docs/profiles.md says why).

// istioColumns are the report's columns as lab scenarios.
var istioColumns = []struct{ column, scenario string }{
	{"Istio ambient", "iptables+ambient+waypoint"},
	{"Cilium", "ebpf+wireguard+l7-node"},
}

// istioOnePair is what the profile's description and report say of the
// scale it runs.
const istioOnePair = "runs one client→server pair per scenario; the many-pairs load for mesh scenarios is pending"

// istioMeasured are the report's rows with a metric here, through a
// Service as the report's clients reached theirs.
var istioMeasured = []struct{ row, metric string }{
	{"Total QPS", "request rate"},
	{"Tail latency", "p99 latency"},
	// The nodes' CPUs per request, the kernel's share counted; each
	// node's cores idle and loaded are in the Queries per core section.
	{"CPU under load", "total CPU per request"},
}

// istioNotMeasured are the report's rows with no per-round metric here,
// and why.
var istioNotMeasured = []struct{ row, why string }{
	{"Memory", "the lab reads no memory of its proxies or kernel datapath per sample (a cluster target reads its DaemonSets' working set; the lab's HAProxy proxies and WireGuard are not read)"},
	{"Queries per core", "measured in the report's Queries per core section (per core with and without the kernel's share, docs/queries-per-core.md), " +
		"which is a median per cell, not a per-round metric a shape can be judged on yet; " + istioOnePair},
}

// istioReproduction maps the report's table: the measured rows on both
// columns, then the rows said to have no metric here.
func istioReproduction() *results.Reproduction {
	rep := &results.Reproduction{Report: "istio-scale"}
	for _, m := range istioMeasured {
		for _, c := range istioColumns {
			rep.Cells = append(rep.Cells, cell(m.row, c.column, "FORTIO_RPS_C64", PodToServiceOtherNode, c.scenario, m.metric))
		}
	}
	for _, n := range istioNotMeasured {
		for _, c := range istioColumns {
			rep.Cells = append(rep.Cells, noEquivalent(n.row, c.column, n.why))
		}
	}
	// The one published ratio: Istio ambient did 2,178 ÷ 1,815 ≈ 1.2×
	// Cilium's queries per core. It is a ratio of efficiencies, so it can
	// carry over between machines; its row has no per-round metric yet,
	// and the shape says so rather than being left out.
	rep.Shapes = []results.Shape{shape("queries per core, Istio ambient ÷ Cilium",
		"Queries per core", istioColumns[1].column, "Queries per core", istioColumns[0].column)}
	return rep
}

func istioScenarios() []string {
	var out []string
	for _, c := range istioColumns {
		out = append(out, c.scenario)
	}
	return out
}

// istioProfile runs fortio at 64 keep-alive connections through a Service
// and pod to pod in the two mesh models.
func istioProfile() Profile {
	return Profile{
		Name: "istio-scale",
		About: "the Istio ambient vs Cilium scale report on the lab: Istio ambient as iptables+ambient+waypoint (per-node mTLS proxy, waypoint " +
			"enforcing L7 policy), Cilium as ebpf+wireguard+l7-node (eBPF Services, WireGuard, per-node L7 proxy); fortio at 64 keep-alive " +
			"connections through a Service and pod-to-pod across nodes: total QPS, p99, CPU per request, per-node CPU idle and under load and " +
			"queries per core with and without the kernel's share; " + istioOnePair + "; the 85–115 replica churn and the relabel are not run " +
			"(docs/profiles.md); 5 interleaved rounds of 2 s; about 2 min on 2 cores; opens with the report's table",
		Tests:      []string{"FORTIO_RPS_C64"},
		Placements: []string{PodToServiceOtherNode, PodToPodOtherNode},
		Duration:   2 * time.Second,
		Warmup:     500 * time.Millisecond,
		Rounds:     5,
		Streams:    1,
		Scenarios:  istioScenarios(),
		Ask:        "whether Istio ambient's queries-per-core lead over Cilium holds here, one pair per scenario",
		Reproduces: istioReproduction(),
	}
}
