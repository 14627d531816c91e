package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/engine"
	"github.com/cnibench/cnibench/results"
	"github.com/cnibench/cnibench/stats"
)

func fixedRun(t *testing.T) *results.Run {
	t.Helper()
	h := stats.NewHistogram()
	for i := 1; i <= 100; i++ {
		stats.Record(h, time.Duration(i)*time.Microsecond)
	}
	lat, err := stats.Summarize(h)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	pl := results.Placement{Path: "pod-to-pod", Node: "other-node", Client: "node0-pod0", Server: "node1-pod0"}
	return &results.Run{
		SchemaVersion: 1, RunID: "20261123-090000-0001", Status: results.StatusComplete,
		Start: t0, End: t0.Add(90 * time.Second),
		Tool:   results.Tool{Name: "cnibench", Version: "v0.1.0", Commit: "0123456789abcdef", GoVersion: "go1.26"},
		Target: results.Target{Kind: "lab", Details: map[string]any{"nodes": 2, "routing": "native"}},
		Plan:   results.Plan{Profile: "quick", Rounds: 1, Duration: engine.Duration(4 * time.Second), Mode: engine.Blocking, Streams: 4},
		Results: []results.Result{
			{Test: "TCP_RR", Placement: pl, Samples: []results.Sample{{Start: t0, End: t0.Add(5 * time.Second),
				Engine: &engine.Result{Seconds: 4, Transactions: 100, RatePerSec: 12345, Latency: lat}}}},
			{Test: "UDP_STREAM", Placement: pl, Options: engine.Options{Streams: 1}, Samples: []results.Sample{{
				Engine: &engine.Result{Seconds: 4, ThroughputBitsSec: 2.5e9, OfferedBitsSec: 3e9, PacketsSent: 1000, LossPercent: 16.67, BytesReceived: 1}}}},
			{Test: "TCP_CRR", Placement: pl, Samples: []results.Sample{{Error: "agent node0-pod0: connection refused"}}},
		},
	}
}

func TestSummaryMarkdown(t *testing.T) {
	var b bytes.Buffer
	if err := Summary(&b, fixedRun(t)); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"# cnibench run 20261123-090000-0001",
		"Status: **complete**. Started 2026-11-23T09:00:00Z, took 1m30s.",
		"| Tool | cnibench v0.1.0 (0123456789ab, go1.26) |",
		"| Target | lab: nodes=2, routing=native |",
		"| TCP_RR | pod-to-pod/other-node | 1 | 12345 | 1.0 | 50.0 | 90.0 | 99.0 | 100.0 | 100.0 | - |",
		"| UDP_STREAM | pod-to-pod/other-node | 1 | 1 | 2.50 | 3.00 | 16.67 |",
		"| TCP_CRR | pod-to-pod/other-node | 0 (1 failed) | failed: agent node0-pod0: connection refused |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("summary lacks %q\n---\n%s", want, md)
		}
	}
}

func TestTable(t *testing.T) {
	var b bytes.Buffer
	if err := Table(&b, fixedRun(t)); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"P99.9 µs", "12345", "2.50", "16.67", "0 (1 failed)"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q\n%s", want, out)
		}
	}
}
