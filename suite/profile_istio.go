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
// report's load generator per namespace is a pair per fortio client here,
// istioPairs of them at once (docs/pairs.md); its churn is not run
// (docs/profiles.md says why).

// istioColumns are the report's columns as lab scenarios.
var istioColumns = []reportColumn{
	{"Istio ambient", "iptables+ambient+waypoint"},
	{"Cilium", "ebpf+wireguard+l7-node"},
}

// istioPairs are the pairs each sample runs at once: 4 fortio clients on
// 4 client pods against 4 server pods (8 pods per lab node).
const istioPairs = 4

// istioScale is what the profile's description and report say of the
// scale it runs.
const istioScale = "runs 4 client→server pairs at once per scenario, a fortio client each (the report ran one per namespace, 500 of them): compare its ratios, not its totals"

// istioRows are the report's rows in its order, each with its metric
// here through a Service as the report's clients reached theirs.
var istioRows = []struct{ row, metric string }{
	{"Total QPS", "request rate"},
	{"Tail latency", "p99 latency"},
	// The mesh's own components (the proxies, WireGuard) in cores while
	// loaded, as the report charged its proxies and agents; each node's
	// cores idle and loaded are in the Queries per core section.
	{"CPU under load", "datapath cores"},
	// The mesh's proxies' memory at the end of each loaded sample (their
	// cgroups' memory.current), as the report charged its proxies';
	// eBPF's maps and the kernel's WireGuard hold no process memory.
	{"Memory", "datapath memory"},
	// Per request, the nodes' pinned CPUs busy, the kernel's share
	// counted: the reciprocal of queries per core, as a per-round metric
	// the shape can be judged on (istioReproduction).
	{"Queries per core", "total CPU per request"},
}

// istioReproduction maps the report's table, row by row on both columns.
func istioReproduction() *results.Reproduction {
	rep := &results.Reproduction{Report: "istio-scale"}
	for _, m := range istioRows {
		for _, c := range istioColumns {
			rep.Cells = append(rep.Cells, cell(m.row, c.column, "FORTIO_RPS_C64", PodToServiceOtherNode, c.scenario, m.metric))
		}
	}
	// The one published ratio: Istio ambient did 2,178 ÷ 1,815 ≈ 1.2×
	// Cilium's queries per core, a ratio of efficiencies that can carry
	// over between machines. Ours is CPU per request, its reciprocal.
	qpc := shape("queries per core, Istio ambient ÷ Cilium (judged as CPU per request, its reciprocal; the kernel's share counted here)",
		"Queries per core", istioColumns[1].column, "Queries per core", istioColumns[0].column)
	qpc.Reciprocal = true
	rep.Shapes = []results.Shape{qpc}
	return rep
}

// istioQuestions are the table's measured rows as the profile's
// questions, Istio ambient against Cilium through a Service: answered
// first and held to a false-discovery rate among themselves, so the
// report's title carries the profile's ask (and with it the scale it runs
// at).
func istioQuestions() []results.Question {
	var qs []results.Question
	for _, m := range istioRows {
		qs = append(qs, results.Question{Ask: m.row + ", Istio ambient against Cilium (" + m.metric + ")", Test: "FORTIO_RPS_C64",
			Placement: PodToServiceOtherNode, Metric: m.metric, A: istioColumns[1].scenario, B: istioColumns[0].scenario})
	}
	return qs
}

// istioProfile runs fortio at 64 keep-alive connections through a Service
// and pod to pod in the two mesh models.
func istioProfile() Profile {
	return Profile{
		Name: "istio-scale",
		About: "the Istio ambient vs Cilium scale report on the lab: Istio ambient as iptables+ambient+waypoint (per-node mTLS proxy, waypoint " +
			"enforcing L7 policy), Cilium as ebpf+wireguard+l7-node (eBPF Services, WireGuard, per-node L7 proxy); fortio at 64 keep-alive " +
			"connections through a Service and pod-to-pod across nodes: total QPS, p99, CPU per request, per-node CPU idle and under load and " +
			"queries per core with and without the kernel's share; " + istioScale + "; the 85–115 replica churn and the relabel are not run " +
			"(docs/profiles.md); 5 interleaved rounds of 2 s; about 2 min on 2 cores; opens with the report's table",
		Tests:      []string{"FORTIO_RPS_C64"},
		Placements: []string{PodToServiceOtherNode, PodToPodOtherNode},
		Rhythm:     Rhythm{Duration: 2 * time.Second, Warmup: 500 * time.Millisecond, Rounds: 5, Streams: 1, Pairs: istioPairs},
		Scenarios:  columnScenarios(istioColumns),
		Ask:        "whether the 2024 Istio ambient vs Cilium scale report's shapes hold here; " + istioScale,
		Questions:  istioQuestions(),
		Reproduces: istioReproduction(),
	}
}
