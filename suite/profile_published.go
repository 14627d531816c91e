package suite

import (
	"fmt"
	"runtime"
	"time"

	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/stats"
)

// Profiles named after a published report run the report's tests with
// its knobs mapped onto ours, and carry the layout of its table
// (results.Reproduction) so that their report opens with the original's
// table, the published figures (package published) beside ours.
// docs/profiles.md has the mapping tables.

// evenWithinPct: a published ratio within ±5% of 1, from one round, is
// read as "about even".
const evenWithinPct = 5

// shape builds a results.Shape between two published cells.
func shape(ask, rowA, colA, rowB, colB string) results.Shape {
	return results.Shape{Ask: ask, A: results.CellRef{Row: rowA, Column: colA}, B: results.CellRef{Row: rowB, Column: colB}, EvenWithinPct: evenWithinPct}
}

// cell maps one published cell onto a measurement.
func cell(row, column, test, placement, scenario, metric string) results.ReproducedCell {
	return results.ReproducedCell{Row: row, Column: column, Test: test, Placement: placement, Scenario: scenario, Metric: metric}
}

// noEquivalent is a published cell we do not measure, and why.
func noEquivalent(row, column, why string) results.ReproducedCell {
	return results.ReproducedCell{Row: row, Column: column, NoEquivalent: why}
}

// connectivityPerfLatency are the columns of cilium connectivity perf's
// request/response table, with our metric for each.
var connectivityPerfLatency = []struct{ column, metric string }{
	{"Min", "min latency"}, {"Mean", "mean latency"}, {"Max", "max latency"},
	{"P50", "p50 latency"}, {"P90", "p90 latency"}, {"P99", "p99 latency"}, {"Transaction rate", "rate"},
}

// hostToHostSameNode is why that cell of cilium connectivity perf has no
// equivalent here.
const hostToHostSameNode = "no host-to-host/same-node placement: a node's host side is one network namespace, so host to itself is loopback, not a datapath"

// connectivityPerfReproduction is cilium connectivity perf's matrix:
// pod-to-pod and host-to-host × same-node and other-node, the
// request/response tests with their latency columns and rate, then the
// stream tests' throughput.
func connectivityPerfReproduction() *results.Reproduction {
	rep := &results.Reproduction{Report: "connectivity-perf"}
	each := func(tests []string, cols func(row, test, placement string, same bool)) {
		for _, path := range []string{"pod-to-pod", "host-to-host"} {
			for _, node := range []string{"same-node", "other-node"} {
				for _, t := range tests {
					cols(path+" "+node+" "+t, t, path+"/"+node, path == "host-to-host" && node == "same-node")
				}
			}
		}
	}
	each([]string{"TCP_CRR", "TCP_RR", "UDP_RR"}, func(row, test, placement string, none bool) {
		for _, c := range connectivityPerfLatency {
			if none {
				rep.Cells = append(rep.Cells, noEquivalent(row, c.column, hostToHostSameNode))
				continue
			}
			rep.Cells = append(rep.Cells, cell(row, c.column, test, placement, "", c.metric))
		}
	})
	each([]string{"TCP_STREAM", "UDP_STREAM", "TCP_STREAM_MULTI", "UDP_STREAM_MULTI"}, func(row, test, placement string, none bool) {
		if none {
			rep.Cells = append(rep.Cells, noEquivalent(row, "Throughput", hostToHostSameNode))
			return
		}
		rep.Cells = append(rep.Cells, cell(row, "Throughput", test, placement, "", "throughput"))
	})
	// The example's one ratio: what a new connection per transaction
	// costs against a kept one, on one path.
	rep.Shapes = []results.Shape{shape("TCP_CRR ÷ TCP_RR transaction rate, pod-to-pod same-node",
		"pod-to-pod same-node TCP_RR", "Transaction rate", "pod-to-pod same-node TCP_CRR", "Transaction rate")}
	return rep
}

