package report

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/cnibench/cnibench/engine"
	"github.com/cnibench/cnibench/engine/httpload"
	"github.com/cnibench/cnibench/engine/kinds"
	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/stats"
)

// -update rewrites testdata/results.json from fixtureRun and the golden
// reports from it: go test ./report -run Golden -update
var update = flag.Bool("update", false, "rewrite testdata/results.json and the golden reports")

const fixtureDir = "testdata"

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// loadFixture returns the committed results document (rewritten first
// under -update).
func loadFixture(t *testing.T) *results.Run {
	t.Helper()
	if *update {
		if err := os.MkdirAll(fixtureDir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := results.Save(fixtureDir, fixtureRun(t)); err != nil {
			t.Fatal(err)
		}
	}
	run, err := results.Load(filepath.Join(fixtureDir, results.FileName))
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// histogram of latencies spread deterministically around baseUs: 1000
// values from baseUs to 1.5×baseUs, and 1% at 4×baseUs (the tail).
func histogram(t *testing.T, baseUs float64) *stats.Latency {
	t.Helper()
	h := stats.NewHistogram()
	for i := range 1000 {
		v := baseUs * (1 + 0.5*float64(i%50)/50)
		if i%100 == 99 {
			v = 4 * baseUs
		}
		stats.Record(h, time.Duration(v*1e3))
	}
	l, err := stats.Summarize(h)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// five extends a fixture's three rounds to five, the fewest a verdict
// needs, keeping their median: the two new rounds lie a quarter of the
// range either side of it.
func five(v []float64) []float64 {
	s := append([]float64(nil), v...)
	slices.Sort(s)
	m, q := s[1], (s[2]-s[0])/4
	return append(append([]float64(nil), v...), m-q, m+q)
}

func sampleAt(round int) results.Sample {
	start := t0.Add(time.Duration(round) * time.Minute)
	return results.Sample{Round: round, Start: start, End: start.Add(12 * time.Second)}
}

func streamSamples(gbit, loss []float64) []results.Sample {
	var out []results.Sample
	for i, g := range gbit {
		s := sampleAt(i + 1)
		e := &engine.Result{Test: engine.TCPStream, RunnerResults: kinds.RunnerResults{Seconds: 10}, Streams: 1, ThroughputBitsSec: g * 1e9,
			BytesReceived: int64(g * 1e9 * 10 / 8), BytesSent: int64(g * 1e9 * 10 / 8)}
		if loss != nil {
			e.Test = engine.UDPStream
			e.LossPercent = loss[i]
			e.PacketsSent = 1000000
			e.PacketsReceived = int64(1000000 * (1 - loss[i]/100))
			e.OfferedBitsSec = g * 1e9 / (1 - loss[i]/100)
		}
		s.Result = e
		s.ClientCPUSec, s.ServerCPUSec = 6*g/10, 4.8*g/10
		out = append(out, s)
	}
	return out
}

func rrSamples(t *testing.T, test engine.Test, rates, latUs []float64, failRound int) []results.Sample {
	var out []results.Sample
	for i, rate := range rates {
		s := sampleAt(i + 1)
		if i+1 == failRound {
			s.Error = "agent node0-pod0: read: connection reset by peer"
			out = append(out, s)
			continue
		}
		s.Result = &engine.Result{Test: test, RunnerResults: kinds.RunnerResults{Seconds: 10}, Streams: 1, Transactions: int64(rate * 10), RatePerSec: rate,
			Latency: histogram(t, latUs[i])}
		s.ClientCPUSec, s.ServerCPUSec = rate*10*18e-6*1.2, rate*10*17e-6*1.2
		out = append(out, s)
	}
	return out
}

func httpSamples(t *testing.T, rps, latUs []float64, qps float64, saturatedRound, missedRound int) []results.Sample {
	var out []results.Sample
	for i, r := range rps {
		s := sampleAt(i + 1)
		lat := histogram(t, latUs[i])
		h := &httpload.Result{Mode: "max-rate", RunnerResults: kinds.RunnerResults{Seconds: 10}, Conns: 64, Requests: int64(r * 10), OK: int64(r * 10), RPS: r,
			Latency: lat, LatencyUncorrected: lat, ClientCPU: kinds.ClientCPU{ClientCPUs: 1, ClientCPUUtil: 0.6}}
		if qps > 0 {
			h.Mode, h.TargetQPS, h.AchievedRatio = "fixed-qps", qps, r/qps
			h.LatencyUncorrected = histogram(t, latUs[i]*0.9)
			if i+1 == missedRound {
				h.MissedTarget, h.MissedByPercent = true, 100*(1-r/qps)
			}
		}
		if i+1 == saturatedRound {
			h.ClientCPUUtil, h.ClientSaturated = 0.97, true
		}
		s.Result = h
		s.ClientCPUSec, s.ServerCPUSec = r*10*30e-6*1.2, r*10*25e-6*1.2
		out = append(out, s)
	}
	return out
}

// fixtureRun is a hand-built run with known differences between two
// scenarios, three rounds each:
//
//   - TCP_STREAM: vxlan ≈ 5% below native, tight rounds → significant
//   - UDP_STREAM: vxlan loses ≈ 2% against ≈ 0.5%
//   - TCP_RR: identical in both → within noise
//   - TCP_CRR: one vxlan round failed → n=2, not enough for a verdict
//   - HTTP_RPS_C64: vxlan ≈ 4% fewer requests/s, one round client-saturated
//   - HTTP_QPS_1000: fixed rate; vxlan missed the target in one round
//   - TCP_STREAM host-to-host: skipped by the target in both scenarios
func fixtureRun(t *testing.T) *results.Run {
	t.Helper()
	lab := func(name, routing string, mtu int) results.Scenario {
		return results.Scenario{Name: name, Target: results.Target{Kind: "lab", Details: map[string]any{
			"lab": name, "nodes": 2, "pods_per_node": 2, "routing": routing, "mtu": mtu,
			"client_cpus": "0", "server_cpus": "1",
			"sysctls": map[string]any{"net.ipv4.tcp_tw_reuse": "1", "net.core.somaxconn": "65535"},
		}}}
	}
	native, vxlan := lab("native", "native", 1500), lab("vxlan", "vxlan", 1450)
	pl := func(path, node, client, server, addr string) results.Placement {
		return results.Placement{Path: path, Node: node, Client: client, Server: server, ServerAddr: addr}
	}
	other := pl("pod-to-pod", "other-node", "node0-pod0", "node1-pod0", "198.19.1.10")
	same := pl("pod-to-pod", "same-node", "node0-pod0", "node0-pod1", "198.19.0.11")
	hosts := pl("host-to-host", "other-node", "node0", "node1", "198.18.0.11")
	skipped := func(sc, test string, p results.Placement) results.Result {
		return results.Result{Scenario: sc, Test: test, Placement: p, Skipped: "other-node needs two nodes; the target has one"}
	}
	res := func(sc, test string, p results.Placement, streams int, s []results.Sample) results.Result {
		r := results.Result{Scenario: sc, Test: test, Placement: p, Samples: s,
			Options: &engine.Options{Host: p.ServerAddr, RunnerOptions: kinds.RunnerOptions{Duration: engine.Duration(10 * time.Second), Warmup: engine.Duration(2 * time.Second)}, Streams: streams}}
		if test[:4] == "HTTP" {
			r.Options = &httpload.Options{Host: p.ServerAddr, Connections: 64, KeepAlive: true, RunnerOptions: kinds.RunnerOptions{Duration: engine.Duration(10 * time.Second)}}
		}
		return r
	}
	return &results.Run{
		SchemaVersion: results.SchemaVersion,
		RunID:         "20261201-120000-f1x7",
		Status:        results.StatusComplete,
		Start:         t0,
		End:           t0.Add(20 * time.Minute),
		Tool:          results.Tool{Name: "cnibench", Version: "v0.2.0", Commit: "0123456789abcdef0123", GoVersion: "go1.26.8"},
		Environment: results.Environment{Hostname: "fixture-host", Kernel: "6.1.0-fixture", OS: "Debian GNU/Linux 12 (bookworm)",
			CPUModel: "Fixture CPU @ 3.0GHz", CPUCount: 2, MemoryBytes: 8 << 30},
		Target:    native.Target,
		Scenarios: []results.Scenario{native, vxlan},
		Plan: results.Plan{Profile: "standard", Rounds: 5, Duration: engine.Duration(10 * time.Second), Warmup: engine.Duration(2 * time.Second),
			Tests:      []string{"TCP_STREAM", "UDP_STREAM", "TCP_RR", "TCP_CRR", "HTTP_RPS_C64", "HTTP_QPS_1000"},
			Placements: []string{"pod-to-pod/same-node", "pod-to-pod/other-node", "host-to-host/other-node"},
			Order:      "rounds, then tests, then placements, then scenarios (interleaved)", Streams: 4, Mode: engine.Blocking},
		Results: []results.Result{
			res("native", "TCP_STREAM", other, 1, streamSamples(five([]float64{9.40, 9.50, 9.45}), nil)),
			res("vxlan", "TCP_STREAM", other, 1, streamSamples(five([]float64{8.93, 9.02, 8.97}), nil)),
			skipped("native", "TCP_STREAM", hosts),
			skipped("vxlan", "TCP_STREAM", hosts),
			res("native", "UDP_STREAM", other, 1, streamSamples(five([]float64{1.50, 1.52, 1.49}), five([]float64{0.5, 0.6, 0.4}))),
			res("vxlan", "UDP_STREAM", other, 1, streamSamples(five([]float64{1.40, 1.41, 1.39}), five([]float64{2.0, 2.5, 1.5}))),
			res("native", "TCP_RR", same, 1, rrSamples(t, engine.TCPRR, five([]float64{30000, 30300, 29700}), five([]float64{30, 31, 29}), 0)),
			res("vxlan", "TCP_RR", same, 1, rrSamples(t, engine.TCPRR, five([]float64{30000, 30300, 29700}), five([]float64{30, 31, 29}), 0)),
			res("native", "TCP_CRR", other, 1, rrSamples(t, engine.TCPCRR, five([]float64{6000, 6100, 5900}), five([]float64{120, 125, 118}), 0)),
			res("vxlan", "TCP_CRR", other, 1, rrSamples(t, engine.TCPCRR, five([]float64{5500, 5400, 5600}), five([]float64{130, 132, 128}), 2)),
			res("native", "HTTP_RPS_C64", other, 0, httpSamples(t, five([]float64{100000, 101000, 99500}), five([]float64{600, 610, 590}), 0, 0, 0)),
			res("vxlan", "HTTP_RPS_C64", other, 0, httpSamples(t, five([]float64{96000, 95500, 96500}), five([]float64{640, 650, 630}), 0, 3, 0)),
			res("native", "HTTP_QPS_1000", other, 0, httpSamples(t, five([]float64{1000, 999.5, 1000}), five([]float64{90, 92, 88}), 1000, 0, 0)),
			res("vxlan", "HTTP_QPS_1000", other, 0, httpSamples(t, five([]float64{970, 999, 1000}), five([]float64{150, 95, 93}), 1000, 0, 1)),
		},
	}
}
