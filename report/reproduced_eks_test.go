package report

import (
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/engine/dnsload"
	"github.com/cnibench/cnibench/engine/fortioload"
	"github.com/cnibench/cnibench/engine/kinds"
	"github.com/cnibench/cnibench/results"
)

// loadSamples are five rounds of a fortio or DNS test as the kinds
// record them, and the options they ran with: the eks profile's HTTP
// ladder and DNS rows.
func loadSamples(t *testing.T, test, host string, rates, latUs []float64) (any, []results.Sample) {
	t.Helper()
	qps := map[string]float64{"FORTIO_QPS_1000": 1000, "FORTIO_QPS_5000": 5000, "DNS_QPS_1000": 1000}[test]
	runner := kinds.RunnerOptions{Duration: kinds.Duration(2 * time.Second)}
	var out []results.Sample
	for i, r := range rates {
		s := sampleAt(i + 1)
		lat := histogram(t, latUs[i])
		if strings.HasPrefix(test, "DNS") {
			d := &dnsload.Result{Mode: "fixed-qps", RunnerResults: kinds.RunnerResults{Seconds: 10}, Sent: int64(r * 10), Responses: int64(r * 10),
				OK: int64(r * 10), QPS: r, OpenLoop: kinds.OpenLoop{TargetQPS: qps, AchievedRatio: r / qps}, Latency: lat, LatencyUncorrected: lat, ClientCPU: kinds.ClientCPU{ClientCPUs: 1, ClientCPUUtil: 0.2}}
			s.Result = d
		} else {
			f := &fortioload.Result{Mode: "max-rate", RunnerResults: kinds.RunnerResults{Seconds: 10}, Conns: 64, Requests: int64(r * 10), OK: int64(r * 10),
				RPS: r, Latency: lat, ClientCPU: kinds.ClientCPU{ClientCPUs: 1, ClientCPUUtil: 0.4}}
			if qps > 0 {
				f.Mode, f.TargetQPS, f.AchievedRatio = "fixed-qps", qps, r/qps
			}
			s.Result = f
		}
		s.ClientCPUSec, s.ServerCPUSec = r*10*30e-6, r*10*25e-6
		out = append(out, s)
	}
	if strings.HasPrefix(test, "DNS") {
		return &dnsload.Options{Server: host, QPS: qps, RunnerOptions: runner}, out
	}
	return &fortioload.Options{Host: host, Connections: 64, KeepAlive: test != "FORTIO_RPS_SHORT_C64", QPS: qps, RunnerOptions: runner}, out
}

// The eks profile on a recorded run: the EKS table in its order with the
// published figures (ranges as the report printed them), and each shape
// judged: E's UDP loss far below A's, D's even with A's; TCP even in
// every scenario; HTTP p99 at 1,000 QPS and the max rate within the band.
func TestReproducedEKS(t *testing.T) {
	f := factors{
		"iptables":            {lossKey: 0.005}, // 20% loss, as A and D
		"ebpf-tc+flows":       {lossKey: 0.005},
		"ebpf+cc-bbr+notrack": {lossKey: 3.3, "FORTIO_QPS_1000": 1.1}, // 0.03%
	}
	run := recordedRun(t, "eks", f)
	m, out := reproducedReport(t, run)
	checkOriginalLayout(t, "eks", m, out)
	want := map[string]string{
		"TCP throughput, B ÷ A": ShapeHolds, "TCP throughput, C ÷ D": ShapeHolds,
		"TCP throughput, D ÷ A": ShapeHolds, "TCP throughput, E ÷ A": ShapeHolds,
		"UDP loss, E ÷ A (E's Bandwidth Manager + BBR in the original)": ShapeHolds, // delivered +25% both
		"UDP loss, D ÷ A": ShapeHolds, // even both
		"HTTP p99 at 1,000 QPS, E ÷ A, within the published band (8.75–10.92 ms: ±25%)": ShapeHolds, // −9% here
		"HTTP max QPS, E ÷ A, within the published band (≈ 4,000–4,200 req/s: ±5%)":     ShapeHolds,
	}
	got := shapeVerdicts(m)
	for ask, w := range want {
		if got[ask] != w {
			t.Errorf("%s: %q, want %q", ask, got[ask], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d shapes, want %d: %v", len(got), len(want), got)
	}
	for _, s := range []string{
		"| TCP throughput (iperf3) | A: VPC CNI + kube-proxy | TCP_STREAM · pod-to-pod/other-node · iptables · throughput | 12.3–12.4 Gbit/s (the row's range) |",
		"| UDP loss (iperf3) | E: D + tuning | UDP_STREAM · pod-to-pod/other-node · ebpf+cc-bbr+notrack · loss | 0.03 % | 0.0303 (0.0300–0.0306)† % | 1.01× (1×–1.02×) | vs iptables: published +25.0%; ours 25.0% higher delivered share",
		"| HTTP max QPS (fortio) | C: Cilium kube-proxy-free |",
		"| DNS p99 | D: Cilium ENI native routing | DNS_QPS_1000 · pod-to-service/other-node · ebpf-tc+flows · p99 latency | – |",
		"no equivalent here: not in this profile's run yet: `cnibench sweep --service-datapath iptables`",
	} {
		if !strings.Contains(out["md"], s) {
			t.Errorf("report.md lacks %q:\n%s", s, out["md"])
		}
	}
}