// cilium2021Reproduction maps the 2021 CNI benchmark's table: its best
// container path is our pod-to-pod/other-node on native routing; its N
// processes of TCP_RR and TCP_CRR have no equivalent yet (our multi-flow
// tests are streams).
func cilium2021Reproduction() *results.Reproduction {
	const col, pl = "best container path", PodToPodOtherNode
	noMulti := "no multi-flow TCP_RR or TCP_CRR test yet (only the stream tests run N flows); TCP_RR and TCP_CRR run 1 flow in this profile"
	return &results.Reproduction{Report: "cilium-2021",
		Cells: []results.ReproducedCell{
			cell("TCP_STREAM, 1 stream", col, "TCP_STREAM", pl, "native", "throughput"),
			cell("TCP_STREAM, 32 streams", col, "TCP_STREAM_MULTI", pl, "native", "throughput"),
			noEquivalent("TCP_RR, 32 processes", col, noMulti),
			noEquivalent("TCP_CRR, 32 processes", col, noMulti),
		},
		Shapes: []results.Shape{shape("N streams ÷ 1 stream throughput (theirs: 32 streams on 32 threads; ours: N = the cores here)",
			"TCP_STREAM, 1 stream", col, "TCP_STREAM, 32 streams", col)},
	}
}

// reportColumn is a published report's column and the lab scenario that
// stands for it.
type reportColumn struct{ column, scenario string }

// columnScenarios are the scenarios of a report's columns, in its order.
func columnScenarios(cols []reportColumn) []string {
	var out []string
	for _, c := range cols {
		out = append(out, c.scenario)
	}
	return out
}

// tkeColumns are TKE's columns as lab scenarios: kube-proxy iptables on
// native routing, Cilium's eBPF Services natively routed and over VXLAN.
// The iptables column writes through the x_tables (legacy) backend: the
// nft backend's restore of TKE's Service-scale steps takes minutes per
// step here (5,000 Services × 4 in 40 s, 10,000 not done in 2 min;
// legacy: 3 s and 30,000 in 16 s), and the rows at scale are the
// report's point. A cluster's kube-proxy iptables mode fills it whichever
// backend its nodes use (clusterModel).
var tkeColumns = []reportColumn{{"iptables", "iptables-legacy"}, {"Cilium native", "ebpf"}, {"Cilium overlay", "vxlan+ebpf"}}

// tkeParts are TKE's overhead rows: a part added to Cilium's two columns
// (TKE has none on iptables), each measured against the same datapath
// without it on keep-alive HTTP through a Service (tkePartTest), the rate
// TKE's overhead percentages are of.
var tkeParts = []struct{ row, part, words string }{
	{"L3/L4 policy overhead", "policy", "L3/L4 policy"},
	{"L7 policy overhead", "l7-node", "L7 policy (a per-node proxy)"},
	{"Hubble overhead", "flows", "flow log (Hubble)"},
}

const tkePartTest, tkePartMetric = "FORTIO_RPS_C64", "request rate"

// tkePartScenarios are the added-part scenarios, after the three columns'
// own (so each is compared with its datapath: report/against.go).
func tkePartScenarios() []string {
	var out []string
	for _, p := range tkeParts {
		for _, c := range tkeColumns[1:] {
			out = append(out, c.scenario+"+"+p.part)
		}
	}
	return out
}

// tkeScenarioTests: the added-part scenarios answer one row each, so they
// run its test only.
func tkeScenarioTests() map[string][]string {
	out := map[string][]string{}
	for _, sc := range tkePartScenarios() {
		out[sc] = []string{tkePartTest}
	}
	return out
}

