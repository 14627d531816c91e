package suite

import (
	"fmt"
	"math"
	"strconv"

	"github.com/cnibench/cnibench/published"
	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/stats"
)

// The eks profile reproduces AWS's EKS benchmark of VPC CNI against
// Cilium in five scenarios (A–E). The lab has no VPC CNI and no Cilium,
// so each scenario is the lab scenario built from the same mechanisms
// (docs/profiles.md has the table and what each tuning of E became):
// pods routed natively with their own addresses as VPC CNI and ENI mode
// give them, Cilium's default tunnel as VXLAN, kube-proxy as the iptables
// Service datapath, Cilium's kube-proxy replacement as the eBPF one
// (per packet at tc until E turns the socket LB on), Hubble as the flows
// part, and E's tunings as the lab's tuning parts that exist.

// eksColumns are the EKS report's columns as lab scenarios.
var eksColumns = []reportColumn{
	{"A: VPC CNI + kube-proxy", "iptables"},
	{"B: Cilium + kube-proxy", "vxlan+iptables+flows"},
	{"C: Cilium kube-proxy-free", "vxlan+ebpf-tc+flows"},
	{"D: Cilium ENI native routing", "ebpf-tc+flows"},
	{"E: D + tuning", "ebpf+cc-bbr+notrack"},
}

// eksMeasured are the EKS rows with a test here, on every column.
var eksMeasured = []struct{ row, test, placement, metric string }{
	{"TCP throughput (iperf3)", "TCP_STREAM", PodToPodOtherNode, "throughput"},
	{"UDP loss (iperf3)", "UDP_STREAM", PodToPodOtherNode, "loss"},
	{"HTTP p99 at 1,000 QPS (fortio)", "FORTIO_QPS_1000", PodToServiceOtherNode, "p99 latency"},
	{"HTTP p99 at 5,000 QPS (fortio)", "FORTIO_QPS_5000", PodToServiceOtherNode, "p99 latency"},
	{"HTTP max QPS (fortio)", "FORTIO_RPS_C64", PodToServiceOtherNode, "request rate"},
	{"DNS p50", "DNS_QPS_1000", PodToServiceOtherNode, "p50 latency"},
	{"DNS p99", "DNS_QPS_1000", PodToServiceOtherNode, "p99 latency"},
	{"Datapath resources", "FORTIO_QPS_1000", PodToServiceOtherNode, "softirq CPU per request"},
}

// eksServiceScale is why the 1,000-Service rows are not in this run.
const eksServiceScale = "not in this profile's run yet: `cnibench sweep --service-datapath iptables` measures the time a new connection takes against the Service count (docs/service-scale.md)"

// eksReproduction maps the EKS table: each measured row on the five
// columns, the Service-scale rows said to be the sweep's.
func eksReproduction() *results.Reproduction {
	rep := &results.Reproduction{Report: "eks"}
	for _, m := range eksMeasured {
		for _, c := range eksColumns {
			rep.Cells = append(rep.Cells, cell(m.row, c.column, m.test, m.placement, c.scenario, m.metric))
		}
	}
	for _, row := range []string{"iptables at 1,000 Services: time added per new connection", "iptables at 1,000 Services: change per new connection"} {
		for _, c := range eksColumns {
			rep.Cells = append(rep.Cells, noEquivalent(row, c.column, eksServiceScale))
		}
	}
	rep.Shapes = eksShapes()
	return rep
}

// eksShapes are the EKS ratios that carry over, each against the column
// the report compares it with (A; for C, D): UDP loss far lower with E's
// tuning and even between A and D; TCP throughput even in every
// scenario; HTTP p99 at 1,000 QPS and the max rate even within the
// width of the range the report printed over its scenarios.
func eksShapes() []results.Shape {
	a := eksColumns[0].column
	var out []results.Shape
	d, e := eksColumns[3].column, eksColumns[4].column
	// C is D over VXLAN: the report compares C's column with D's.
	for _, p := range [][2]string{{a, eksColumns[1].column}, {d, eksColumns[2].column}, {a, d}, {a, e}} {
		ask := "TCP throughput, " + p[1][:1] + " ÷ " + p[0][:1]
		out = append(out, shape(ask, "TCP throughput (iperf3)", p[0], "TCP throughput (iperf3)", p[1]))
	}
	out = append(out,
		shape("UDP loss, E ÷ A (E's Bandwidth Manager + BBR in the original)", "UDP loss (iperf3)", a, "UDP loss (iperf3)", e),
		shape("UDP loss, D ÷ A", "UDP loss (iperf3)", a, "UDP loss (iperf3)", d))
	// The report printed 8.75–10.92 ms and 4,000–4,200 req/s over its
	// five scenarios: any two lie within the range's width of each other.
	return append(out, bandShape("eks", "HTTP p99 at 1,000 QPS, E ÷ A", "HTTP p99 at 1,000 QPS (fortio)", a, e),
		bandShape("eks", "HTTP max QPS, E ÷ A", "HTTP max QPS (fortio)", a, e))
}

// bandShape is "about even" between two columns of a row the report
// printed as one range over its columns (published.Cell Low, High): any
// two lie within the range's width, High ÷ Low, of each other. The band
// and the words come from the data file; a row without a range keeps
// the ±5% of one round.
func bandShape(report, ask, row, colA, colB string) results.Shape {
	s := shape(ask, row, colA, row, colB)
	pub, err := published.Lookup(report)
	if err != nil {
		return s
	}
	c, ok := pub.Cell(row, colA)
	if !ok || !c.Ranged() || c.Low <= 0 {
		return s
	}
	s.EvenWithinPct = math.Ceil(100*(c.High/c.Low-1) - 1e-9)
	approx := ""
	if c.Approx {
		approx = "≈ "
	}
	s.Ask = fmt.Sprintf("%s, within the published band (%s%s–%s %s: ±%g%%)", ask, approx, figure(c.Low), figure(c.High), c.Unit, s.EvenWithinPct)
	return s
}

// figure writes a published figure as the report did: whole numbers with
// thousands separators (4,000), others as they are (8.75).
func figure(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return stats.Thousands(int(v))
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// eksProfile runs the EKS report's tests in its five scenarios.
func eksProfile() Profile {
	return Profile{
		Name: "eks",
		About: "the EKS report (VPC CNI vs Cilium, scenarios A–E) on the lab: A iptables, B vxlan+iptables+flows, C vxlan+ebpf-tc+flows, " +
			"D ebpf-tc+flows, E ebpf+cc-bbr+notrack (D's tuning: socket LB, BBR, no conntrack on the path, no flows; Bandwidth Manager, " +
			"larger CT tables, XDP and DSR have no lab equivalent: docs/profiles.md); TCP_STREAM and UDP_STREAM (loss) pod-to-pod, fortio at " +
			"1,000 / 5,000 QPS and max, DNS p50/p99 and the datapath's CPU through a Service, 5 interleaved rounds of 2 s; about 15 min on 2 cores; " +
			"opens with the EKS table and its shapes",
		Tests:      []string{"TCP_STREAM", "UDP_STREAM", "FORTIO_QPS_1000", "FORTIO_QPS_5000", "FORTIO_RPS_C64", "DNS_QPS_1000"},
		Placements: []string{PodToPodOtherNode, PodToServiceOtherNode},
		Rhythm:     interleaved(4),
		Scenarios:  columnScenarios(eksColumns),
		Ask:        "whether the EKS report's VPC CNI vs Cilium shapes hold here",
		Reproduces: eksReproduction(),
	}
}
