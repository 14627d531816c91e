package report

import (
	"strings"
	"testing"
)

// The istio-scale profile on a recorded run: the report's table in its
// order (total QPS, tail latency, CPU under load, memory, queries per
// core; Istio ambient, Cilium), the published queries per core in their
// cells from reports.json, the rows with no per-round metric here saying
// why, and the one published shape given its verdict: not judged, with
// the reason, rather than left out.
func TestReproducedIstioScale(t *testing.T) {
	f := factors{"ebpf+wireguard+l7-node": {"FORTIO_RPS_C64": 0.9}}
	run := recordedRun(t, "istio-scale", f)
	m, out := reproducedReport(t, run)
	checkOriginalLayout(t, "istio-scale", m, out)
	got := shapeVerdicts(m)
	const ask = "queries per core, Istio ambient ÷ Cilium"
	if len(got) != 1 || got[ask] != ShapeNotJudged {
		t.Errorf("shapes %v, want %q %s", got, ask, ShapeNotJudged)
	}
	for _, l := range m.Cells {
		measured := l.Row == "Total QPS" || l.Row == "Tail latency"
		if measured && (l.NotMeasured != "" || l.Ours == nil) {
			t.Errorf("%s / %s: not measured (%s) though the run has it", l.Row, l.Column, l.NotMeasured)
		}
	}
	for _, s := range []string{
		"| Total QPS | Istio ambient | FORTIO_RPS_C64 · pod-to-service/other-node · iptables+ambient+waypoint · request rate |",
		"| Tail latency | Cilium | FORTIO_RPS_C64 · pod-to-service/other-node · ebpf+wireguard+l7-node · p99 latency |",
		"| Queries per core | Istio ambient |  | 2,178 queries/s per core |",
		"runs one client→server pair per scenario; the many-pairs load for mesh scenarios is pending",
		"the lab reads no memory of its proxies",
		ask + ": not judged: Queries per core / Cilium no equivalent here",
	} {
		if !strings.Contains(out["md"], s) {
			t.Errorf("report.md lacks %q:\n%s", s, out["md"])
		}
	}
}