// tkeReproduction maps TKE's table: the rows with a test here on every
// column, the overhead rows as a part added to Cilium's two, and the
// Service-scale and map-memory rows at the steps of the sweep that
// follows the rounds (Profile.Scale).
func tkeReproduction() *results.Reproduction {
	rep := &results.Reproduction{Report: "tke"}
	measured := []struct{ row, test, placement, metric string }{
		{"Pod-to-pod throughput, 8 streams", "TCP_STREAM_MULTI", PodToPodOtherNode, "throughput"},
		{"HTTP RPS keepalive, c64, via Service", "FORTIO_RPS_C64", PodToServiceOtherNode, "request rate"},
		{"HTTP RPS short connection, c64", "FORTIO_RPS_SHORT_C64", PodToServiceOtherNode, "request rate"},
		{"TCP_RR p50", "TCP_RR", PodToPodOtherNode, "p50 latency"},
		{"TCP_RR p99", "TCP_RR", PodToPodOtherNode, "p99 latency"},
		{"TCP_CRR p99", "TCP_CRR", PodToPodOtherNode, "p99 latency"},
		{"HTTP p99 at 1,000 QPS", "FORTIO_QPS_1000", PodToServiceOtherNode, "p99 latency"},
	}
	for _, m := range measured {
		for _, c := range tkeColumns {
			rep.Cells = append(rep.Cells, cell(m.row, c.column, m.test, m.placement, c.scenario, m.metric))
		}
	}
	for _, p := range tkeParts {
		// TKE has no iptables cell in these rows ("–"): Cilium's only.
		for _, c := range tkeColumns[1:] {
			pc := cell(p.row, c.column, tkePartTest, PodToServiceOtherNode, c.scenario+"+"+p.part, tkePartMetric)
			pc.Change = true
			rep.Cells = append(rep.Cells, pc)
		}
	}
	largest := tkeScaleSteps[len(tkeScaleSteps)-1]
	// TKE has no iptables cell ("–"): kube-proxy has no BPF maps.
	for _, c := range tkeColumns[1:] {
		mc := cell(tkeMapMemoryRow, c.column, "", "", c.scenario, results.MetricMapMemory)
		mc.Services = largest
		rep.Cells = append(rep.Cells, mc)
	}
	for _, n := range tkeScaleSteps {
		for _, c := range tkeColumns {
			sc := cell(tkeScaleRow(n), c.column, tkeScaleTest, PodToServiceOtherNode, c.scenario, "request rate")
			sc.Services = n
			rep.Cells = append(rep.Cells, sc)
		}
	}
	for _, s := range []struct{ ask, row string }{
		{"short-connection HTTP through a Service, Cilium native ÷ iptables", "HTTP RPS short connection, c64"},
		{"keep-alive HTTP through a Service, Cilium native ÷ iptables", "HTTP RPS keepalive, c64, via Service"},
		{"pod-to-pod throughput, Cilium native ÷ iptables", "Pod-to-pod throughput, 8 streams"},
	} {
		rep.Shapes = append(rep.Shapes, shape(s.ask, s.row, "iptables", s.row, "Cilium native"))
	}
	for _, s := range []struct{ ask, row string }{
		{"short-connection HTTP through a Service, Cilium overlay ÷ native", "HTTP RPS short connection, c64"},
		{"TCP_RR p50, Cilium overlay ÷ native", "TCP_RR p50"},
	} {
		rep.Shapes = append(rep.Shapes, shape(s.ask, s.row, "Cilium native", s.row, "Cilium overlay"))
	}
	for _, p := range tkeParts {
		for _, c := range tkeColumns[1:] {
			s := shape(p.words+" on keep-alive HTTP through a Service, "+c.column, p.row, c.column, p.row, c.column)
			s.Change = true
			rep.Shapes = append(rep.Shapes, s)
		}
	}
	// At scale: the crossover TKE saw (Cilium ahead at 30,000), each
	// column's fall from no dummy Services to 30,000, and iptables' fall
	// at 10,000 too (halfway down its curve).
	top := tkeScaleRow(largest)
	rep.Shapes = append(rep.Shapes, shape("short-connection HTTP at "+stats.Thousands(largest)+" Services, Cilium native ÷ iptables", top, "iptables", top, "Cilium native"))
	fall := func(n int, column string) results.Shape {
		return shape("short-connection HTTP, "+stats.Thousands(n)+" Services ÷ none, "+column, "HTTP RPS short connection, c64", column, tkeScaleRow(n), column)
	}
	rep.Shapes = append(rep.Shapes, fall(10000, "iptables"))
	for _, c := range tkeColumns {
		rep.Shapes = append(rep.Shapes, fall(largest, c.column))
	}
	return rep
}

