package results

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/engine"
	"github.com/cnibench/cnibench/engine/httpload"
	"github.com/cnibench/cnibench/engine/kinds"
	"github.com/cnibench/cnibench/stats"
)

// latency of n values at us microseconds each, plus extra values.
func latencyOf(t *testing.T, n int, us float64, extra ...float64) *stats.Latency {
	t.Helper()
	h := stats.NewHistogram()
	for range n {
		stats.Record(h, time.Duration(us*1e3))
	}
	for _, x := range extra {
		stats.Record(h, time.Duration(x*1e3))
	}
	l, err := stats.Summarize(h)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func near(got, want float64) bool { return math.Abs(got-want) <= 0.002*math.Abs(want)+1e-9 }

func TestMetricsStream(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	smp := func(round int, gbit, loss float64) Sample {
		return Sample{Round: round, Start: t0, End: t0.Add(5 * time.Second),
			ClientCPUSec: 2.5, ServerCPUSec: 5, // over 5 s wall, 4 s measured: 2 and 4 s
			Result: &engine.Result{RunnerResults: kinds.RunnerResults{Seconds: 4}, ThroughputBitsSec: gbit * 1e9, BytesReceived: 2e9,
				OfferedBitsSec: 10e9, PacketsSent: 1000, LossPercent: loss}}
	}
	r := Result{Test: "UDP_STREAM", Samples: []Sample{smp(1, 9, 1), smp(2, 7, 3), {Round: 3, Error: "agent gone"}, smp(4, 8, 2)}}
	s, err := Metrics(r)
	if err != nil {
		t.Fatal(err)
	}
	if s.Kind != KindStream || s.Samples != 4 || s.Failed != 1 || s.FirstError != "agent gone" {
		t.Errorf("series = %+v", s)
	}
	tp := s.Metric(MetricThroughput)
	if tp == nil || !slices.Equal(tp.Values, []float64{9, 7, 8}) || !slices.Equal(tp.Rounds, []int{1, 2, 4}) ||
		tp.Display != 8 || !tp.Headline || tp.Better != HigherIsBetter || tp.Unit != "Gbit/s" {
		t.Errorf("throughput = %+v", tp)
	}
	loss := s.Metric(MetricLoss)
	if loss == nil || loss.Display != 2 || loss.Headline || loss.Complement == "" {
		t.Fatalf("loss = %+v", loss)
	}
	vals, higher, noun := loss.ComparedValues()
	if !slices.Equal(vals, []float64{99, 97, 98}) || !higher || noun != "delivered share" {
		t.Errorf("loss compared as %v higher=%v %q", vals, higher, noun)
	}
	// 2 s of client CPU over the measured 4 s, for 2 GB: 1 s/GB.
	if m := s.Metric(MetricClientCPUGB); m == nil || !near(m.Display, 1) {
		t.Errorf("client CPU per GB = %+v, want 1", m)
	}
	if m := s.Metric(MetricServerCPUGB); m == nil || !near(m.Display, 2) {
		t.Errorf("server CPU per GB = %+v, want 2", m)
	}
	if m := s.Metric(MetricOffered); m == nil || m.Judged() {
		t.Errorf("offered must be an info metric: %+v", m)
	}
	if hl := s.Headlines(); len(hl) != 1 || hl[0].Name != MetricThroughput {
		t.Errorf("headlines = %+v", hl)
	}
}

// Per-sample percentiles come from each sample's own histogram; the
// displayed one is their median over rounds (the values verdicts judge),
// not the merged histogram's, which one slow round would set.
func TestMetricsRRMergedPercentiles(t *testing.T) {
	rr := func(round int, rate float64, l *stats.Latency) Sample {
		return Sample{Round: round, Result: &engine.Result{RunnerResults: kinds.RunnerResults{Seconds: 4}, Transactions: 100, RatePerSec: rate, Latency: l}}
	}
	fast, slow := latencyOf(t, 100, 10), latencyOf(t, 100, 1000)
	// Summary fields that disagree with the histogram must be ignored.
	lying := *fast
	lying.P99Us = 5
	r := Result{Test: "TCP_CRR", Samples: []Sample{rr(1, 1000, &lying), rr(2, 1100, fast), rr(3, 900, slow)}}
	s, err := Metrics(r)
	if err != nil {
		t.Fatal(err)
	}
	if s.Kind != KindRR || s.Latency == nil || s.Latency.Count != 300 {
		t.Fatalf("series = %+v", s)
	}
	p99 := s.Metric(MetricP99)
	if p99 == nil || !p99.Headline || p99.Better != LowerIsBetter {
		t.Fatalf("p99 = %+v", p99)
	}
	if len(p99.Values) != 3 || !near(p99.Values[0], 10) || !near(p99.Values[1], 10) || !near(p99.Values[2], 1000) {
		t.Errorf("per-sample p99 = %v, want [10 10 1000]", p99.Values)
	}
	if !near(p99.Display, 10) {
		t.Errorf("displayed p99 = %v, want the median over rounds, 10 (the merged histogram's would be 1000)", p99.Display)
	}
	if s.Latency == nil || !near(s.Latency.P99Us, 1000) {
		t.Errorf("merged distribution p99 = %+v, want 1000", s.Latency)
	}
	rate := s.Metric(MetricRate)
	if rate == nil || rate.Display != 1000 || rate.Unit != "conn/s" || !rate.Headline {
		t.Errorf("rate = %+v", rate)
	}
	if m := s.Metric(MetricMax); m == nil || m.Judged() || !near(m.Display, 10) {
		t.Errorf("max = %+v", m)
	}
	if s.Metric(MetricClientCPUOp) != nil {
		t.Errorf("no CPU was recorded, yet a CPU metric exists")
	}
	var names []string
	for _, m := range s.Headlines() {
		names = append(names, m.Name)
	}
	if !slices.Equal(names, []string{MetricRate, MetricP99}) {
		t.Errorf("headlines = %v", names)
	}
}

func TestMetricsHTTP(t *testing.T) {
	lat := latencyOf(t, 1000, 100)
	closed := Result{Test: "HTTP_RPS_C64", Samples: []Sample{
		{Round: 1, Result: &httpload.Result{RunnerResults: kinds.RunnerResults{Seconds: 4}, Requests: 40000, RPS: 10000, Latency: lat, LatencyUncorrected: lat, ClientCPU: kinds.ClientCPU{ClientCPUs: 1, ClientCPUUtil: 0.95, ClientSaturated: true}}},
		{Round: 2, Result: &httpload.Result{RunnerResults: kinds.RunnerResults{Seconds: 4}, Requests: 39990, RPS: 9990, Latency: lat, LatencyUncorrected: lat, Errors: httpload.Errors{Total: 10, Timeout: 10, First: "timeout"}}},
	}}
	s, err := Metrics(closed)
	if err != nil {
		t.Fatal(err)
	}
	if s.Kind != KindHTTP || s.Metric(MetricRPS) == nil || !s.Metric(MetricRPS).Headline || s.Metric(MetricMissedBy) != nil {
		t.Errorf("closed loop: %+v", s)
	}
	if e := s.Metric(MetricErrors); e == nil || !slices.Equal(e.Values, []float64{0, 100 * 10.0 / 40000}) {
		t.Errorf("errors = %+v", e)
	}
	w := strings.Join(s.Warnings, "\n")
	if !strings.Contains(w, "client CPU saturated in 1 of 2 samples") || !strings.Contains(w, "10 errors") || !strings.Contains(w, "timeout") {
		t.Errorf("warnings = %q", w)
	}

	open := Result{Test: "HTTP_QPS_1000", Samples: []Sample{
		{Round: 1, Result: &httpload.Result{RunnerResults: kinds.RunnerResults{Seconds: 4}, Requests: 3600, RPS: 900, OpenLoop: kinds.OpenLoop{TargetQPS: 1000, MissedTarget: true, MissedByPercent: 10}, Latency: lat, LatencyUncorrected: latencyOf(t, 1000, 50)}},
	}}
	s, err = Metrics(open)
	if err != nil {
		t.Fatal(err)
	}
	if s.Metric(MetricRPS).Headline {
		t.Errorf("open loop: the request rate is set by the plan and must not be a headline")
	}
	if hl := s.Headlines(); len(hl) != 1 || hl[0].Name != MetricP99 {
		t.Errorf("open loop headlines = %+v", hl)
	}
	if m := s.Metric(MetricMissedBy); m == nil || m.Display != 10 {
		t.Errorf("missed by = %+v", m)
	}
	if m := s.Metric(MetricP99Uncorr); m == nil || !near(m.Display, 50) {
		t.Errorf("uncorrected p99 = %+v", m)
	}
	if !strings.Contains(strings.Join(s.Warnings, "\n"), "missed the target rate in 1 of 1 samples (by up to 10.0%)") {
		t.Errorf("warnings = %q", s.Warnings)
	}
}

func TestMetricsAllFailed(t *testing.T) {
	s, err := Metrics(Result{Test: "TCP_RR", Samples: []Sample{{Error: "boom"}, {}}})
	if err != nil {
		t.Fatal(err)
	}
	if s.Kind != "" || s.Failed != 2 || s.FirstError != "boom" || len(s.Metrics) != 0 {
		t.Errorf("series = %+v", s)
	}
}

// What the pinned CPUs spent becomes three per-unit metrics beside the
// endpoints': their whole busy time, its softirq share, and the part no
// endpoint's cgroup was charged for (never below 0), scaled to the
// measured interval like the endpoints' CPU; listed after the endpoints'.
func TestMetricsPinnedCPU(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	smp := func(round int, busy float64) Sample {
		return Sample{Round: round, Start: t0, End: t0.Add(5 * time.Second), ClientCPUSec: 2.5, ServerCPUSec: 5,
			Pinned: &PinnedCPU{CPUs: "0,1", BusySec: busy, SoftirqSec: 1.25},
			Result: &engine.Result{RunnerResults: kinds.RunnerResults{Seconds: 4}, ThroughputBitsSec: 4e9, BytesReceived: 2e9}}
	}
	s, err := Metrics(Result{Test: "TCP_STREAM", Samples: []Sample{smp(1, 10), smp(2, 7), smp(3, 10)}})
	if err != nil {
		t.Fatal(err)
	}
	// ×4/5 measured, per 2 GB: busy 10 s → 4 s/GB, softirq 1.25 → 0.5,
	// unattributed 10 − 7.5 = 2.5 → 1 (round 2: 7 < 7.5 → 0).
	for name, want := range map[string][]float64{"total CPU per GB": {4, 2.8, 4}, "softirq CPU per GB": {0.5, 0.5, 0.5},
		"unattributed CPU per GB": {1, 0, 1}} {
		m := s.Metric(name)
		if m == nil || len(m.Values) != 3 || m.Better != LowerIsBetter || m.Unit != "s" {
			t.Fatalf("%s = %+v", name, m)
		}
		for i := range want {
			if !near(m.Values[i], want[i]) {
				t.Errorf("%s = %v, want %v", name, m.Values, want)
			}
		}
	}
	var names []string
	for _, m := range s.Metrics {
		names = append(names, m.Name)
	}
	if i, j := slices.Index(names, MetricServerCPUGB), slices.Index(names, "total CPU per GB"); i < 0 || j != i+1 {
		t.Errorf("metric order %q: the pinned CPUs' rows belong right after the server's", names)
	}
}