// tkeMapMemoryRow is TKE's BPF map memory row (its LB map sized to 1.02M
// entries; ours to the largest step, as --auto-size grows it).
const tkeMapMemoryRow = "BPF map memory per node (LB map 1.02M)"

// tkeScaleRow is TKE's row at n Services.
func tkeScaleRow(n int) string {
	return "Service scale " + stats.Thousands(n) + ": short-connection RPS"
}

// tkeScaleSteps are TKE's SVC_SCALE_STEPS, each Service with 4 endpoints
// (SVC_ENDPOINTS); a datapath whose next step would take longer than
// tkeMaxStepTime stops there, saying so in its rows.
var tkeScaleSteps = []int{5000, 10000, 20000, 30000}

// tkeMaxStepTime keeps the rows at scale within the profile's time: a
// datapath stops where its next step is predicted to take longer, and
// its rows beyond say so (iptables-legacy programs 30,000 Services × 4 in
// about 16 s here, eBPF in a tenth of a second; iptables through the nft
// backend, --scenarios iptables, would stop after 5,000).
const tkeMaxStepTime = 2 * time.Minute

// tkeScaleTest measures TKE's rows at scale: short-connection RPS at
// c64 through the Service, with fortio's client as TKE's.
const tkeScaleTest = "FORTIO_RPS_SHORT_C64"

// tkeQuestions are the shapes between scenarios as the profile's
// questions: answered first, held to a false-discovery rate among
// themselves.
func tkeQuestions() []results.Question {
	rep := tkeReproduction()
	scenario := func(ref results.CellRef) (results.ReproducedCell, bool) {
		for _, c := range rep.Cells {
			if c.Row == ref.Row && c.Column == ref.Column && c.NoEquivalent == "" {
				return c, true
			}
		}
		return results.ReproducedCell{}, false
	}
	var qs []results.Question
	for _, s := range rep.Shapes {
		if s.Change {
			// The part's scenario against its column's own datapath.
			if c, ok := scenario(s.A); ok {
				qs = append(qs, results.Question{Ask: s.Ask, Test: c.Test, Placement: c.Placement, Metric: c.Metric,
					A: columnScenario(tkeColumns, s.A.Column), B: c.Scenario})
			}
			continue
		}
		a, okA := scenario(s.A)
		b, okB := scenario(s.B)
		// A question compares two scenarios without dummy Services: the
		// shapes at scale are judged in the report only.
		if okA && okB && a.Test == b.Test && a.Placement == b.Placement && a.Services == 0 && b.Services == 0 {
			qs = append(qs, results.Question{Ask: s.Ask, Test: b.Test, Placement: b.Placement, Metric: b.Metric, A: a.Scenario, B: b.Scenario})
		}
	}
	return qs
}

// columnScenario is the lab scenario of a report's column ("" for none).
func columnScenario(cols []reportColumn, column string) string {
	for _, c := range cols {
		if c.column == column {
			return c.scenario
		}
	}
	return ""
}

// streamsPerCore is the N of the cilium-2021 profile's N flows: the
// cores this machine has, as the original ran one per hardware thread.
var streamsPerCore = runtime.NumCPU()

func publishedProfiles() []Profile {
	return []Profile{
		{
			Name: "connectivity-perf",
			About: "cilium connectivity perf's matrix: TCP_CRR, TCP_RR, UDP_RR (min, mean, max, p50, p90, p99 latency and rate) and TCP_STREAM, UDP_STREAM " +
				"and their multi-flow variants (4 flows) on pod-to-pod same-node and other-node and host-to-host other-node, 10 s each as cilium-cli, " +
				"5 rounds (cilium-cli's one sample gives no interval); about 20 min on 2 cores; opens with its table beside the published example",
			Tests:      []string{"TCP_CRR", "TCP_RR", "UDP_RR", "TCP_STREAM", "UDP_STREAM", "TCP_STREAM_MULTI", "UDP_STREAM_MULTI"},
			Placements: AllPlacements,
			// cilium-cli's defaults: 10 s per test, --msg-size 1024 for UDP.
			Rhythm:     Rhythm{Duration: 10 * time.Second, Warmup: 1 * time.Second, Rounds: 5, Streams: 4, UDPMessageSize: 1024},
			Reproduces: connectivityPerfReproduction(),
		},
		{
			Name: "cilium-2021",
			About: fmt.Sprintf("Cilium's 2021 CNI benchmark: TCP_STREAM with 1 and N flows (N = this machine's %d cores), TCP_RR and TCP_CRR (1 flow), "+
				"CPU per unit of work on both ends, on pod-to-pod/other-node beside the host-to-host baseline, natively routed with and without "+
				"WireGuard, 5 interleaved rounds of 2 s; about 3.5 min on 2 cores; opens with its table", streamsPerCore),
			Tests:      []string{"TCP_STREAM", "TCP_STREAM_MULTI", "TCP_RR", "TCP_CRR"},
			Placements: []string{PodToPodOtherNode, HostToHostOtherNod},
			Rhythm:     interleaved(streamsPerCore),
			Scenarios:  []string{"native", "native+wireguard"},
			Ask:        "what the 2021 CNI benchmark's paths and WireGuard give on this machine",
			Questions: append(addedPartQuestions([]string{"native", "native+wireguard"}, "TCP_STREAM", PodToPodOtherNode, "throughput", "cost on throughput"),
				addedPartQuestions([]string{"native", "native+wireguard"}, "TCP_RR", PodToPodOtherNode, "rate", "cost on request-response rate")...),
			Reproduces: cilium2021Reproduction(),
		},
		{
			Name: "tke",
			About: "Tencent's TKE benchmark: kube-proxy iptables (legacy backend), eBPF natively routed and eBPF over VXLAN; pod-to-pod TCP_STREAM_MULTI (8 flows), " +
				"HTTP keep-alive and short-connection RPS at c64 and p99 at 1,000 QPS through a Service with fortio's client as TKE's (FORTIO_RPS_C64, " +
				"FORTIO_RPS_SHORT_C64, FORTIO_QPS_1000), TCP_RR and TCP_CRR latency; L3/L4 policy, L7 policy and the flow log added to both eBPF " +
				"columns, each on keep-alive HTTP against the same datapath without it; 5 interleaved rounds of 2 s; then, on the lab, short-connection " +
				"RPS at TKE's 5,000 to 30,000 Services × 4 endpoints and the eBPF maps' memory; about 14 min on 2 cores; " +
				"opens with TKE's table and its shapes (eBPF ÷ iptables, overlay ÷ native, each part's overhead, the fall and crossover at scale) judged here",
			Tests:         []string{"TCP_STREAM_MULTI", "FORTIO_RPS_C64", "FORTIO_RPS_SHORT_C64", "TCP_RR", "TCP_CRR", "FORTIO_QPS_1000"},
			Placements:    []string{PodToPodOtherNode, PodToServiceOtherNode},
			Rhythm:        interleaved(8),
			Scenarios:     append(columnScenarios(tkeColumns), tkePartScenarios()...),
			ScenarioTests: tkeScenarioTests(),
			Ask:           "whether TKE's iptables-vs-eBPF shapes and its features' overheads hold here",
			Questions:     tkeQuestions(),
			Reproduces:    tkeReproduction(),
			OnCluster:     true,
			Scale: &ScaleRows{Steps: tkeScaleSteps, Endpoints: 4, Tests: []string{tkeScaleTest}, Scenarios: columnScenarios(tkeColumns),
				MaxStepTime: tkeMaxStepTime},
		},
		eksProfile(),
		istioProfile(),
	}
}

// ReproducedReport is the id of the published report the profile
// reproduces, "" for none.
func (p Profile) ReproducedReport() string {
	if p.Reproduces == nil {
		return ""
	}
	return p.Reproduces.Report
}
